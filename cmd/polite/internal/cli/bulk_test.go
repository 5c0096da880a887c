package cli

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/polite-go/polite/crawl"
)

// headerLog records the Authorization and X-Api fields each path got.
type headerLog struct {
	mu  sync.Mutex
	got map[string][]string
}

func (l *headerLog) add(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.got == nil {
		l.got = map[string][]string{}
	}
	l.got[r.URL.Path] = append(l.got[r.URL.Path], "auth="+r.Header.Get("Authorization")+" x-api="+r.Header.Get("X-Api"))
}

func (l *headerLog) of(path string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.got[path], "|")
}

// -H adds fields to every request (issue 18, item 8); credentials go only
// to the host the list names, not on a redirect elsewhere, and never into
// bodies.warc.
func TestHeaderFlag(t *testing.T) {
	var log headerLog
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" {
			log.add(r)
		}
		w.Write([]byte("elsewhere"))
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			http.NotFound(w, r)
		case "/away":
			log.add(r)
			http.Redirect(w, r, other.URL+"/there", http.StatusFound)
		default:
			log.add(r)
			w.Write([]byte("here"))
		}
	}))
	defer srv.Close()
	out := t.TempDir()
	code, res, stderr := runHostile(t, out, urls(srv.URL, "/a", "/away"), "--rate", "100",
		"-H", "Authorization: Bearer s3cret", "--header", "X-Api: 1", "--allow-private")
	if code != ExitOK {
		t.Fatalf("exit %d; stderr %s", code, stderr)
	}
	for path, want := range map[string]string{"/a": "auth=Bearer s3cret x-api=1", "/away": "auth=Bearer s3cret x-api=1", "/there": "auth= x-api=1"} {
		if got := log.of(path); got != want {
			t.Errorf("%s got %q, want %q", path, got, want)
		}
	}
	if r := res[srv.URL+"/away"]; r.FinalURL != other.URL+"/there" {
		t.Errorf("/away: final_url %q, want %s/there", r.FinalURL, other.URL)
	}
	warc := readWARC(t, filepath.Join(out, crawl.WARCFile))
	if bytes.Contains(warc, []byte("s3cret")) || !bytes.Contains(warc, []byte("Authorization: xxxxx")) {
		t.Errorf("bodies.warc holds the credentials, or no redacted Authorization field")
	}

	for _, bad := range []string{"no colon", "Bad Name: x", ": empty"} {
		code, _, stderr := politeCmd(t, "fetch", "-H", bad, "-")
		if code != ExitUsage || !strings.Contains(stderr, bad) {
			t.Errorf("-H %q: exit %d, stderr %q; want %d naming it", bad, code, stderr, ExitUsage)
		}
	}
}

// results.jsonl had neither the response's type nor its latency (issue 18,
// item 8).
func TestContentTypeAndLatency(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		time.Sleep(20 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	out := t.TempDir()
	code, res, stderr := runHostile(t, out, urls(srv.URL, "/a"), "--rate", "100")
	if code != ExitOK {
		t.Fatalf("exit %d; stderr %s", code, stderr)
	}
	if r := res[srv.URL+"/a"]; r.ContentType != "application/json" || r.LatencyMS < 20 {
		t.Errorf("content_type %q, latency_ms %v; want application/json and at least 20", r.ContentType, r.LatencyMS)
	}
}

// --max-urls takes the first N URLs of the list, and says so.
func TestMaxURLs(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("x")) }))
	defer srv.Close()
	code, res, stderr := runHostile(t, t.TempDir(), "# a comment\n\n"+urls(srv.URL, "/1", "/2", "/3"), "--rate", "100", "--max-urls", "2")
	if code != ExitOK || len(res) != 2 || !strings.Contains(stderr, "skipped 1") {
		t.Errorf("exit %d, %d results, stderr %q; want 0, 2 and a word on the one skipped", code, len(res), stderr)
	}
	if _, ok := res[srv.URL+"/3"]; ok {
		t.Errorf("/3 was fetched")
	}
}

// --max-time stops the whole job as Ctrl-C does, and says why.
func TestMaxTime(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.Add(1); w.Write([]byte("x")) }))
	defer srv.Close()
	start := time.Now()
	code, _, stderr := runHostile(t, t.TempDir(), urls(srv.URL, "/1", "/2", "/3", "/4", "/5", "/6"),
		"--rate", "2", "--burst", "1", "--adaptive=false", "--robots=false", "--max-time", "700ms")
	if code != ExitFatal || !strings.Contains(stderr, "stopped by --max-time 700ms") {
		t.Errorf("exit %d, stderr %q; want %d and the reason", code, stderr, ExitFatal)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the job took %v", d)
	}
	if got := n.Load(); got >= 6 {
		t.Errorf("the host got %d requests: the job was not stopped", got)
	}
}

// The end of a job shows its closing stats: URLs by status, retries by
// reason, bytes (issue 18, item 8): here 5 + 5 + the 404's 19.
func TestClosingStats(t *testing.T) {
	var first atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/robots.txt" || r.URL.Path == "/missing":
			http.NotFound(w, r)
		case r.URL.Path == "/flaky" && first.CompareAndSwap(false, true):
			w.WriteHeader(http.StatusBadGateway)
		default:
			w.Write([]byte("12345"))
		}
	}))
	defer srv.Close()
	code, stdout, stderr := politeIn(t, urls(srv.URL, "/ok", "/flaky", "/missing"),
		"fetch", "--progress", "none", "--out", t.TempDir(), "--rate", "100", "--max-delay", "50ms", "-")
	if code != ExitFailures {
		t.Fatalf("exit %d; stderr %s", code, stderr)
	}
	for _, want := range []string{"status (this run): 200×2 404×1", "retries (this run): 1: 502 Bad Gateway×1", "bytes kept (this run): 29 B"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary does not say %q:\n%s", want, stdout)
		}
	}
}

// --retry-on names the statuses retried (issue 18, item 8): a 404 named
// is retried until it passes, a 503 not named is not retried.
func TestRetryOn(t *testing.T) {
	var n404, n503 atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			http.NotFound(w, r)
		case "/late":
			if n404.Add(1) < 3 {
				http.NotFound(w, r)
				return
			}
			w.Write([]byte("at last"))
		case "/busy":
			n503.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	code, res, stderr := runHostile(t, t.TempDir(), urls(srv.URL, "/late", "/busy"), "--rate", "100", "--max-delay", "50ms",
		"--retry-on", "404,500")
	if code != ExitFailures {
		t.Errorf("exit %d, want %d; stderr %s", code, ExitFailures, stderr)
	}
	if r := res[srv.URL+"/late"]; r.Outcome != crawl.OK || r.Attempts != 3 {
		t.Errorf("/late: outcome %q after %d attempts, want ok after 3", r.Outcome, r.Attempts)
	}
	if r := res[srv.URL+"/busy"]; r.Attempts != 1 || n503.Load() != 1 {
		t.Errorf("/busy: %d attempts, %d requests; want 1 (503 is not in --retry-on)", r.Attempts, n503.Load())
	}
	if code, _, stderr := politeCmd(t, "fetch", "--retry-on", "404,abc", "-"); code != ExitUsage || !strings.Contains(stderr, `"abc"`) {
		t.Errorf("--retry-on 404,abc: exit %d, stderr %q; want %d naming abc", code, stderr, ExitUsage)
	}
}

// The closing stats say how long each host was paused (issue 18, item 8):
// here one Retry-After of a second.
func TestClosingStatsPausedTime(t *testing.T) {
	var first atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/robots.txt":
			http.NotFound(w, r)
		case first.CompareAndSwap(false, true):
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			w.Write([]byte("x"))
		}
	}))
	defer srv.Close()
	code, stdout, stderr := politeIn(t, urls(srv.URL, "/a", "/b"), "fetch", "--progress", "none", "--out", t.TempDir(), "--rate", "100", "-")
	if code != ExitOK {
		t.Fatalf("exit %d; stderr %s", code, stderr)
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	var d time.Duration
	for _, line := range strings.Split(stdout, "\n") {
		if rest, ok := strings.CutPrefix(line, "time paused (this run): "+host+" "); ok {
			d, _ = time.ParseDuration(strings.TrimSuffix(rest, ";"))
		}
	}
	if d < 900*time.Millisecond || d > 1500*time.Millisecond {
		t.Errorf("time paused %v, want about 1s:\n%s", d, stdout)
	}
}

// readWARC returns the records of a .warc.gz, every member uncompressed.
func readWARC(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
