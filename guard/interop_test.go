package guard

import (
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/retry"
	"github.com/polite-go/polite/testbed"
)

// polite's own Transport, pointed at a guarded server, reads its
// RateLimit-Policy and RateLimit fields and paces under them: after the
// first answer, no 429.
func TestPoliteClientPacesUnderGuard(t *testing.T) {
	for _, tc := range []struct {
		name    string
		limit   Limit
		workers int
		quota   int // q;w=ceil(burst/rate)
	}{
		{"5/s burst 10", Limit{Rate: 5, Burst: 10}, 4, 10},
		{"3/s burst 10 (w rounds up)", Limit{Rate: 3, Burst: 10}, 4, 12},
		{"20/s burst 5", Limit{Rate: 20, Burst: 5}, 8, 20},
		{"0.5/s burst 1", Limit{Rate: 0.5, Burst: 1}, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := mustNew(t, Config{Identity: tc.limit})
				n := &testbed.Network{}
				var served atomic.Int64
				n.Serve(g.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					served.Add(1)
					io.WriteString(w, "ok")
				})))
				defer n.Close()
				base := n.Transport()
				defer base.CloseIdleConnections()
				// A client that starts far faster than the guard allows.
				tr := &polite.Transport{Base: base, Limits: polite.Limits{Rate: 100, Burst: 1, Concurrency: tc.workers}}
				c := &http.Client{Transport: tr}
				var mu sync.Mutex
				codes := map[int]int{}
				first := make(chan struct{})
				var once sync.Once
				var wg sync.WaitGroup
				start := time.Now()
				const span = 60 * time.Second
				for w := range tc.workers {
					wg.Go(func() {
						if w > 0 {
							<-first // first contact: one request, then everyone
						}
						for time.Since(start) < span {
							resp, err := c.Get("http://api.test/items")
							if err != nil {
								t.Errorf("GET: %v", err)
								return
							}
							io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
							if q, ok := retry.ParseRateLimit(resp.Header, time.Now()); !ok || q.Policy != "identity" || q.Limit != tc.quota {
								t.Errorf("the client read %+v, %v from %q", q, ok, resp.Header)
							}
							mu.Lock()
							codes[resp.StatusCode]++
							mu.Unlock()
							once.Do(func() { close(first) })
						}
					})
				}
				wg.Wait()
				el := time.Since(start).Seconds()
				ideal := float64(tc.limit.Burst) + tc.limit.Rate*el
				t.Logf("%d workers, %.0f s: %v; served %d of at most %.0f (%.0f%%)", tc.workers, el, codes, served.Load(), ideal, 100*float64(served.Load())/ideal)
				if codes[http.StatusTooManyRequests] > 0 {
					t.Errorf("%d answers were 429 after first contact", codes[http.StatusTooManyRequests])
				}
				if float64(served.Load()) < 0.7*ideal {
					t.Errorf("served %d: the client paced far under the %.0f allowed", served.Load(), ideal)
				}
			})
		})
	}
}
