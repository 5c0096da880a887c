package crawl

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/bucket"
	"github.com/polite-go/polite/retry"
)

// Ten hosts redirecting to one slow host starved an unrelated host: the
// hops waited for the slow host's slot holding workers (issue 17, defect
// 7; 2 of 20 URLs in 40 s). A hop waits in the queue like any URL of its
// host, so the unrelated host's URLs all finish while the slow host still
// holds its one request.
func TestRedirectHopsDoNotHoldWorkers(t *testing.T) {
	release := make(chan struct{})
	var slowSeen atomic.Int64
	base := serveAll(t, func(w http.ResponseWriter, r *http.Request) {
		switch host, _, _ := strings.Cut(r.Host, ":"); {
		case r.URL.Path == "/robots.txt":
			http.NotFound(w, r)
		case host == "slow.test":
			slowSeen.Add(1)
			select {
			case <-release:
			case <-r.Context().Done():
			}
			fmt.Fprint(w, "slow")
		case strings.HasPrefix(host, "r"):
			http.Redirect(w, r, "http://slow.test/from/"+host+r.URL.Path, http.StatusFound)
		default:
			fmt.Fprint(w, "ok")
		}
	})
	var list strings.Builder
	for i := range 10 {
		for p := range 3 {
			fmt.Fprintf(&list, "http://r%d.test/%d\n", i, p)
		}
	}
	for p := range 20 {
		fmt.Fprintf(&list, "http://u.test/%d\n", p)
	}
	tr := &polite.Transport{Base: base, Limits: polite.Limits{Rate: bucket.Inf, Concurrency: 1}}
	j := loadJob(t, t.TempDir(), list.String(), Options{Transport: tr, Workers: 4, Bodies: BodiesNone, Timeout: time.Minute})
	defer j.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan Summary, 1)
	go func() {
		sum, err := j.Run(ctx, nil)
		if err != nil {
			t.Error(err)
		}
		done <- sum
	}()
	unrelated := func() int64 {
		for _, h := range j.Progress(-1).Hosts {
			if h.Host == "u.test:80" || h.Host == "u.test" {
				return h.Done
			}
		}
		return 0
	}
	deadline := time.Now().Add(20 * time.Second) // a bound on a hang, not a timing
	for unrelated() < 20 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	got := unrelated()
	close(release)
	sum := <-done
	if got < 20 {
		t.Errorf("u.test: %d of 20 URLs done while slow.test held its request (%d requests reached it), want 20", got, slowSeen.Load())
	}
	if sum.Done != sum.Total || sum.Outcomes[OK] != sum.Total {
		t.Errorf("summary %+v, want every URL ok", sum)
	}
}

// With SameHost, redirects stay on the listed URL's host (issue 17,
// defect 6): a hop to another host is not followed, and the 3xx is the
// answer, its target recorded; one to the same name on another scheme or
// port is followed.
func TestSameHost(t *testing.T) {
	var other atomic.Int64
	base := serveAll(t, func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := strings.Cut(r.Host, ":")
		switch {
		case r.URL.Path == "/robots.txt":
			http.NotFound(w, r)
		case host == "other.test":
			other.Add(1)
			fmt.Fprint(w, "elsewhere")
		case r.URL.Path == "/away":
			http.Redirect(w, r, "http://user:secret@other.test/landing", http.StatusFound)
		case r.URL.Path == "/port":
			http.Redirect(w, r, "http://"+host+":8080/landing", http.StatusMovedPermanently)
		default:
			fmt.Fprint(w, "home")
		}
	})
	tr := &polite.Transport{Base: base, Limits: polite.Limits{Rate: bucket.Inf, Concurrency: 2}}
	dir := t.TempDir()
	sum := runJob(t, dir, tr, "http://a.test/away\nhttp://a.test/port\n", Options{SameHost: true, Bodies: BodiesNone})
	if sum.Outcomes[OK] != 2 {
		t.Fatalf("summary %+v, want 2 ok", sum)
	}
	for _, r := range readResults(t, dir) {
		switch r.URL {
		case "http://a.test/away":
			if r.Status != http.StatusFound || r.RedirectNotFollowed != "http://user:xxxxx@other.test/landing" || r.FinalURL != "" {
				t.Errorf("%s: status %d, not followed %q, final %q; want 302, the target (redacted), no final URL", r.URL, r.Status, r.RedirectNotFollowed, r.FinalURL)
			}
		case "http://a.test/port":
			if r.Status != http.StatusOK || r.FinalURL != "http://a.test:8080/landing" || r.RedirectNotFollowed != "" {
				t.Errorf("%s: status %d, final %q, not followed %q; want 200 from http://a.test:8080/landing", r.URL, r.Status, r.FinalURL, r.RedirectNotFollowed)
			}
		}
	}
	if n := other.Load(); n != 0 {
		t.Errorf("other.test got %d requests, want none", n)
	}
}

// A redirect to a scheme the job cannot follow (ftp:, file:, javascript:,
// data:) was recorded ok, status 302, with no word of its target (issue 29,
// item 10): the URL did not get its page. It ends http_error, not retried,
// its error naming the refused target quoted and redirect_not_followed
// holding it; a 3xx with no Location is still the answer, ok.
func TestRedirectToOtherScheme(t *testing.T) {
	long := "data:text/plain," + strings.Repeat("a", 5000)
	targets := map[string]string{
		"/ftp":  "ftp://user:secret@files.test/x",
		"/file": "file:///etc/passwd",
		"/js":   "javascript:alert(1)",
		"/data": long,
	}
	base := serveAll(t, func(w http.ResponseWriter, r *http.Request) {
		if to, ok := targets[r.URL.Path]; ok {
			w.Header().Set("Location", to)
			w.WriteHeader(http.StatusFound)
			return
		}
		switch r.URL.Path {
		case "/robots.txt":
			http.NotFound(w, r)
		case "/bare":
			w.WriteHeader(http.StatusFound) // no Location: the answer
		}
	})
	tr := &polite.Transport{Base: base, Limits: polite.Limits{Rate: bucket.Inf, Concurrency: 2}}
	dir := t.TempDir()
	runJob(t, dir, tr, "http://a.test/ftp\nhttp://a.test/file\nhttp://a.test/js\nhttp://a.test/data\nhttp://a.test/bare\n", Options{Bodies: BodiesNone})
	want := map[string]string{
		"/ftp":  "ftp://user:xxxxx@files.test/x",
		"/file": "file:///etc/passwd",
		"/js":   "javascript:alert(1)",
		"/data": long[:maxTarget] + "…",
	}
	for _, r := range readResults(t, dir) {
		path := strings.TrimPrefix(r.URL, "http://a.test")
		if path == "/bare" {
			if r.Outcome != OK || r.Status != http.StatusFound {
				t.Errorf("%s: outcome %q status %d, want ok 302", r.URL, r.Outcome, r.Status)
			}
			continue
		}
		to := want[path]
		if r.Outcome != HTTPError || r.Status != http.StatusFound || r.Attempts != 1 ||
			r.RedirectNotFollowed != to || !strings.Contains(r.Error, fmt.Sprintf("%q", cutTo(to, maxNamed))) {
			t.Errorf("%s: outcome %q status %d attempts %d not followed %q error %q; want http_error 302 1, the target %q named quoted",
				r.URL, r.Outcome, r.Status, r.Attempts, r.RedirectNotFollowed, r.Error, to)
		}
	}
}

// A refused redirect whose body broke off is retried like any response
// that broke off; what the retry gets is the answer, not the refusal of the
// attempt before.
func TestRefusedRedirectRetried(t *testing.T) {
	var n atomic.Int64
	base := serveAll(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		if n.Add(1) == 1 {
			w.Header().Set("Location", "ftp://files.test/x")
			w.Header().Set("Content-Length", "100")
			w.WriteHeader(http.StatusFound)
			w.Write([]byte("cut short")) // then the connection closes
			return
		}
		fmt.Fprint(w, "the page")
	})
	tr := &polite.Transport{Base: base, Limits: polite.Limits{Rate: bucket.Inf}}
	dir := t.TempDir()
	runJob(t, dir, tr, "http://a.test/p\n", Options{Bodies: BodiesNone, Backoff: retry.Backoff{Base: time.Millisecond, Cap: time.Millisecond}})
	res := readResults(t, dir)
	if len(res) != 1 || res[0].Outcome != OK || res[0].Status != http.StatusOK || res[0].Error != "" || res[0].RedirectNotFollowed != "" || res[0].Attempts != 2 {
		t.Errorf("results %+v; want one ok, 200, after 2 attempts, no refusal", res)
	}
}

// serveAll serves h on loopback and returns a base transport that sends
// every host's requests there.
func serveAll(t *testing.T, h http.HandlerFunc) *http.Transport {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	base := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	t.Cleanup(base.CloseIdleConnections)
	return base
}
