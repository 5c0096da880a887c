package crawl

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/bucket"
)

// Requeue is durable on its own: killed after its transaction, before
// results.jsonl is rewritten, the next Open rewrites it from state.db, and
// a Run fetches the URLs again, each keeping one line.
func TestRequeueSurvivesACrash(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() && r.URL.Path == "/b" {
			http.Error(w, "no", http.StatusBadGateway)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	dir := t.TempDir()
	list := srv.URL + "/a\n" + srv.URL + "/b\nnot a url\n"
	tr := func() *polite.Transport {
		return &polite.Transport{Base: srv.Client().Transport, IgnoreRobots: true, Limits: polite.Limits{Rate: bucket.Inf, Concurrency: 4}}
	}
	runJob(t, dir, tr(), list, Options{Bodies: BodiesNone, Retries: -1})
	before, err := os.ReadFile(filepath.Join(dir, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}

	j, err := Open(dir, Options{Bodies: BodiesNone})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Requeue([]string{"bogus"}); err == nil {
		t.Errorf("Requeue(bogus) = nil error")
	}
	n, err := j.Requeue([]string{HTTPError, InvalidURL})
	if err == nil || n != 0 {
		t.Errorf("Requeue(invalid_url) = %d, %v; want an error", n, err)
	}
	// The crash: the transaction only.
	if n, err = j.st.requeue([]string{HTTPError}); n != 1 || err != nil {
		t.Fatalf("requeue(http_error) = %d, %v; want 1", n, err)
	}
	j.Close()
	if after, _ := os.ReadFile(filepath.Join(dir, ResultsFile)); !bytes.Equal(after, before) {
		t.Fatalf("results.jsonl changed before the rewrite")
	}
	fail.Store(false)
	runJob(t, dir, tr(), list, Options{Bodies: BodiesNone, Retries: -1})
	got := map[string]Result{}
	for _, r := range readResults(t, dir) {
		if _, dup := got[r.URL]; dup {
			t.Errorf("%s has two lines", r.URL)
		}
		got[r.URL] = r
	}
	if len(got) != 3 || got[srv.URL+"/b"].Outcome != OK {
		t.Errorf("after the retry: %d URLs, /b %q; want 3 and ok", len(got), got[srv.URL+"/b"].Outcome)
	}
}

// ReadCounts reads what ReadStatus reads of the totals, without its scan:
// a job of 5 URLs, 3 of them finished by a first run cut short.
func TestReadCounts(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := ReadCounts(dir); err == nil || !strings.Contains(err.Error(), "no job here") {
		t.Fatalf("ReadCounts of an empty directory: %v, want no job here", err)
	}
	if _, err := os.Stat(filepath.Join(dir, StateFile)); !os.IsNotExist(err) {
		t.Fatalf("ReadCounts created %s", StateFile)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	j := loadJob(t, dir, urlsOf(srv.URL, 5), Options{Transport: &polite.Transport{IgnoreRobots: true}, MaxURLs: 3})
	if _, err := j.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	j.Close()
	j = loadJob(t, dir, urlsOf(srv.URL, 5), Options{Transport: &polite.Transport{IgnoreRobots: true}})
	j.Close() // loaded, not run: 2 pending
	total, pending, err := ReadCounts(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ReadStatus(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if total != 5 || pending != 2 || total != s.Total || pending != s.Pending {
		t.Errorf("ReadCounts = %d, %d; want 5, 2 (ReadStatus: %d, %d)", total, pending, s.Total, s.Pending)
	}
}

// urlsOf lists n pages of base, one a line.
func urlsOf(base string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%s/p/%d\n", base, i)
	}
	return b.String()
}

// A URL that failed on its only attempt says so in English: "after 1
// attempt", not "after 1 attempts" (issue 33, item 5).
func TestOneAttemptSaysSo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusBadGateway)
	}))
	defer srv.Close()
	dir := t.TempDir()
	tr := &polite.Transport{Base: srv.Client().Transport, IgnoreRobots: true, Limits: polite.Limits{Rate: bucket.Inf, Concurrency: 4}}
	runJob(t, dir, tr, srv.URL+"/a\n", Options{Bodies: BodiesNone, Retries: -1})
	res := readResults(t, dir)
	if len(res) != 1 || !strings.HasSuffix(res[0].Error, "after 1 attempt") {
		t.Errorf("results %+v; want one ending \"after 1 attempt\"", res)
	}
}
