package guard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// One decision of the Memory store under RunParallel, over 100,000
// distinct identities (plus a tenant level over 1,000 tenants, in
// BenchmarkDecide/levels=2).
func BenchmarkDecide(b *testing.B) {
	const keys = 100_000
	id, _ := compile(Limit{Rate: 1e6, Burst: 1 << 20}, "identity")
	tn, _ := compile(Limit{Rate: 1e8, Burst: 1 << 20}, "tenant")
	ids := make([][]byte, keys)
	tenants := make([][]byte, keys)
	for i := range ids {
		ids[i] = []byte("ia:2001:db8:" + strconv.FormatInt(int64(i), 16) + "::/64")
		tenants[i] = []byte("t:" + strconv.Itoa(i%1000))
	}
	for _, levels := range []int{1, 2} {
		b.Run("levels="+strconv.Itoa(levels), func(b *testing.B) {
			m := NewMemory(MemoryOptions{MaxKeys: 4 * keys})
			var next atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				var req Request
				var d Decision
				i := int(next.Add(7919)) % keys
				for pb.Next() {
					if i++; i == keys {
						i = 0
					}
					req.Cost = 1
					req.Levels[Identity] = Bucket{Key: ids[i], Burst: int64(id.Burst), Interval: time.Duration(id.interval)}
					if levels == 2 {
						req.Levels[Tenant] = Bucket{Key: tenants[i], Burst: int64(tn.Burst), Interval: time.Duration(tn.interval)}
					}
					m.Decide(context.Background(), &req, &d)
				}
			})
		})
	}
}

// The middleware against the bare handler it wraps, RemoteAddr over
// 100,000 client addresses, RateLimit and X-RateLimit fields included:
// the difference of the two is the guard's cost per request.
func BenchmarkMiddleware(b *testing.B) {
	const keys = 100_000
	reqs := clientRequests(keys)
	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	g, err := New(Config{Identity: Limit{Rate: 1e6, Burst: 1 << 20}, MaxKeys: 4 * keys})
	if err != nil {
		b.Fatal(err)
	}
	costed, err := New(Config{Identity: Limit{Rate: 1e6, Burst: 1 << 20}, MaxKeys: 4 * keys,
		Costs: map[string]int{"GET /items/{id}": 2, "POST /upload": 10, "/search/": 5}})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		h    http.Handler
	}{
		{"bare", bare},
		{"guard", g.Handler(bare)},
		{"guard+costs", costed.Handler(bare)},
	} {
		b.Run(tc.name, func(b *testing.B) { rotate(b, tc.h, reqs, 0) })
	}
}

// The refusal path (issue 29): every request over its identity's budget
// (one token per 100 s, burst 1, each of 100,000 addresses spent before
// the timer starts), answered 429 with the fields, Retry-After and the
// problem body. Floods are when it runs most: it should cost what an
// admission does.
func BenchmarkMiddlewareRefuse(b *testing.B) {
	const keys = 100_000
	reqs := clientRequests(keys)
	g, err := New(Config{Identity: Limit{Rate: 0.01, Burst: 1}, MaxKeys: 4 * keys})
	if err != nil {
		b.Fatal(err)
	}
	h := g.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	w := &nopWriter{h: make(http.Header, 8)}
	for _, r := range reqs {
		clear(w.h)
		h.ServeHTTP(w, r)
	}
	b.ResetTimer()
	rotate(b, h, reqs, http.StatusTooManyRequests)
}

// clientRequests returns n GET requests from n client addresses.
func clientRequests(n int) []*http.Request {
	reqs := make([]*http.Request, n)
	for i := range reqs {
		reqs[i] = httptest.NewRequest("GET", "/items/1", nil)
		reqs[i].RemoteAddr = "10." + strconv.Itoa(i>>16&255) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255) + ":5555"
	}
	return reqs
}

// rotate sends reqs through h in turn under RunParallel; every answer's
// status must be want (0: any).
func rotate(b *testing.B, h http.Handler, reqs []*http.Request, want int) {
	var next, other atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		w := &nopWriter{h: make(http.Header, 8)}
		i := int(next.Add(7919)) % len(reqs)
		for pb.Next() {
			if i++; i == len(reqs) {
				i = 0
			}
			clear(w.h)
			w.code = 0
			h.ServeHTTP(w, reqs[i])
			if want != 0 && w.code != want {
				other.Add(1)
			}
		}
	})
	if n := other.Load(); n > 0 {
		b.Fatalf("%d of %d answers not %d", n, b.N, want)
	}
}
