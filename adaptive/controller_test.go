package adaptive

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
	"unsafe"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const ms = time.Millisecond

// step is one row of a step table: at offset at, the attempt's outcome sig;
// then the rate Observe returned must lie in [lo, hi] (hi 0: lo exactly).
type step struct {
	at     time.Duration
	sig    Signal
	lo, hi float64
}

func ok(lat time.Duration) Signal       { return Signal{Kind: OK, Latency: lat} }
func throttle(lat time.Duration) Signal { return Signal{Kind: Throttle, Latency: lat} }

func run(t *testing.T, c *Controller, steps []step) {
	t.Helper()
	for i, s := range steps {
		got := c.Observe(t0.Add(s.at), s.sig)
		hi := s.hi
		if hi == 0 {
			hi = s.lo
		}
		if got < s.lo-1e-9 || got > hi+1e-9 {
			t.Fatalf("step %d: Observe(%v, %+v) = %.3f, want [%.3f, %.3f]", i, s.at, s.sig, got, s.lo, hi)
		}
	}
}

// serve sends OK answers with latency lat, paced at the controller's rate,
// from offset from for d; it returns the offset it stopped at.
func serve(c *Controller, from, d, lat time.Duration) time.Duration {
	at := from
	for at < from+d {
		r := c.Observe(t0.Add(at), ok(lat))
		at += time.Duration(float64(time.Second) / r)
	}
	return at
}

func TestSlowStartDoublesUntilFirstSignal(t *testing.T) {
	c := New(Config{Initial: 10}, t0)
	if r := c.Rate(); r != 10 {
		t.Fatalf("Rate() = %v, want 10", r)
	}
	at := serve(c, 0, 500*ms, 20*ms)
	r1 := c.Rate()
	if r1 < 18 || r1 > 30 {
		t.Fatalf("after 0.5 s of slow start: rate %.1f, want about double 10", r1)
	}
	at = serve(c, at, 500*ms, 20*ms)
	r2 := c.Rate()
	if r2 < 1.7*r1 || r2 > 3*r1 {
		t.Fatalf("after 1 s of slow start: rate %.1f, want about double %.1f", r2, r1)
	}
	// The first throttle ends it: one decrease, to at most half.
	r3 := c.Observe(t0.Add(at), throttle(0))
	if r3 > r2/2 {
		t.Fatalf("after the first throttle: rate %.1f, want at most %.1f", r3, r2/2)
	}
	if c.phase == starting {
		t.Fatalf("still starting after a throttle")
	}
}

func TestRateChangesAreDiscrete(t *testing.T) {
	c := New(Config{Initial: 10}, t0)
	run(t, c, []step{
		{at: 50 * ms, sig: ok(10 * ms), lo: 10},    // 11.4 wanted, not yet 100 ms since the last raise
		{at: 90 * ms, sig: ok(10 * ms), lo: 10},    // 12.8
		{at: 100 * ms, sig: ok(10 * ms), lo: 14.2}, // raised, 100 ms after the start
		{at: 150 * ms, sig: ok(10 * ms), lo: 14.2},
		{at: 199 * ms, sig: ok(10 * ms), lo: 14.2},
		{at: 200 * ms, sig: ok(10 * ms), lo: 18.4},
	})
}

func TestBurstOfThrottlesIsOneDecrease(t *testing.T) {
	c := New(Config{Initial: 20}, t0)
	steps := []step{{at: time.Second, sig: throttle(0), lo: 10}} // halved
	// The wave: requests sent before the decrease, answered within the window.
	for i := 1; i < 10; i++ {
		steps = append(steps, step{at: time.Second + time.Duration(i)*10*ms, sig: throttle(80 * ms), lo: 10})
	}
	run(t, c, steps)
	if c.decreases != 1 {
		t.Fatalf("decreases = %d, want 1", c.decreases)
	}
	// After the window, another throttle is another event.
	run(t, c, []step{{at: 3 * time.Second, sig: throttle(0), lo: 5}})
	if c.decreases != 2 {
		t.Fatalf("decreases = %d, want 2", c.decreases)
	}
}

func TestThrottleAfterWindowOfWaveOnlyCountsPostCut(t *testing.T) {
	// Throttles of requests sent after the decrease, late in the window,
	// say it was not enough: first a quick cut to the share served, then
	// a window that measures the capacity from what was served in it.
	c := New(Config{Initial: 40}, t0)
	if e := c.CapacityError(); e != 0 {
		t.Fatalf("CapacityError() before any estimate = %.2f, want 0", e)
	}
	c.Observe(t0.Add(time.Second), throttle(0)) // 40 -> 20
	at := time.Second
	served := 0
	for i := range 60 { // 20 req/s sent after the cut, for 3 s: every other one served
		at = time.Second + time.Duration(i)*50*ms
		if i%2 == 0 {
			c.Observe(t0.Add(at), ok(0))
			served++
		} else {
			c.Observe(t0.Add(at), throttle(0))
		}
	}
	got := c.Observe(t0.Add(at+10*ms), ok(0))
	if got < 8.5 || got > 10.5 {
		t.Fatalf("rate after a throttled window serving 10 req/s: %.2f, want 0.95 × about 10", got)
	}
	if cap, measured := c.Capacity(); !measured || cap < 8.5 || cap > 11.5 {
		t.Fatalf("Capacity() = %.2f, %v; want about 10, true", cap, measured)
	}
	// Counted over about 3 s: ±1.5 answers over that span, about 0.5 req/s.
	if e := c.CapacityError(); e < 0.3 || e > 1.5 {
		t.Fatalf("CapacityError() = %.2f, want about 0.5", e)
	}
}

func TestLatencyRiseDecreasesWithoutThrottles(t *testing.T) {
	c := New(Config{Initial: 20}, t0)
	// 10 s of answers at 20 req/s, 100 ms each: the baseline. The client
	// has no more work than that, so the rate stays within twice it.
	at := time.Duration(0)
	for ; at < 10*time.Second; at += 50 * ms {
		c.Observe(t0.Add(at), ok(100*ms))
	}
	before := c.Rate()
	if before > 45 {
		t.Fatalf("rate %.1f ran away from 20 served per second", before)
	}
	// The host now serves 15 per second, slower and slower: a queue.
	lat := 100 * ms
	for ; at < 12*time.Second; at += 66 * ms {
		lat += 15 * ms
		c.Observe(t0.Add(at), ok(lat))
	}
	after := c.Rate()
	if after >= before || after > 16 {
		t.Fatalf("rate %.1f after latency rose from 100 ms to %v (was %.1f), want under 16", after, lat, before)
	}
	if c.decreases == 0 {
		t.Fatalf("no decrease")
	}
}

func TestLatencyNoiseIsNotAQueue(t *testing.T) {
	c := New(Config{Initial: 20}, t0)
	// Latency spread over 50-150 ms at random, but served as sent.
	x := uint64(1)
	for at := time.Duration(0); at < 30*time.Second; at += 50 * ms {
		x = x*6364136223846793005 + 1442695040888963407
		lat := 50*ms + time.Duration(x>>33%100)*ms
		c.Observe(t0.Add(at), ok(lat))
	}
	if c.decreases != 0 {
		t.Fatalf("decreases = %d after 30 s of noisy but steady latency, want 0", c.decreases)
	}
}

func TestSetMaxCaps(t *testing.T) {
	c := New(Config{Initial: 10}, t0)
	c.SetMax(4)
	if r := c.Rate(); r != 4 {
		t.Fatalf("Rate() after SetMax(4) = %v, want 4", r)
	}
	at := serve(c, 0, 5*time.Second, 10*ms)
	if r := c.Rate(); r != 4 {
		t.Fatalf("Rate() after 5 s of slow start under SetMax(4) = %v, want 4", r)
	}
	c.SetMax(0) // removed
	serve(c, at, 2*time.Second, 10*ms)
	if r := c.Rate(); r <= 4 {
		t.Fatalf("Rate() after SetMax(0) = %v, want growth past 4", r)
	}
	c.SetMax(math.Inf(1))
	c.SetMax(-1)
	c.SetMax(math.NaN())
	if c.ceil != DefaultMax {
		t.Fatalf("ceiling %v after removing it, want DefaultMax", c.ceil)
	}
}

func TestNeverBelowMin(t *testing.T) {
	c := New(Config{Initial: 10, Min: 0.5}, t0)
	for i := range 200 {
		r := c.Observe(t0.Add(time.Duration(i)*300*ms), throttle(0))
		if r < 0.5 {
			t.Fatalf("throttle %d: rate %v, below Min 0.5", i, r)
		}
	}
	if r := c.Rate(); r != 0.5 {
		t.Fatalf("rate %v after 200 throttles, want Min 0.5", r)
	}
}

func TestNeutralIsIgnored(t *testing.T) {
	c := New(Config{Initial: 10}, t0)
	for i := range 100 {
		c.Observe(t0.Add(time.Duration(i)*10*ms), Signal{Kind: Neutral})
		c.Observe(t0.Add(time.Duration(i)*10*ms), Signal{Kind: Kind(42)})
	}
	if r := c.Rate(); r != 10 || c.decreases != 0 || c.lat.n != 0 {
		t.Fatalf("after neutral signals: rate %v, decreases %d, latencies %d; want untouched", r, c.decreases, c.lat.n)
	}
}

func TestRetryAfterDelaysTheWindow(t *testing.T) {
	c := New(Config{Initial: 20}, t0)
	c.Observe(t0.Add(time.Second), Signal{Kind: Throttle, Wait: 3 * time.Second})
	if c.cutAt != int64(4*time.Second) {
		t.Fatalf("window opens at %v, want after the 3 s wait", time.Duration(c.cutAt))
	}
	// Throttles during the pause are of requests sent before it.
	run(t, c, []step{{at: 2 * time.Second, sig: throttle(0), lo: 10}})
	if c.decreases != 1 {
		t.Fatalf("decreases = %d, want 1", c.decreases)
	}
	if c.probeWait < int64(DefaultMaxProbeInterval) {
		t.Fatalf("probe wait %v after a Retry-After, want longer", time.Duration(c.probeWait))
	}
}

func TestConfigDefaults(t *testing.T) {
	c := Config{}.withDefaults()
	want := Config{
		Initial: DefaultInitial, Min: DefaultMin, Max: DefaultMax, Target: DefaultTarget,
		Backoff: DefaultBackoff, Growth: DefaultGrowth, Window: DefaultWindow,
		LatencyTolerance: DefaultLatencyTolerance, ProbeInterval: DefaultProbeInterval,
		MaxProbeInterval: DefaultMaxProbeInterval, MaxConcurrency: DefaultMaxConcurrency,
	}
	if c != want {
		t.Fatalf("Config{}.withDefaults() = %+v, want %+v", c, want)
	}
	odd := Config{Initial: 5000, Min: 2, Max: 1, Target: 3, Backoff: 2, Growth: math.NaN()}.withDefaults()
	if odd.Max != 2 || odd.Initial != 2 || odd.Target != 1 || odd.Backoff != DefaultBackoff || odd.Growth != DefaultGrowth {
		t.Fatalf("odd config normalised to %+v", odd)
	}
}

func TestConcurrencyFollowsRateAndLatency(t *testing.T) {
	c := New(Config{Initial: 10}, t0)
	if n := c.Concurrency(); n != 2 {
		t.Fatalf("Concurrency() with no latency seen = %d, want 2", n)
	}
	serve(c, 0, 2*time.Second, 100*ms)
	r := c.Rate()
	n := c.Concurrency()
	need := int(math.Ceil(r * 0.1)) // Little's law at 100 ms
	if n < need || n > 2*need+3 {
		t.Fatalf("Concurrency() = %d at %.1f req/s and 100 ms, want about %d", n, r, need)
	}
	c2 := New(Config{Initial: 1000, MaxConcurrency: 5}, t0)
	serve(c2, 0, 100*ms, time.Second)
	if n := c2.Concurrency(); n != 5 {
		t.Fatalf("Concurrency() = %d, want MaxConcurrency 5", n)
	}
}

func TestClockNeverGoesBack(t *testing.T) {
	c := New(Config{Initial: 10}, t0)
	c.Observe(t0.Add(2*time.Second), ok(10*ms))
	c.Observe(t0.Add(time.Second), ok(10*ms)) // a straggler's earlier reading
	if c.last != int64(2*time.Second) {
		t.Fatalf("clock at %v, want 2s", time.Duration(c.last))
	}
}

func TestObserveDoesNotAllocate(t *testing.T) {
	c := New(Config{}, t0)
	at := t0
	kinds := []Kind{OK, OK, OK, Throttle, OK, Overload, Failure, Neutral}
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		at = at.Add(7 * ms)
		c.Observe(at, Signal{Kind: kinds[i%len(kinds)], Latency: 40 * ms})
		i++
	})
	if allocs != 0 {
		t.Fatalf("Observe allocates %v times per call, want 0", allocs)
	}
}

// TestConcurrentUse is for the race detector, and checks that a ceiling set
// while other goroutines observe still holds.
func TestConcurrentUse(t *testing.T) {
	c := New(Config{}, t0)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				at := t0.Add(time.Duration(i) * ms)
				k := OK
				if (i+g)%17 == 0 {
					k = Throttle
				}
				c.Observe(at, Signal{Kind: k, Latency: 30 * ms})
				_ = c.Rate()
				_ = c.Concurrency()
				if i%500 == 0 {
					c.SetMax(float64(50 + g))
				}
			}
		})
	}
	wg.Wait()
	// Every SetMax set 50 to 57: whichever came last, the rate is under it.
	if r := c.Rate(); r < DefaultMin || r > 57 {
		t.Fatalf("rate %v, want within [%v, 57]", r, DefaultMin)
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{OK: "ok", Throttle: "throttle", Overload: "overload", Failure: "failure", Neutral: "neutral", Kind(9): "kind(9)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", int(k), got, want)
		}
	}
}

func BenchmarkObserve(b *testing.B) {
	c := New(Config{}, t0)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		at := t0
		i := 0
		for pb.Next() {
			at = at.Add(ms)
			k := OK
			if i%50 == 0 {
				k = Throttle
			}
			c.Observe(at, Signal{Kind: k, Latency: 20 * ms})
			i++
		}
	})
}

// BenchmarkObserveJitter is BenchmarkObserve with latencies that vary as a
// real host's do (80-120 ms, one in 50 at 300 ms): constant latencies keep
// the latency history in order and hide the cost of its statistics. It runs
// in one goroutine so that the fixed-seed sequence is the same every run.
func BenchmarkObserveJitter(b *testing.B) {
	c := New(Config{}, t0)
	rng := rand.New(rand.NewPCG(1, 2))
	at := t0
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		at = at.Add(ms)
		lat := time.Duration(80+rng.IntN(41)) * ms
		if rng.IntN(50) == 0 {
			lat = 300 * ms
		}
		k := OK
		if i%50 == 0 {
			k = Throttle
		}
		c.Observe(at, Signal{Kind: k, Latency: lat})
		i++
	}
}

// A bracket (what the host served between two throttles) replaces a coarse
// capacity it lies within the error of, and leaves one it contradicts to
// other signals.
func TestFinerBracketReplacesCoarseEstimate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		served int64   // OK answers between the two throttles, 2 s apart
		want   float64 // capacity afterwards
	}{
		{"within the error", 40, 19.75},  // (40-0.5)/2 s, inside 22.9 ± 4.9
		{"far below it", 30, 22.9},       // 14.75: not this estimate's noise
		{"above it", 60, (60 - 0.5) / 2}, // a bracket only ever raises
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(Config{}, t0)
			c.phase, c.capEst, c.capErr = settled, 22.9, 4.9
			c.mark.at, c.mark.ok, c.markOn = 0, 0, true
			c.okCum = tc.served
			c.pend.at, c.pendOn = int64(2*time.Second), true
			c.bracket()
			if math.Abs(c.capEst-tc.want) > 1e-9 {
				t.Errorf("capacity %.2f, want %.2f", c.capEst, tc.want)
			}
			if want := DefaultTarget * tc.want; tc.want != 22.9 && math.Abs(c.want-want) > 1e-9 {
				t.Errorf("settles at %.2f, want %.2f", c.want, want)
			}
		})
	}
}

// A probe's allowance for the host's savings is counted: what the host
// earned at its capacity since it last throttled, less what it served. A
// rate that sat under the capacity for part of that time (after a halving)
// does not make the savings look larger than they are.
func TestProbeSavingsAreCounted(t *testing.T) {
	c := New(Config{}, t0)
	c.phase, c.capEst, c.capErr = settled, 20, 0.2
	c.emptyAt, c.markAt, c.markOK = 0, 0, 0
	c.okCum = 100 // served over the 6 s since the throttle
	c.rate = 10   // now, after a halving; the old guess read (20.4-10)*6 = 62
	c.startProbe(int64(6 * time.Second))
	// 20.4 req/s (the capacity plus its 2 % slack) × 6 s, less 100 served.
	if want := 20.4*6 - 100; math.Abs(c.stored-want) > 1e-9 {
		t.Errorf("savings %.2f, want %.2f", c.stored, want)
	}
}

// Settled at a lower bound of the capacity (served, never throttled) and
// throttled just above it, the capacity lies between the bound and the
// rate: the rate goes under the bound, not to half of itself.
func TestThrottleNearLowerBound(t *testing.T) {
	for _, tc := range []struct {
		name string
		rate float64 // the rate in force when throttled
		want float64
	}{
		{"just above the bound", 42, DefaultTarget * 40},
		{"far above it", 60, DefaultBackoff * 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(Config{}, t0)
			c.phase, c.capEst, c.capLow = settled, 40, true
			c.rate, c.want = tc.rate, tc.rate
			// At 1 s: before the first probe is due.
			run(t, c, []step{{at: time.Second, sig: throttle(50 * ms), lo: tc.want}})
		})
	}
}

// A probe from a lower bound of the capacity, refused before it was served
// more than the savings it reckoned, found no room over the bound, however
// far its rate ran on them: the bound is the capacity. One served beyond
// its savings shows room: the rate bisects toward the rate the probe met.
func TestProbeOnSavingsFromLowerBound(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stored  float64 // the savings the probe reckoned
		want    float64
		wantLow bool
	}{
		// 12 served in the 0.6 s since the probe began from 18: 1.2 over.
		{"served its savings only", 2, DefaultTarget * 18, false},
		// The probe met 18 × (1 + 0.1 × (2^2 - 1)) = 23.4: midway.
		{"served beyond them", 0.5, (18 + 23.4) / 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(Config{}, t0)
			c.phase, c.capEst, c.capLow = probing, 18, true
			c.probeAt, c.probeBase, c.probeOK, c.stored = 0, 18, 12, tc.stored
			c.emptyAt = 0
			c.rate, c.want = 25, 25 // far above the bound (farMet)
			run(t, c, []step{{at: 600 * ms, sig: throttle(0), lo: tc.want}})
			if c.capLow != tc.wantLow || c.capEst != 18 {
				t.Errorf("capacity %.2f (lower bound %v), want 18 (%v)", c.capEst, c.capLow, tc.wantLow)
			}
		})
	}
}

// A window throttled late measures the capacity from what it served. A
// coarse count that reaches a fine lower bound from a bracket within its
// error leaves the bound standing, now the capacity: taking the count
// would want a probe soon to measure it again. A count that cannot reach
// the bound shows the capacity under it.
func TestCoarseCountUnderBracketBound(t *testing.T) {
	for _, tc := range []struct {
		name    string
		okPost  int32   // served since the cut, 526 ms before the end
		okAfter int32   // of them, since the first post-cut throttle, 361 ms
		want    float64 // capacity afterwards
		coarse  bool    // whether it is coarse (a probe soon)
	}{
		{"within the count's error", 9, 6, 18.7, false}, // 6/0.361 = 16.6 ± 4.2 reaches 18.7
		{"far under the bound", 6, 3, 6 / 0.526, true},  // 11.4 ± 2.9 does not
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(Config{}, t0)
			c.phase, c.capEst, c.capErr, c.capLow = settled, 18.7, 0.53, true
			c.reacting, c.cutAt, c.winEnd = true, 0, int64(500*ms)
			c.firstThr, c.lastThr, c.thrPost = int64(165*ms), int64(300*ms), 2
			c.okPost, c.okAfter, c.nPost = tc.okPost, tc.okAfter, tc.okPost+2
			c.endWindow(int64(526 * ms))
			if math.Abs(c.capEst-tc.want) > 1e-9 || c.capLow || c.refine != tc.coarse {
				t.Errorf("capacity %.2f (lower bound %v, coarse %v), want %.2f (false, %v)", c.capEst, c.capLow, c.refine, tc.want, tc.coarse)
			}
		})
	}
}

// A window throttled late measures the capacity, and probes start over:
// from ProbeInterval, but no sooner than probeCost requests at the
// capacity, as after a failed probe.
func TestMeasuredWindowProbeWait(t *testing.T) {
	for _, tc := range []struct {
		name   string
		served int32 // after the first post-cut throttle, over the 2 s before the end
		want   time.Duration
	}{
		{"10 req/s", 20, 5 * time.Second}, // 50 requests take 5 s
		{"40 req/s", 80, DefaultProbeInterval},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(Config{}, t0)
			c.phase, c.capEst, c.capErr = settled, 60, 0.5
			c.reacting, c.cutAt, c.winEnd = true, 0, int64(2*time.Second)
			c.firstThr, c.lastThr, c.thrPost = int64(100*ms), int64(1900*ms), 3
			c.okPost, c.okAfter, c.nPost = tc.served+2, tc.served, tc.served+5
			c.endWindow(int64(2100 * ms))
			if got := time.Duration(c.probeWait); got != tc.want {
				t.Errorf("capacity %.2f: next probe after %v, want %v", c.capEst, got, tc.want)
			}
		})
	}
}

func TestBaselineNoiseIsTheUnloadedSpread(t *testing.T) {
	var l latencies
	at := int64(0)
	// 3 s unloaded: 100 ms ± 5 ms.
	for i := range 60 {
		l.add(int64(95*ms) + int64(i%11)*int64(ms))
		at += int64(50 * ms)
		l.update(at)
	}
	_, unloaded := l.baseline(at)
	// Then a queue grows: each answer 10 ms slower than the last.
	for i := range 24 {
		l.add(int64(100*ms) + int64(i)*int64(10*ms))
		at += int64(50 * ms)
		l.update(at)
	}
	base, spread := l.baseline(at)
	if base < int64(94*ms) || base > int64(106*ms) {
		t.Fatalf("baseline %v, want about 100 ms", time.Duration(base))
	}
	if spread != unloaded || spread > int64(10*ms) {
		t.Fatalf("baseline spread %v with a queue growing (ring spread %v), want the unloaded %v",
			time.Duration(spread), time.Duration(l.all[latRing*3/4].ns()-l.all[latRing/4].ns()), time.Duration(unloaded))
	}
}

// TestControllerSize holds a Controller in the 576-byte size class (its
// malloc header included): a crawl keeps one per host, a million hosts
// (issue 12; it was 1,024 bytes).
func TestControllerSize(t *testing.T) {
	if n := unsafe.Sizeof(Controller{}); n > 568 {
		t.Errorf("a Controller takes %d bytes, want ≤ 568 (the 576-byte size class with its 8-byte malloc header)", n)
	}
}

// Controllers of one configuration share a copy of it; their caller's
// later changes to its Config reach none of them.
func TestConfigsShared(t *testing.T) {
	cfg := Config{Max: 123, ProbeInterval: 3 * time.Second}
	a, b := New(cfg, t0), New(cfg, t0)
	if a.cfg != b.cfg {
		t.Error("two Controllers of one Config hold a copy each")
	}
	cfg.Max = 7
	c := New(cfg, t0)
	if c.cfg == a.cfg || a.cfg.Max != 123 || c.cfg.Max != 7 {
		t.Errorf("after a change: shared %v, Max %g and %g, want apart, 123 and 7", c.cfg == a.cfg, a.cfg.Max, c.cfg.Max)
	}
}

// A Controller driven by a fake clock counted from the zero Time (or from
// 2300) moves as one on today's clock does: its instants are 8 bytes, not a
// time.Time, and must not saturate.
func TestClockOfAnyEra(t *testing.T) {
	run := func(start time.Time) (float64, int64) {
		c := New(Config{Initial: 10}, start)
		now, r := start, 0.0
		for now.Sub(start) < 5*time.Second {
			r = c.Observe(now, Signal{Kind: OK, Latency: 50 * time.Millisecond})
			now = now.Add(time.Duration(float64(time.Second) / r))
		}
		return r, c.clock(now)
	}
	want, wantT := run(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	for _, start := range []time.Time{{}, time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), time.Now()} {
		if r, at := run(start); r != want || at != wantT {
			t.Errorf("from %v: rate %v at %v, want %v at %v (as from 2026)", start, r, time.Duration(at), want, time.Duration(wantT))
		}
	}
}

// A probe on a host read as keeping no savings, refused far above the
// estimate, moves the estimate toward what the host served, not toward the
// rate the probe had run to. Live (issue 34, bucket-load: 20 req/s, burst
// 5), a controller sat at 97 % of the capacity saved a token or two
// between probes, took the host for one without burst, and a probe refused
// at 30.7 req/s moved the estimate to 25.5: four throttles more.
func TestShallowProbeRefusedFarAbove(t *testing.T) {
	c := New(Config{}, t0)
	const sec = int64(time.Second)
	now := 60 * sec
	c.phase, c.capEst, c.capErr = probing, 20.35, 0.4
	c.noBurst, c.bareProbes = true, 2
	c.emptyAt, c.stored, c.saved = now-5*sec, 5, 1
	c.probeAt, c.probeBase = now-900*int64(time.Millisecond), 20.35
	for i := range 21 { // the last second: 21 served
		c.meter.add(now-sec+int64(i+1)*sec/21, true)
	}
	back := float64(now-c.lat.med.ns()-c.probeAt) / 1e9
	c.probeOK = int32(c.probeBase*back) + 1 // a sliver over the capacity: no savings to speak of
	sent := c.probeAt + 780*int64(time.Millisecond)
	if met := c.probeRate(sent); met < 30 {
		t.Fatalf("the probe's rate at the refused request %.1f, want about 30.7", met)
	}
	c.rate, c.want = 29, 29
	c.congested(now, sent, 0)
	if c.capEst > 21.5 {
		t.Errorf("estimate %.2f after the refusal, want ≤ 21.5 (the host served 21 a second)", c.capEst)
	}
	if c.capEst <= 20.35 {
		t.Errorf("estimate %.2f, want it raised above 20.35 (the refusal came past it)", c.capEst)
	}
}
