package bench

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-chi/httprate"
	"github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/middleware/stdlib"
	"github.com/ulule/limiter/v3/drivers/store/memory"

	"github.com/polite-go/polite/guard"
)

// guardClients is how many distinct client addresses the middleware
// benchmarks rotate through.
const guardClients = 100_000

// BenchmarkGuardMiddleware: each peer's rate-limit middleware in front of
// an empty handler, per client address (RemoteAddr, 100,000 of them, every
// request admitted), headers included, beside the bare handler: the
// difference is what the middleware costs a request.
//
//   - polite:   guard.Handler (GCRA, sharded store; RateLimit,
//     RateLimit-Policy and three X-RateLimit fields)
//   - httprate: github.com/go-chi/httprate LimitByIP (sliding-window
//     counter; three X-RateLimit fields)
//   - ulule:    github.com/ulule/limiter/v3 stdlib middleware, memory
//     store (fixed window; three X-RateLimit fields)
func BenchmarkGuardMiddleware(b *testing.B) {
	reqs := clientRequests()
	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	g, err := guard.New(guard.Config{Identity: guard.Limit{Rate: 1e6, Burst: 1 << 20}, MaxKeys: 4 * guardClients})
	if err != nil {
		b.Fatal(err)
	}
	ul := limiter.New(memory.NewStore(), limiter.Rate{Period: time.Hour, Limit: 1 << 40})
	for _, tc := range []struct {
		name string
		h    http.Handler
	}{
		{"bare", bare},
		{"polite", g.Handler(bare)},
		{"httprate", httprate.LimitBy(1<<40, time.Hour, byRemoteAddr)(bare)},
		{"ulule", stdlib.NewMiddleware(ul).Handler(bare)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			checkAdmitted(b, rotate(b, tc.h, reqs, 0))
		})
	}
}

// BenchmarkGuardMiddlewareRefuse: the same peers refusing (issue 29): each
// of 100,000 client addresses spent before the timer starts (polite: one
// token per 100 s, burst 1; httprate and ulule: one request an hour), so
// every timed request is answered 429 with the peer's fields and body.
func BenchmarkGuardMiddlewareRefuse(b *testing.B) {
	reqs := clientRequests()
	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	g, err := guard.New(guard.Config{Identity: guard.Limit{Rate: 0.01, Burst: 1}, MaxKeys: 4 * guardClients})
	if err != nil {
		b.Fatal(err)
	}
	ul := limiter.New(memory.NewStore(), limiter.Rate{Period: time.Hour, Limit: 1})
	for _, tc := range []struct {
		name string
		h    http.Handler
	}{
		{"polite", g.Handler(bare)},
		{"httprate", httprate.LimitBy(1, time.Hour, byRemoteAddr)(bare)},
		{"ulule", stdlib.NewMiddleware(ul).Handler(bare)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			w := &statusWriter{h: make(http.Header, 8)}
			for _, r := range reqs {
				clear(w.h)
				tc.h.ServeHTTP(w, r)
			}
			b.ResetTimer()
			if n := rotate(b, tc.h, reqs, http.StatusTooManyRequests); n > 0 {
				b.Fatalf("%d of %d requests not refused", n, b.N)
			}
		})
	}
}

// clientRequests returns a GET request from each of guardClients
// addresses.
func clientRequests() []*http.Request {
	reqs := make([]*http.Request, guardClients)
	for i := range reqs {
		reqs[i] = httptest.NewRequest("GET", "/items/1", nil)
		reqs[i].RemoteAddr = "10." + strconv.Itoa(i>>16&255) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255) + ":5555"
	}
	return reqs
}

// rotate sends reqs through h in turn under RunParallel and returns how
// many answers had another status than want (0: an admission).
func rotate(b *testing.B, h http.Handler, reqs []*http.Request, want int) int64 {
	var next, other atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		w := &statusWriter{h: make(http.Header, 8)}
		i := int(next.Add(7919)) % len(reqs)
		for pb.Next() {
			if i++; i == len(reqs) {
				i = 0
			}
			clear(w.h)
			w.code = 0
			h.ServeHTTP(w, reqs[i])
			if w.code != want {
				other.Add(1)
			}
		}
	})
	return other.Load()
}

// statusWriter keeps a refusal's status and discards the rest.
type statusWriter struct {
	h    http.Header
	code int
}

func (w *statusWriter) Header() http.Header         { return w.h }
func (w *statusWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *statusWriter) WriteHeader(code int) {
	if code != http.StatusOK {
		w.code = code
	}
}

// TestGuardPeersExactness runs polite's guard and httprate side by side
// under the same budget (10 requests per second per client, burst 10 for
// polite) with 200 goroutines over 20 clients for 20 s of fake time, and
// reports for each the most any client got within any 1 s span and in
// all, against the token-bucket bound burst + rate*t. polite must stay
// within it; httprate's sliding-window estimate is reported, not judged.
func TestGuardPeersExactness(t *testing.T) {
	const (
		clients = 20
		per     = 10
		rate    = 10
		span    = 20 * time.Second
	)
	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	for _, tc := range []struct {
		name string
		make func() http.Handler
	}{
		{"polite", func() http.Handler {
			g, err := guard.New(guard.Config{Identity: guard.Limit{Rate: rate, Burst: rate}})
			if err != nil {
				t.Fatal(err)
			}
			return g.Handler(bare)
		}},
		{"httprate", func() http.Handler { return httprate.LimitBy(rate, time.Second, byRemoteAddr)(bare) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var admits [clients][]time.Duration
			synctest.Test(t, func(t *testing.T) {
				h := tc.make()
				start := time.Now()
				var mu sync.Mutex
				var wg sync.WaitGroup
				for c := range clients {
					for j := range per {
						wg.Go(func() {
							r := httptest.NewRequest("GET", "/", nil)
							r.RemoteAddr = "198.51.100." + strconv.Itoa(c) + ":1"
							w := &statusWriter{h: make(http.Header)}
							time.Sleep(time.Duration(j*7+c) * time.Millisecond)
							for time.Since(start) < span {
								clear(w.h)
								w.code = 0
								h.ServeHTTP(w, r)
								if w.code == 0 {
									mu.Lock()
									admits[c] = append(admits[c], time.Since(start))
									mu.Unlock()
								}
								time.Sleep(13 * time.Millisecond)
							}
						})
					}
				}
				wg.Wait()
			})
			worstWindow, worstExcess := 0, 0.0
			for _, ts := range admits {
				for i := range ts {
					n := 0
					for j := i; j < len(ts) && ts[j]-ts[i] < time.Second; j++ {
						n++
					}
					worstWindow = max(worstWindow, n)
					worstExcess = max(worstExcess, float64(i+1)-(rate+rate*ts[i].Seconds()))
				}
			}
			t.Logf("%s: most in any 1 s: %d (budget 10/s, burst 10: at most 20); largest excess over burst+rate*t: %.0f", tc.name, worstWindow, worstExcess)
			if tc.name == "polite" && worstExcess > 0 {
				t.Errorf("polite exceeded burst+rate*t by %.0f", worstExcess)
			}
		})
	}
}

// byRemoteAddr keys httprate by the TCP peer's address, IPv6 by /64: what
// its deprecated LimitByIP did, and what polite's guard does without a
// trusted proxy, so the two count the same clients.
func byRemoteAddr(r *http.Request) (string, error) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return httprate.CanonicalizeIP(host), nil
}
