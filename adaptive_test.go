package polite

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/polite-go/polite/adaptive"
	"github.com/polite-go/polite/bucket"
	"github.com/polite-go/polite/testbed"
)

// TestAdaptiveFindsCapacity runs the Transport with Adaptive against a
// testbed host of hidden capacity 20 req/s for a minute of fake time: the
// rate must find the capacity and stay near it without collecting 429s.
func TestAdaptiveFindsCapacity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := testbed.NewServer(testbed.HostConfig{Name: "cap.test", Rate: 20, Burst: 5,
			RetryAfter: testbed.RetryAfterSeconds, Latency: 20 * time.Millisecond})
		srv.StartInMemory()
		defer srv.Close()
		tr := &Transport{Base: srv.Transport(), Limits: Limits{Rate: 2, Concurrency: 8},
			Adaptive: &adaptive.Config{}, Retries: -1}
		c := &http.Client{Transport: tr}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := 0; ctx.Err() == nil; i++ {
					req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("http://cap.test/%d/%d", w, i), nil)
					resp, err := c.Do(req)
					if err != nil {
						time.Sleep(100 * time.Millisecond) // breaker open or paused: a crawler reschedules
						continue
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		}
		wg.Wait()
		st := srv.Host("cap.test").Stats()
		capacity := 20.0 * 60
		goodput := float64(st.Admitted) / capacity
		share429 := float64(st.Rejected) / float64(st.Arrivals)
		t.Logf("admitted %d of capacity %.0f (%.0f %%), rejected %d of %d (%.1f %%)",
			st.Admitted, capacity, 100*goodput, st.Rejected, st.Arrivals, 100*share429)
		// Each 429 here carries "Retry-After: 1" (the testbed rounds the true
		// ~50 ms up to whole seconds, as servers do), and the Transport pauses
		// the whole host for it: one probe too many costs a second of
		// capacity. So goodput is held to 80 % over a minute that includes
		// the cold start at 2 req/s, and 429s to 2 %.
		if goodput < 0.80 {
			t.Errorf("goodput %.0f %% of capacity, want ≥ 80 %%", 100*goodput)
		}
		if share429 > 0.02 {
			t.Errorf("429 share %.1f %%, want ≤ 2 %%", 100*share429)
		}
	})
}

// TestAdaptiveNoCollapse repeats a steady host under 32 endless workers:
// goroutine interleavings differ from run to run, and none may let the rate
// collapse. (It did once: a capacity measured over the Transport's host-wide
// pause counted zero answers and set the rate to the floor, 0.1 req/s.)
func TestAdaptiveNoCollapse(t *testing.T) {
	runs := 20
	if testing.Short() {
		runs = 5
	}
	for run := range runs {
		synctest.Test(t, func(t *testing.T) {
			srv := testbed.NewServer(testbed.HostConfig{Name: "steady.test", Rate: 20, Burst: 10, Latency: 50 * time.Millisecond})
			srv.StartInMemory()
			defer srv.Close()
			tr := &Transport{Base: srv.Transport(), Limits: Limits{Burst: 1, Concurrency: 32}, Adaptive: &adaptive.Config{Initial: 1}}
			c := &http.Client{Transport: tr}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var wg sync.WaitGroup
			for w := range 32 {
				wg.Go(func() {
					for n := w; ctx.Err() == nil; n += 32 {
						req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("http://steady.test/page/%d", n), nil)
						resp, err := c.Do(req)
						if err != nil {
							time.Sleep(10 * time.Millisecond)
							continue
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				})
			}
			wg.Wait()
			if st := srv.Host("steady.test").Stats(); st.Admitted < 900 {
				t.Errorf("run %d: admitted %d in a minute at capacity 20 req/s, want ≥ 900 (75 %%)", run, st.Admitted)
			}
		})
	}
}

// A host with no rate limit (bucket.Inf) under Adaptive starts at the
// controller's ceiling, not at its cold-start default of 1 req/s: no limit
// was asked for, so only the host's throttles bring the rate down.
func TestAdaptiveUnlimitedStartsAtMax(t *testing.T) {
	for _, tc := range []struct {
		cfg  adaptive.Config
		want float64
	}{
		{adaptive.Config{}, adaptive.DefaultMax},
		{adaptive.Config{Max: 50}, 50},
		{adaptive.Config{Initial: 3}, 3}, // an explicit Initial wins
	} {
		synctest.Test(t, func(t *testing.T) {
			tr := &Transport{IgnoreRobots: true, Limits: Limits{Rate: bucket.Inf, Concurrency: 4}, Adaptive: &tc.cfg}
			c, _ := setup(t, tr, map[string]http.HandlerFunc{"a.test": func(http.ResponseWriter, *http.Request) {}})
			if resp, _, err := get(t, c, "http://a.test/"); err != nil || resp.StatusCode != 200 {
				t.Fatalf("GET = %v, %v", resp, err)
			}
			h := tr.Registry().Get("a.test")
			defer tr.Registry().Put(h)
			if got := h.bucket.Rate(); got != tc.want {
				t.Errorf("%+v: rate %v after one answer, want %v", tc.cfg, got, tc.want)
			}
		})
	}
}

// A host's Limits.MaxRate caps its adaptive rate: a fast host that never
// throttles is ridden at its MaxRate, not raised toward Adaptive.Max.
func TestLimitsMaxRateCapsAdaptive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &Transport{Limits: Limits{Rate: 5, Burst: 1, Concurrency: 4, MaxRate: 5},
			Adaptive: &adaptive.Config{Max: 1000}}
		c, _ := setup(t, tr, map[string]http.HandlerFunc{
			"fast.test": func(w http.ResponseWriter, r *http.Request) {},
		})
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 50 {
					get(t, c, "http://fast.test/")
				}
			})
		}
		wg.Wait()
		if st, _ := tr.State("fast.test"); st.Rate > 5 {
			t.Errorf("after 200 requests to a host that never throttles the rate is %v, want at most MaxRate 5", st.Rate)
		}
	})
}

// TestAdaptiveGrowsOnlyUnderDemand: a rate grows while demand presses on
// it, and not much past the demand (issue 18, item 1: sequential requests
// at about 50 a second took a host from 5 to 86 req/s in 2 s, and to 100).
// Four requests at a time press harder, and the rate follows.
func TestAdaptiveGrowsOnlyUnderDemand(t *testing.T) {
	for _, tc := range []struct {
		workers  int
		min, max float64 // the rate after 10 s
	}{
		{1, 40, 1.3 * 50}, // one at a time, 20 ms each: 50 a second at the most
		{4, 120, 1e9},     // four: 200 a second
	} {
		synctest.Test(t, func(t *testing.T) {
			tr := &Transport{Limits: Limits{Rate: 5, Burst: 1, Concurrency: 8}, Adaptive: &adaptive.Config{Max: 1000}}
			c, _ := setup(t, tr, map[string]http.HandlerFunc{
				"a.test": func(w http.ResponseWriter, r *http.Request) { time.Sleep(20 * time.Millisecond) },
			})
			var wg sync.WaitGroup
			start := time.Now()
			for range tc.workers {
				wg.Go(func() {
					for time.Since(start) < 10*time.Second {
						if _, _, err := get(t, c, "http://a.test/"); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			st, _ := tr.State("a.test")
			if st.Rate < tc.min || st.Rate > tc.max {
				t.Errorf("%d at a time for 10 s: rate %.1f, want %.0f to %.0f", tc.workers, st.Rate, tc.min, tc.max)
			}
		})
	}
}
