package breaker

import (
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var t0 = time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC)

const (
	ms = time.Millisecond
	s  = time.Second
)

// A step is one call on a Breaker at t0+at.
type step struct {
	at time.Duration
	op string // "allow", "ok", "fail" (Record) or "state"

	// allow: whether Allow refuses, and then its Until (as an offset).
	refused bool
	until   time.Duration
	// ok, fail: the transition (Until checked, as until, when to is Open);
	// state: the state, in to.
	from, to State
}

func run(t *testing.T, b *Breaker, steps []step) {
	t.Helper()
	for i, st := range steps {
		now := t0.Add(st.at)
		switch st.op {
		case "allow":
			err := b.Allow(now)
			if refused := err != nil; refused != st.refused {
				t.Fatalf("step %d: Allow(t0+%v) = %v, want refused %v", i, st.at, err, st.refused)
			}
			if err == nil {
				continue
			}
			var oe *OpenError
			if !errors.As(err, &oe) || !errors.Is(err, ErrOpen) {
				t.Fatalf("step %d: Allow(t0+%v) = %#v, want *OpenError wrapping ErrOpen", i, st.at, err)
			}
			if want := t0.Add(st.until); !oe.Until.Equal(want) {
				t.Fatalf("step %d: Allow(t0+%v).Until = t0+%v, want t0+%v", i, st.at, oe.Until.Sub(t0), st.until)
			}
		case "ok", "fail":
			tr := b.Record(now, st.op == "ok")
			if tr.From != st.from || tr.To != st.to {
				t.Fatalf("step %d: Record(t0+%v, %s) = %v→%v, want %v→%v", i, st.at, st.op, tr.From, tr.To, st.from, st.to)
			}
			if tr.Changed() != (st.from != st.to) {
				t.Fatalf("step %d: Record(t0+%v, %s).Changed() = %v", i, st.at, st.op, tr.Changed())
			}
			if st.to == Open && st.from != Open && !tr.Until.Equal(t0.Add(st.until)) {
				t.Fatalf("step %d: Record(t0+%v, %s).Until = t0+%v, want t0+%v", i, st.at, st.op, tr.Until.Sub(t0), st.until)
			}
		case "state":
			if got := b.State(now); got != st.to {
				t.Fatalf("step %d: State(t0+%v) = %v, want %v", i, st.at, got, st.to)
			}
		default:
			t.Fatalf("step %d: unknown op %q", i, st.op)
		}
	}
}

// Step constructors, to keep the tables readable.
func allow(at time.Duration) step { return step{at: at, op: "allow"} }
func refuse(at, until time.Duration) step {
	return step{at: at, op: "allow", refused: true, until: until}
}
func ok(at time.Duration, from, to State) step { return step{at: at, op: "ok", from: from, to: to} }
func fail(at time.Duration, from, to State) step {
	return step{at: at, op: "fail", from: from, to: to}
}
func opens(at time.Duration, from State, until time.Duration) step {
	return step{at: at, op: "fail", from: from, to: Open, until: until}
}
func state(at time.Duration, want State) step { return step{at: at, op: "state", to: want} }

// constant returns a Rand that always draws r.
func constant(r float64) func() float64 { return func() float64 { return r } }

func TestBreaker(t *testing.T) {
	// No jitter unless a row says so: Rand draws 0, the full delay.
	cfg := Config{Threshold: 3, Window: 10 * s, OpenDelay: s, MaxOpenDelay: 4 * s, Rand: constant(0)}
	with := func(f func(*Config)) Config { c := cfg; f(&c); return c }
	tests := []struct {
		name  string
		cfg   Config
		steps []step
	}{
		{"opens after K consecutive failures", cfg, []step{
			allow(0),
			fail(0, Closed, Closed),
			fail(1*s, Closed, Closed),
			allow(1500 * ms),
			opens(2*s, Closed, 3*s),
			refuse(2*s, 3*s),
			refuse(2999*ms, 3*s),
			state(2999*ms, Open),
			state(3*s, HalfOpen),
		}},
		{"probe success closes", cfg, []step{
			fail(0, Closed, Closed), fail(0, Closed, Closed), opens(0, Closed, 1*s),
			allow(1 * s), // the probe
			state(1*s, HalfOpen),
			refuse(1100*ms, 2*s), // others wait for it
			refuse(1500*ms, 2*s),
			ok(1500*ms, HalfOpen, Closed),
			allow(1500 * ms),
			allow(1600 * ms),
			state(1600*ms, Closed),
		}},
		{"failures spread beyond the window", cfg, []step{
			fail(0, Closed, Closed),
			fail(6*s, Closed, Closed),
			fail(12*s, Closed, Closed), // 0, 6, 12: 12 s apart
			allow(12 * s),
			opens(13*s, Closed, 14*s), // 6, 12, 13: 7 s apart
		}},
		{"failures exactly a window apart count", cfg, []step{
			fail(0, Closed, Closed),
			fail(5*s, Closed, Closed),
			opens(10*s, Closed, 11*s),
		}},
		{"success in between resets the count", cfg, []step{
			fail(0, Closed, Closed),
			fail(1*s, Closed, Closed),
			ok(2*s, Closed, Closed),
			fail(3*s, Closed, Closed),
			fail(4*s, Closed, Closed),
			opens(5*s, Closed, 6*s),
		}},
		{"failed probes double the delay up to the cap", cfg, []step{
			fail(0, Closed, Closed), fail(0, Closed, Closed), opens(0, Closed, 1*s),
			allow(1 * s), opens(1*s, HalfOpen, 3*s), // 2 s
			refuse(2*s, 3*s),
			allow(3 * s), opens(3*s, HalfOpen, 7*s), // 4 s
			allow(7 * s), opens(7*s, HalfOpen, 11*s), // capped at 4 s
			allow(11 * s), ok(11*s, HalfOpen, Closed),
			// Closing resets the delay.
			fail(20*s, Closed, Closed), fail(20*s, Closed, Closed), opens(20*s, Closed, 21*s),
		}},
		{"an abandoned probe is replaced after another delay", cfg, []step{
			fail(0, Closed, Closed), fail(0, Closed, Closed), opens(0, Closed, 1*s),
			allow(1 * s), // the probe, never reported
			refuse(1500*ms, 2*s),
			allow(2 * s), // its replacement
			refuse(2500*ms, 3*s),
			ok(2500*ms, HalfOpen, Closed),
		}},
		{"reports while open are ignored", cfg, []step{
			fail(0, Closed, Closed), fail(0, Closed, Closed), opens(0, Closed, 1*s),
			ok(500*ms, Open, Open),
			fail(600*ms, Open, Open),
			refuse(700*ms, 1*s),
			state(700*ms, Open),
		}},
		{"jitter shortens the delay", with(func(c *Config) { c.Jitter = 0.2; c.Rand = constant(0.5) }), []step{
			fail(0, Closed, Closed), fail(0, Closed, Closed), opens(0, Closed, 900*ms),
			allow(900 * ms), opens(900*ms, HalfOpen, 2700*ms), // 2 s × 0.9
			allow(2700 * ms), opens(2700*ms, HalfOpen, 6300*ms), // 4 s × 0.9
		}},
		{"full jitter of a full draw", with(func(c *Config) { c.Jitter = 5; c.Rand = constant(1) }), []step{
			fail(0, Closed, Closed), fail(0, Closed, Closed), opens(0, Closed, 0),
			allow(0),
		}},
		{"bad draws count as 0", with(func(c *Config) { c.Rand = constant(math.NaN()) }), []step{
			fail(0, Closed, Closed), fail(0, Closed, Closed), opens(0, Closed, 1*s),
		}},
		{"negative jitter is none", with(func(c *Config) { c.Jitter = -1; c.Rand = constant(0.99) }), []step{
			fail(0, Closed, Closed), fail(0, Closed, Closed), opens(0, Closed, 1*s),
		}},
		{"threshold 1", with(func(c *Config) { c.Threshold = 1 }), []step{
			opens(0, Closed, 1*s),
		}},
		{"max below open delay", with(func(c *Config) { c.OpenDelay = 3 * s; c.MaxOpenDelay = 2 * s }), []step{
			fail(0, Closed, Closed), fail(0, Closed, Closed), opens(0, Closed, 3*s),
			allow(3 * s), opens(3*s, HalfOpen, 6*s),
		}},
		{"defaults", Config{Rand: constant(0)}, []step{
			fail(0, Closed, Closed), fail(0, Closed, Closed), fail(0, Closed, Closed), fail(0, Closed, Closed),
			opens(DefaultWindow, Closed, DefaultWindow+DefaultOpenDelay),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run(t, New(tt.cfg), tt.steps)
		})
	}
}

func TestZeroBreaker(t *testing.T) {
	var b Breaker
	if st := b.State(t0); st != Closed {
		t.Fatalf("State = %v, want closed", st)
	}
	for i := range DefaultThreshold - 1 {
		if tr := b.Record(t0, false); tr.Changed() {
			t.Fatalf("failure %d: Record = %v→%v, want no change", i+1, tr.From, tr.To)
		}
	}
	tr := b.Record(t0, false)
	if tr.To != Open {
		t.Fatalf("failure %d: Record = %v→%v, want open", DefaultThreshold, tr.From, tr.To)
	}
	lo, hi := t0.Add(DefaultOpenDelay-time.Duration(DefaultJitter*float64(DefaultOpenDelay))), t0.Add(DefaultOpenDelay)
	if tr.Until.Before(lo) || tr.Until.After(hi) {
		t.Errorf("Until = t0+%v, want in [t0+%v, t0+%v]", tr.Until.Sub(t0), lo.Sub(t0), hi.Sub(t0))
	}
}

// TestJitterBounds checks random open delays against [d·(1-J), d] as the
// delay doubles to its cap.
func TestJitterBounds(t *testing.T) {
	b := New(Config{Threshold: 1, OpenDelay: s, MaxOpenDelay: 8 * s, Jitter: 0.5})
	now := t0
	tr := b.Record(now, false)
	seen := map[time.Duration]bool{}
	for i := range 200 {
		d := min(time.Duration(1<<min(i, 3))*s, 8*s)
		if got := tr.Until.Sub(now); got < d/2 || got > d {
			t.Fatalf("reopening %d: delay %v, want in [%v, %v]", i, got, d/2, d)
		}
		seen[tr.Until.Sub(now)] = true
		now = tr.Until
		if err := b.Allow(now); err != nil {
			t.Fatalf("reopening %d: Allow(Until) = %v, want the probe", i, err)
		}
		tr = b.Record(now, false)
	}
	if len(seen) < 100 {
		t.Errorf("%d distinct delays in 200 openings, want jitter", len(seen))
	}
}

// TestHalfOpenSingleProbe lets 100 goroutines race for the probe, many
// times over: exactly one wins each round.
func TestHalfOpenSingleProbe(t *testing.T) {
	b := New(Config{Threshold: 1, OpenDelay: s, MaxOpenDelay: s, Rand: constant(0)})
	now := t0
	b.Record(now, false)
	for round := range 50 {
		now = now.Add(s)
		var admitted atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 100 {
			wg.Go(func() {
				<-start
				switch err := b.Allow(now); {
				case err == nil:
					admitted.Add(1)
				case !errors.Is(err, ErrOpen):
					t.Errorf("Allow = %v, want nil or ErrOpen", err)
				}
			})
		}
		close(start)
		wg.Wait()
		if n := admitted.Load(); n != 1 {
			t.Fatalf("round %d: %d goroutines admitted, want exactly 1", round, n)
		}
		if tr := b.Record(now, false); tr.From != HalfOpen || tr.To != Open {
			t.Fatalf("round %d: probe failure = %v→%v, want half-open→open", round, tr.From, tr.To)
		}
	}
}

// TestConcurrentUse hammers a breaker with random outcomes; run with -race.
// Every state reached must be one the machine allows.
func TestConcurrentUse(t *testing.T) {
	b := New(Config{Threshold: 3, Window: s, OpenDelay: 10 * ms, MaxOpenDelay: 40 * ms})
	var clock atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 2000 {
				now := t0.Add(time.Duration(clock.Add(int64(ms / 4))))
				if b.Allow(now) != nil {
					continue
				}
				tr := b.Record(now, rand.IntN(3) == 0)
				switch {
				case !tr.Changed():
				case tr.From == Closed && tr.To == Open:
				case tr.From == HalfOpen && (tr.To == Open || tr.To == Closed):
				default:
					t.Errorf("transition %v→%v", tr.From, tr.To)
				}
			}
		})
	}
	wg.Wait()
}

func TestClosedAllocs(t *testing.T) {
	b := New(Config{Threshold: 1000})
	now := t0
	n := testing.AllocsPerRun(100, func() {
		now = now.Add(ms)
		_ = b.Allow(now)
		b.Record(now, false)
		b.Record(now, true)
		b.State(now)
	})
	if n != 0 {
		t.Errorf("closed Allow+Record+State allocate %v times, want 0", n)
	}
}

func TestStrings(t *testing.T) {
	for st, want := range map[State]string{Closed: "closed", Open: "open", HalfOpen: "half-open", 7: "State(7)"} {
		if got := st.String(); got != want {
			t.Errorf("State(%d).String() = %q, want %q", int(st), got, want)
		}
	}
	err := error(&OpenError{Until: t0})
	if got, want := err.Error(), "breaker: open until 2026-03-01T12:00:00Z"; got != want {
		t.Errorf("OpenError.Error() = %q, want %q", got, want)
	}
}

func BenchmarkAllowClosed(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		br := New(Config{})
		b.ReportAllocs()
		for b.Loop() {
			_ = br.Allow(t0)
			br.Record(t0, true)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		br := New(Config{})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_ = br.Allow(t0)
				br.Record(t0, true)
			}
		})
	})
}

func BenchmarkAllowOpen(b *testing.B) {
	br := New(Config{Threshold: 1})
	br.Record(t0, false)
	b.ReportAllocs()
	for b.Loop() {
		_ = br.Allow(t0)
	}
}

// The open-until instant comes back as the time it is, whatever the era of
// the caller's clock: the zero Time, 1960, 2000, 2300.
func TestUntilOfAnyEra(t *testing.T) {
	for _, t0 := range []time.Time{{}, time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)} {
		b := New(Config{Threshold: 1, Jitter: -1, OpenDelay: 30 * time.Second})
		tr := b.Record(t0, false)
		var oe *OpenError
		if !errors.As(b.Allow(t0.Add(time.Second)), &oe) {
			t.Fatalf("from %v: Allow admitted a request to an open breaker", t0)
		}
		if d, d2 := tr.Until.Sub(t0), oe.Until.Sub(t0); d != 30*time.Second || d2 != 30*time.Second {
			t.Errorf("from %v: open until %v and %v after the failure, want 30s", t0, d, d2)
		}
		if s := b.State(t0.Add(31 * time.Second)); s != HalfOpen {
			t.Errorf("from %v: state 31 s later = %v, want half-open", t0, s)
		}
	}
}
