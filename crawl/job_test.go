package crawl

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/testbed"
)

func readResults(t *testing.T, dir string) []Result {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Result
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("results line %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

// loadJob opens the job in dir and loads list.
func loadJob(t *testing.T, dir, list string, opts Options) *Job {
	t.Helper()
	j, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Load(strings.NewReader(list)); err != nil {
		j.Close()
		t.Fatal(err)
	}
	return j
}

func runJob(t *testing.T, dir string, tr *polite.Transport, list string, opts Options) Summary {
	t.Helper()
	opts.Transport = tr
	j := loadJob(t, dir, list, opts)
	defer j.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sum, err := j.Run(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func TestJobEndToEnd(t *testing.T) {
	srv := testbed.NewServer(
		testbed.HostConfig{Name: "a.test"},
		testbed.HostConfig{Name: "b.test", Rate: 20, Burst: 2, RetryAfter: testbed.RetryAfterSeconds},
		testbed.HostConfig{Name: "waf.test", SoftBlock: testbed.SoftBlock{After: 2}},
	)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var list strings.Builder
	list.WriteString("# a comment\n\nnot a url\nftp://a.test/x\nhttp:///nohost\n")
	for i := range 30 {
		fmt.Fprintf(&list, "http://a.test/page/%d\nhttp://b.test/page/%d\n", i, i)
	}
	for i := range 5 {
		fmt.Fprintf(&list, "http://waf.test/page/%d\n", i)
	}
	list.WriteString("http://a.test/status/404\n")
	dir := t.TempDir()
	tr := &polite.Transport{Base: srv.Transport(), Limits: polite.Limits{Rate: 100, Burst: 10, Concurrency: 4},
		Rules: []polite.Rule{{Pattern: "b.test", Limits: polite.Limits{Rate: 15, Burst: 1, Concurrency: 2}}}}
	if testing.Verbose() {
		tr.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	sum := runJob(t, dir, tr, list.String(), Options{Workers: 8, BlockRecheck: 100 * time.Millisecond})
	res := readResults(t, dir)
	if len(res) != sum.Total || sum.Total != 3+60+5+1 {
		t.Fatalf("%d results, summary %+v", len(res), sum)
	}
	count := map[string]int{}
	seen := map[string]bool{}
	for _, r := range res {
		count[r.Outcome]++
		if seen[r.URL] {
			t.Errorf("%s twice", r.URL)
		}
		seen[r.URL] = true
	}
	want := map[string]int{InvalidURL: 3, OK: 62, Blocked: 3, HTTPError: 1}
	for k, v := range want {
		if count[k] != v {
			t.Errorf("outcome %s: %d, want %d (all: %v)", k, count[k], v, count)
		}
	}
	// A rerun fetches nothing.
	before := srv.Host("a.test").Stats().Arrivals
	sum2 := runJob(t, dir, &polite.Transport{Base: srv.Transport()}, list.String(), Options{})
	if got := srv.Host("a.test").Stats().Arrivals; got != before {
		t.Errorf("rerun sent %d requests", got-before)
	}
	if sum2.DoneNow != 0 || sum2.Done != sum.Total {
		t.Errorf("rerun summary %+v", sum2)
	}
	if n := len(readResults(t, dir)); n != sum.Total {
		t.Errorf("after rerun %d results", n)
	}
}

// Progress may be called from the moment Run is called (the CLI's display
// does): before the pending URLs are loaded it reports counts only, and it
// never races with the loading (run with -race).
func TestProgressWhileRunStarts(t *testing.T) {
	srv := testbed.NewServer(testbed.HostConfig{Name: "a.test"})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var list strings.Builder
	for i := range 200 {
		fmt.Fprintf(&list, "http://a.test/page/%d\n", i)
	}
	j, err := Open(t.TempDir(), Options{Transport: &polite.Transport{Base: srv.Transport(), Limits: polite.Limits{Rate: 1000, Burst: 100, Concurrency: 8}}})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if _, err := j.Load(strings.NewReader(list.String())); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for j.Progress(-1).Done < 200 { // all hosts: walks the host list too
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := j.Run(ctx, nil); err != nil {
		t.Fatal(err)
	}
	<-done
	if p := j.Progress(-1); p.Done != 200 || len(p.Hosts) != 1 {
		t.Errorf("after Run: done %d, hosts %d; want 200, 1", p.Done, len(p.Hosts))
	}
}
