package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/polite-go/polite/crawl"
)

// polite fetch --out DIR resumes a job without its list: the URLs are in
// state.db, and so are the loopback ports the list named, which the job
// may connect to; polite retry says so instead of asking for the list
// (issue 33, item 13).
func TestResumeWithoutList(t *testing.T) {
	var found atomic.Bool // /b: 404 until then
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/b" && !found.Load() {
			w.WriteHeader(http.StatusNotFound)
		}
		io.WriteString(w, r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	out := t.TempDir()
	code, _, stderr := runHostile(t, out, urls(srv.URL, "/a", "/b"), "--robots=false")
	if code != ExitFailures {
		t.Fatalf("first run: exit %d, want %d: %s", code, ExitFailures, stderr)
	}
	var stdout, errb bytes.Buffer
	if code := Main(context.Background(), []string{"retry", "--outcome", "http_error", out}, nil, &stdout, &errb); code != 0 {
		t.Fatalf("retry: exit %d: %s", code, errb.String())
	}
	if s := stdout.String(); !strings.Contains(s, "1 URLs re-queued") || strings.Contains(s, "list") && !strings.Contains(s, "no list needed") {
		t.Errorf("retry says %q; want 1 re-queued and no call for the list", s)
	}
	found.Store(true)
	stdout.Reset()
	errb.Reset()
	code = Main(context.Background(), []string{"fetch", "--progress", "none", "--robots=false", "--out", out}, nil, &stdout, &errb)
	if code != ExitOK {
		t.Fatalf("fetch --out %s (no list): exit %d, want 0: %s", out, code, errb.String())
	}
	if !strings.Contains(errb.String(), "resuming the job in "+out) {
		t.Errorf("stderr %q: want it to say the job is resumed", errb.String())
	}
	st, err := crawl.ReadStatus(out, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Total != 2 || st.Outcomes[crawl.OK] != 2 {
		t.Errorf("after the resume: %d URLs, outcomes %v; want 2 ok", st.Total, st.Outcomes)
	}

	// Without a list and without a job, it is a usage error naming both.
	for _, argv := range [][]string{
		{"fetch", "--out", filepath.Join(t.TempDir(), "none")},
		{"fetch", "--out", t.TempDir()},
	} {
		errb.Reset()
		code := Main(context.Background(), argv, nil, &stdout, &errb)
		if code != ExitUsage || !strings.Contains(errb.String(), "no URLFILE") {
			t.Errorf("%q: exit %d, stderr %q; want %d and \"no URLFILE\"", argv, code, errb.String(), ExitUsage)
		}
	}
}

// Another --bodies on an existing job is refused as another -X is: exit 2
// naming the flag and the job's value, nothing fetched (issue 33, item
// 10).
func TestBodiesChangeRefused(t *testing.T) {
	srv, got := recordServer(t, func(r *http.Request) string { return r.URL.Path })
	out := t.TempDir()
	if code, _, stderr := runHostile(t, out, urls(srv.URL, "/a")); code != ExitOK {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	code, _, stderr := runHostile(t, out, urls(srv.URL, "/b"), "--bodies", "files")
	if code != ExitUsage || !strings.Contains(stderr, "--bodies files") || !strings.Contains(stderr, "--bodies warc") {
		t.Errorf("--bodies files on a warc job: exit %d, stderr %q; want %d naming --bodies files and the job's --bodies warc", code, stderr, ExitUsage)
	}
	if strings.Contains(strings.Join(got(), " "), "/b") {
		t.Errorf("the refused run fetched /b: %q", got())
	}
}

// A resumed job's Transport starts its hosts at the rates the job learned
// (issue 33, item 14); without --adaptive, or a job, it has no StartRate.
func TestResumeStartsAtLearnedRates(t *testing.T) {
	srv, _ := recordServer(t, func(r *http.Request) string { return r.URL.Path })
	out := t.TempDir()
	var list []string
	for i := range 20 {
		list = append(list, "/"+strconv.Itoa(i))
	}
	if code, _, stderr := runHostile(t, out, urls(srv.URL, list...), "--rate", "5", "--max-rate", "50"); code != ExitOK {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	rates, err := crawl.ReadRates(out)
	key := strings.TrimPrefix(srv.URL, "http://")
	if err != nil || rates[key] <= 0 {
		t.Fatalf("ReadRates = %v, %v; want %s's", rates, err, key)
	}
	for _, tc := range []struct {
		argv []string
		want float64
	}{
		{[]string{"fetch", "--out", out, "--max-rate", "50"}, rates[key]},
		{[]string{"fetch", "--out", out, "--adaptive=false"}, 0},
		{[]string{"fetch", "--out", t.TempDir(), "x"}, 0},
	} {
		got, code, stderr := parse(t, tc.argv...)
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", tc.argv, code, stderr)
		}
		o := got.(*fetchOptions)
		tr := o.transport(&loopbackPorts{})
		o.startRates(tr)
		var start float64
		if tr.StartRate != nil {
			start = tr.StartRate(key)
		}
		if start != tc.want {
			t.Errorf("%q: StartRate(%s) = %v, want %v", tc.argv, key, start, tc.want)
		}
		// Once: the host made again after an eviction in this run
		// starts anew, not at the last run's rate.
		if tr.StartRate != nil {
			if again := tr.StartRate(key); again != 0 {
				t.Errorf("%q: StartRate(%s) a second time = %v, want 0 (the defaults)", tc.argv, key, again)
			}
		}
	}
}

// A job whose list's loading was stopped (Ctrl-C, --max-time) and is
// resumed without the list says it holds only part of it (issue 33, items
// 9 and 13).
func TestResumeAfterStoppedLoadSaysSo(t *testing.T) {
	srv, _ := recordServer(t, func(r *http.Request) string { return r.URL.Path })
	out := t.TempDir()
	j, err := crawl.Open(out, crawl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Load(strings.NewReader(urls(srv.URL, "/a", "/b"))); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := j.LoadContext(ctx, strings.NewReader(urls(srv.URL, "/c"))); err == nil {
		t.Fatal("LoadContext with its context ended = nil error")
	}
	j.Close()
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"fetch", "--progress", "none", "--out", out}, nil, &stdout, &stderr)
	if code != ExitOK || !strings.Contains(stderr.String(), "not loaded to its end") {
		t.Errorf("fetch --out (no list): exit %d, stderr %q; want 0 and a word on the list loaded in part", code, stderr.String())
	}
}
