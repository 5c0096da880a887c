package crawl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/polite-go/polite"
)

// seen is one request as the server got it.
type seen struct{ method, path, body, ctype string }

// recorder is a server that keeps what it was sent, answering each path
// with answer.
func recorder(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) (*httptest.Server, func() []seen) {
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, seen{r.Method, r.URL.Path, string(b), r.Header.Get("Content-Type")})
		mu.Unlock()
		answer(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []seen {
		mu.Lock()
		defer mu.Unlock()
		return append([]seen(nil), got...)
	}
}

// API jobs send a method and a body (issue 18, item 8): every URL gets
// them, a 307 keeps them, a 303 turns the request into a GET without the
// body (and without its Content-Type), and a POST is retried only when the
// Transport allows it, with the same body.
func TestMethodAndBody(t *testing.T) {
	var fails sync.Map
	srv, got := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/keep":
			http.Redirect(w, r, "/kept", http.StatusTemporaryRedirect)
		case "/other":
			http.Redirect(w, r, "/got", http.StatusSeeOther)
		case "/flaky", "/flaky2":
			if _, again := fails.LoadOrStore(r.URL.Path, true); !again {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			fmt.Fprint(w, "done")
		default:
			fmt.Fprint(w, "done")
		}
	})
	const body = `{"q":1}`
	opts := Options{Method: http.MethodPost, Body: []byte(body), Header: http.Header{"Content-Type": {"application/json"}}}
	run := func(retry bool, paths ...string) {
		var list strings.Builder
		for _, p := range paths {
			fmt.Fprintf(&list, "%s%s\n", srv.URL, p)
		}
		tr := &polite.Transport{Limits: polite.Limits{Rate: 1000, Burst: 10, Concurrency: 1}, RetryNonIdempotent: retry}
		tr.Backoff.Cap = 1
		runJob(t, t.TempDir(), tr, list.String(), opts)
	}
	run(false, "/plain", "/keep", "/other", "/flaky")
	run(true, "/flaky2")
	want := map[string][]seen{
		"/plain":  {{"POST", "/plain", body, "application/json"}},
		"/keep":   {{"POST", "/keep", body, "application/json"}},
		"/kept":   {{"POST", "/kept", body, "application/json"}},
		"/other":  {{"POST", "/other", body, "application/json"}},
		"/got":    {{"GET", "/got", "", ""}},
		"/flaky":  {{"POST", "/flaky", body, "application/json"}},                                                 // not retried
		"/flaky2": {{"POST", "/flaky2", body, "application/json"}, {"POST", "/flaky2", body, "application/json"}}, // retried, same body
	}
	byPath := map[string][]seen{}
	for _, s := range got() {
		byPath[s.path] = append(byPath[s.path], s)
	}
	for p, w := range want {
		if fmt.Sprint(byPath[p]) != fmt.Sprint(w) {
			t.Errorf("%s: server got %v, want %v", p, byPath[p], w)
		}
	}
	if len(byPath) != len(want) {
		t.Errorf("server got paths %v, want %d of them", byPath, len(want))
	}
}

// A job keeps its method and body: a run with others would mix two jobs'
// results, and is refused, naming the directory; the same ones resume.
func TestMethodAndBodyKept(t *testing.T) {
	srv, _ := recorder(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	dir := t.TempDir()
	list := srv.URL + "/a\n"
	tr := &polite.Transport{}
	runJob(t, dir, tr, list, Options{Method: http.MethodPut, Body: []byte("x")})
	for _, o := range []Options{{}, {Method: http.MethodPut}, {Method: http.MethodPut, Body: []byte("y")}, {Method: http.MethodPost, Body: []byte("x")}} {
		o.Transport = tr
		j := loadJob(t, dir, list, o)
		_, err := j.Run(context.Background(), nil)
		j.Close()
		if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "another method or body") || !errors.Is(err, ErrRequestChanged) {
			t.Errorf("run with %s %q on a PUT job: error %v, want a refusal naming %s (ErrRequestChanged)", o.Method, o.Body, err, dir)
		}
		// CheckRequest says so before Run, for a caller to refuse before
		// it loads a list into the job.
		if j, err := Open(dir, o); err != nil {
			t.Fatal(err)
		} else {
			if err := j.CheckRequest(); !errors.Is(err, ErrRequestChanged) {
				t.Errorf("CheckRequest with %s %q on a PUT job: %v, want ErrRequestChanged", o.Method, o.Body, err)
			}
			j.Close()
		}
	}
	j := loadJob(t, dir, list, Options{Transport: tr, Method: http.MethodPut, Body: []byte("x")})
	defer j.Close()
	if _, err := j.Run(context.Background(), nil); err != nil {
		t.Errorf("resuming with the same method and body: %v", err)
	}
}

// A job run without a frontier on a fleet worker's directory is refused
// (a worker's URLs are leased: fetched alone they would go outside the
// fleet's budgets, their results to no frontier).
func TestFleetDirRefusedAlone(t *testing.T) {
	dir := t.TempDir()
	j := loadJob(t, dir, "http://a.test/1\n", Options{})
	if err := j.CheckRequest(); err != nil {
		t.Fatalf("a job's own directory: %v", err)
	}
	if _, err := j.st.db.Exec(`INSERT INTO leases(id, token, leases, expires) VALUES(1, 7, 1, 0)`); err != nil {
		t.Fatal(err)
	}
	j.Close()
	j, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if err := j.CheckRequest(); !errors.Is(err, ErrFleetDir) {
		t.Errorf("CheckRequest on a directory with leases = %v, want ErrFleetDir", err)
	}
}

// EachHost yields each host of the job once, lines that are not URLs
// left out, and stops when its callback says so.
func TestEachHost(t *testing.T) {
	j := loadJob(t, t.TempDir(), "http://a.test/1\nhttp://a.test/2\nhttp://b.test/1\nnot a url\n", Options{})
	defer j.Close()
	var got []string
	if err := j.EachHost(func(h string) bool { got = append(got, h); return true }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"a.test", "b.test"}) {
		t.Errorf("EachHost yielded %q, want a.test and b.test", got)
	}
	n := 0
	if err := j.EachHost(func(string) bool { n++; return false }); err != nil || n != 1 {
		t.Errorf("a callback that stops: %d calls, %v; want 1, nil", n, err)
	}
}
