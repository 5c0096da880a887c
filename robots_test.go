package polite

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/polite-go/polite/bucket"
	"github.com/polite-go/polite/robots"
	"github.com/polite-go/polite/testbed"
)

func robotsHandler(body string, status *atomic.Int32) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			if s := status.Load(); s != 0 && s != 200 {
				w.WriteHeader(int(s))
				return
			}
			io.WriteString(w, body)
			return
		}
		io.WriteString(w, "page")
	}
}

func TestRobotsDisallowedNeverRequested(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var status atomic.Int32
		var pages atomic.Int32
		h := robotsHandler("User-agent: *\nDisallow: /private\n\nUser-agent: otherbot\nDisallow: /\n", &status)
		c, s := setup(t, &Transport{Limits: fast(), UserAgent: "polite-test/1.0"}, map[string]http.HandlerFunc{
			"a.test": func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/robots.txt" {
					pages.Add(1)
				}
				h(w, r)
			},
		})
		_, err := c.Get("http://a.test/private/secret?token=abc")
		var de *robots.DisallowedError
		if !errors.Is(err, robots.ErrDisallowed) || !errors.As(err, &de) {
			t.Fatalf("GET disallowed URL = %v, want robots.ErrDisallowed", err)
		}
		if de.Rule.Line != 2 || de.URL != "http://a.test/private/secret" {
			t.Errorf("DisallowedError = %+v, want the rule on line 2 and the URL without its query", de)
		}
		if pages.Load() != 0 {
			t.Errorf("the disallowed page was requested %d times, want 0", pages.Load())
		}
		if resp, body, err := get(t, c, "http://a.test/public"); err != nil || body != "page" {
			t.Fatalf("GET allowed URL = %v, %q, %v", resp, body, err)
		}
		if got := s.count("a.test"); got != 2 {
			t.Errorf("server saw %d requests, want 2 (robots.txt once, the public page)", got)
		}
	})
}

func TestRobotsCrawlDelaySpacesRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var status atomic.Int32
		c, s := setup(t, &Transport{Limits: Limits{Rate: 100, Burst: 10, Concurrency: 4}, UserAgent: "polite-test/1.0"},
			map[string]http.HandlerFunc{"a.test": robotsHandler("User-agent: *\nCrawl-delay: 2\n", &status)})
		for range 5 {
			if _, _, err := get(t, c, "http://a.test/page"); err != nil {
				t.Fatal(err)
			}
		}
		times := s.times("a.test")
		if len(times) != 6 {
			t.Fatalf("server saw %d requests, want 6", len(times))
		}
		for i := 2; i < len(times); i++ { // pages, after the robots.txt fetch
			if d := times[i].Sub(times[i-1]); d < 2*time.Second {
				t.Errorf("requests %d and %d were %v apart, want ≥ 2s (Crawl-delay)", i-1, i, d)
			}
		}
		if st, _ := c.Transport.(*Transport).State("a.test"); st.Ceiling != 0.5 || st.CeilingWhy != ReasonCrawlDelay {
			t.Errorf("State: ceiling %v (%q), want 0.5 (crawl-delay)", st.Ceiling, st.CeilingWhy)
		}
	})
}

func TestRobots5xxBlocksUntilRecovery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var status atomic.Int32
		status.Store(503)
		var pages atomic.Int32
		h := robotsHandler("User-agent: *\nAllow: /\n", &status)
		tr := &Transport{Limits: fast(), UserAgent: "polite-test/1.0", Retries: -1,
			RobotsCache: &robots.Cache{UserAgent: "polite-test/1.0", ErrorTTL: time.Minute}}
		c, _ := setup(t, tr, map[string]http.HandlerFunc{
			"a.test": func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/robots.txt" {
					pages.Add(1)
				}
				h(w, r)
			},
		})
		tr.RobotsCache.Client = &http.Client{Transport: tr}
		if _, err := c.Get("http://a.test/page"); !errors.Is(err, robots.ErrDisallowed) {
			t.Fatalf("GET with robots.txt answering 503 = %v, want ErrDisallowed", err)
		}
		status.Store(200)
		if _, err := c.Get("http://a.test/page"); !errors.Is(err, robots.ErrDisallowed) {
			t.Fatalf("GET within the error TTL = %v, want still ErrDisallowed", err)
		}
		time.Sleep(2 * time.Minute)
		if _, body, err := get(t, c, "http://a.test/page"); err != nil || body != "page" {
			t.Fatalf("GET after robots.txt recovered = %q, %v; want the page", body, err)
		}
		if pages.Load() != 1 {
			t.Errorf("pages requested %d times, want 1", pages.Load())
		}
	})
}

func TestRobots404AllowsAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var status atomic.Int32
		status.Store(404)
		c, _ := setup(t, &Transport{Limits: fast(), UserAgent: "polite-test/1.0"},
			map[string]http.HandlerFunc{"a.test": robotsHandler("User-agent: *\nDisallow: /\n", &status)})
		if _, body, err := get(t, c, "http://a.test/anything"); err != nil || body != "page" {
			t.Fatalf("GET with robots.txt 404 = %q, %v; want the page", body, err)
		}
	})
}

func TestRobotsIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var status atomic.Int32
		c, s := setup(t, &Transport{Limits: fast(), UserAgent: "polite-test/1.0", IgnoreRobots: true},
			map[string]http.HandlerFunc{"a.test": robotsHandler("User-agent: *\nDisallow: /\n", &status)})
		if _, body, err := get(t, c, "http://a.test/x"); err != nil || body != "page" {
			t.Fatalf("GET with IgnoreRobots = %q, %v", body, err)
		}
		if s.count("a.test") != 1 {
			t.Errorf("server saw %d requests, want 1 (no robots.txt fetch)", s.count("a.test"))
		}
	})
}

// A new copy of robots.txt that relaxes or drops the Crawl-delay gives the
// host its own rate back (without a Rater): the delay is a ceiling, not a
// ratchet.
func TestRobotsCrawlDelayLoosens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var body atomic.Value
		body.Store("User-agent: *\nCrawl-delay: 2\n")
		tr := &Transport{Limits: Limits{Rate: 100, Burst: 10, Concurrency: 4}, UserAgent: "polite-test/1.0",
			RobotsCache: &robots.Cache{UserAgent: "polite-test/1.0", TTL: time.Minute}}
		c, _ := setup(t, tr, map[string]http.HandlerFunc{"a.test": func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/robots.txt" {
				io.WriteString(w, body.Load().(string))
			}
		}})
		tr.RobotsCache.Client = &http.Client{Transport: tr}
		check := func(step string, rate float64, burst int, smooth bool) {
			t.Helper()
			if _, _, err := get(t, c, "http://a.test/page"); err != nil {
				t.Fatal(err)
			}
			h := tr.Registry().Get("a.test")
			defer tr.Registry().Put(h)
			b := &h.bucket
			if b.Rate() != rate || b.Burst() != burst || b.Smooth() != smooth {
				t.Errorf("%s: rate %v, burst %d, smooth %v; want %v, %d, %v", step, b.Rate(), b.Burst(), b.Smooth(), rate, burst, smooth)
			}
		}
		check("Crawl-delay: 2", 0.5, 1, true)
		body.Store("User-agent: *\nCrawl-delay: 1\n")
		time.Sleep(2 * time.Minute)
		check("relaxed to 1", 1, 1, true)
		body.Store("User-agent: *\nDisallow:\n")
		time.Sleep(2 * time.Minute)
		check("dropped", 100, 10, false)
	})
}

// TestRobotsWithoutUserAgent: a Transport without a UserAgent obeys
// robots.txt too, matched as Go's own client (its "*" group, or a group
// naming Go-http-client), unless told to ignore it (issue 18, item 7).
func TestRobotsWithoutUserAgent(t *testing.T) {
	for _, tc := range []struct {
		name, robots string
		ignore       bool
		want         []string // paths that must come back disallowed
	}{
		{"star group", "User-agent: *\nDisallow: /private\n", false, []string{"/private"}},
		{"go's own group", "User-agent: *\nDisallow: /a\n\nUser-agent: Go-http-client\nDisallow: /b\n", false, []string{"/b"}},
		{"ignored", "User-agent: *\nDisallow: /\n", true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var status atomic.Int32
				var pages []string
				h := robotsHandler(tc.robots, &status)
				tr := &Transport{Limits: fast(), IgnoreRobots: tc.ignore}
				n := &testbed.Network{}
				n.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path != "/robots.txt" {
						pages = append(pages, r.URL.Path)
					}
					h(w, r)
				}))
				defer n.Close()
				base := n.Transport()
				defer base.CloseIdleConnections()
				tr.Base = base
				c := &http.Client{Transport: tr}
				var refused []string
				for _, p := range []string{"/a", "/b", "/private", "/public"} {
					resp, err := c.Get("http://a.test" + p)
					var de *robots.DisallowedError
					switch {
					case errors.As(err, &de):
						refused = append(refused, p)
					case err != nil:
						t.Fatalf("GET %s: %v", p, err)
					default:
						resp.Body.Close()
					}
				}
				if !slices.Equal(refused, tc.want) {
					t.Errorf("disallowed %q, want %q (pages sent: %q)", refused, tc.want, pages)
				}
				for _, p := range refused {
					if slices.Contains(pages, p) {
						t.Errorf("%s was sent though disallowed", p)
					}
				}
			})
		})
	}
}

// robots.txt is fetched on its own terms, not on those of the request
// that needed it: a request costing more than the host's burst fails
// alone (found through polite proxy, issue 32, where a client's
// Polite-Cost made the robots.txt fetch fail and so every client's
// requests to the host).
func TestRobotsFetchTakesNoRequestTerms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var status atomic.Int32
		c, s := setup(t, &Transport{Limits: Limits{Rate: 10, Burst: 1, Concurrency: 4}, UserAgent: "polite-test/1.0"},
			map[string]http.HandlerFunc{"a.test": robotsHandler("User-agent: *\nAllow: /\n", &status)})
		req, _ := http.NewRequestWithContext(WithoutRetries(WithCost(context.Background(), 2)), http.MethodGet, "http://a.test/dear", nil)
		if _, err := c.Do(req); !errors.Is(err, bucket.ErrExceedsBurst) {
			t.Fatalf("a request costing 2 with burst 1: %v, want bucket.ErrExceedsBurst", err)
		}
		if _, body, err := get(t, c, "http://a.test/page"); err != nil || body != "page" {
			t.Fatalf("the next request: %q, %v; want the page (robots.txt fetched)", body, err)
		}
		if n := len(s.arrivals["a.test"]); n != 2 {
			t.Errorf("a.test saw %d requests, want 2: robots.txt and the page", n)
		}
	})
}
