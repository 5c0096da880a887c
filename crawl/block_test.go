package crawl

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/adaptive"
	"github.com/polite-go/polite/retry"
	"github.com/polite-go/polite/testbed"
)

func TestSection(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://a.test/search?q=x", "search"},
		{"http://a.test/search/deep/er", "search"},
		{"http://a.test/p/1", "p"},
		{"http://a.test/", ""},
		{"http://a.test", ""},
		{"http://a.test?x=/y", ""},
		{"http://a.test/index.html#top", "index.html"},
		{"http://a.test/a;jsessionid=1", "a"},
	} {
		if got := section(tc.in); got != tc.want {
			t.Errorf("section(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// section reads any URL a list or a Location header gives: it never
// panics, and a section is one path segment.
func FuzzSection(f *testing.F) {
	for _, s := range []string{"http://a.test/search?q=x", "https://a/b/c", "", "://", "http://a?x=/y#/z", "/p/1", "http://[::1]:80/x;y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, u string) {
		if s := section(u); strings.ContainsAny(s, "/?#;") {
			t.Errorf("section(%q) = %q: more than one segment", u, s)
		}
	})
}

// The rules of block.go, step by step: which answers make a wall, which
// close a path, and which leave the host open.
func TestBlockStateSteps(t *testing.T) {
	type step struct {
		url  string
		o    polite.Outcome
		wall bool // the host is a wall after the step
	}
	for _, tc := range []struct {
		name   string
		steps  []step
		closed []string // URLs not to be sent at the end
		open   []string // URLs still to be sent
	}{
		{name: "two paths in a row: a wall", steps: []step{
			{"http://a/x/1", polite.Blocked, false}, {"http://a/y/1", polite.Blocked, true},
		}, closed: []string{"http://a/z/1"}},
		{name: "one path, three in a row: a wall", steps: []step{
			{"http://a/x/1", polite.Blocked, false}, {"http://a/x/2", polite.Blocked, false}, {"http://a/x/3", polite.Blocked, true},
		}},
		{name: "a page between: a closed path, an open host", steps: []step{
			{"http://a/search?q=1", polite.Blocked, false}, {"http://a/p/1", polite.OK, false},
			{"http://a/search?q=2", polite.Blocked, false}, {"http://a/p/2", polite.OK, false},
		}, closed: []string{"http://a/search?q=3"}, open: []string{"http://a/p/3", "http://a/other"}},
		{name: "a path that also serves pages stays open", steps: []step{
			{"http://a/p/1", polite.Blocked, false}, {"http://a/p/2", polite.OK, false}, {"http://a/p/3", polite.Blocked, false},
		}, open: []string{"http://a/p/4"}},
		{name: "a throttle neither breaks nor extends the run", steps: []step{
			{"http://a/x/1", polite.Blocked, false}, {"http://a/y/1", polite.Throttled, false}, {"http://a/y/1", polite.Blocked, true},
		}},
		{name: "a 404 is an answer, not a challenge", steps: []step{
			{"http://a/x/1", polite.Blocked, false}, {"http://a/y/1", polite.ClientError, false}, {"http://a/y/2", polite.Blocked, false},
		}, open: []string{"http://a/z/1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b blockState
			now := time.Unix(1e9, 0)
			for i, s := range tc.steps {
				b.heard(s.url, s.o, "cf-mitigated: challenge", now)
				if got := b.closed("http://a/never-seen") != ""; got != s.wall {
					t.Fatalf("after step %d (%s %v): wall %v, want %v (%q)", i, s.url, s.o, got, s.wall, b.wall)
				}
			}
			for _, u := range tc.closed {
				if b.closed(u) == "" {
					t.Errorf("closed(%q) = \"\", want a reason", u)
				}
			}
			for _, u := range tc.open {
				if why := b.closed(u); why != "" {
					t.Errorf("closed(%q) = %q, want \"\"", u, why)
				}
			}
		})
	}
}

// However a host spreads its challenges, the job asks it a bounded number
// of times: blockCap challenges that outnumber its pages make a wall.
func TestBlockStateCap(t *testing.T) {
	var b blockState
	now := time.Unix(1e9, 0)
	for i := 0; b.wall == ""; i++ {
		if i > 100 {
			t.Fatal("no wall after 100 alternations")
		}
		b.heard(fmt.Sprintf("http://a/s%d/x", i), polite.Blocked, "captcha", now)
		if i%4 == 0 {
			b.heard(fmt.Sprintf("http://a/ok%d", i), polite.OK, "", now)
		}
	}
	if b.total > blockCap {
		t.Errorf("a wall after %d challenges, want at most %d", b.total, blockCap)
	}
}

// blockJob runs list against srv's hosts within limit and returns the
// results by URL; a job that does not finish in time fails the test.
func blockJob(t *testing.T, srv *testbed.Server, list string, opts Options, limit time.Duration) (map[string]Result, time.Duration) {
	t.Helper()
	dir := t.TempDir()
	if opts.Transport == nil {
		opts.Transport = &polite.Transport{Limits: polite.Limits{Rate: 200, Burst: 5, Concurrency: 2}}
	}
	opts.Transport.Base = srv.Transport()
	if opts.Workers == 0 {
		opts.Workers = 4
	}
	j := loadJob(t, dir, list, opts)
	defer j.Close()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	start := time.Now()
	sum, err := j.Run(ctx, nil)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Interrupted {
		t.Fatalf("the job did not end within %v: %d of %d done", limit, sum.Done, sum.Total)
	}
	res := map[string]Result{}
	for _, r := range readResults(t, dir) {
		res[r.URL] = r
	}
	return res, took
}

// blockedUnder checks that the URLs under path ended blocked and all
// others ok.
func blockedUnder(t *testing.T, res map[string]Result, path string) {
	t.Helper()
	for u, r := range res {
		want := OK
		if strings.Contains(u, path) {
			want = Blocked
		}
		if r.Outcome != want {
			t.Errorf("%s: %s %q, want %s", u, r.Outcome, r.Error, want)
		}
	}
}

// Issue 29, item 1: a host that challenges every page ends its URLs
// within seconds, at two requests, with the default re-check (it took a
// whole --max-delay, 60 s, before); its URLs say they were never sent.
func TestWallEndsPromptly(t *testing.T) {
	for _, status := range []int{200, 403} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			srv := testbed.NewServer(testbed.HostConfig{Name: "wall.test", SoftBlock: testbed.SoftBlock{Always: true, Status: status}},
				testbed.HostConfig{Name: "fine.test"})
			if err := srv.Start(); err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			var list strings.Builder
			for i := range 25 {
				fmt.Fprintf(&list, "http://wall.test/p%d/x%d\nhttp://fine.test/p/%d\n", i%5, i, i)
			}
			res, took := blockJob(t, srv, list.String(), Options{}, 20*time.Second)
			unsentN := 0
			for u, r := range res {
				switch {
				case strings.HasPrefix(u, "http://fine.test/") && r.Outcome != OK:
					t.Errorf("%s: %s %q, want ok", u, r.Outcome, r.Error)
				case strings.HasPrefix(u, "http://wall.test/") && r.Outcome != Blocked:
					t.Errorf("%s: %s %q, want blocked", u, r.Outcome, r.Error)
				case strings.HasPrefix(r.Error, "not sent: "):
					unsentN++
				}
			}
			if got := srv.Host("wall.test").Stats().Blocked; got != 2 {
				t.Errorf("wall.test was asked %d times, want 2", got)
			}
			if unsentN != 23 {
				t.Errorf("%d URLs said \"not sent\", want 23", unsentN)
			}
			t.Logf("took %v", took)
		})
	}
}

// Issue 29, item 1: a WAF rule on one path (/search) loses that path's
// pages, at two challenges, and never the host's others, wherever the
// re-check would have landed.
func TestPathRuleKeepsOtherPages(t *testing.T) {
	for _, conc := range []int{1, 4} {
		t.Run(fmt.Sprint("workers", conc), func(t *testing.T) {
			srv := testbed.NewServer(testbed.HostConfig{Name: "waf.test", SoftBlock: testbed.SoftBlock{Paths: []string{"/search"}}})
			if err := srv.Start(); err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			var list strings.Builder
			for i := range 30 {
				if i%3 == 0 {
					fmt.Fprintf(&list, "http://waf.test/search?q=%d\n", i)
				} else {
					fmt.Fprintf(&list, "http://waf.test/p/%d\n", i)
				}
			}
			res, _ := blockJob(t, srv, list.String(), Options{Workers: conc, BlockRecheck: 100 * time.Millisecond}, 30*time.Second)
			blockedUnder(t, res, "/search")
			st := srv.Host("waf.test").Stats()
			if st.Blocked > int64(2+conc) {
				t.Errorf("the host answered %d challenges, want at most %d", st.Blocked, 2+conc)
			}
		})
	}
}

// Issue 29, item 1: a 429 after a challenge is a throttle: the host's
// pages are fetched at its pace, not given up after minutes.
func TestChallengeThen429(t *testing.T) {
	srv := testbed.NewServer(testbed.HostConfig{Name: "c.test", Rate: 10, Burst: 1, Status: 429, RetryAfter: testbed.RetryAfterSeconds,
		SoftBlock: testbed.SoftBlock{Paths: []string{"/search"}}})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	list := "http://c.test/search?q=1\n"
	for i := range 20 {
		list += fmt.Sprintf("http://c.test/p/%d\n", i)
	}
	// As the CLI: adaptive, from a start above the host's capacity.
	tr := &polite.Transport{Limits: polite.Limits{Rate: 15, Burst: 2, Concurrency: 2}, Adaptive: &adaptive.Config{}}
	res, took := blockJob(t, srv, list, Options{Workers: 4, BlockRecheck: 100 * time.Millisecond, Transport: tr}, 20*time.Second)
	blockedUnder(t, res, "/search")
	t.Logf("took %v; the host: %+v", took, srv.Host("c.test").Stats())
}

// A host whose pages redirect to a challenge, on another host (a bot
// manager's challenge domain) or on itself: every URL ends blocked, the
// job ends, and the site gets at most one request a URL. With the hop to
// another host, refused for that host's block, the URL was handed out
// again and again for good (issue 29, a hang).
func TestRedirectToChallengeEnds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		own     bool // the challenge is on the site itself
		workers int
	}{
		{"elsewhere, one worker", false, 1}, {"elsewhere, four workers", false, 4},
		{"same host, one worker", true, 1}, {"same host, four workers", true, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wall := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/robots.txt" {
					http.NotFound(w, r)
					return
				}
				challenge(w)
			}))
			defer wall.Close()
			var sent atomic.Int64
			var site *httptest.Server
			site = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.URL.Path == "/robots.txt":
					http.NotFound(w, r)
				case r.URL.Path == "/challenge":
					challenge(w)
				case tc.own:
					sent.Add(1)
					http.Redirect(w, r, site.URL+"/challenge?from="+r.URL.Path, http.StatusFound)
				default:
					sent.Add(1)
					http.Redirect(w, r, wall.URL+"/challenge?from="+r.URL.Path, http.StatusFound)
				}
			}))
			defer site.Close()
			var list strings.Builder
			for i := range 10 {
				fmt.Fprintf(&list, "%s/p/%d\n", site.URL, i)
			}
			tr := &polite.Transport{Limits: polite.Limits{Rate: 1000, Burst: 10, Concurrency: tc.workers}}
			dir := t.TempDir()
			j := loadJob(t, dir, list.String(), Options{Workers: tc.workers, BlockRecheck: 50 * time.Millisecond, Transport: tr})
			defer j.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			sum, err := j.Run(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Interrupted {
				t.Fatalf("the job did not end: %d of %d done; the site got %d requests", sum.Done, sum.Total, sent.Load())
			}
			for _, r := range readResults(t, dir) {
				if r.Outcome != Blocked {
					t.Errorf("%s: %s %q, want blocked", r.URL, r.Outcome, r.Error)
				}
			}
			if n := sent.Load(); n > 10 {
				t.Errorf("the site got %d requests for 10 URLs", n)
			}
		})
	}
}

// Every soft-block shape ends: challenges always, after a while, at
// random, on one path, with a 200, 403, 429 or 503; hosts under one budget
// or two; one request in flight or several. Each URL ends once, and no
// host is asked more than the bounds allow.
func TestSoftBlocksAlwaysEnd(t *testing.T) {
	shapes := []testbed.SoftBlock{{Always: true, Status: 200}, {After: 3}, {Prob: 0.3}, {Prob: 0.7, Status: 503},
		{Prob: 0.5, Status: 429}, {Paths: []string{"/search"}}}
	for i, sb := range shapes {
		for _, domain := range []bool{false, true} {
			conc := 1 + 3*(i%2)
			t.Run(fmt.Sprintf("%+v/conc%d/domain%v", sb, conc, domain), func(t *testing.T) {
				srv := testbed.NewServer(testbed.HostConfig{Name: "a.w.test", SoftBlock: sb, Rate: 200, Burst: 5, RetryAfter: testbed.RetryAfterSeconds},
					testbed.HostConfig{Name: "b.w.test", SoftBlock: sb})
				if err := srv.Start(); err != nil {
					t.Fatal(err)
				}
				defer srv.Close()
				var list strings.Builder
				for i := range 20 {
					p := []string{"/p/", "/q/", "/search/"}[i%3]
					fmt.Fprintf(&list, "http://a.w.test%s%d\nhttp://b.w.test%s%d\n", p, i, p, i)
				}
				tr := &polite.Transport{Limits: polite.Limits{Rate: 100, Burst: 5, Concurrency: conc}, Backoff: retry.Backoff{Cap: 300 * time.Millisecond}}
				if domain {
					tr.Key = polite.KeyDomain
				}
				// A robots.txt fetch refused by the shared mark waits the
				// backoff's cap, as an unreachable one does: keep it short.
				res, _ := blockJob(t, srv, list.String(), Options{Workers: 8, BlockRecheck: 20 * time.Millisecond, Transport: tr}, 30*time.Second)
				if len(res) != 40 {
					t.Errorf("%d results, want 40", len(res))
				}
				for _, name := range []string{"a.w.test", "b.w.test"} {
					if n := srv.Host(name).Stats().Blocked; n > blockCap+int64(conc) {
						t.Errorf("%s answered %d challenges, want at most %d", name, n, blockCap+conc)
					}
				}
			})
		}
	}
}

// Two workers of a fleet wake for the same re-check: the first lifts the
// block mark, and the second's Unblock finds none. The second must send
// its probe too, not make the host a wall (its URLs all "not sent" as if
// the Store kept blocks: review of issue 29).
func TestMarkLiftedByAnotherWorker(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { challenge(w) }))
	defer srv.Close()
	tr := &polite.Transport{Limits: polite.Limits{Rate: 1000, Burst: 10}, IgnoreRobots: true}
	j := loadJob(t, t.TempDir(), srv.URL+"/a\n", Options{Transport: tr, BlockRecheck: time.Second})
	defer j.Close()
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := &host{key: strings.TrimPrefix(srv.URL, "http://")}
	now := time.Now()
	if _, why := tr.Ready(j.budgetOf(h), now); why != polite.ReasonBlock {
		t.Fatalf("after a challenge the host is %q, want blocked", why)
	}
	if d, why := j.blockReady(h, now); d <= 0 || why != polite.ReasonBlock {
		t.Fatalf("blockReady at the challenge = %v, %q; want a wait", d, why)
	}
	tr.Unblock(j.budgetOf(h)) // the other worker
	if d, why := j.blockReady(h, now.Add(2*time.Second)); d != 0 || why != "" {
		t.Errorf("blockReady after the mark was lifted elsewhere = %v, %q; want the probe to go", d, why)
	}
	if why := h.blk.closed(srv.URL + "/b"); why != "" {
		t.Errorf("the host is closed: %s", why)
	}
}

// A server that words its 503 differently each time must not grow the
// retry statistics by a key a retry (review of issue 29).
func TestRetryReasonsBounded(t *testing.T) {
	var j Job
	for i := range 1000 {
		j.countRetry(fmt.Sprintf("503 busy %d", i))
	}
	j.countRetry("503 busy 3")
	if n := len(j.stats.Retries); n > maxRetryReasons+1 {
		t.Errorf("%d retry reasons kept, want at most %d", n, maxRetryReasons+1)
	}
	if got, want := j.stats.Retries["other"], 1000-maxRetryReasons; got != want {
		t.Errorf("other = %d, want %d", got, want)
	}
	if got := j.stats.Retries["503 busy 3"]; got != 2 {
		t.Errorf("a reason seen before counts on: %d, want 2", got)
	}
}
