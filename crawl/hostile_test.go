package crawl

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
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
	"unicode/utf8"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/bucket"
	"github.com/polite-go/polite/retry"
	"github.com/polite-go/polite/robots"
	"github.com/polite-go/polite/testbed"
)

// On a full disk the committer stopped but the workers fetched every
// remaining URL and threw the answers away (issue 17, defect 4). The first
// fatal commit error now stops the fetchers: Run returns it at once.
func TestFatalCommitErrorStopsFetching(t *testing.T) {
	const urls, failAt = 400, 20
	var j *Job
	var sent atomic.Int64
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n := sent.Add(1); {
		case n == failAt:
			// The database goes away under the committer, as a full
			// disk would make every commit fail.
			once.Do(func() { j.st.db.Close() })
		case n > failAt:
			// Later answers wait for the job to give up on them, so
			// that what a stopping job still sends does not hang on
			// how fast the loopback answers.
			select {
			case <-r.Context().Done():
			case <-time.After(2 * time.Second):
			}
		}
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	var list strings.Builder
	for i := range urls {
		fmt.Fprintf(&list, "%s/%d\n", srv.URL, i)
	}
	tr := &polite.Transport{Base: srv.Client().Transport, Limits: polite.Limits{Rate: bucket.Inf, Concurrency: 2}}
	var err error
	j, err = Open(t.TempDir(), Options{Transport: tr, Workers: 2, Bodies: BodiesNone})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if _, err := j.Load(strings.NewReader(list.String())); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = j.Run(ctx, nil)
	if err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Run = %v, want the commit error", err)
	}
	// The requests in flight when the commit failed (one per worker) may
	// go, and one more round if the committer was slow; not the rest of
	// the list.
	if n := sent.Load(); n > failAt+2*2 {
		t.Errorf("%d of %d URLs fetched after the commit failed at the %dth", n, urls, failAt)
	}
}

// A list URL's userinfo was echoed in clear in results.jsonl (invalid_url
// records too), in state.db's results and in bodies.warc (issue 17, defect
// 5): every output redacts the password.
func TestUserinfoRedacted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer srv.Close()
	list := strings.Replace(srv.URL, "http://", "http://user:secret@", 1) + "/a\n" +
		"htp://user:secret@example.com/x\n" +
		"http://user:secret@[::1/x\n"
	dir := t.TempDir()
	runJob(t, dir, &polite.Transport{Base: srv.Client().Transport}, list, Options{Bodies: BodiesWARC})
	res := readResults(t, dir)
	if len(res) != 3 {
		t.Fatalf("%d results, want 3", len(res))
	}
	for _, r := range res {
		if line := fmt.Sprintf("%+v", r); strings.Contains(line, "secret") {
			t.Errorf("result %s", line)
		}
		if !strings.Contains(r.URL, "user:xxxxx@") {
			t.Errorf("url %q: want the user kept, the password replaced", r.URL)
		}
	}
	for _, f := range []string{WARCFile, ResultsFile} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(b)) // every member
			if err != nil {
				t.Fatal(err)
			}
			if b, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		}
		if bytes.Contains(b, []byte("secret")) {
			t.Errorf("%s holds the password", f)
		}
	}
	st, err := openStore(filepath.Join(dir, StateFile))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rows, err := st.db.Query(`SELECT line FROM results`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		rows.Scan(&s)
		if strings.Contains(s, "secret") {
			t.Errorf("state.db result %s", s)
		}
	}
}

// state.db's urls.url kept a list line's user:password@ in clear (issue
// 29, item 12), though every other output redacts it. Such a line is never
// fetched (CheckURL: credentials in a URL are not sent), so nothing needs
// the password: the line is stored redacted, no file of the job holds it,
// and loading the same list again (a resume) adds nothing.
func TestUserinfoNotInState(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer srv.Close()
	list := strings.Replace(srv.URL, "http://", "http://user:secret@", 1) + "/a\n" +
		"htp://user:secret@example.com/x\n" +
		"http://user:secret@[::1/x\n" +
		strings.Replace(srv.URL, "http://", "http://user:secret@", 1) + "/" + strings.Repeat("long", DefaultMaxURLLen) + "\n" +
		srv.URL + "/ok\n"
	dir := t.TempDir()
	runJob(t, dir, &polite.Transport{Base: srv.Client().Transport}, list, Options{Bodies: BodiesWARC})
	j := loadJob(t, dir, list, Options{})
	if n, err := j.Load(strings.NewReader(list)); err != nil || n != 0 {
		t.Errorf("loading the list again added %d URLs (%v), want 0", n, err)
	}
	rows, err := j.st.db.Query(`SELECT url FROM urls ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for rows.Next() {
		var u string
		rows.Scan(&u)
		urls = append(urls, u)
	}
	rows.Close()
	if len(urls) != 5 {
		t.Errorf("urls.url has %d rows, want 5: %q", len(urls), urls)
	}
	for _, u := range urls {
		if strings.Contains(u, "secret") {
			t.Errorf("urls.url %q", u)
		}
	}
	j.Close()
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("secret")) {
			t.Errorf("%s holds the password", f.Name())
		}
	}
}

// A 4 MB reason phrase became a 4 MB error in results.jsonl, in state.db's
// result and, as the reason a URL waits, in its reason column and the
// closing summary's retries (issue 29, item 6, found beside the audit
// log's copy): each is cut, marked with its whole length as the audit log
// marks its cuts.
func TestLongReasonPhraseCut(t *testing.T) {
	const big = 4 << 20
	srv := httptest.NewServer(&testbed.Hostile{Status: 503, Reason: strings.Repeat("x", big)})
	defer srv.Close()
	dir := t.TempDir()
	tr := &polite.Transport{Base: srv.Client().Transport, Limits: polite.Limits{Rate: bucket.Inf, Concurrency: 1},
		Backoff: retry.Backoff{Cap: time.Millisecond}, IgnoreRobots: true}
	sum := runJob(t, dir, tr, srv.URL+"/a\n", Options{Retries: 1, Backoff: retry.Backoff{Cap: time.Millisecond}})
	for k := range sum.Stats.Retries { // the closing summary's line of retries
		if len(k) > 2<<10 {
			t.Errorf("a retry reason of %d bytes, want at most 2 KiB", len(k))
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 4<<10 {
		t.Errorf("results.jsonl is %d bytes, want at most 4 KiB", len(b))
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil || r.Attempts != 2 {
		t.Fatalf("result %+v (%v), want the URL tried twice", r, err)
	}
	mark := fmt.Sprintf("…(cut, %d bytes)", len("throttled: 503 ")+big+len(" after 2 attempts"))
	if e := r.Error; len(e) > 2<<10 || !strings.HasPrefix(e, "throttled: 503 xxx") || !strings.HasSuffix(e, mark) {
		t.Errorf("error of %d bytes %.30q…%q, want at most 2 KiB, marked %q", len(e), e, e[max(0, len(e)-30):], mark)
	}
	j := loadJob(t, dir, "", Options{})
	defer j.Close()
	var reason, result int
	if err := j.st.db.QueryRow(`SELECT (SELECT max(length(reason)) FROM urls), (SELECT max(length(line)) FROM results)`).Scan(&reason, &result); err != nil {
		t.Fatal(err)
	}
	if reason > 2<<10 || result > 4<<10 {
		t.Errorf("state.db holds a reason of %d bytes and a result of %d, want at most 2 KiB and 4 KiB", reason, result)
	}
}

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://example.com/a", "http://example.com/a"},
		{"http://user:pw@h/a", "http://user:xxxxx@h/a"},
		{"http://user@h/a", "http://user@h/a"},
		{"http://u:p:q@h:80?x=a@b", "http://u:xxxxx@h:80?x=a@b"},
		{"http://u:p@[::1/x and https://a:b@c", "http://u:xxxxx@[::1/x and https://a:xxxxx@c"},
		{"mailto:a@b", "mailto:a@b"},
		{"http://h/a@b", "http://h/a@b"},
		{"://:@", "://:xxxxx@"},
	} {
		if got := redact(tc.in); got != tc.want {
			t.Errorf("redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzRedact(f *testing.F) {
	f.Add("http://user:pw@h/a")
	f.Add("://@://:@@")
	f.Fuzz(func(t *testing.T, s string) {
		r := redact(s)
		if strings.Contains(s, "@") == false && r != s {
			t.Errorf("redact(%q) = %q changed a string without userinfo", s, r)
		}
	})
}

// URLs differing only in the scheme's case or a #fragment were fetched
// twice; a path with bytes that are not UTF-8 was written to
// results.jsonl with U+FFFD in their place (issue 17, defect 12).
func TestURLSpellings(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.EscapedPath())
		mu.Unlock()
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	upper := "HTTP" + strings.TrimPrefix(srv.URL, "http")
	list := upper + "/x\n" + srv.URL + "/x#top\n" + srv.URL + "/x\n" + srv.URL + "/caf\xe9\n"
	dir := t.TempDir()
	sum := runJob(t, dir, &polite.Transport{Base: srv.Client().Transport, IgnoreRobots: true}, list, Options{Bodies: BodiesNone})
	if sum.Total != 2 {
		t.Errorf("%d URLs in the job, want 2", sum.Total)
	}
	mu.Lock()
	if len(paths) != 2 {
		t.Errorf("requests for %q, want /x and /caf%%E9 once each", paths)
	}
	mu.Unlock()
	urls := map[string]bool{}
	for _, r := range readResults(t, dir) {
		urls[r.URL] = true
	}
	for _, u := range []string{srv.URL + "/x", srv.URL + "/caf%E9"} {
		if !urls[u] {
			t.Errorf("results lack %q: %v", u, urls)
		}
	}
}

// A non-OK response whose body broke off was recorded as if whole (issue
// 17, defect 12): it is flagged truncated.
func TestPartialErrorBodyTruncated(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte("partial"))
		// The handler returns short of Content-Length: the server closes
		// the connection and the client reads an unexpected EOF.
	}))
	defer srv.Close()
	dir := t.TempDir()
	runJob(t, dir, &polite.Transport{Base: srv.Client().Transport}, srv.URL+"/gone\n", Options{Bodies: BodiesNone, Retries: -1})
	res := readResults(t, dir)
	if len(res) != 1 || res[0].Outcome != HTTPError || !res[0].Truncated || res[0].Bytes != 7 {
		t.Errorf("results %+v, want one http_error, truncated after 7 bytes", res)
	}
}

// A robots.txt answering 5xx made the host's URLs robots_disallowed for
// good (issue 17, defect 9). RFC 9309 §2.3.1.3 says to disallow for now:
// the URLs wait for robots.txt to be fetched again, within the job's
// retries, and end robots_unreachable only when it never comes back.
func TestUnreachableRobotsRetried(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fails int64 // robots.txt answers 503 this many times, then 404
		want  string
	}{
		{"recovers", 2, OK},
		{"never", 1 << 30, RobotsUnreachable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var robotsHits atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/robots.txt" {
					if robotsHits.Add(1) <= tc.fails {
						w.WriteHeader(http.StatusServiceUnavailable)
						return
					}
					http.NotFound(w, r)
					return
				}
				fmt.Fprint(w, "ok")
			}))
			defer srv.Close()
			short := retry.Backoff{Base: 5 * time.Millisecond, Cap: 20 * time.Millisecond}
			tr := &polite.Transport{Base: srv.Client().Transport, UserAgent: "test", Backoff: short, Retries: -1, Breaker: BreakerFor(short.Cap),
				Limits: polite.Limits{Rate: bucket.Inf, Concurrency: 4}}
			tr.RobotsCache = &robots.Cache{Client: &http.Client{Transport: tr}, UserAgent: "test", ErrorTTL: 10 * time.Millisecond, MaxErrorTTL: 10 * time.Millisecond}
			dir := t.TempDir()
			runJob(t, dir, tr, srv.URL+"/a\n"+srv.URL+"/b\n", Options{Bodies: BodiesNone, Retries: 5, Backoff: short})
			for _, r := range readResults(t, dir) {
				if r.Outcome != tc.want {
					t.Errorf("%s: %s (%s), want %s", r.URL, r.Outcome, r.Error, tc.want)
				}
			}
		})
	}
}

// FuzzCanonical: a URL the job accepts stays accepted, for the same host,
// once canonical, and comes out valid UTF-8 and stable.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{"HTTP://a.test/x#f", "http://a.test/caf\xe9", "Https://[::1]:8080/?q=#", "http://h/%zz\xff\xfe#"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		host, problem := CheckURL(s, 0)
		if problem != "" {
			return
		}
		c := canonical(s)
		if !utf8.ValidString(c) || canonical(c) != c {
			t.Fatalf("canonical(%q) = %q: not valid UTF-8 or not stable", s, c)
		}
		if h2, p2 := CheckURL(c, 1<<20); p2 != "" || h2 != host {
			t.Fatalf("canonical(%q) = %q: host %q problem %q, want host %q", s, c, h2, p2, host)
		}
	})
}

// While robots.txt trickled in, the URLs waiting for it hit --timeout and
// ended network_error without being sent (issue 17, defect 9). They now
// wait for it again, within their retries.
func TestSlowRobotsDoesNotFailURLs(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			time.Sleep(250 * time.Millisecond) // 2.5 timeouts: the URLs' own run out twice, not as it comes
			fmt.Fprint(w, "User-agent: *\nDisallow: /private\n")
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	short := retry.Backoff{Base: 5 * time.Millisecond, Cap: 50 * time.Millisecond}
	tr := &polite.Transport{Base: srv.Client().Transport, UserAgent: "test", Backoff: short,
		Limits: polite.Limits{Rate: bucket.Inf, Concurrency: 4}}
	dir := t.TempDir()
	runJob(t, dir, tr, srv.URL+"/a\n"+srv.URL+"/b\n", Options{Bodies: BodiesNone, Retries: 10, Backoff: short, Timeout: 100 * time.Millisecond})
	for _, r := range readResults(t, dir) {
		if r.Outcome != OK {
			t.Errorf("%s: %s (%s), want ok", r.URL, r.Outcome, r.Error)
		}
	}
}

// challenge answers as a bot manager's interstitial does.
func challenge(w http.ResponseWriter) {
	w.Header().Set("Cf-Mitigated", "challenge")
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(http.StatusForbidden)
	fmt.Fprint(w, `<!DOCTYPE html><html><head><title>Just a moment...</title></head><body>challenge-platform</body></html>`)
}

// One page that looked like a challenge finished its host's other URLs
// "blocked", never sent (issue 17, defect 10). The block is now re-checked
// once, after BlockRecheck, with one URL: when that one is answered, the
// others go too; when it is blocked again, they end unsent, and the host
// got no more than the two requests.
func TestBlockIsRecheckedBeforeGivingUp(t *testing.T) {
	for _, tc := range []struct {
		name      string
		lasting   bool // every page after the first is a challenge too
		wantSent  int64
		wantOK    int
		wantBlock int
	}{
		{name: "passing", lasting: false, wantSent: 5, wantOK: 4, wantBlock: 1},
		{name: "lasting", lasting: true, wantSent: 2, wantOK: 0, wantBlock: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pages atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/robots.txt" {
					http.NotFound(w, r)
					return
				}
				if n := pages.Add(1); n == 1 || tc.lasting {
					challenge(w)
					return
				}
				fmt.Fprint(w, "an ordinary page")
			}))
			defer srv.Close()
			var list strings.Builder
			for i := range 5 {
				fmt.Fprintf(&list, "%s/p/%d\n", srv.URL, i)
			}
			tr := &polite.Transport{Limits: polite.Limits{Rate: 1000, Burst: 10, Concurrency: 1}}
			dir := t.TempDir()
			sum := runJob(t, dir, tr, list.String(), Options{Workers: 4, BlockRecheck: 200 * time.Millisecond})
			if sum.Interrupted {
				t.Fatalf("job did not finish: %+v", sum)
			}
			count := map[string]int{}
			unsent := 0
			for _, r := range readResults(t, dir) {
				count[r.Outcome]++
				if strings.HasPrefix(r.Error, "not sent") {
					unsent++
				}
			}
			if count[OK] != tc.wantOK || count[Blocked] != tc.wantBlock {
				t.Errorf("outcomes %v, want ok %d, blocked %d", count, tc.wantOK, tc.wantBlock)
			}
			if got := pages.Load(); got != tc.wantSent {
				t.Errorf("the host got %d page requests, want %d", got, tc.wantSent)
			}
			if want := tc.wantBlock - int(tc.wantSent); tc.lasting && unsent != want {
				t.Errorf("%d URLs said \"not sent\", want %d", unsent, want)
			}
		})
	}
}
