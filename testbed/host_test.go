package testbed_test

import (
	"context"
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/polite-go/polite/testbed"
)

// get calls h directly with a GET for path.
func get(h http.Handler, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "http://a.test"+path, nil))
	return rec
}

// getCtx is get with a request context.
func getCtx(ctx context.Context, h http.Handler, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "http://a.test"+path, nil).WithContext(ctx))
	return rec
}

// checkInvariant checks that every arrival is accounted for exactly once.
func checkInvariant(t *testing.T, st testbed.Stats) {
	t.Helper()
	sum := st.Admitted + st.Rejected + st.Shed + st.Blocked + st.TimedOut + int64(st.InFlight)
	if st.Arrivals != sum {
		t.Errorf("Arrivals = %d, want Admitted+Rejected+Shed+Blocked+TimedOut+InFlight = %d (%+v)", st.Arrivals, sum, st)
	}
}

// A host at 10 req/s with a burst of 1, hammered at 200 req/s over HTTP for 10
// fake seconds, admits 10 a second, and every rejection carries the honest
// Retry-After.
func TestHammerRate10Burst1(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := testbed.NewServer(testbed.HostConfig{Name: "a.test", Rate: 10, Burst: 1, RetryAfter: testbed.RetryAfterSeconds})
		srv.StartInMemory()
		defer srv.Close()
		c := srv.Client()
		start := time.Now()
		var lastOK time.Time
		for time.Since(start) < 10*time.Second {
			resp, err := c.Get("http://a.test/page")
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			switch resp.StatusCode {
			case http.StatusOK:
				if now := time.Now(); !lastOK.IsZero() && now.Sub(lastOK) < 100*time.Millisecond {
					t.Fatalf("two admitted %v apart, want ≥ 100ms", now.Sub(lastOK))
				} else {
					lastOK = now
				}
			case http.StatusTooManyRequests:
				// The next token is < 100 ms away: rounded up, 1 second.
				if got := resp.Header.Get("Retry-After"); got != "1" {
					t.Fatalf("Retry-After = %q, want 1", got)
				}
			default:
				t.Fatalf("status %d", resp.StatusCode)
			}
			time.Sleep(5 * time.Millisecond)
		}
		h := srv.Host("a.test")
		st := h.Stats()
		if st.Arrivals != 2000 || st.Admitted != 100 || st.Rejected != 1900 {
			t.Errorf("Stats = %+v, want 2000 arrivals, 100 admitted, 1900 rejected", st)
		}
		checkInvariant(t, st)
		tl := h.Timeline()
		if len(tl) != 11 {
			t.Fatalf("len(Timeline) = %d, want 11", len(tl))
		}
		for _, w := range tl[:10] {
			if w.Admitted < 9 || w.Admitted > 11 || w.Arrivals != 200 || w.Rejected != 200-w.Admitted || w.Capacity != 10 {
				t.Errorf("window %v = %+v, want 200 arrivals, 10±1 admitted, capacity 10", w.Start, w)
			}
		}
	})
}

// Retry-After is the honest time until a token, rounded up to whole seconds.
func TestRetryAfterSeconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testbed.NewHost(testbed.HostConfig{Rate: 0.25, Burst: 1, RetryAfter: testbed.RetryAfterSeconds})
		steps := []struct {
			sleep      time.Duration
			code       int
			retryAfter string
		}{
			{0, 200, ""},
			{1500 * time.Millisecond, 429, "3"}, // 2.5 s to go
			{1500 * time.Millisecond, 429, "1"}, // 1 s to go
			{999 * time.Millisecond, 429, "1"},  // 1 ms to go
			{time.Millisecond, 200, ""},
			{0, 429, "4"},
		}
		for i, s := range steps {
			time.Sleep(s.sleep)
			rec := get(h, "/")
			if rec.Code != s.code || rec.Header().Get("Retry-After") != s.retryAfter {
				t.Errorf("step %d: got %d Retry-After %q, want %d %q", i, rec.Code, rec.Header().Get("Retry-After"), s.code, s.retryAfter)
			}
		}
	})
}

func TestRetryAfterDate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testbed.NewHost(testbed.HostConfig{Rate: 1, Status: 503, RetryAfter: testbed.RetryAfterDate})
		get(h, "/")
		time.Sleep(300 * time.Millisecond)
		rec := get(h, "/")
		// The bubble starts at 2000-01-01 00:00:00 UTC; the token is due at
		// 00:00:01, and an HTTP-date never rounds down.
		if rec.Code != 503 || rec.Header().Get("Retry-After") != "Sat, 01 Jan 2000 00:00:01 GMT" {
			t.Errorf("got %d Retry-After %q, want 503 Sat, 01 Jan 2000 00:00:01 GMT", rec.Code, rec.Header().Get("Retry-After"))
		}
		time.Sleep(710 * time.Millisecond) // token due at 00:00:02 now; 00:00:01.01 rounds up
		get(h, "/")
		rec = get(h, "/")
		if got := rec.Header().Get("Retry-After"); got != "Sat, 01 Jan 2000 00:00:03 GMT" {
			t.Errorf("Retry-After = %q, want Sat, 01 Jan 2000 00:00:03 GMT", got)
		}
	})
}

// Retry-After knows the schedule: a step up before the token would be earned
// at the old rate brings the answer forward.
func TestRetryAfterSeesSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testbed.NewHost(testbed.HostConfig{
			Rate: 0.1, RetryAfter: testbed.RetryAfterSeconds,
			Schedule: []testbed.Step{{At: 3 * time.Second, Rate: 10}},
		})
		get(h, "/")
		time.Sleep(time.Second)
		// 0.9 token missing: 0.2 earned by the step at 3 s, the rest in 70 ms.
		if got := get(h, "/").Header().Get("Retry-After"); got != "3" {
			t.Errorf("Retry-After = %q, want 3 (not 9: the schedule steps up at 3 s)", got)
		}
	})
}

func TestRateLimitHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testbed.NewHost(testbed.HostConfig{Rate: 1, Burst: 5, RateLimitHeaders: testbed.RateLimitBoth})
		want := func(rec *httptest.ResponseRecorder, code int, fields ...string) {
			t.Helper()
			if rec.Code != code {
				t.Errorf("status = %d, want %d", rec.Code, code)
			}
			for i := 0; i < len(fields); i += 2 {
				if got := rec.Header().Get(fields[i]); got != fields[i+1] {
					t.Errorf("%s = %q, want %q", fields[i], got, fields[i+1])
				}
			}
		}
		want(get(h, "/"), 200,
			"RateLimit-Policy", `"default";q=5;w=5`, "RateLimit", `"default";r=4;t=1`,
			"X-RateLimit-Limit", "5", "X-RateLimit-Remaining", "4", "X-RateLimit-Reset", "1")
		for range 4 {
			get(h, "/")
		}
		want(get(h, "/"), 429, "RateLimit", `"default";r=0;t=5`, "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "5")
		time.Sleep(2500 * time.Millisecond)
		want(get(h, "/"), 200, "RateLimit", `"default";r=1;t=4`) // 1.5 tokens left: 3.5 s to full

		x := testbed.NewHost(testbed.HostConfig{Rate: 1, RateLimitHeaders: testbed.RateLimitX})
		rec := get(x, "/")
		want(rec, 200, "RateLimit", "", "X-RateLimit-Limit", "1")
		// The policy is the rate over the window, not the burst: 20 req/s
		// with a burst of 10 fills in 0.5 s, so 20 per second.
		half := testbed.NewHost(testbed.HostConfig{Rate: 20, Burst: 10, RateLimitHeaders: testbed.RateLimitBoth})
		want(get(half, "/"), 200, "RateLimit-Policy", `"default";q=20;w=1`, "X-RateLimit-Limit", "20")
		none := testbed.NewHost(testbed.HostConfig{Rate: 1})
		want(get(none, "/"), 200, "X-RateLimit-Limit", "", "RateLimit", "")
	})
}

// Admitted counts follow a schedule step at the instant it applies, and the
// timeline carries the capacity in force.
func TestScheduleSteps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := testbed.NewServer(testbed.HostConfig{
			Name: "a.test", Rate: 50, Burst: 1,
			Schedule: []testbed.Step{{At: 6 * time.Second, Rate: 50, Burst: 1}, {At: 3 * time.Second, Rate: 10, Burst: 1}},
		})
		srv.StartInMemory()
		defer srv.Close()
		c := srv.Client()
		start := time.Now()
		for time.Since(start) < 8*time.Second {
			resp, err := c.Get("http://a.test/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			time.Sleep(2 * time.Millisecond)
		}
		want := []int{50, 50, 50, 10, 10, 10, 50, 50}
		tl := srv.Host("a.test").Timeline()
		for i, w := range want {
			if tl[i].Admitted != w || tl[i].Capacity != float64(w) {
				t.Errorf("window %d: Admitted %d Capacity %v, want %d and %d", i, tl[i].Admitted, tl[i].Capacity, w, w)
			}
		}
	})
}

func TestSetCapacity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testbed.NewHost(testbed.HostConfig{Rate: 10, RetryAfter: testbed.RetryAfterSeconds,
			Schedule: []testbed.Step{{At: 3 * time.Second, Rate: 40}}})
		time.Sleep(1500 * time.Millisecond)
		h.SetCapacity(0.5, 1)
		get(h, "/")
		if got := get(h, "/").Header().Get("Retry-After"); got != "2" {
			t.Errorf("after SetCapacity(0.5, 1): Retry-After = %q, want 2", got)
		}
		time.Sleep(2 * time.Second)
		tl := h.Timeline()
		want := []float64{10, 5.25, 0.5, 40}
		if len(tl) != len(want) {
			t.Fatalf("len(Timeline) = %d, want %d", len(tl), len(want))
		}
		for i, w := range want {
			if tl[i].Capacity != w {
				t.Errorf("window %d: Capacity = %v, want %v", i, tl[i].Capacity, w)
			}
		}
	})
}

// fire sends n requests to h at once, each in its own goroutine, and returns
// their status codes and latencies in order of sending, after all finished.
func fire(h http.Handler, n int) ([]int, []time.Duration) {
	codes := make([]int, n)
	lats := make([]time.Duration, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			t0 := time.Now()
			codes[i] = get(h, "/").Code
			lats[i] = time.Since(t0)
		})
		synctest.Wait() // queue in order of i
	}
	wg.Wait()
	return codes, lats
}

func TestQueue(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name  string
		cfg   testbed.HostConfig
		codes []int
		lats  []time.Duration
	}{
		{"servers queue FIFO", testbed.HostConfig{Servers: 2, Latency: 100 * ms},
			[]int{200, 200, 200, 200, 200}, []time.Duration{100 * ms, 100 * ms, 200 * ms, 200 * ms, 300 * ms}},
		{"MaxQueue sheds", testbed.HostConfig{Servers: 1, Latency: 100 * ms, MaxQueue: 2},
			[]int{200, 200, 200, 503, 503}, []time.Duration{100 * ms, 200 * ms, 300 * ms, 0, 0}},
		{"no queue", testbed.HostConfig{Servers: 1, Latency: 100 * ms, MaxQueue: -1},
			[]int{200, 503, 503}, []time.Duration{100 * ms, 0, 0}},
		{"unlimited servers", testbed.HostConfig{Latency: 100 * ms},
			[]int{200, 200, 200}, []time.Duration{100 * ms, 100 * ms, 100 * ms}},
		{"NoThrottle waits for tokens", testbed.HostConfig{Rate: 10, NoThrottle: true},
			[]int{200, 200, 200, 200}, []time.Duration{0, 100 * ms, 200 * ms, 300 * ms}},
		{"NoThrottle with MaxQueue", testbed.HostConfig{Rate: 10, NoThrottle: true, MaxQueue: 2},
			[]int{200, 200, 200, 503, 503}, []time.Duration{0, 100 * ms, 200 * ms, 0, 0}},
		{"slowdown", testbed.HostConfig{Latency: 100 * ms, Slowdown: 0.5},
			[]int{200, 200, 200}, []time.Duration{100 * ms, 150 * ms, 200 * ms}},
		{"slowdown with servers", testbed.HostConfig{Servers: 2, Latency: 100 * ms, Slowdown: 0.5},
			[]int{200, 200, 200, 200}, []time.Duration{100 * ms, 150 * ms, 250 * ms, 300 * ms}},
		{"tokens then servers", testbed.HostConfig{Rate: 10, Burst: 3, NoThrottle: true, Servers: 1, Latency: 50 * ms},
			[]int{200, 200, 200, 200}, []time.Duration{50 * ms, 100 * ms, 150 * ms, 200 * ms}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := testbed.NewHost(tt.cfg)
				codes, lats := fire(h, len(tt.codes))
				for i := range codes {
					if codes[i] != tt.codes[i] || lats[i] != tt.lats[i] {
						t.Errorf("request %d: %d in %v, want %d in %v", i, codes[i], lats[i], tt.codes[i], tt.lats[i])
					}
				}
				st := h.Stats()
				checkInvariant(t, st)
				if st.Queued != 0 || st.InFlight != 0 {
					t.Errorf("after: Queued %d InFlight %d, want 0", st.Queued, st.InFlight)
				}
			})
		})
	}
}

// The knee: with 2 servers × 100 ms (20 req/s), latency is exactly 100 ms up to
// 20 req/s, then climbs by the queue's growth: at 40 req/s, request k waits
// 25 ms × k longer than the one before it.
func TestLatencyKnee(t *testing.T) {
	cfg := testbed.HostConfig{NoThrottle: true, Servers: 2, Latency: 100 * time.Millisecond}
	run := func(t *testing.T, rate float64, n int) testbed.Stats {
		var st testbed.Stats
		synctest.Test(t, func(t *testing.T) {
			h := testbed.NewHost(cfg)
			gap := time.Duration(float64(time.Second) / rate)
			var wg sync.WaitGroup
			for range n {
				wg.Go(func() { get(h, "/") })
				time.Sleep(gap)
			}
			wg.Wait()
			st = h.Stats()
		})
		return st
	}
	for _, rate := range []float64{5, 10, 19, 20} {
		if st := run(t, rate, 100); st.P50 != 100*time.Millisecond || st.Max != 100*time.Millisecond || st.MaxQueued > 1 {
			t.Errorf("%v req/s: P50 %v Max %v MaxQueued %d, want 100ms, 100ms, ≤1", rate, st.P50, st.Max, st.MaxQueued)
		}
	}
	st := run(t, 40, 200)
	// Request 198 arrives at 4.95 s and starts when a server frees at 9.9 s.
	if st.Max != 5050*time.Millisecond || st.P50 < 2*time.Second || st.Admitted != 200 || st.Rejected+st.Shed != 0 {
		t.Errorf("40 req/s: %+v, want Max 5.05s, P50 > 2s, 200 admitted, none refused", st)
	}
	if p25 := run(t, 25, 200); p25.Max <= 100*time.Millisecond || p25.Max >= st.Max {
		t.Errorf("25 req/s: Max %v, want between 100ms and %v", p25.Max, st.Max)
	}
}

func TestJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testbed.HostConfig{Name: "j.test", Latency: 100 * time.Millisecond, Jitter: 0.5}
		a, b := testbed.NewHost(cfg), testbed.NewHost(cfg)
		var sum time.Duration
		for range 1000 {
			t0 := time.Now()
			get(a, "/")
			d := time.Since(t0)
			if d < 50*time.Millisecond || d > 150*time.Millisecond {
				t.Fatalf("latency %v outside 100ms ± 50%%", d)
			}
			sum += d
			get(b, "/")
		}
		if mean := sum / 1000; mean < 95*time.Millisecond || mean > 105*time.Millisecond {
			t.Errorf("mean latency %v, want 100ms ± 5ms", mean)
		}
		sa, sb := a.Stats(), b.Stats()
		if sa.P50 != sb.P50 || sa.P95 != sb.P95 || sa.Max != sb.Max {
			t.Errorf("same seed, different latencies: %v/%v/%v vs %v/%v/%v", sa.P50, sa.P95, sa.Max, sb.P50, sb.P95, sb.Max)
		}
	})
}

// A hung request holds until the client gives up; the host counts it.
func TestHang(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := testbed.NewServer(testbed.HostConfig{Name: "h.test", TimeoutProb: 1, Robots: "User-agent: *\n"})
		srv.StartInMemory()
		defer srv.Close()
		c := srv.Client()
		c.Timeout = 2 * time.Second
		start := time.Now()
		if _, err := c.Get("http://h.test/page"); err == nil {
			t.Fatal("Get of a hanging page succeeded")
		}
		if d := time.Since(start); d != 2*time.Second {
			t.Errorf("gave up after %v, want 2s", d)
		}
		resp, err := c.Get("http://h.test/robots.txt")
		if err != nil {
			t.Fatalf("robots.txt hung: %v", err)
		}
		resp.Body.Close()
		synctest.Wait() // the server notices the closed connection
		st := srv.Host("h.test").Stats()
		if st.TimedOut != 1 || st.Admitted != 1 || st.InFlight != 0 {
			t.Errorf("Stats = %+v, want 1 timed out, 1 admitted, none in flight", st)
		}
		checkInvariant(t, st)
	})
}

// A client that leaves while queued frees its place.
func TestLeaveQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testbed.NewHost(testbed.HostConfig{Servers: 1, Latency: time.Second})
		go get(h, "/")
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		if rec := getCtx(ctx, h, "/"); rec.Code != http.StatusGatewayTimeout {
			t.Errorf("queued request whose client left: %d, want 504", rec.Code)
		}
		if st := h.Stats(); st.Queued != 0 || st.TimedOut != 1 || st.InFlight != 1 {
			t.Errorf("Stats = %+v, want Queued 0, TimedOut 1, InFlight 1", st)
		}
		time.Sleep(time.Second)
		if rec := get(h, "/"); rec.Code != 200 {
			t.Errorf("after: %d, want 200", rec.Code)
		}
		checkInvariant(t, h.Stats())
	})
}

func TestSoftBlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testbed.NewHost(testbed.HostConfig{Rate: 1, Burst: 10, SoftBlock: testbed.SoftBlock{After: 3}, Robots: "User-agent: *\n"})
		var codes []int
		for range 5 {
			codes = append(codes, get(h, "/").Code)
		}
		rec := get(h, "/x")
		if want := []int{200, 200, 200, 403, 403}; !equal(codes, want) {
			t.Errorf("codes = %v, want %v", codes, want)
		}
		if rec.Header().Get("cf-mitigated") != "challenge" || !strings.Contains(rec.Body.String(), "<title>Just a moment...</title>") {
			t.Errorf("challenge = %v %q", rec.Header(), rec.Body.String())
		}
		if get(h, "/robots.txt").Code != 200 {
			t.Error("robots.txt blocked")
		}
		st := h.Stats()
		if st.Blocked != 3 || st.Admitted != 4 {
			t.Errorf("Stats = %+v, want 3 blocked, 4 admitted", st)
		}
		// Blocked requests took no token: 6 left of 10.
		for i := range 6 {
			if h.Stats(); get(h, "/robots.txt").Code != 200 {
				t.Fatalf("robots.txt %d refused: blocked requests took tokens", i)
			}
		}

		always := testbed.NewHost(testbed.HostConfig{SoftBlock: testbed.SoftBlock{Always: true, Status: 200}})
		if rec := get(always, "/"); rec.Code != 200 || rec.Header().Get("Cf-Mitigated") != "challenge" {
			t.Errorf("Always with status 200: %d %v", rec.Code, rec.Header())
		}

		waf := testbed.NewHost(testbed.HostConfig{SoftBlock: testbed.SoftBlock{Paths: []string{"/search", "/login"}}})
		for path, want := range map[string]int{"/search?q=1": 403, "/search/x": 403, "/login": 403, "/p/search": 200, "/": 200, "/robots.txt": 404} {
			if got := get(waf, path).Code; got != want {
				t.Errorf("Paths [/search /login]: GET %s = %d, want %d", path, got, want)
			}
		}

		p := testbed.HostConfig{Name: "p.test", SoftBlock: testbed.SoftBlock{Prob: 0.3, Status: 503}}
		a, b := testbed.NewHost(p), testbed.NewHost(p)
		for range 1000 {
			if ca, cb := get(a, "/").Code, get(b, "/").Code; ca != cb {
				t.Fatalf("same seed, different blocks: %d vs %d", ca, cb)
			}
		}
		if n := a.Stats().Blocked; n < 250 || n > 350 {
			t.Errorf("Prob 0.3 blocked %d of 1000", n)
		}
	})
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRobots(t *testing.T) {
	const body = "User-agent: *\nDisallow: /private/\nCrawl-delay: 2\n"
	h := testbed.NewHost(testbed.HostConfig{Robots: body})
	rec := get(h, "/robots.txt")
	if rec.Code != 200 || rec.Body.String() != body || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") {
		t.Errorf("robots.txt = %d %q %v", rec.Code, rec.Body.String(), rec.Header())
	}
	if st := h.Stats(); st.Robots != 1 || st.Admitted != 1 {
		t.Errorf("Stats = %+v, want 1 robots, 1 admitted", st)
	}
	if rec := get(testbed.NewHost(testbed.HostConfig{}), "/robots.txt"); rec.Code != 404 {
		t.Errorf("no Robots: /robots.txt = %d, want 404", rec.Code)
	}
}

func TestPages(t *testing.T) {
	sum := func(h http.Handler, path string) [32]byte { return sha256.Sum256(get(h, path).Body.Bytes()) }
	a := testbed.NewHost(testbed.HostConfig{Name: "a.test"})
	a2 := testbed.NewHost(testbed.HostConfig{Name: "a.test"})
	b := testbed.NewHost(testbed.HostConfig{Name: "b.test"})
	if sum(a, "/p/1") != sum(a2, "/p/1") {
		t.Error("same host and path, different bodies")
	}
	if sum(a, "/p/1") == sum(a, "/p/2") || sum(a, "/p/1") == sum(b, "/p/1") || sum(a, "/p/1") == sum(a, "/p/1?q=1") {
		t.Error("different URLs, same body")
	}
	rec := get(a, "/p/1")
	if rec.Body.Len() != 1024 || rec.Header().Get("Content-Type") != "text/html; charset=utf-8" || rec.Header().Get("Content-Length") != "1024" {
		t.Errorf("default page: %d bytes, %v", rec.Body.Len(), rec.Header())
	}
	if !strings.Contains(rec.Body.String(), "<title>a.test/p/1</title>") {
		t.Errorf("page lacks its title: %q", rec.Body.String()[:100])
	}
	for _, size := range []int{1, 50, 100, 4096, 200_000} {
		h := testbed.NewHost(testbed.HostConfig{Name: "s.test", BodySize: size})
		if n := get(h, "/<script>").Body.Len(); n != size {
			t.Errorf("BodySize %d: got %d bytes", size, n)
		}
	}
	if rec := get(a, "/status/418"); rec.Code != 418 {
		t.Errorf("/status/418 = %d", rec.Code)
	}
	if rec := get(a, "/status/99"); rec.Code != 200 {
		t.Errorf("/status/99 = %d, want a page", rec.Code)
	}
}

// MaxInFlight per window sees a request that spans windows without events.
func TestTimelineInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testbed.NewHost(testbed.HostConfig{Latency: 2500 * time.Millisecond})
		get(h, "/")
		time.Sleep(1500 * time.Millisecond) // into window 3
		tl := h.Timeline()
		want := []int{1, 1, 1, 0}
		for i, w := range want {
			if tl[i].MaxInFlight != w {
				t.Errorf("window %d: MaxInFlight %d, want %d", i, tl[i].MaxInFlight, w)
			}
		}
		if tl[0].Admitted != 1 || tl[2].Admitted != 0 {
			t.Errorf("Admitted counted in the wrong window: %+v", tl)
		}
	})
}

// Hammer a host that does everything from many goroutines, in real time,
// under -race: the counts still add up.
func TestConcurrentTruth(t *testing.T) {
	h := testbed.NewHost(testbed.HostConfig{
		Rate: 20000, Burst: 50, Servers: 2, MaxQueue: 4, Latency: 20 * time.Microsecond, Jitter: 0.5,
		SoftBlock: testbed.SoftBlock{Prob: 0.1}, RateLimitHeaders: testbed.RateLimitBoth, RetryAfter: testbed.RetryAfterSeconds,
	})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 300 {
				if i%50 == 0 && g == 0 {
					h.SetCapacity(float64(10000+i), 20)
				}
				get(h, "/")
			}
		})
	}
	go func() {
		for range 20 {
			h.Stats()
			h.Timeline()
		}
	}()
	wg.Wait()
	st := h.Stats()
	checkInvariant(t, st)
	if st.Arrivals != 2400 || st.InFlight != 0 || st.Queued != 0 {
		t.Errorf("Stats = %+v, want 2400 arrivals, none in flight or queued", st)
	}
	var sum testbed.Second
	for _, w := range h.Timeline() {
		sum.Arrivals += w.Arrivals
		sum.Admitted += w.Admitted
		sum.Rejected += w.Rejected
		sum.Shed += w.Shed
		sum.Blocked += w.Blocked
	}
	if int64(sum.Arrivals) != st.Arrivals || int64(sum.Admitted) != st.Admitted || int64(sum.Rejected) != st.Rejected ||
		int64(sum.Shed) != st.Shed || int64(sum.Blocked) != st.Blocked {
		t.Errorf("timeline sums %+v disagree with %+v", sum, st)
	}
}

func TestPercentilesExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testbed.NewHost(testbed.HostConfig{Servers: 1, Latency: 10 * time.Millisecond})
		var wg sync.WaitGroup
		for range 100 { // latencies 10, 20, ..., 1000 ms
			wg.Go(func() { get(h, "/") })
		}
		wg.Wait()
		st := h.Stats()
		ms := time.Millisecond
		if st.P50 != 500*ms || st.P95 != 950*ms || st.P99 != 990*ms || st.Max != 1000*ms {
			t.Errorf("P50 %v P95 %v P99 %v Max %v, want 500ms 950ms 990ms 1s", st.P50, st.P95, st.P99, st.Max)
		}
	})
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  testbed.HostConfig
		bad  string // substring of the error; "" = valid
	}{
		{"zero", testbed.HostConfig{}, ""},
		{"all set", testbed.DemoHosts()[2], ""},
		{"none aliases", testbed.HostConfig{RetryAfter: "none", RateLimitHeaders: "none"}, ""},
		{"negative rate", testbed.HostConfig{Rate: -1}, "Rate"},
		{"bad name", testbed.HostConfig{Name: "a b"}, "Name"},
		{"bad status", testbed.HostConfig{Status: 200}, "Status"},
		{"bad retry-after", testbed.HostConfig{RetryAfter: "minutes"}, "RetryAfter"},
		{"bad headers", testbed.HostConfig{RateLimitHeaders: "y"}, "RateLimitHeaders"},
		{"bad step", testbed.HostConfig{Schedule: []testbed.Step{{At: -time.Second}}}, "Schedule[0]"},
		{"jitter > 1", testbed.HostConfig{Jitter: 2}, "Jitter"},
		{"prob > 1", testbed.HostConfig{TimeoutProb: 1.5}, "TimeoutProb"},
		{"softblock status", testbed.HostConfig{SoftBlock: testbed.SoftBlock{Status: 100}}, "SoftBlock.Status"},
		{"negative body", testbed.HostConfig{BodySize: -1}, "BodySize"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.bad == "" && err != nil || tt.bad != "" && (err == nil || !strings.Contains(err.Error(), tt.bad)) {
				t.Errorf("Validate() = %v, want error about %q", err, tt.bad)
			}
		})
	}
}
