package bench

import (
	"context"
	"hash/maphash"
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
func BenchmarkGetAllow(b *testing.B) {
	benchGetAllow(b, false, politePeer, mutexMapPeer, goLimiterPeer)
}

func BenchmarkGetAllowParallel(b *testing.B) {
	benchGetAllow(b, true, politePeer, mutexMapPeer, goLimiterPeer)
}

// BenchmarkGetAllowFloor sets polite and the mutex map beside what finding
// one of a million hosts costs at the least, in the same run: a map with no
// lock (baremap); the key's hash picking a pointer, then the object it
// points to (read2: any index of pointers to per-host objects, as polite's
// table); the key's hash picking an object (read1: one random read). Each
// builds the same key and takes one atomic add on the host's line, as a
// limiter must take at least one. The floors hash the key because a
// registry must: a location read from a precomputed index, not derived
// from the key's bytes, lets the core run ahead into the next call and
// overlap its misses, and costs half as much on the machine where this was
// written, a floor no registry could reach.
func BenchmarkGetAllowFloor(b *testing.B) {
	benchGetAllow(b, false, politePeer, mutexMapPeer, bareMapPeer, read2Peer, read1Peer)
}

// BenchmarkGetAllowMixed runs polite, the mutex map and the read2 and read1
// floors of BenchmarkGetAllowFloor by turns, 10,000 calls each, and reports
// each one's time per call and polite's ratios to the others. On a machine
// shared with other work the load changes within seconds, and the floor
// benchmark's peers, run one after the other, meet different loads; here
// each slice of load falls on every peer alike. Its ns/op is the sum of the
// four.
func BenchmarkGetAllowMixed(b *testing.B) {
	if mixedPeers == nil { // built once, for every b.N the benchmark is run with
		idx, now := hostIndexes(), time.Now()
		mixedPeers = []mixedPeer{
			{"polite", politeBody(newPolite(b, numHosts, now), idx, now)},
			{"mutexmap", mutexMapBody(newMutexMapN(b, numHosts, now), idx, now)},
			{"read2", read2Body(newCellPtrs(), idx)},
			{"read1", read1Body(newCells(), idx)},
		}
		runtime.GC()
	}
	peers := mixedPeers
	spent := make([]time.Duration, len(peers))
	const slice = 10_000
	var denied int64
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n += slice {
		for i, p := range peers {
			left := min(slice, b.N-n)
			start := time.Now()
			denied += p.body(func() bool { left--; return left >= 0 })
			spent[i] += time.Since(start)
		}
	}
	b.StopTimer()
	checkAdmitted(b, denied)
	per := func(i int) float64 { return float64(spent[i].Nanoseconds()) / float64(b.N) }
	for i, p := range peers {
		b.ReportMetric(per(i), p.name+"-ns/op")
	}
	b.ReportMetric(per(0)/per(1), "polite/mutexmap")
	b.ReportMetric(per(0)/per(2), "polite/read2")
	b.ReportMetric(per(0)/per(3), "polite/read1")
}

type mixedPeer struct {
	name string
	body func(next) int64
}

var mixedPeers []mixedPeer

// hostIndexes returns the random host indexes every peer goes through,
// drawn ahead so the generator stays off the measured path.
func hostIndexes() []int32 {
	rng := rand.New(rand.NewPCG(1, 2))
	idx := make([]int32, 1<<20)
	for i := range idx {
		idx[i] = rng.Int32N(numHosts)
	}
	return idx
}

// A peer returns its name, the benchmark of its Get and Allow over idx,
// and how to drop what the benchmark built.
type peer func(idx []int32, now time.Time, parallel bool) (name string, bench func(*testing.B), drop func())

// benchGetAllow runs each peer's benchmark in turn. Each peer is built once
// per run and kept across the calls RunParallel's ramp-up makes, then
// dropped so the next peer's heap starts clean.
func benchGetAllow(b *testing.B, parallel bool, peers ...peer) {
	idx, now := hostIndexes(), time.Now()
	for _, p := range peers {
		name, bench, drop := p(idx, now, parallel)
		b.Run(name, bench)
		drop()
	}
}

func politePeer(idx []int32, now time.Time, parallel bool) (string, func(*testing.B), func()) {
	var reg *polite.Registry
	return "polite", func(b *testing.B) {
		if reg == nil {
			reg = newPolite(b, numHosts, now)
			runtime.GC() // finish the collection the build set off before timing
		}
		r := reg
		b.ReportAllocs()
		b.ResetTimer()
		run(b, parallel, politeBody(r, idx, now))
	}, func() { reg = nil }
}

func politeBody(r *polite.Registry, idx []int32, now time.Time) func(next) int64 {
	mask := len(idx) - 1
	return func(pb next) int64 {
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
	}
}

func mutexMapPeer(idx []int32, now time.Time, parallel bool) (string, func(*testing.B), func()) {
	var mm *mutexMap
	return "mutexmap", func(b *testing.B) {
		if mm == nil {
			mm = newMutexMapN(b, numHosts, now)
			runtime.GC() // finish the collection the build set off before timing
		}
		m := mm
		b.ReportAllocs()
		b.ResetTimer()
		run(b, parallel, mutexMapBody(m, idx, now))
	}, func() { mm = nil }
}

func mutexMapBody(m *mutexMap, idx []int32, now time.Time) func(next) int64 {
	mask := len(idx) - 1
	return func(pb next) int64 {
		var buf [32]byte
		denied := int64(0)
		for i := rand.IntN(len(idx)); pb(); i++ {
			if !m.get(bytesKey(hostKeyInto(buf[:0], int(idx[i&mask])))).AllowN(now, 1) {
				denied++
			}
		}
		return denied
	}
}

func goLimiterPeer(idx []int32, _ time.Time, parallel bool) (string, func(*testing.B), func()) {
	mask := len(idx) - 1
	var gl limiter.Store
	return "golimiter", func(b *testing.B) {
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
		}, func() {
			if gl != nil {
				gl.Close(context.Background())
			}
		}
}

// cell is a floor peer's per-host object: a counter on a cache line of its
// own, the size of a polite Host with a 16-byte key.
type cell struct {
	n atomic.Int64
	_ [56]byte
}

// floorPeer makes a peer of a floor's build and body. The floors are
// serial only.
func floorPeer[T any](name string, build func() T, body func(T, []int32) func(next) int64) peer {
	return func(idx []int32, _ time.Time, _ bool) (string, func(*testing.B), func()) {
		var v *T
		return name, func(b *testing.B) {
			if v == nil {
				v = new(build())
				runtime.GC()
			}
			b.ReportAllocs()
			b.ResetTimer()
			run(b, false, body(*v, idx))
		}, func() { v = nil }
	}
}

var (
	bareMapPeer = floorPeer("baremap", newBareMap, bareMapBody)
	read2Peer   = floorPeer("read2", newCellPtrs, read2Body)
	read1Peer   = floorPeer("read1", newCells, read1Body)
)

func newBareMap() map[string]*cell {
	m := make(map[string]*cell)
	var buf [32]byte
	for i := range numHosts {
		c := new(cell)
		c.n.Store(1) // touch every page, so none reads the zero page
		m[string(hostKeyInto(buf[:0], i))] = c
	}
	return m
}

func bareMapBody(m map[string]*cell, idx []int32) func(next) int64 {
	mask := len(idx) - 1
	return func(pb next) int64 {
		var buf [32]byte
		for i := rand.IntN(len(idx)); pb(); i++ {
			m[bytesKey(hostKeyInto(buf[:0], int(idx[i&mask])))].n.Add(1)
		}
		return 0
	}
}

// floorSlots is how many cells or pointers a floor's hash picks among:
// a power of two, at least numHosts.
const floorSlots = 1 << 20

// newCellPtrs returns floorSlots pointers to as many cells, shuffled, so
// that neighbouring pointers point far apart, as a hash table's do.
func newCellPtrs() []*cell {
	cells := make([]*cell, floorSlots)
	for i := range cells {
		cells[i] = new(cell)
		cells[i].n.Store(1) // touch every page, so none reads the zero page
	}
	rng := rand.New(rand.NewPCG(3, 4))
	rng.Shuffle(len(cells), func(i, j int) { cells[i], cells[j] = cells[j], cells[i] })
	return cells
}

func read2Body(cells []*cell, idx []int32) func(next) int64 {
	return readBody(idx, func(j uint64) *cell { return cells[j] })
}

func newCells() []cell {
	cells := make([]cell, floorSlots)
	for i := range cells {
		cells[i].n.Store(1) // touch every page, so none reads the zero page
	}
	return cells
}

func read1Body(cells []cell, idx []int32) func(next) int64 {
	return readBody(idx, func(j uint64) *cell { return &cells[j] })
}

// readBody is a floor's work: build the key, hash it to pick one of
// floorSlots, get that slot's cell with at (one indirect call, a
// nanosecond or two), and add to its counter.
func readBody(idx []int32, at func(j uint64) *cell) func(next) int64 {
	mask := len(idx) - 1
	seed := maphash.MakeSeed()
	return func(pb next) int64 {
		var buf [32]byte
		for i := rand.IntN(len(idx)); pb(); i++ {
			key := bytesKey(hostKeyInto(buf[:0], int(idx[i&mask])))
			at(maphash.String(seed, key) & (floorSlots - 1)).n.Add(1)
		}
		return 0
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
