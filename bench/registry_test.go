package bench

import (
	"context"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/polite-go/polite"
	"github.com/sethvargo/go-limiter"
	"github.com/sethvargo/go-limiter/memorystore"
	"golang.org/x/time/rate"
)

// Every peer admits 1e6 requests per second per host with about a million
// in hand, so a random pick among a million hosts never meets a refusal.
const (
	hostRate  = 1e6
	hostBurst = 1 << 20
	numHosts  = 1_000_000
)

// hostKeyInto appends "h%07d.example" to dst, as polite's
// registry_bench_test.go does. Benchmarks build each key in a reused buffer,
// as a crawler holds a freshly parsed URL: reading it from a slice of a
// million strings would add cache misses that belong to the benchmark, not
// to the limiter.
func hostKeyInto(dst []byte, i int) []byte {
	dst = append(dst, 'h')
	for d := 1_000_000; d > 0; d /= 10 {
		dst = append(dst, byte('0'+i/d%10))
	}
	return append(dst, ".example"...)
}

// bytesKey views b as a string without copying. Every peer either copies a
// key it keeps (polite, mutexMap) or, like go-limiter, is only handed keys
// it already holds, so no map ever keeps a view of the reused buffer.
func bytesKey(b []byte) string { return unsafe.String(&b[0], len(b)) }

// mutexMap is the registry a Go programmer writes first: one mutex over a
// map of x/time/rate limiters, created on a miss.
type mutexMap struct {
	mu sync.Mutex // guards m
	m  map[string]*rate.Limiter
}

func newMutexMap() *mutexMap { return &mutexMap{m: make(map[string]*rate.Limiter)} }

func (mm *mutexMap) get(key string) *rate.Limiter {
	mm.mu.Lock()
	l := mm.m[key]
	if l == nil {
		l = rate.NewLimiter(hostRate, hostBurst)
		mm.m[strings.Clone(key)] = l
	}
	mm.mu.Unlock()
	return l
}

// The builders below create n hosts and take one token from each. polite
// needs the token: a host whose bucket is full is idle, and the registry
// evicts idle hosts as it grows; the others take one for symmetry.

func newPolite(tb testing.TB, n int, now time.Time) *polite.Registry {
	r := &polite.Registry{Limits: polite.Limits{Rate: hostRate, Burst: hostBurst}}
	var buf [32]byte
	for i := range n {
		h := r.Get(bytesKey(hostKeyInto(buf[:0], i)))
		h.AllowN(now, 1)
		r.Put(h)
	}
	if r.Len() != n {
		tb.Fatalf("polite registry holds %d hosts, want %d", r.Len(), n)
	}
	return r
}

func newMutexMapN(tb testing.TB, n int, now time.Time) *mutexMap {
	mm := newMutexMap()
	var buf [32]byte
	for i := range n {
		mm.get(bytesKey(hostKeyInto(buf[:0], i))).AllowN(now, 1)
	}
	if len(mm.m) != n {
		tb.Fatalf("mutex map holds %d hosts, want %d", len(mm.m), n)
	}
	return mm
}

func newGoLimiter(tb testing.TB, n int) limiter.Store {
	// Tokens per Interval: a million a second, as for the others. The
	// default sweep (every 6 hours) never runs during a benchmark.
	s, err := memorystore.New(&memorystore.Config{Tokens: hostBurst, Interval: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	var buf [32]byte
	for i := range n {
		// go-limiter keeps the string it is given on a miss: give it its own.
		if _, _, _, ok, err := s.Take(ctx, string(hostKeyInto(buf[:0], i))); !ok || err != nil {
			tb.Fatalf("go-limiter Take = %v, %v; want true, nil", ok, err)
		}
	}
	return s
}

// BenchmarkGetAllow: find a random one of 1,000,000 hosts and take a token.
// The hosts exist before the timer starts, and the random indexes are drawn
// ahead so the generator stays off the measured path.
func BenchmarkGetAllow(b *testing.B) { benchGetAllow(b, false) }

func BenchmarkGetAllowParallel(b *testing.B) { benchGetAllow(b, true) }

func benchGetAllow(b *testing.B, parallel bool) {
	rng := rand.New(rand.NewPCG(1, 2))
	idx := make([]int32, 1<<20)
	for i := range idx {
		idx[i] = rng.Int32N(numHosts)
	}
	mask := len(idx) - 1
	now := time.Now()

	// Each peer is built once per run and kept across the calls RunParallel's
	// ramp-up makes, then dropped so the next peer's heap starts clean.
	var reg *polite.Registry
	b.Run("polite", func(b *testing.B) {
		if reg == nil {
			reg = newPolite(b, numHosts, now)
			runtime.GC() // finish the collection the build set off before timing
		}
		r := reg
		b.ReportAllocs()
		b.ResetTimer()
		run(b, parallel, func(pb next) int64 {
			var buf [32]byte
			denied := int64(0)
			for i := rand.IntN(len(idx)); pb(); i++ {
				h := r.Get(bytesKey(hostKeyInto(buf[:0], int(idx[i&mask]))))
				if !h.AllowN(now, 1) {
					denied++
				}
				r.Put(h)
			}
			return denied
		})
	})
	reg = nil

	var mm *mutexMap
	b.Run("mutexmap", func(b *testing.B) {
		if mm == nil {
			mm = newMutexMapN(b, numHosts, now)
			runtime.GC() // finish the collection the build set off before timing
		}
		m := mm
		b.ReportAllocs()
		b.ResetTimer()
		run(b, parallel, func(pb next) int64 {
			var buf [32]byte
			denied := int64(0)
			for i := rand.IntN(len(idx)); pb(); i++ {
				if !m.get(bytesKey(hostKeyInto(buf[:0], int(idx[i&mask])))).AllowN(now, 1) {
					denied++
				}
			}
			return denied
		})
	})
	mm = nil

	var gl limiter.Store
	b.Run("golimiter", func(b *testing.B) {
		if gl == nil {
			gl = newGoLimiter(b, numHosts)
			runtime.GC() // finish the collection the build set off before timing
		}
		s := gl
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		run(b, parallel, func(pb next) int64 {
			var buf [32]byte
			denied := int64(0)
			for i := rand.IntN(len(idx)); pb(); i++ {
				// go-limiter reads the clock itself on every Take.
				if _, _, _, ok, _ := s.Take(ctx, bytesKey(hostKeyInto(buf[:0], int(idx[i&mask])))); !ok {
					denied++
				}
			}
			return denied
		})
	})
	if gl != nil {
		gl.Close(context.Background())
	}
}

// next reports whether to run another iteration: b.Loop or pb.Next.
type next func() bool

// run drives body serially with b.Loop or on every goroutine with
// b.RunParallel, and fails the benchmark if any call was refused. The loop
// itself lives in body, so the only indirect call per iteration is the
// iteration test, the same for every peer.
func run(b *testing.B, parallel bool, body func(next) int64) {
	var denied int64
	if parallel {
		var total atomic.Int64
		b.RunParallel(func(pb *testing.PB) { total.Add(body(pb.Next)) })
		denied = total.Load()
	} else {
		denied = body(b.Loop)
	}
	checkAdmitted(b, denied)
}

// TestHeapPerHost logs the live heap each peer holds per host, keys
// included (a 15-byte key takes 16 bytes), after 200,000 hosts have each
// taken one token.
func TestHeapPerHost(t *testing.T) {
	const n = 200_000
	now := time.Now()
	for _, p := range []struct {
		name  string
		build func() (keep any, done func())
	}{
		{"polite", func() (any, func()) { return newPolite(t, n, now), func() {} }},
		{"mutexmap", func() (any, func()) { return newMutexMapN(t, n, now), func() {} }},
		{"golimiter", func() (any, func()) {
			s := newGoLimiter(t, n)
			return s, func() { s.Close(context.Background()) }
		}},
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		keep, done := p.build()
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(keep)
		done()
		perHost := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
		t.Logf("%-9s %6.1f bytes/host (%d hosts, heap %+d B)", p.name, perHost, n,
			int64(after.HeapAlloc)-int64(before.HeapAlloc))
	}
}
