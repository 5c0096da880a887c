package guard

import (
	"context"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/polite-go/polite/bucket"
)

// The guard's arithmetic is bucket.Bucket's: the same decisions and the same
// token counts over random sequences of costs and pauses.
func TestGCRAMatchesBucket(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		rate := []float64{0.5, 1, 3, 7.5, 10, 100, 1000}[rng.IntN(7)]
		burst := 1 + rng.IntN(30)
		synctest.Test(t, func(t *testing.T) {
			b := bucket.New(rate, burst)
			m := NewMemory(MemoryOptions{})
			l, _ := compile(Limit{Rate: rate, Burst: burst}, "identity")
			req := Request{Levels: [NumLevels]Bucket{{Key: []byte("ix"), Burst: int64(burst), Interval: time.Duration(l.interval)}}}
			var d Decision
			for step := range 300 {
				time.Sleep(time.Duration(rng.Int64N(int64(3e9 / rate))))
				n := 1 + rng.IntN(burst)
				req.Cost = int64(n)
				want := b.AllowN(time.Now(), n)
				m.Decide(context.Background(), &req, &d)
				if d.Allowed != want {
					t.Fatalf("trial %d step %d (rate %v burst %d cost %d): guard %v, bucket %v", trial, step, rate, burst, n, d.Allowed, want)
				}
				if got, want := tokens(burst, int64(d.Debt[0]), int64(d.Interval[0])), int64(math.Floor(b.Tokens(time.Now())+1e-9)); got != max(want, 0) {
					t.Fatalf("trial %d step %d: tokens %d, bucket %d", trial, step, got, want)
				}
			}
		})
	}
}

// A refusal at any level leaves every level as it was; an admission takes
// the cost from every level in play.
func TestRefusalChangesNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	refusals := [NumLevels]int{}
	for range 100 {
		synctest.Test(t, func(t *testing.T) {
			m := NewMemory(MemoryOptions{MaxKeys: 64, Shards: 4})
			var lim [NumLevels]Limit
			for i := range lim {
				lim[i] = Limit{Rate: float64(1 + rng.IntN(20)), Burst: 1 + rng.IntN(12)}
			}
			var d Decision
			for range 400 {
				time.Sleep(time.Duration(rng.Int64N(int64(300 * time.Millisecond))))
				var req Request
				for i := range lim {
					if i > 0 && rng.IntN(3) == 0 {
						continue // level not in play for this request
					}
					c, _ := compile(lim[i], Level(i).String())
					key := []byte{"itg"[i], ':', byte('a' + rng.IntN(3))}
					req.Levels[i] = Bucket{Key: key, Burst: int64(c.Burst), Interval: time.Duration(c.interval)}
				}
				maxCost := int64(math.MaxInt64)
				for _, b := range req.Levels {
					if b.Key != nil {
						maxCost = min(maxCost, b.Burst)
					}
				}
				req.Cost = 1 + rng.Int64N(maxCost)
				var before [NumLevels]int64
				var had [NumLevels]bool
				for i, b := range req.Levels {
					if b.Key != nil {
						before[i], had[i] = m.state(string(b.Key))
					}
				}
				m.Decide(context.Background(), &req, &d)
				short := false
				for i, b := range req.Levels {
					if b.Key == nil {
						continue
					}
					after, has := m.state(string(b.Key))
					iv := int64(d.Interval[i])
					if _, _, ok := gcra(int64(d.Debt[i]), req.Cost, iv, b.Burst*iv); !ok && !d.Allowed {
						short = true
						refusals[i]++
					}
					switch {
					case !d.Allowed && (after != before[i] || has != had[i]):
						t.Fatalf("refused, yet level %d moved: %d,%v -> %d,%v", i, before[i], had[i], after, has)
					case d.Allowed && (!has || had[i] && after <= before[i]):
						t.Fatalf("admitted, yet level %d did not pay: %d,%v -> %d,%v", i, before[i], had[i], after, has)
					}
				}
				if !d.Allowed && !short {
					t.Fatalf("refused with every level holding %d tokens: %+v", req.Cost, d)
				}
			}
		})
	}
	for i, n := range refusals {
		if n == 0 {
			t.Errorf("no refusal at level %d: the test proved nothing there", i)
		}
	}
	t.Logf("refusals by level (identity, tenant, global): %v", refusals)
}

// A client that waits exactly Retry-After is admitted, and one that comes
// a second earlier is not: Retry-After is ceil((cost - tokens)/rate).
func TestRetryAfterExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const trials = 10000
	admitted, early := 0, 0
	synctest.Test(t, func(t *testing.T) {
		for trial := range trials {
			rate := []float64{0.2, 0.7, 1, 2.5, 3, 10, 33, 100}[rng.IntN(8)]
			burst := 1 + rng.IntN(40)
			g := mustNew(t, Config{Identity: Limit{Rate: rate, Burst: burst},
				Costs: map[string]int{"/c/" + strconv.Itoa(burst): max(1, rng.IntN(burst+1))}})
			h := g.Handler(ok)
			path := "/c/" + strconv.Itoa(burst)
			// A random state: some requests, some pause.
			for range rng.IntN(2 * burst) {
				do(h, "GET", "/", "192.0.2.1:1")
			}
			time.Sleep(time.Duration(rng.Int64N(int64(float64(burst) / rate * float64(time.Second)))))
			var w *httptest.ResponseRecorder
			for {
				if w = do(h, "GET", path, "192.0.2.1:1"); w.Code == http.StatusTooManyRequests {
					break
				}
			}
			ra, err := strconv.Atoi(w.Header().Get("Retry-After"))
			if err != nil || ra < 1 {
				t.Fatalf("trial %d: Retry-After %q", trial, w.Header().Get("Retry-After"))
			}
			if rl := w.Header().Get("RateLimit"); !containsParam(rl, "t="+strconv.Itoa(ra)) {
				t.Fatalf("trial %d: RateLimit %q, want t=%d as Retry-After", trial, rl, ra)
			}
			time.Sleep(time.Duration(ra-1) * time.Second)
			if w := do(h, "GET", path, "192.0.2.1:1"); w.Code == http.StatusOK {
				early++
			}
			time.Sleep(time.Second)
			if w := do(h, "GET", path, "192.0.2.1:1"); w.Code == http.StatusOK {
				admitted++
			}
		}
	})
	t.Logf("waited exactly Retry-After: admitted %d of %d (%.2f%%); a second earlier: %d", admitted, trials, 100*float64(admitted)/trials, early)
	if admitted < trials*999/1000 || early != 0 {
		t.Errorf("admitted %d of %d after Retry-After (want >= 99.9%%), %d a second earlier (want 0)", admitted, trials, early)
	}
}

func containsParam(field, p string) bool {
	for i := 0; i+len(p) <= len(field); i++ {
		if field[i:i+len(p)] == p && (i+len(p) == len(field) || field[i+len(p)] == ';' || field[i+len(p)] == ',') {
			return true
		}
	}
	return false
}

// 10,000 goroutines over 1,000 identities for 5 s (fake time), through the
// middleware: at every admission, no identity has had more than burst +
// rate*elapsed, and each got at least 99.9 % of that when offered more.
func TestExactnessInMemory(t *testing.T) {
	const (
		identities = 1000
		perID      = 10
		rate       = 10.0
		burst      = 20
		span       = 5 * time.Second
		every      = 50 * time.Millisecond // each goroutine: 20 req/s, so 200 req/s per identity
	)
	var mu sync.Mutex
	admits := make([][]time.Duration, identities)
	lastOffer := make([]time.Duration, identities)
	synctest.Test(t, func(t *testing.T) {
		g := mustNew(t, Config{Identity: Limit{Rate: rate, Burst: burst}})
		h := g.Handler(ok)
		start := time.Now()
		var wg sync.WaitGroup
		for id := range identities {
			addr := "[2001:db8:" + strconv.FormatInt(int64(id), 16) + "::1]:443"
			for j := range perID {
				wg.Go(func() {
					r := httptest.NewRequest("GET", "/", nil)
					r.RemoteAddr = addr
					w := &nopWriter{h: make(http.Header)}
					var mine []time.Duration
					var last time.Duration
					time.Sleep(time.Duration((id*7+j*5)%50) * time.Millisecond)
					for {
						el := time.Since(start)
						if el >= span {
							break
						}
						clear(w.h)
						w.code = 0
						h.ServeHTTP(w, r)
						last = el
						if w.code == 0 {
							mine = append(mine, el)
						}
						time.Sleep(every)
					}
					mu.Lock()
					admits[id] = append(admits[id], mine...)
					lastOffer[id] = max(lastOffer[id], last)
					mu.Unlock()
				})
			}
		}
		wg.Wait()
	})
	maxExcess, minRatio, total := math.Inf(-1), math.Inf(1), 0
	for id, ts := range admits {
		slices.Sort(ts)
		total += len(ts)
		for n, at := range ts {
			allowed := burst + rate*at.Seconds()
			maxExcess = max(maxExcess, float64(n+1)-math.Floor(allowed+1e-9))
		}
		ideal := burst + rate*lastOffer[id].Seconds()
		minRatio = min(minRatio, float64(len(ts))/math.Floor(ideal+1e-9))
		if len(ts) < int(0.999*ideal) {
			t.Errorf("identity %d: admitted %d, want >= 99.9%% of %.1f", id, len(ts), ideal)
		}
	}
	t.Logf("%d goroutines, %d identities, %v: %d admitted; largest excess over burst+rate*t: %v; least admitted/floor(burst+rate*t): %.4f",
		identities*perID, identities, span, total, maxExcess, minRatio)
	if maxExcess > 0 {
		t.Errorf("largest excess %v, want 0", maxExcess)
	}
}

// nopWriter is a ResponseWriter that keeps the status only.
type nopWriter struct {
	h    http.Header
	code int
}

func (w *nopWriter) Header() http.Header         { return w.h }
func (w *nopWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *nopWriter) WriteHeader(code int) {
	if code != http.StatusOK {
		w.code = code
	}
}
