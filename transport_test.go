package polite

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/polite-go/polite/adaptive"
	"github.com/polite-go/polite/breaker"
	"github.com/polite-go/polite/bucket"
	"github.com/polite-go/polite/retry"
	"github.com/polite-go/polite/testbed"
)

// server records when each request arrived, per host, and answers with the
// handler for the host.
type server struct {
	mu       sync.Mutex // guards arrivals
	arrivals map[string][]time.Time
	handlers map[string]http.HandlerFunc
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host := r.Host
	if i := strings.IndexByte(host, ':'); i >= 0 {
		host = host[:i]
	}
	s.mu.Lock()
	s.arrivals[host] = append(s.arrivals[host], time.Now())
	s.mu.Unlock()
	if h, ok := s.handlers[host]; ok {
		h(w, r)
		return
	}
	io.WriteString(w, "ok")
}

func (s *server) count(host string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.arrivals[host])
}

func (s *server) times(host string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.arrivals[host]...)
}

// setup serves handlers over an in-memory network inside a synctest bubble
// and returns a client whose Transport is t (Base filled in).
func setup(t *testing.T, tr *Transport, handlers map[string]http.HandlerFunc) (*http.Client, *server) {
	t.Helper()
	n := &testbed.Network{}
	s := &server{arrivals: map[string][]time.Time{}, handlers: handlers}
	n.Serve(s)
	t.Cleanup(func() { n.Close() })
	base := n.Transport()
	t.Cleanup(base.CloseIdleConnections)
	tr.Base = base
	if tr.UserAgent == "" {
		// These handlers answer every path alike: robots.txt (which a
		// Transport fetches by default) is the subject of robots_test.go,
		// and of tests here that give a UserAgent.
		tr.IgnoreRobots = true
	}
	return &http.Client{Transport: tr}, s
}

func get(t *testing.T, c *http.Client, url string) (*http.Response, string, error) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		return nil, "", err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b), err
}

func fast() Limits { return Limits{Rate: bucket.Inf, Concurrency: 100} }

func TestRetryAfterPausesHost(t *testing.T) {
	for _, tt := range []struct {
		name  string
		after func(now time.Time) (value, date string)
	}{
		{"seconds", func(time.Time) (string, string) { return "3", "" }},
		{"http-date", func(now time.Time) (string, string) {
			return now.Add(3 * time.Second).UTC().Format(http.TimeFormat), now.UTC().Format(http.TimeFormat)
		}},
		// The server's clock runs an hour ahead of ours: the wait is measured
		// against its Date field, so it is still 3 s.
		{"http-date skewed", func(now time.Time) (string, string) {
			srv := now.Add(time.Hour)
			return srv.Add(3 * time.Second).UTC().Format(http.TimeFormat), srv.UTC().Format(http.TimeFormat)
		}},
		{"rfc850 date", func(now time.Time) (string, string) {
			return now.Add(3 * time.Second).UTC().Format(time.RFC850), ""
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var n atomic.Int32
				c, s := setup(t, &Transport{Limits: fast()}, map[string]http.HandlerFunc{
					"a.test": func(w http.ResponseWriter, r *http.Request) {
						if n.Add(1) == 1 {
							v, d := tt.after(time.Now())
							w.Header().Set("Retry-After", v)
							if d != "" {
								w.Header()["Date"] = []string{d}
							}
							w.WriteHeader(http.StatusTooManyRequests)
							return
						}
						io.WriteString(w, "ok")
					},
				})
				start := time.Now()
				var wg sync.WaitGroup
				// Two requests: the one that gets the 429 retries after 3 s, and
				// one sent meanwhile waits too.
				wg.Go(func() {
					resp, body, err := get(t, c, "http://a.test/1")
					if err != nil || resp.StatusCode != 200 || body != "ok" {
						t.Errorf("GET /1 = %v, %q, %v; want 200 ok", resp, body, err)
					}
				})
				time.Sleep(500 * time.Millisecond)
				wg.Go(func() {
					if _, _, err := get(t, c, "http://a.test/2"); err != nil {
						t.Error(err)
					}
				})
				wg.Wait()
				times := s.times("a.test")
				if len(times) != 3 {
					t.Fatalf("server saw %d requests, want 3", len(times))
				}
				for _, at := range times[1:] {
					// HTTP-dates have whole seconds; the pause is at least 2 s
					// and at most 3 s after the 429.
					if d := at.Sub(start); d < 2*time.Second || d > 3*time.Second {
						t.Errorf("a request arrived %v after the 429, want the host quiet for the Retry-After", d)
					}
				}
			})
		})
	}
}

// A pause ends with one request, paced at the rate from there, not with
// the burst the pause refilled: against a host whose own burst is small
// that burst met a 429 at the end of every pause (issue 29: a 10 req/s host
// answering Retry-After: 1 got one URL a second).
func TestPauseEndsWithoutABurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		c, s := setup(t, &Transport{Limits: Limits{Rate: 10, Burst: 5, Concurrency: 8}},
			map[string]http.HandlerFunc{"a.test": func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) == 1 {
					w.Header().Set("Retry-After", "1")
					w.WriteHeader(http.StatusTooManyRequests)
					return
				}
				io.WriteString(w, "ok")
			}})
		var wg sync.WaitGroup
		wg.Go(func() { get(t, c, "http://a.test/first") })
		synctest.Wait() // the 429 is in: the host is paused
		for i := range 4 {
			wg.Go(func() { get(t, c, fmt.Sprintf("http://a.test/%d", i)) })
		}
		wg.Wait()
		times := s.times("a.test")
		if len(times) != 6 {
			t.Fatalf("server saw %d requests, want 6", len(times))
		}
		end := times[0].Add(time.Second)
		for i, at := range times[1:] {
			if want := end.Add(time.Duration(i) * 100 * time.Millisecond); at.Before(want) {
				t.Errorf("request %d after the pause arrived at +%v, want ≥ +%v (paced at 10/s from the pause's end)",
					i+1, at.Sub(times[0]), want.Sub(times[0]))
			}
		}
	})
}

func TestGarbageRetryAfterFallsBackToBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		c, s := setup(t, &Transport{Limits: fast(), Backoff: retry.Backoff{Base: time.Second, Jitter: retry.NoJitter}},
			map[string]http.HandlerFunc{"a.test": func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) == 1 {
					w.Header().Set("Retry-After", "soon-ish")
					w.WriteHeader(http.StatusTooManyRequests)
					return
				}
				io.WriteString(w, "ok")
			}})
		start := time.Now()
		resp, _, err := get(t, c, "http://a.test/")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET = %v, %v", resp, err)
		}
		times := s.times("a.test")
		if len(times) != 2 || times[1].Sub(start) != time.Second {
			t.Errorf("retry came %v after the 429, want the 1 s backoff", times[len(times)-1].Sub(start))
		}
	})
}

func TestLongRetryAfterIsNotShortened(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, s := setup(t, &Transport{Limits: fast()}, map[string]http.HandlerFunc{
			"a.test": func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "36000") // 10 hours
				w.WriteHeader(http.StatusTooManyRequests)
			},
		})
		start := time.Now()
		resp, _, err := get(t, c, "http://a.test/")
		if err != nil || resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("GET = %v, %v; want the 429 back", resp, err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("GET took %v, want an immediate give-up", d)
		}
		_, err = c.Get("http://a.test/other")
		var pe *PausedError
		if !errors.Is(err, ErrPaused) || !errors.As(err, &pe) {
			t.Fatalf("next GET error = %v, want ErrPaused", err)
		}
		if want := start.Add(10 * time.Hour); !pe.Until.Equal(want) {
			t.Errorf("paused until %v, want %v", pe.Until, want)
		}
		if s.count("a.test") != 1 {
			t.Errorf("server saw %d requests, want 1", s.count("a.test"))
		}
	})
}

func TestRateLimitRemainingZeroWaitsForReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		c, s := setup(t, &Transport{Limits: fast()}, map[string]http.HandlerFunc{
			"a.test": func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) == 1 {
					w.Header().Set("X-RateLimit-Limit", "10")
					w.Header().Set("X-RateLimit-Remaining", "0")
					w.Header().Set("X-RateLimit-Reset", "5")
				}
				io.WriteString(w, "ok")
			},
		})
		start := time.Now()
		for range 2 {
			if resp, _, err := get(t, c, "http://a.test/"); err != nil || resp.StatusCode != 200 {
				t.Fatalf("GET = %v, %v", resp, err)
			}
		}
		times := s.times("a.test")
		if got := times[1].Sub(start); got != 5*time.Second {
			t.Errorf("second request came after %v, want 5 s (the reset)", got)
		}
	})
}

// TestTokenAfterGlobalSlot checks that the token is taken after the global
// in-flight slot: requests that wait for a slot and got their tokens apart
// in time must not all be sent the instant slots free up.
func TestTokenAfterGlobalSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &Transport{Limits: fast(), MaxInFlight: 2, Rules: []Rule{
			{Pattern: "b.test", Limits: Limits{Rate: 1, Burst: 1, Concurrency: 10}},
		}}
		c, s := setup(t, tr, map[string]http.HandlerFunc{
			"a.test": func(w http.ResponseWriter, r *http.Request) { time.Sleep(10 * time.Second) },
			"b.test": func(w http.ResponseWriter, r *http.Request) {},
		})
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() { get(t, c, "http://a.test/") })
		}
		synctest.Wait() // both global slots held for 10 s
		for range 2 {
			wg.Go(func() { get(t, c, "http://b.test/") })
		}
		wg.Wait()
		times := s.times("b.test")
		if len(times) != 2 {
			t.Fatalf("b.test saw %d requests, want 2", len(times))
		}
		gap := times[1].Sub(times[0])
		if gap < 0 {
			gap = -gap
		}
		if gap < time.Second {
			t.Errorf("b.test's two requests came %v apart, want its rate's 1 s", gap)
		}
	})
}

// TestNoHeadOfLineAcrossHosts checks that a request waiting for its host's
// token holds no global slot: with MaxInFlight 2, four requests to a host at
// 0.5 req/s must not stall a request to another, fast host (before the fix
// it waited 3.8 s behind them).
func TestNoHeadOfLineAcrossHosts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &Transport{Limits: fast(), MaxInFlight: 2, Rules: []Rule{
			{Pattern: "slow.test", Limits: Limits{Rate: 0.5, Burst: 1, Concurrency: 4}},
		}}
		c, s := setup(t, tr, map[string]http.HandlerFunc{
			"slow.test": func(w http.ResponseWriter, r *http.Request) {},
			"fast.test": func(w http.ResponseWriter, r *http.Request) {},
		})
		start := time.Now()
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() { get(t, c, "http://slow.test/") })
		}
		synctest.Wait() // one sent; three wait for tokens 2, 4 and 6 s out
		if _, _, err := get(t, c, "http://fast.test/"); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 0 {
			t.Errorf("fast.test waited %v behind slow.test's tokens, want 0", d)
		}
		wg.Wait()
		times := s.times("slow.test")
		for i := 1; i < len(times); i++ {
			if gap := times[i].Sub(times[i-1]); gap < 2*time.Second {
				t.Errorf("slow.test requests %d and %d came %v apart, want its rate's 2 s", i-1, i, gap)
			}
		}
		if st, ok := tr.State("slow.test"); !ok || st.InFlight != 0 || st.Rate != 0.5 || st.Rule != "slow.test" {
			t.Errorf("State(slow.test) = %+v, %v; want rate 0.5 from rule slow.test, nothing in flight", st, ok)
		}
		if st, _ := tr.State("fast.test"); st.Rule != "" {
			t.Errorf("State(fast.test).Rule = %q, want none", st.Rule)
		}
	})
}

// A RateLimit policy that rises gives a host without a Rater its rate back,
// up to its own Limits.Rate: the ceiling follows the server, both ways.
func TestRateLimitCeilingRises(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var q atomic.Int32
		q.Store(2)
		tr := &Transport{Limits: Limits{Rate: 50, Burst: 5, Concurrency: 10}}
		c, _ := setup(t, tr, map[string]http.HandlerFunc{"a.test": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("RateLimit-Policy", fmt.Sprintf(`"default";q=%d;w=1`, q.Load()))
		}})
		for _, step := range []struct {
			q    int32
			want float64
		}{{2, 2}, {20, 20}, {100, 50}} {
			q.Store(step.q)
			if _, _, err := get(t, c, "http://a.test/"); err != nil {
				t.Fatal(err)
			}
			h := tr.Registry().Get("a.test")
			if got := h.bucket.Rate(); got != step.want {
				t.Errorf("policy q=%d: rate %v, want %v", step.q, got, step.want)
			}
			tr.Registry().Put(h)
		}
	})
}

// A malformed rule pattern is not silently ignored: every request fails
// with an error naming the rule, and nothing is sent.
func TestBadRuleFailsRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &Transport{Limits: fast(), Rules: []Rule{{Pattern: "[a-.test"}}}
		c, s := setup(t, tr, map[string]http.HandlerFunc{"a.test": func(http.ResponseWriter, *http.Request) {}})
		_, err := c.Get("http://a.test/")
		if err == nil || !strings.Contains(err.Error(), `rule 0: pattern "[a-.test"`) {
			t.Errorf("GET with a malformed rule = %v, want an error naming rule 0", err)
		}
		if n := s.count("a.test"); n != 0 {
			t.Errorf("server saw %d requests, want 0", n)
		}
	})
}

// TestRateLimitCeiling checks which quota fields cap a host's rate: a
// stated policy does, and so does what is left of a long window; what is
// left of a short window (a token bucket run near its capacity shows little
// left nearly always) does not.
func TestRateLimitCeiling(t *testing.T) {
	for _, tt := range []struct {
		name   string
		fields []string
		want   float64
	}{
		{"policy", []string{"RateLimit-Policy", `"default";q=20;w=2`, "RateLimit", `"default";r=1;t=1`}, 10},
		{"short window", []string{"X-RateLimit-Limit", "10", "X-RateLimit-Remaining", "1", "X-RateLimit-Reset", "1"}, 50},
		// 36 left in an hour would be one every 100 s: capped, like a
		// Crawl-delay, at one a minute (issue 17).
		{"long window", []string{"X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "36", "X-RateLimit-Reset", "3600"}, 1.0 / 60},
		{"policy of one an hour", []string{"RateLimit-Policy", `"d";q=1;w=3600`}, 1.0 / 60},
		{"policy of one per 11.6 days", []string{"RateLimit-Policy", `"d";q=1;w=999999999999999`}, 1.0 / 60},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := &Transport{Limits: Limits{Rate: 50, Burst: 5, Concurrency: 10}}
				c, _ := setup(t, tr, map[string]http.HandlerFunc{
					"a.test": func(w http.ResponseWriter, r *http.Request) {
						for i := 0; i < len(tt.fields); i += 2 {
							w.Header().Set(tt.fields[i], tt.fields[i+1])
						}
					},
				})
				if resp, _, err := get(t, c, "http://a.test/"); err != nil || resp.StatusCode != 200 {
					t.Fatalf("GET = %v, %v", resp, err)
				}
				h := tr.Registry().Get("a.test")
				defer tr.Registry().Put(h)
				if got := h.bucket.Rate(); math.Abs(got-tt.want) > 1e-9 {
					t.Errorf("rate %v, want %v", got, tt.want)
				}
				if st, _ := tr.State("a.test"); tt.want < 50 && st.CeilingWhy != ReasonRateLimit {
					t.Errorf("State: ceiling %v (%q), want the RateLimit fields'", st.Ceiling, st.CeilingWhy)
				}
			})
		})
	}
}

func TestPostWithoutGetBodyNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, s := setup(t, &Transport{Limits: fast(), RetryNonIdempotent: true}, map[string]http.HandlerFunc{
			"a.test": func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) },
		})
		body := io.NopCloser(strings.NewReader("payload")) // no GetBody
		req, _ := http.NewRequest("POST", "http://a.test/", body)
		req.GetBody = nil
		resp, err := c.Do(req)
		if err != nil || resp.StatusCode != 503 {
			t.Fatalf("POST = %v, %v; want the 503", resp, err)
		}
		resp.Body.Close()
		if got := s.count("a.test"); got != 1 {
			t.Errorf("server saw %d POSTs, want 1", got)
		}
		// A POST is not retried by default even with GetBody.
		c2, s2 := setup(t, &Transport{Limits: fast()}, map[string]http.HandlerFunc{
			"a.test": func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) },
		})
		resp, err = c2.Post("http://a.test/", "text/plain", strings.NewReader("x"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := s2.count("a.test"); got != 1 {
			t.Errorf("default Transport sent a POST %d times, want 1", got)
		}
	})
}

func TestReplayedBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var bodies []string
		var mu sync.Mutex
		c, _ := setup(t, &Transport{Limits: fast(), RetryNonIdempotent: true}, map[string]http.HandlerFunc{
			"a.test": func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				bodies = append(bodies, string(b))
				n := len(bodies)
				mu.Unlock()
				if n < 3 {
					w.WriteHeader(502)
				}
			},
		})
		resp, err := c.Post("http://a.test/", "text/plain", strings.NewReader("payload"))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("POST = %v, %v", resp, err)
		}
		resp.Body.Close()
		if fmt.Sprint(bodies) != "[payload payload payload]" {
			t.Errorf("server read bodies %q, want the payload three times", bodies)
		}
	})
}

func TestBudgetStopsRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &Transport{
			Limits:  fast(),
			Retries: 10,
			Budget:  retry.BudgetConfig{Ratio: 0.1, MinPerSecond: -1},
			Breaker: breaker.Config{Threshold: 1 << 30},
			Backoff: retry.Backoff{Base: time.Millisecond, Cap: time.Millisecond},
		}
		var gaveUp atomic.Int32
		tr.Observer = observerFunc(func(e Event) {
			if e.Kind == EventGiveUp && e.Reason == ReasonBudget {
				gaveUp.Add(1)
			}
		})
		c, s := setup(t, tr, map[string]http.HandlerFunc{
			"a.test": func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) },
		})
		const requests = 100
		for range requests {
			resp, _, err := get(t, c, "http://a.test/")
			if err != nil || resp.StatusCode != 500 {
				t.Fatalf("GET = %v, %v; want the 500 back", resp, err)
			}
		}
		// Without a budget: 100 × 11 attempts. With 10 % earned: about 110.
		if got := s.count("a.test"); got > requests*12/10 {
			t.Errorf("server saw %d attempts for %d requests, want ≤ %d (the budget)", got, requests, requests*12/10)
		}
		if gaveUp.Load() == 0 {
			t.Error("no give-up event with reason budget")
		}
	})
}

type observerFunc func(Event)

func (f observerFunc) Observe(e Event) { f(e) }

func TestBreakerOpensProbesCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var healthy atomic.Bool
		var states []string
		var mu sync.Mutex
		tr := &Transport{
			Limits:  fast(),
			Retries: -1,
			Breaker: breaker.Config{Threshold: 3, OpenDelay: 10 * time.Second, Jitter: -1},
			Observer: observerFunc(func(e Event) {
				if e.Kind == EventBreaker {
					mu.Lock()
					states = append(states, e.Detail)
					mu.Unlock()
				}
			}),
		}
		c, s := setup(t, tr, map[string]http.HandlerFunc{
			"a.test": func(w http.ResponseWriter, r *http.Request) {
				if !healthy.Load() {
					w.WriteHeader(502)
				}
			},
		})
		for range 3 {
			if resp, _, err := get(t, c, "http://a.test/"); err != nil || resp.StatusCode != 502 {
				t.Fatalf("GET = %v, %v", resp, err)
			}
		}
		_, err := c.Get("http://a.test/")
		if !errors.Is(err, breaker.ErrOpen) {
			t.Fatalf("GET with the breaker open = %v, want ErrOpen", err)
		}
		if got := s.count("a.test"); got != 3 {
			t.Errorf("server saw %d requests, want 3 (fail fast while open)", got)
		}
		time.Sleep(10 * time.Second)
		healthy.Store(true)
		if resp, _, err := get(t, c, "http://a.test/"); err != nil || resp.StatusCode != 200 {
			t.Fatalf("probe GET = %v, %v", resp, err)
		}
		if resp, _, err := get(t, c, "http://a.test/"); err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET after the probe = %v, %v", resp, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if got := strings.Join(states, ","); got != "open,half-open,closed" && got != "open,closed" {
			t.Errorf("breaker states %q, want open then closed", got)
		}
	})
}

const challenge = `<!DOCTYPE html><html><head><title>Just a moment...</title></head><body>checking your browser</body></html>`

func TestChallengePageIsBlocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, s := setup(t, &Transport{Limits: fast()}, map[string]http.HandlerFunc{
			"a.test": func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(403)
				io.WriteString(w, challenge)
			},
			"b.test": func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				w.Header().Set("Cf-Mitigated", "challenge")
				w.WriteHeader(503)
			},
		})
		resp, body, err := get(t, c, "http://a.test/")
		if err != nil || resp.StatusCode != 403 || body != challenge {
			t.Fatalf("GET = %v, %q, %v; want the 403 with its whole body", resp, body, err)
		}
		if s.count("a.test") != 1 {
			t.Errorf("a blocked request was retried: %d attempts", s.count("a.test"))
		}
		_, err = c.Get("http://a.test/next")
		var be *BlockedError
		if !errors.Is(err, ErrBlocked) || !errors.As(err, &be) || be.Reason != "cloudflare challenge" {
			t.Errorf("next GET = %v, want ErrBlocked (cloudflare challenge)", err)
		}
		resp, _, err = get(t, c, "http://b.test/")
		if err != nil || resp.StatusCode != 503 || s.count("b.test") != 1 {
			t.Errorf("cf-mitigated 503: %v, %v, %d attempts; want one attempt, no retry", resp, err, s.count("b.test"))
		}
	})
}

func TestPeekedBodyReadInFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		big := strings.Repeat("0123456789", 10_000) // 100 KB, beyond the peek
		small := "<html><title>fine</title></html>"
		c, _ := setup(t, &Transport{Limits: fast()}, map[string]http.HandlerFunc{
			"a.test": func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				if r.URL.Path == "/small" {
					io.WriteString(w, small)
					return
				}
				w.WriteHeader(403)
				io.WriteString(w, big)
			},
		})
		if _, body, err := get(t, c, "http://a.test/big"); err != nil || body != big {
			t.Errorf("403 body: %d bytes, %v; want all %d", len(body), err, len(big))
		}
		if _, body, err := get(t, c, "http://a.test/small"); err != nil || body != small {
			t.Errorf("200 body = %q, %v; want %q", body, err, small)
		}
	})
}

func TestHostsDoNotSlowEachOther(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, s := setup(t, &Transport{
			Limits: Limits{Rate: 100, Concurrency: 10},
			Rules:  []Rule{{Pattern: "slow.test", Limits: Limits{Rate: 1, Concurrency: 1}}},
		}, map[string]http.HandlerFunc{
			"slow.test": func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "30")
				w.WriteHeader(429)
			},
		})
		var wg sync.WaitGroup
		for i := range 5 {
			wg.Go(func() { get(t, c, fmt.Sprintf("http://slow.test/%d", i)) })
		}
		time.Sleep(time.Millisecond)
		start := time.Now()
		for range 50 {
			if resp, _, err := get(t, c, "http://fast.test/"); err != nil || resp.StatusCode != 200 {
				t.Fatalf("fast GET = %v, %v", resp, err)
			}
		}
		// 50 requests at 100/s with burst 1: 490 ms, whatever slow.test does.
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Errorf("50 requests to fast.test took %v while slow.test was paused; want ≤ 500ms", d)
		}
		wg.Wait()
		// Meanwhile slow.test itself was left alone for its Retry-After.
		times := s.times("slow.test")
		for _, at := range times[1:] {
			if d := at.Sub(times[0]); d > 0 && d < 30*time.Second {
				t.Errorf("slow.test got a request %v after its 429, inside its 30 s Retry-After", d)
			}
		}
	})
}

func TestSlotHeldUntilBodyClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &Transport{Limits: Limits{Rate: bucket.Inf, Concurrency: 1}}
		c, s := setup(t, tr, nil)
		resp, err := c.Get("http://a.test/1")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			get(t, c, "http://a.test/2")
		}()
		time.Sleep(time.Second)
		if got := s.count("a.test"); got != 1 {
			t.Errorf("with the first body open, server saw %d requests; want 1", got)
		}
		resp.Body.Close()
		<-done
		if got := s.count("a.test"); got != 2 {
			t.Errorf("after closing the body, server saw %d requests; want 2", got)
		}
	})
}

func TestRateAndConcurrencyNeverExceeded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var inflight, peak atomic.Int32
		c, s := setup(t, &Transport{Limits: Limits{Rate: 5, Burst: 2, Concurrency: 2}}, map[string]http.HandlerFunc{
			"a.test": func(w http.ResponseWriter, r *http.Request) {
				n := inflight.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				time.Sleep(700 * time.Millisecond)
				inflight.Add(-1)
			},
		})
		var wg sync.WaitGroup
		for i := range 40 {
			wg.Go(func() { get(t, c, fmt.Sprintf("http://a.test/%d", i)) })
		}
		wg.Wait()
		if p := peak.Load(); p > 2 {
			t.Errorf("peak in flight %d, want ≤ 2", p)
		}
		times := s.times("a.test")
		// Any window of 1 s holds at most burst + rate = 7 arrivals.
		for i := range times {
			n := 0
			for _, u := range times[i:] {
				if u.Sub(times[i]) < time.Second {
					n++
				}
			}
			if n > 7 {
				t.Fatalf("%d arrivals within 1 s of %v, want ≤ 7", n, times[i])
			}
		}
	})
}

func TestNetworkErrorRetriedThenError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := &testbed.Network{} // nothing listening: every dial is refused
		tr := &Transport{Base: n.Transport(), Limits: fast(), Retries: 2,
			Backoff: retry.Backoff{Base: time.Second, Jitter: retry.NoJitter}}
		c := &http.Client{Transport: tr}
		start := time.Now()
		_, err := c.Get("http://a.test/")
		var pe *Error
		if !errors.As(err, &pe) || pe.Attempts != 3 {
			t.Fatalf("GET = %v, want *Error after 3 attempts", err)
		}
		if d := time.Since(start); d != 3*time.Second {
			t.Errorf("took %v, want 1 s + 2 s of backoff", d)
		}
	})
}

func TestBadURL(t *testing.T) {
	tr := &Transport{}
	// http.NewRequest would refuse this URL; a hand-built request need not.
	req := &http.Request{Method: "GET", URL: &url.URL{Scheme: "http", Host: "exa mple.com", Path: "/"}, Header: http.Header{}}
	if _, err := tr.RoundTrip(req); err == nil {
		t.Error("RoundTrip(bad host) succeeded")
	}
	req = &http.Request{Method: "GET", URL: nil}
	if _, err := tr.RoundTrip(req); err == nil {
		t.Error("RoundTrip(nil URL) succeeded")
	}
	req, _ = http.NewRequest("GET", "/relative", nil)
	if _, err := tr.RoundTrip(req); !errors.Is(err, ErrNoHost) {
		t.Errorf("RoundTrip(relative URL) = %v, want ErrNoHost", err)
	}
}

func TestUserAgentSetWithoutMutatingRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got atomic.Value
		c, _ := setup(t, &Transport{Limits: fast(), UserAgent: "polite-test/1"}, map[string]http.HandlerFunc{
			"a.test": func(w http.ResponseWriter, r *http.Request) { got.Store(r.UserAgent()) },
		})
		req, _ := http.NewRequest("GET", "http://a.test/", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got.Load() != "polite-test/1" {
			t.Errorf("server saw User-Agent %q", got.Load())
		}
		if req.Header.Get("User-Agent") != "" {
			t.Error("the caller's request was mutated")
		}
	})
}

// stepRater halves the rate on a throttle and adds one on success: enough to
// see the Transport apply a Rater's answers under the host's ceilings.
type stepRater struct {
	mu   sync.Mutex
	rate float64
	max  float64
}

func (r *stepRater) Observe(now time.Time, s adaptive.Signal) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch s.Kind {
	case adaptive.OK:
		r.rate++
	case adaptive.Throttle:
		r.rate /= 2
	}
	return r.rate
}

func (r *stepRater) SetMax(m float64) { r.mu.Lock(); r.max = m; r.mu.Unlock() }
func (r *stepRater) Rate() float64    { return r.rate }

func TestRaterMovesRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		var raters sync.Map
		tr := &Transport{Limits: Limits{Rate: 1000, Concurrency: 10}, Retries: -1,
			NewRater: func(key string, l Limits) adaptive.Rater {
				r := &stepRater{rate: 4}
				raters.Store(key, r)
				return r
			}}
		c, _ := setup(t, tr, map[string]http.HandlerFunc{
			"a.test": func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) == 3 {
					w.Header().Set("Retry-After", "1")
					w.WriteHeader(429)
				}
			},
		})
		for range 2 {
			get(t, c, "http://a.test/")
		}
		h := tr.Registry().Get("a.test")
		defer tr.Registry().Put(h)
		if got := h.bucket.Rate(); got != 6 {
			t.Errorf("after two successes from 4: rate %v, want 6", got)
		}
		get(t, c, "http://a.test/")
		if got := h.bucket.Rate(); got != 3 {
			t.Errorf("after a 429: rate %v, want 3", got)
		}
		v, _ := raters.Load("a.test")
		if m := v.(*stepRater).max; !math.IsInf(m, 1) {
			t.Errorf("SetMax got %v, want +Inf (no ceiling)", m)
		}
	})
}
