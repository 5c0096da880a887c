package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/polite-go/polite/crawl"
	"github.com/polite-go/polite/testbed"
)

// A request that ran out of its --timeout after it was sent was classed
// canceled: recorded network_error after one attempt, never retried,
// although --help says timeouts are retried (issue 18, item 2). It is now
// the outcome timeout, after --retries retries.
func TestTimeoutOutcomeRetried(t *testing.T) {
	var sent atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		sent.Add(1)
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer srv.Close()
	code, res, stderr := runHostile(t, t.TempDir(), urls(srv.URL, "/slow"),
		"--timeout", "200ms", "--retries", "2", "--max-delay", "50ms", "--rate", "100")
	if code != ExitFailures {
		t.Errorf("exit %d, want %d; stderr: %s", code, ExitFailures, stderr)
	}
	r := res[srv.URL+"/slow"]
	if r.Outcome != crawl.Timeout || r.Attempts != 3 || !strings.Contains(r.Error, "timeout") {
		t.Errorf("outcome %q after %d attempts (%q), want timeout after 3", r.Outcome, r.Attempts, r.Error)
	}
	if n := sent.Load(); n != 3 {
		t.Errorf("host got %d requests, want 3", n)
	}
}

// The URLs of a blocked host that were never sent carried the same record
// as the page that served the challenge (issue 18, item 2): now they say
// they were not sent, with no status and no attempts. The block is
// re-checked once first (--max-delay later; issue 17, defect 10): two
// challenge records, one not sent.
func TestBlockedHostUnsentURLsSaySo(t *testing.T) {
	h := &testbed.Hostile{Status: 403, Body: `<html><div class="g-recaptcha"></div></html>`}
	srv := httptest.NewServer(h)
	defer srv.Close()
	code, res, stderr := runHostile(t, t.TempDir(), urls(srv.URL, "/a", "/b", "/c"), "--concurrency", "1", "--rate", "100", "--max-delay", "100ms")
	if code != ExitFailures {
		t.Errorf("exit %d, want %d; stderr: %s", code, ExitFailures, stderr)
	}
	sentN, unsent := 0, 0
	for u, r := range res {
		if r.Outcome != crawl.Blocked {
			t.Errorf("%s: outcome %q, want blocked", u, r.Outcome)
		}
		switch {
		case r.Attempts == 1 && r.Status == 403 && !strings.Contains(r.Error, "not sent"):
			sentN++
		case r.Attempts == 0 && r.Status == 0 && strings.Contains(r.Error, "not sent"):
			unsent++
		default:
			t.Errorf("%s: attempts %d status %d error %q: neither the challenge nor a URL not sent", u, r.Attempts, r.Status, r.Error)
		}
	}
	if sentN != 2 || unsent != 1 {
		t.Errorf("%d challenge records and %d not-sent records, want 2 and 1", sentN, unsent)
	}
}

// A redirect was recorded ok with its 3xx status, the page behind it never
// fetched; a redirect loop was ok too (issue 18, item 2). Redirects are now
// followed, and a loop ends as redirect_loop, not retried.
func TestRedirects(t *testing.T) {
	loop := &testbed.Hostile{Location: "/a"}
	lsrv := httptest.NewServer(loop)
	defer lsrv.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/new", http.StatusMovedPermanently) })
	mux.HandleFunc("/new", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("the page")) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	code, res, stderr := runHostile(t, t.TempDir(), urls(lsrv.URL, "/a")+urls(srv.URL, "/old"), "--rate", "100", "--max-delay", "50ms")
	if code != ExitFailures {
		t.Errorf("exit %d, want %d; stderr: %s", code, ExitFailures, stderr)
	}
	if r := res[srv.URL+"/old"]; r.Outcome != crawl.OK || r.Status != 200 || r.FinalURL != srv.URL+"/new" || r.Bytes != int64(len("the page")) || r.Attempts != 1 {
		t.Errorf("/old: outcome %q status %d final %q bytes %d attempts %d, want ok 200 %s/new %d 1", r.Outcome, r.Status, r.FinalURL, r.Bytes, r.Attempts, srv.URL, len("the page"))
	}
	if r := res[lsrv.URL+"/a"]; r.Outcome != crawl.RedirectLoop || !strings.Contains(r.Error, "redirect") {
		t.Errorf("loop: outcome %q (%q), want redirect_loop", r.Outcome, r.Error)
	}
	if n := loop.Count("/a"); n > 11 {
		t.Errorf("the loop got %d requests, want at most 11", n)
	}
}

// A redirect to a destination the job may not connect to (an unlisted
// loopback port, a private address) ends at once, saying why and how to
// allow it; before, it waited out every retry and said only "disallowed by
// implied rule Disallow: /". (Its robots.txt is what is refused first, so
// the outcome stays robots_unreachable.)
func TestRedirectToRefusedDestination(t *testing.T) {
	inner := &testbed.Hostile{Body: "internal"}
	isrv := httptest.NewServer(inner)
	defer isrv.Close()
	srv := httptest.NewServer(&testbed.Hostile{Location: isrv.URL + "/secret"})
	defer srv.Close()
	start := time.Now()
	code, res, stderr := runHostile(t, t.TempDir(), urls(srv.URL, "/a"), "--rate", "100", "--max-delay", "200ms", "--retries", "3")
	if code != ExitFailures {
		t.Errorf("exit %d, want %d; stderr %s", code, ExitFailures, stderr)
	}
	if r := res[srv.URL+"/a"]; r.Outcome != crawl.RobotsUnreachable || !strings.Contains(r.Error, "--allow-private") || r.Attempts != 1 {
		t.Errorf("outcome %q after %d attempts (%s), want robots_unreachable after 1 (the redirect) naming --allow-private", r.Outcome, r.Attempts, r.Error)
	}
	if n := inner.Count(""); n != 0 {
		t.Errorf("the refused destination got %d requests", n)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("took %v: the refusal was retried", d)
	}
}

// A robots.txt that never arrives within the URL's --timeout ended the URL
// as network_error, although the URL itself was never sent: it is
// robots_unreachable, and says so.
func TestRobotsNeverArrives(t *testing.T) {
	var pages atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			select {
			case <-r.Context().Done():
			case <-time.After(time.Second):
			}
			return
		}
		pages.Add(1)
	}))
	defer srv.Close()
	code, res, stderr := runHostile(t, t.TempDir(), urls(srv.URL, "/a"), "--timeout", "100ms", "--retries", "1", "--rate", "100")
	if code != ExitFailures {
		t.Errorf("exit %d, want %d; stderr %s", code, ExitFailures, stderr)
	}
	if r := res[srv.URL+"/a"]; r.Outcome != crawl.RobotsUnreachable || r.Attempts != 0 || !strings.Contains(r.Error, "robots.txt") {
		t.Errorf("outcome %q after %d attempts (%s), want robots_unreachable after 0", r.Outcome, r.Attempts, r.Error)
	}
	if n := pages.Load(); n != 0 {
		t.Errorf("the page got %d requests", n)
	}
}

// `polite robots URL` followed a robots.txt redirect to any address, where
// fetch refuses one that is not public (issue 29, item 7): it checks each
// connection's address as fetch does, URL's own loopback port excepted,
// and --allow-private lifts the check.
func TestRobotsCommandRefusesPrivateRedirect(t *testing.T) {
	inner := &testbed.Hostile{Robots: "User-agent: *\nDisallow: /\n"}
	isrv := httptest.NewServer(inner)
	defer isrv.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, isrv.URL+"/robots.txt", http.StatusMovedPermanently)
	}))
	defer srv.Close()
	code, stdout, stderr := politeCmd(t, "robots", srv.URL+"/a")
	if n := inner.Count("/robots.txt"); n != 0 {
		t.Errorf("the redirect's private target got %d requests, want 0", n)
	}
	if code != ExitFailures || !strings.Contains(stdout, "not public") || !strings.Contains(stdout, "--allow-private") {
		t.Errorf("exit %d, stdout %q, stderr %q; want %d, unreachable: not public, naming --allow-private", code, stdout, stderr, ExitFailures)
	}
	code, stdout, _ = politeCmd(t, "robots", "--allow-private", srv.URL+"/a")
	if n := inner.Count("/robots.txt"); n != 1 || code != ExitFailures || !strings.Contains(stdout, "rules read") {
		t.Errorf("with --allow-private: target asked %d times, exit %d, stdout %q; want 1, %d, rules read", n, code, stdout, ExitFailures)
	}
}
