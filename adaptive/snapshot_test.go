package adaptive

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// op is one call a replica hears: Observe(at, s), or SetMax(max).
type op struct {
	at     time.Time
	s      Signal
	setMax bool
	max    float64
}

func (o op) apply(c *Controller) float64 {
	if o.setMax {
		c.SetMax(o.max)
		return c.Rate()
	}
	return c.Observe(o.at, o.s)
}

func (o op) String() string {
	if o.setMax {
		return fmt.Sprintf("SetMax(%g)", o.max)
	}
	return fmt.Sprintf("Observe(%d µs, %+v)", o.at.UnixMicro(), o.s)
}

// recorder is a Controller that records the calls it hears, for replay:
// the simulations drive it as they drive a Controller. It records instants
// as a fleet shares them, whole microseconds without a monotonic reading.
type recorder struct {
	*Controller
	ops []op
}

func (r *recorder) Observe(now time.Time, s Signal) float64 {
	r.ops = append(r.ops, op{at: time.UnixMicro(now.UnixMicro()), s: s})
	return r.Controller.Observe(now, s)
}

// record runs a simulation on a fresh Controller of cfg and returns the
// calls it made.
func record(cfg Config, sim func(simRater)) []op {
	r := &recorder{Controller: New(cfg, t0)}
	sim(r)
	return r.ops
}

// randomOps drives a Controller of cfg, from start, with n pseudo-random
// calls: answers paced at its rate (now and then a pause of seconds, or a
// straggler's earlier reading) from a host whose capacity wanders and whose
// latency grows with a queue; OK answers, Spare or not, throttles with and
// without a wait, overloads, failures, neutral and unknown kinds; and now
// and then a SetMax, of odd values too.
func randomOps(seed uint64, cfg Config, start time.Time, n int) []op {
	rng := rand.New(rand.NewPCG(seed, 1))
	c := New(cfg, start)
	capacity := 5 + 45*rng.Float64()
	base := time.Duration(5+rng.IntN(80)) * ms
	tokens, queue := 0.0, 0.0
	us := start.UnixMicro()
	nextShift := us + 10e6
	var ops []op
	for len(ops) < n {
		gap := min(1e6/c.Rate(), 30e6) * (0.5 + rng.Float64())
		if rng.IntN(300) == 0 {
			gap += 5e6 * rng.Float64()
		}
		us += int64(gap)
		if us >= nextShift {
			capacity = min(max(capacity*(0.3+1.7*rng.Float64()), 0.5), 500)
			nextShift = us + int64(5e6+15e6*rng.Float64())
		}
		dt := gap / 1e6
		tokens = min(tokens+dt*capacity, max(capacity/2, 1))
		queue = max(queue+dt*(c.Rate()-capacity), 0)
		at := us
		if rng.IntN(40) == 0 {
			at -= rng.Int64N(200_000)
		}
		o := op{at: time.UnixMicro(at)}
		lat := base + time.Duration(float64(base)*(0.2*rng.Float64()+queue/max(capacity, 1)))
		switch x := rng.IntN(1000); {
		case x < 8:
			o.setMax = true
			o.max = [...]float64{0, -1, math.Inf(1), math.NaN(), 0.05, 1e9, capacity * 2, capacity / 2}[rng.IntN(8)]
		case x < 12:
			o.s = Signal{Kind: Neutral, Latency: lat}
		case x < 14:
			o.s = Signal{Kind: Kind(7 - 8*rng.IntN(2))} // unknown kinds, ignored
		case x < 40:
			o.s = Signal{Kind: Failure, Latency: lat / 2}
		case x < 70 && tokens < 1:
			o.s = Signal{Kind: Overload, Latency: 2 * lat}
		case tokens < 1:
			o.s = Signal{Kind: Throttle, Latency: lat / 4}
			if rng.IntN(4) == 0 {
				o.s.Wait = time.Duration(rng.IntN(3000)) * ms
			}
		default:
			tokens--
			o.s = Signal{Kind: OK, Latency: lat, Spare: rng.IntN(3) == 0}
		}
		o.apply(c)
		ops = append(ops, o)
	}
	return ops
}

// readings are what a replica must agree with its original on after every
// call.
type readings struct {
	rate, capacity, capErr float64
	measured               bool
	concurrency            int
	phase                  string
}

func read(c *Controller) readings {
	var r readings
	r.rate = c.Rate()
	r.capacity, r.measured = c.Capacity()
	r.capErr = c.CapacityError()
	r.concurrency = c.Concurrency()
	r.phase = c.Phase()
	return r
}

// state names where c is, the reacting sub-state (and the kind of decrease
// it follows) included, for choosing the cuts.
func state(c *Controller) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.reacting && c.byLatency:
		return "reacting to latency"
	case c.reacting:
		return "reacting"
	}
	return c.phase.String()
}

// checkReplicas feeds ops to a Controller of cfg made at start and, at
// cuts, restores a snapshot of it (of its newest replica, which must be the
// same) into a new Controller made with the same Config and start; each
// replica then hears the rest of ops, and every call must return what it
// returns to the original, and leave both reading and marshalling the same.
// It cuts at every nth op and when the original first reaches a state, and
// returns the states it reached.
func checkReplicas(t *testing.T, cfg Config, start time.Time, ops []op, nth int) map[string]bool {
	t.Helper()
	orig := New(cfg, start)
	var replicas []*Controller
	seen := map[string]bool{}
	buf := make([]byte, 0, 2*snapshotSize)
	for i, o := range ops {
		st := state(orig)
		if !seen[st] || i%nth == 0 {
			seen[st] = true
			from := orig
			if len(replicas) > 0 {
				from = replicas[len(replicas)-1]
			}
			snap, err := from.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			r := New(cfg, time.UnixMicro(start.UnixMicro()))
			if err := r.UnmarshalBinary(snap); err != nil {
				t.Fatalf("op %d (%s): UnmarshalBinary of a real snapshot: %v", i, st, err)
			}
			replicas = append(replicas, r)
		}
		want := o.apply(orig)
		wantR := read(orig)
		wantSnap, _ := orig.AppendBinary(buf[:0])
		if err := New(cfg, start).UnmarshalBinary(wantSnap); err != nil {
			t.Fatalf("op %d, %v: the original's state does not restore: %v", i, o, err)
		}
		for j, r := range replicas {
			if got := o.apply(r); got != want {
				t.Fatalf("op %d, %v: replica %d returns %v, the original %v", i, o, j, got, want)
			}
			if got := read(r); got != wantR {
				t.Fatalf("op %d, %v: replica %d reads %+v, the original %+v", i, o, j, got, wantR)
			}
			if got, _ := r.AppendBinary(buf[snapshotSize:snapshotSize]); !bytes.Equal(got, wantSnap) {
				t.Fatalf("op %d, %v: replica %d's state differs from the original's", i, o, j)
			}
		}
	}
	t.Logf("%d ops, %d replicas; states %v", len(ops), len(replicas), slices.Sorted(maps.Keys(seen)))
	return seen
}

// Replicas restored from a snapshot at any point, mid-probe, mid-ramp or
// in a reaction window included, hear the rest of the calls as the original
// does and answer the same, call for call.
func TestSnapshotReplicasAgree(t *testing.T) {
	start := time.UnixMicro(t0.UnixMicro())
	for _, tc := range []struct {
		name  string
		cfg   Config
		ops   func(Config) []op
		reach []string
	}{
		{"capacity rises", Config{}, func(cfg Config) []op {
			return record(cfg, func(c simRater) {
				simulate(c, &simHost{rate: 10, burst: 5, lat: 50 * ms, stepAt: 15 * time.Second, stepRate: 40}, 35*time.Second)
			})
		}, []string{"starting", "reacting", "settled", "probing", "ramping"}},
		{"capacity falls", Config{}, func(cfg Config) []op {
			return record(cfg, func(c simRater) {
				simulate(c, &simHost{rate: 40, burst: 20, lat: 20 * ms, stepAt: 15 * time.Second, stepRate: 10}, 33*time.Second)
			})
		}, []string{"reacting", "settled", "probing"}},
		{"no burst", Config{}, func(cfg Config) []op {
			return record(cfg, func(c simRater) {
				simulate(c, &simHost{servers: 5, lat: 100 * ms}, 40*time.Second)
			})
		}, []string{"reacting", "probing"}},
		{"queue", Config{}, func(cfg Config) []op {
			return record(cfg, func(c simRater) {
				simulateQueue(c, &queueHost{free: make([]time.Duration, 4), svc: 100 * ms, x: 1}, 40*time.Second)
			})
		}, []string{"reacting to latency", "probing"}},
		{"random", Config{}, func(cfg Config) []op {
			return randomOps(1, cfg, start, 6000)
		}, []string{"starting", "reacting", "settled", "probing"}},
		{"random, tight config", Config{Initial: 3, Min: 0.5, Max: 60, Window: 200 * ms, ProbeInterval: time.Second, LatencyTolerance: 0.3}, func(cfg Config) []op {
			return randomOps(2, cfg, start, 6000)
		}, []string{"reacting", "probing"}},
		{"random, latency ignored", Config{LatencyTolerance: -1, Backoff: 0.7, Growth: 3}, func(cfg Config) []op {
			return randomOps(3, cfg, start, 4000)
		}, []string{"reacting", "probing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ops := tc.ops(tc.cfg)
			seen := checkReplicas(t, tc.cfg, start, ops, len(ops)/6)
			for _, s := range tc.reach {
				if !seen[s] {
					t.Errorf("never %s: the cuts miss it", s)
				}
			}
		})
	}
}

// Instants are ns since the start given to New, so a replica made from an
// equal instant in another location restores and agrees all the same.
func TestSnapshotStartInAnotherLocation(t *testing.T) {
	start := time.UnixMicro(t0.UnixMicro())
	ops := randomOps(4, Config{}, start, 1500)
	orig := New(Config{}, start)
	for _, o := range ops[:700] {
		o.apply(orig)
	}
	snap, _ := orig.MarshalBinary()
	r := New(Config{}, start.In(time.FixedZone("UTC+9", 9*3600)))
	if err := r.UnmarshalBinary(snap); err != nil {
		t.Fatal(err)
	}
	for i, o := range ops[700:] {
		if got, want := o.apply(r), o.apply(orig); got != want {
			t.Fatalf("op %d, %v: replica returns %v, the original %v", 700+i, o, got, want)
		}
	}
}

// snapshotOf returns a snapshot of a Controller of cfg that heard ops.
func snapshotOf(t testing.TB, cfg Config, ops []op) []byte {
	t.Helper()
	c := New(cfg, t0)
	for _, o := range ops {
		o.apply(c)
	}
	b, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// restored returns a Controller of Config{} restored from snap.
func restored(t testing.TB, snap []byte) *Controller {
	t.Helper()
	c := New(Config{}, t0)
	if err := c.UnmarshalBinary(snap); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestUnmarshalBinaryRefuses(t *testing.T) {
	ops := randomOps(5, Config{}, t0, 3000)
	old := snapshotOf(t, Config{}, ops)
	young := snapshotOf(t, Config{}, ops[:12]) // fewer latencies than the ring holds
	if c := restored(t, young); c.lat.n >= latRecent || c.lat.n < 3 {
		t.Fatalf("young snapshot has %d latencies, want 3 to %d", c.lat.n, latRecent-1)
	}
	probe := snapshotOf(t, Config{}, record(Config{}, func(c simRater) {
		simulate(c, &simHost{rate: 20, burst: 10, lat: 50 * ms}, 20*time.Second)
	}))
	// edit returns snap with a field changed: UnmarshalBinary refuses
	// it, MarshalBinary writes it as it is.
	edit := func(snap []byte, f func(c *Controller)) func() []byte {
		return func() []byte {
			c := restored(t, snap)
			f(c)
			b, _ := c.MarshalBinary()
			return b
		}
	}
	bytesOf := func(b []byte) func() []byte { return func() []byte { return b } }
	// The flags' word: its low byte changes with the first of them.
	flagsAt := func() int {
		a := restored(t, old)
		before, _ := a.MarshalBinary()
		a.refine = !a.refine
		after, _ := a.MarshalBinary()
		for i := range before {
			if before[i] != after[i] {
				return i
			}
		}
		t.Fatal("a flag does not show in the snapshot")
		return 0
	}()
	for _, tc := range []struct {
		name string
		snap func() []byte
		into Config
		want string
	}{
		{"empty", bytesOf(nil), Config{}, "adaptive: snapshot: empty"},
		{"short", bytesOf(old[:12]), Config{}, fmt.Sprintf("adaptive: snapshot: 12 bytes, want %d (cut short)", snapshotSize)},
		{"one byte short", bytesOf(old[:len(old)-1]), Config{}, fmt.Sprintf("%d bytes, want %d (cut short)", snapshotSize-1, snapshotSize)},
		{"trailing garbage", bytesOf(append(slices.Clone(old), 0, 0, 0)), Config{}, fmt.Sprintf("%d bytes, want %d (3 bytes past its end)", snapshotSize+3, snapshotSize)},
		{"version 0", bytesOf(append([]byte{0}, old[1:]...)), Config{}, "adaptive: snapshot: version 0, want 2"},
		{"version 1", bytesOf(append([]byte{1}, old[1:]...)), Config{}, "version 1, want 2"}, // before capSaved (issue 33)
		{"version 3", bytesOf(append([]byte{3}, old[1:]...)), Config{}, "version 3, want 2"},
		{"unknown flag", func() []byte {
			b := slices.Clone(old)
			b[flagsAt+1] |= 0x80
			return b
		}, Config{}, "want none past bit 10"},
		{"phase out of range", edit(old, func(c *Controller) { c.phase = 4 }), Config{}, "phase 4, want at most 3"},
		{"phase 255", edit(old, func(c *Controller) { c.phase = 255 }), Config{}, "phase 255"},
		{"clock negative", edit(old, func(c *Controller) { c.last = -1 }), Config{}, "clock at -1 ns"},
		{"clock past a century", edit(old, func(c *Controller) { c.last = math.MaxInt64 }), Config{}, "clock at 9223372036854775807 ns"},
		{"ceiling of another Config", bytesOf(old), Config{Max: 10}, "ceiling 1000 outside the Config's [0.1, 10]"},
		{"ceiling NaN", edit(old, func(c *Controller) { c.ceil = math.NaN() }), Config{}, "ceiling NaN"},
		{"rate NaN", edit(old, func(c *Controller) { c.rate = math.NaN() }), Config{}, "rate NaN outside"},
		{"rate +Inf", edit(old, func(c *Controller) { c.rate = math.Inf(1) }), Config{}, "rate +Inf outside"},
		{"rate negative", edit(old, func(c *Controller) { c.rate = -3 }), Config{}, "rate -3 outside"},
		{"rate under Min", edit(old, func(c *Controller) { c.rate = 0.05 }), Config{}, "rate 0.05 outside [0.1, "},
		{"rate over the ceiling", edit(old, func(c *Controller) { c.ceil, c.rate, c.want = 20, 30, 10 }), Config{}, "rate 30 outside [0.1, 20]"},
		{"wanted rate NaN", edit(old, func(c *Controller) { c.want = math.NaN() }), Config{}, "wanted rate NaN"},
		{"wanted rate 0", edit(old, func(c *Controller) { c.want = 0 }), Config{}, "wanted rate 0 outside"},
		{"capacity NaN", edit(old, func(c *Controller) { c.capEst = math.NaN() }), Config{}, "capacity NaN, want a finite number"},
		{"capacity +Inf", edit(old, func(c *Controller) { c.capEst = math.Inf(1) }), Config{}, "capacity +Inf"},
		{"capacity error -Inf", edit(old, func(c *Controller) { c.capErr = math.Inf(-1) }), Config{}, "capacity error -Inf"},
		{"probe wait's capacity NaN", edit(old, func(c *Controller) { c.waitCap = math.NaN() }), Config{}, "probe wait's capacity NaN"},
		{"probe base negative", edit(old, func(c *Controller) { c.probeBase = -1 }), Config{}, "probe base -1"},
		{"saved +Inf", edit(old, func(c *Controller) { c.saved = math.Inf(1) }), Config{}, "saved +Inf"},
		{"stored NaN", edit(old, func(c *Controller) { c.stored = math.NaN() }), Config{}, "stored NaN"},
		{"stored negative", edit(old, func(c *Controller) { c.stored = -0.5 }), Config{}, "stored -0.5"},
		{"probing from no capacity", edit(probe, func(c *Controller) { c.phase, c.probeBase = probing, 0 }), Config{}, "probing from a capacity of 0"},
		{"ramping from no capacity", edit(probe, func(c *Controller) { c.phase, c.probeBase = ramping, 0 }), Config{}, "ramping from a capacity of 0"},
		{"rate meter slot negative", edit(old, func(c *Controller) { c.meter.cur = -1 }), Config{}, "rate meter at slot -1"},
		{"rate meter ahead of the clock", edit(old, func(c *Controller) { c.meter.cur = int32(c.last/slotSpan) + 1 }), Config{}, "rate meter at slot"},
		{"latency count negative", edit(old, func(c *Controller) { c.lat.n, c.okCum = -1, -1 }), Config{}, "-1 latencies for -1 OK answers"},
		{"latency count not the OK count", edit(old, func(c *Controller) { c.lat.n++ }), Config{}, "latencies for"},
		{"latency count near overflow", edit(old, func(c *Controller) { c.lat.n, c.okCum = math.MaxInt64, math.MaxInt64 }), Config{}, "within [0, 4611686018427387904]"},
		{"latencies out of order", edit(old, func(c *Controller) { c.lat.all[0], c.lat.all[latRing-1] = c.lat.all[latRing-1], c.lat.all[0] }), Config{}, "the ring of"},
		{"latency not in the sorted copy", edit(old, func(c *Controller) { c.lat.ring[3] = c.lat.ring[3] ^ 0x155 }), Config{}, "the ring of"},
		{"newest latencies out of order", edit(old, func(c *Controller) { c.lat.recent[0], c.lat.recent[1] = c.lat.recent[1]+1, c.lat.recent[0] }), Config{}, "the newest 16 and"},
		{"unused latency slot set", edit(young, func(c *Controller) { c.lat.ring[latRing-1] = 7 }), Config{}, "the ring of"},
		{"unused newest slot set", edit(young, func(c *Controller) { c.lat.recent[latRecent-1] = 7 }), Config{}, "their sorted copy disagree"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			good := young
			if tc.into != (Config{}) {
				good = snapshotOf(t, tc.into, ops[:40])
			}
			c := New(tc.into, t0)
			if err := c.UnmarshalBinary(good); err != nil {
				t.Fatal(err)
			}
			err := c.UnmarshalBinary(tc.snap())
			if err == nil || !strings.HasPrefix(err.Error(), "adaptive: snapshot: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("UnmarshalBinary = %v, want an error with %q", err, tc.want)
			}
			if after, _ := c.MarshalBinary(); !bytes.Equal(after, good) {
				t.Error("the refused snapshot changed the Controller")
			}
		})
	}
}

// Snapshots taken and restored while other goroutines observe: for the race
// detector. A restore lands between two calls, and the rate stays in
// bounds.
func TestSnapshotConcurrentUse(t *testing.T) {
	snap := snapshotOf(t, Config{}, randomOps(9, Config{}, t0, 1000))
	c := New(Config{}, t0)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			at := t0
			for i := range 500 {
				at = at.Add(time.Duration(g+1) * ms)
				if r := c.Observe(at, Signal{Kind: Kind(i % 4), Latency: 20 * ms}); !(r >= DefaultMin && r <= DefaultMax) {
					t.Errorf("Observe = %v", r)
					return
				}
			}
		})
	}
	wg.Go(func() {
		buf := make([]byte, 0, snapshotSize)
		for range 200 {
			buf, _ = c.AppendBinary(buf[:0])
			if err := c.UnmarshalBinary(buf); err != nil {
				t.Error(err)
				return
			}
			if err := c.UnmarshalBinary(snap); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()
}

// A zero Controller has no Config to restore with: an error, not a panic
// (gob makes one to call UnmarshalBinary on).
func TestUnmarshalBinaryZeroController(t *testing.T) {
	snap, _ := New(Config{}, t0).MarshalBinary()
	var c Controller
	if err := c.UnmarshalBinary(snap); err == nil || !strings.Contains(err.Error(), "not made by New") {
		t.Errorf("UnmarshalBinary on a zero Controller = %v, want an error", err)
	}
}

// leaves calls visit with every field of v that holds a value (arrays and
// structs taken apart), by its path.
func leaves(v reflect.Value, path string, visit func(string, reflect.Value)) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			leaves(v.Field(i), path+"."+v.Type().Field(i).Name, visit)
		}
	case reflect.Array:
		for i := range v.Len() {
			leaves(v.Index(i), fmt.Sprintf("%s[%d]", path, i), visit)
		}
	default:
		visit(path, v)
	}
}

// Every field of a Controller but its Config, origin and mutex is in the
// snapshot, and read back into its place: a field added later fails here
// until fields writes and reads it. Each field in turn is changed; the
// snapshot must change, and read back (unchecked), give the changed
// Controller.
func TestSnapshotCoversEveryField(t *testing.T) {
	snap := snapshotOf(t, Config{}, randomOps(6, Config{}, t0, 2000))
	c := restored(t, snap)
	if len(snap) != snapshotSize {
		t.Fatalf("snapshot of %d bytes, want snapshotSize (%d)", len(snap), snapshotSize)
	}
	n := 0
	v := reflect.ValueOf(c).Elem()
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if name == "cfg" || name == "origin" || name == "mu" {
			continue
		}
		leaves(v.Field(i), name, func(path string, f reflect.Value) {
			n++
			f = reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
			old := reflect.ValueOf(f.Interface())
			switch f.Kind() {
			case reflect.Bool:
				f.SetBool(!f.Bool())
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
				f.SetInt(f.Int() ^ 1)
			case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
				f.SetUint(f.Uint() ^ 1)
			case reflect.Float32, reflect.Float64:
				f.SetFloat(map[bool]float64{false: 1, true: 2}[f.Float() == 1])
			default:
				t.Errorf("%s: a %v, which the snapshot cannot hold", path, f.Type())
				return
			}
			defer f.Set(old)
			b, _ := c.MarshalBinary()
			if bytes.Equal(b, snap) {
				t.Errorf("%s is not in the snapshot: add it to fields", path)
				return
			}
			d := &Controller{cfg: c.cfg, origin: c.origin}
			d.fields(&codec{b: b[1:], dec: true})
			if !reflect.DeepEqual(c, d) {
				t.Errorf("%s changed: the snapshot reads back into another Controller", path)
			}
		})
	}
	t.Logf("%d fields in %d bytes", n, snapshotSize)
}

// A snapshot taken into a buffer with room for it allocates nothing, nor
// does restoring one; MarshalBinary allocates only the slice it returns.
func TestSnapshotAllocs(t *testing.T) {
	c := restored(t, snapshotOf(t, Config{}, randomOps(7, Config{}, t0, 500)))
	buf := make([]byte, 0, snapshotSize)
	d := New(Config{}, t0)
	if n := testing.AllocsPerRun(100, func() {
		b, _ := c.AppendBinary(buf[:0])
		if err := d.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("AppendBinary and UnmarshalBinary allocate %v times a round, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { c.MarshalBinary() }); n != 1 {
		t.Errorf("MarshalBinary allocates %v times, want 1", n)
	}
}

func BenchmarkSnapshotRoundTrip(b *testing.B) {
	c := restored(b, snapshotOf(b, Config{}, randomOps(8, Config{}, t0, 500)))
	d := New(Config{}, t0)
	buf := make([]byte, 0, snapshotSize)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = c.AppendBinary(buf[:0])
		if err := d.UnmarshalBinary(buf); err != nil {
			b.Fatal(err)
		}
	}
}

// fuzzSignals are the calls a restored Controller must survive.
var fuzzSignals = []struct {
	after time.Duration
	s     Signal
}{
	{0, Signal{Kind: OK, Latency: 30 * ms}},
	{5 * ms, Signal{Kind: OK, Latency: 2 * time.Second, Spare: true}},
	{time.Microsecond, Signal{Kind: Throttle, Latency: 10 * ms}},
	{700 * ms, Signal{Kind: OK, Latency: 40 * ms}},
	{50 * ms, Signal{Kind: Overload, Latency: time.Second}},
	{3 * time.Second, Signal{Kind: Throttle, Wait: 2 * time.Second}},
	{10 * ms, Signal{Kind: Failure}},
	{8 * time.Second, Signal{Kind: OK, Latency: 20 * ms}},
	{time.Millisecond, Signal{Kind: OK, Latency: 25 * ms}},
	{40 * time.Second, Signal{Kind: Throttle}},
	{200 * ms, Signal{Kind: OK, Latency: time.Hour}},
}

func FuzzUnmarshalBinary(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{snapshotVersion})
	for _, cfg := range []Config{{}, {Initial: 3, Max: 60}} {
		f.Add(snapshotOf(f, cfg, nil))
		for seed := range uint64(2) {
			ops := randomOps(seed, cfg, t0, 3000)
			for _, n := range []int{5, 20, 100, 500, 1500, 3000} {
				f.Add(snapshotOf(f, cfg, ops[:n]))
			}
		}
	}
	for _, ops := range [][]op{
		record(Config{}, func(c simRater) {
			simulate(c, &simHost{rate: 10, burst: 5, lat: 50 * ms, stepAt: 10 * time.Second, stepRate: 40}, 20*time.Second)
		}),
		record(Config{}, func(c simRater) {
			simulateQueue(c, &queueHost{free: make([]time.Duration, 4), svc: 100 * ms, x: 1}, 20*time.Second)
		}),
	} {
		for k := 1; k <= 4; k++ {
			f.Add(snapshotOf(f, Config{}, ops[:len(ops)*k/4]))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c := New(Config{}, t0)
		before, _ := c.MarshalBinary()
		if err := c.UnmarshalBinary(b); err != nil {
			if !strings.HasPrefix(err.Error(), "adaptive: snapshot: ") {
				t.Errorf("error %q lacks the package's prefix", err)
			}
			if after, _ := c.MarshalBinary(); !bytes.Equal(after, before) {
				t.Fatalf("refused (%v), yet changed the Controller", err)
			}
			return
		}
		if again, _ := c.MarshalBinary(); !bytes.Equal(again, b) {
			t.Fatalf("restored, the Controller marshals as\n%x, not\n%x", again, b)
		}
		lo, hi := c.cfg.Min, c.cfg.Max
		at := t0.Add(time.Duration(c.last))
		for i, x := range fuzzSignals {
			at = at.Add(x.after)
			if i == 6 {
				c.SetMax(7)
			}
			r := c.Observe(at, x.s)
			if !(r >= lo && r <= hi) || r != c.Rate() {
				t.Fatalf("call %d: Observe = %v, Rate = %v; want the same, within [%g, %g]", i, r, c.Rate(), lo, hi)
			}
			c.Concurrency()
			c.Capacity()
			c.CapacityError()
			c.Phase()
		}
	})
}
