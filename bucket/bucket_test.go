package bucket

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// at returns t0 plus d.
func at(d time.Duration) time.Time { return t0.Add(d) }

const ms = time.Millisecond

// step is one row of a step table: at t, AllowN(n) must answer ok, or (with
// set) the settings change.
type step struct {
	t     time.Duration
	n     int
	ok    bool
	op    string // "" = AllowN; "rate", "burst", "drain", "tokens"
	value float64
}

func run(t *testing.T, b *Bucket, steps []step) {
	t.Helper()
	for i, s := range steps {
		now := at(s.t)
		switch s.op {
		case "":
			if got := b.AllowN(now, s.n); got != s.ok {
				t.Errorf("step %d: AllowN(t0+%v, %d) = %v, want %v (tokens %.3f)", i, s.t, s.n, got, s.ok, b.Tokens(now))
			}
		case "rate":
			b.SetRate(now, s.value)
		case "burst":
			b.SetBurst(now, int(s.value))
		case "drain":
			b.Drain(now)
		case "tokens":
			if got := b.Tokens(now); math.Abs(got-s.value) > 1e-6 {
				t.Errorf("step %d: Tokens(t0+%v) = %.6f, want %.6f", i, s.t, got, s.value)
			}
		}
	}
}

func TestAllowN(t *testing.T) {
	tests := []struct {
		name  string
		b     *Bucket
		steps []step
	}{
		{"burst then steady rate", New(10, 3), []step{
			{t: 0, n: 1, ok: true},
			{t: 0, n: 1, ok: true},
			{t: 0, n: 1, ok: true},
			{t: 0, n: 1, ok: false},
			{t: 99 * ms, n: 1, ok: false},
			{t: 100 * ms, n: 1, ok: true},
			{t: 150 * ms, n: 1, ok: false},
			{t: 200 * ms, n: 1, ok: true},
			{t: 300 * ms, n: 1, ok: true},
			{t: 300 * ms, n: 1, ok: false},
		}},
		{"refill after idle capped at burst", New(10, 3), []step{
			{t: 0, n: 3, ok: true},
			{t: 0, op: "tokens", value: 0},
			{t: time.Hour, op: "tokens", value: 3},
			{t: time.Hour, n: 1, ok: true},
			{t: time.Hour, n: 1, ok: true},
			{t: time.Hour, n: 1, ok: true},
			{t: time.Hour, n: 1, ok: false},
		}},
		{"weighted cost", New(4, 4), []step{
			{t: 0, n: 3, ok: true},
			{t: 0, n: 2, ok: false}, // 1 left
			{t: 0, n: 1, ok: true},
			{t: 250 * ms, n: 2, ok: false},
			{t: 500 * ms, n: 2, ok: true},
			{t: 500 * ms, n: 5, ok: false}, // above burst: never
			{t: time.Hour, n: 5, ok: false},
			{t: time.Hour, n: 4, ok: true},
		}},
		{"drain", New(2, 5), []step{
			{t: 0, op: "tokens", value: 5},
			{t: 0, op: "drain"},
			{t: 0, op: "tokens", value: 0},
			{t: 0, n: 1, ok: false},
			{t: 499 * ms, n: 1, ok: false},
			{t: 500 * ms, n: 1, ok: true},
		}},
		{"drain keeps debt", New(1, 1), []step{
			{t: 0, n: 1, ok: true},
			{t: 0, op: "drain"},
			{t: 999 * ms, n: 1, ok: false},
			{t: time.Second, n: 1, ok: true},
		}},
		{"set rate mid-stream keeps accrued tokens", New(10, 10), []step{
			{t: 0, n: 10, ok: true},
			{t: 500 * ms, op: "tokens", value: 5},
			{t: 500 * ms, op: "rate", value: 2},
			{t: 500 * ms, op: "tokens", value: 5},
			{t: 1000 * ms, op: "tokens", value: 6},
			{t: 1000 * ms, n: 6, ok: true},
			{t: 1000 * ms, n: 1, ok: false},
			{t: 1500 * ms, n: 1, ok: true},
			{t: 1500 * ms, op: "rate", value: 100},
			{t: 1510 * ms, n: 1, ok: true},
			{t: 1510 * ms, n: 1, ok: false},
		}},
		{"set burst caps tokens", New(1, 10), []step{
			{t: 0, op: "burst", value: 2},
			{t: 0, op: "tokens", value: 2},
			{t: 0, n: 2, ok: true},
			{t: 0, op: "burst", value: 4},
			{t: 0, op: "tokens", value: 0},
			{t: 10 * time.Second, op: "tokens", value: 4},
		}},
		{"zero rate admits nothing", New(0, 5), []step{
			{t: 0, n: 1, ok: false},
			{t: time.Hour, n: 1, ok: false},
			{t: time.Hour, op: "rate", value: 1},
			{t: time.Hour, op: "tokens", value: 0},
			{t: time.Hour + time.Second, n: 1, ok: true},
		}},
		{"infinite rate admits all", New(Inf, 0), []step{
			{t: 0, n: 1, ok: true},
			{t: 0, n: 1000, ok: true},
			{t: 0, op: "rate", value: 1},
			{t: 0, n: 1, ok: false}, // burst 0
		}},
		{"zero bucket admits nothing", &Bucket{}, []step{
			{t: 0, n: 1, ok: false},
		}},
		{"times before the package epoch", New(1, 1), []step{
			{t: -24 * 365 * 60 * time.Hour, n: 1, ok: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { run(t, tt.b, tt.steps) })
	}
}

func TestSmoothSpacing(t *testing.T) {
	b := NewSmooth(4) // one every 250 ms, never two at once
	run(t, b, []step{
		{t: 0, n: 1, ok: true},
		{t: 0, n: 1, ok: false},
		{t: 249 * ms, n: 1, ok: false},
		{t: 250 * ms, n: 1, ok: true},
		{t: 10 * time.Second, n: 1, ok: true}, // idle does not bank a burst
		{t: 10 * time.Second, n: 1, ok: false},
		{t: 10250 * ms, n: 3, ok: true}, // weighted: followed by a 750 ms gap
		{t: 10999 * ms, n: 1, ok: false},
		{t: 11 * time.Second, n: 1, ok: true},
	})
	if got := b.Burst(); got != 1 {
		t.Errorf("Burst() = %d, want 1", got)
	}
}

// pacing returns a pacing bucket (Settings.Pacing), full.
func pacing(rate float64, burst int, smooth bool) *Bucket {
	b := &Bucket{}
	b.Init(NewSettings(rate, burst, smooth).Pacing())
	return b
}

// In a pacing bucket a taker that comes a little after its token was due
// keeps its place, so a caller woken late by a timer or the scheduler does
// not lose the rate (live, --rate 100 with burst 1 got 95 req/s); a longer
// lateness is idle time, and smooth mode forgives nothing, nor does a
// bucket that judges others' requests.
func TestLateTakerKeepsPlace(t *testing.T) {
	late := []step{
		{t: 0, n: 1, ok: true},
		{t: 101500 * time.Microsecond, n: 1, ok: true}, // 1.5 ms late
		{t: 199 * ms, n: 1, ok: false},
		{t: 200 * ms, n: 1, ok: true}, // its place, not 201.5 ms
		{t: 305 * ms, n: 1, ok: true}, // 5 ms late: past the slack
		{t: 400 * ms, n: 1, ok: false},
		{t: 405 * ms, n: 1, ok: true},
	}
	run(t, pacing(10, 1, false), late)
	b := pacing(10, 1, false)
	b.SetRate(at(0), 10.5)
	b.SetRate(at(0), 10) // setters keep it pacing
	run(t, b, late)
	strict := []step{
		{t: 0, n: 1, ok: true},
		{t: 101500 * time.Microsecond, n: 1, ok: true},
		{t: 200 * ms, n: 1, ok: false},
		{t: 201500 * time.Microsecond, n: 1, ok: true},
	}
	run(t, pacing(10, 1, true), strict)
	run(t, New(10, 1), strict)
	// Polling every millisecond with burst 1 loses nothing over an hour,
	// and gains nothing: 7/s admits 7 × 3600 + 1.
	b = pacing(7, 1, false)
	got := 0
	for d := time.Duration(0); d <= time.Hour; d += time.Millisecond {
		for b.AllowN(at(d), 1) {
			got++
		}
	}
	if got < 25200 || got > 25202 {
		t.Errorf("rate 7 burst 1: polling every 1 ms admitted %d within an hour, want 25201 ± 1", got)
	}
}

// TestOneHourExact runs a 3 req/s bucket (and others) for an hour: the
// integer clock must not drift. Three ways to consume: a chain of
// reservations, polling with AllowN (burst 2, so polling granularity loses
// nothing), and Wait under a fake clock.
func TestOneHourExact(t *testing.T) {
	for _, tt := range []struct {
		rate float64
		want int // tokens accrued in an hour, plus the initial one
	}{{3, 10801}, {0.3, 1081}, {7, 25201}, {1000.0 / 3, 1200001}} {
		b := New(tt.rate, 1)
		got := 0
		for {
			r, err := b.ReserveN(at(0), 1)
			if err != nil {
				t.Fatal(err)
			}
			if r.TimeToAct().After(at(time.Hour)) {
				break
			}
			got++
		}
		if got < tt.want-1 || got > tt.want+1 {
			t.Errorf("rate %v: reserved %d within an hour, want %d ± 1", tt.rate, got, tt.want)
		}

		b = New(tt.rate, 2)
		got = 0
		for d := time.Duration(0); d <= time.Hour; d += time.Millisecond {
			for b.AllowN(at(d), 1) {
				got++
			}
		}
		if want := tt.want + 1; got < want-1 || got > want+1 {
			t.Errorf("rate %v burst 2: polling admitted %d within an hour, want %d ± 1", tt.rate, got, want)
		}
	}
	synctest.Test(t, func(t *testing.T) {
		b := New(3, 1)
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour+time.Millisecond)
		defer cancel()
		got := 0
		for b.Wait(ctx) == nil {
			got++
		}
		if got < 10800 || got > 10802 {
			t.Errorf("Wait at 3/s admitted %d in an hour, want 10801 ± 1", got)
		}
	})
}

func TestReserveAndCancel(t *testing.T) {
	b := New(10, 1)
	r0, err := b.ReserveN(at(0), 1)
	if err != nil || r0.DelayFrom(at(0)) != 0 {
		t.Fatalf("ReserveN(t0, 1) = %v, %v; want no delay", r0.DelayFrom(at(0)), err)
	}
	r1, _ := b.ReserveN(at(0), 1)
	if got := r1.DelayFrom(at(0)); got != 100*ms {
		t.Errorf("second ReserveN delay = %v, want 100ms", got)
	}
	r2, _ := b.ReserveN(at(0), 1)
	if got := r2.DelayFrom(at(0)); got != 200*ms {
		t.Errorf("third ReserveN delay = %v, want 200ms", got)
	}
	r2.CancelAt(at(50 * ms))
	r1.CancelAt(at(50 * ms))
	if got := b.Tokens(at(100 * ms)); math.Abs(got-1) > 1e-9 {
		t.Errorf("Tokens after cancelling = %v, want 1", got)
	}
	// A reservation whose time has come counts as used.
	r3, _ := b.ReserveN(at(100*ms), 1)
	r4, _ := b.ReserveN(at(100*ms), 1)
	r4.CancelAt(at(300 * ms))
	_ = r3
	if got := b.Tokens(at(300 * ms)); math.Abs(got-1) > 1e-9 {
		t.Errorf("Tokens after late cancel = %v, want 1 (cancel must not give back)", got)
	}
	if _, err := b.ReserveN(at(0), 2); !errors.Is(err, ErrExceedsBurst) {
		t.Errorf("ReserveN(cost 2 > burst 1) error = %v, want ErrExceedsBurst", err)
	}
	if _, err := New(0, 1).ReserveN(at(0), 1); !errors.Is(err, ErrZeroRate) {
		t.Errorf("ReserveN at rate 0 error = %v, want ErrZeroRate", err)
	}
}

func TestWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(5, 1)
		start := time.Now()
		ctx := context.Background()
		for i := range 6 {
			if err := b.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			if got, want := time.Since(start), time.Duration(i)*200*ms; got != want {
				t.Errorf("Wait %d returned at +%v, want +%v", i, got, want)
			}
		}
	})
}

func TestWaitCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(1, 1)
		b.Allow()
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error)
		go func() { errc <- b.Wait(ctx) }()
		time.Sleep(300 * ms)
		cancel()
		err := <-errc
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Wait = %v, want context.Canceled", err)
		}
		// The token the waiter reserved was given back: one is there at +1s.
		time.Sleep(700 * ms)
		if !b.Allow() {
			t.Errorf("Allow at +1s after a cancelled Wait = false, want true")
		}
	})
}

func TestWaitDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(1, 1)
		b.Allow()
		ctx, cancel := context.WithTimeout(context.Background(), 500*ms)
		defer cancel()
		start := time.Now()
		err := b.Wait(ctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait = %v, want DeadlineExceeded", err)
		}
		if time.Since(start) != 0 {
			t.Errorf("Wait with a hopeless deadline took %v, want an immediate answer", time.Since(start))
		}
		if err := b.WaitN(context.Background(), 2); !errors.Is(err, ErrExceedsBurst) {
			t.Errorf("WaitN(2) with burst 1 = %v, want ErrExceedsBurst", err)
		}
		done, cancel2 := context.WithCancel(context.Background())
		cancel2()
		if err := b.Wait(done); !errors.Is(err, context.Canceled) {
			t.Errorf("Wait(cancelled ctx) = %v, want context.Canceled", err)
		}
	})
}

// TestConcurrentExact hammers one bucket from many goroutines, including a
// setter: the number admitted must be exactly what the arithmetic allows.
func TestConcurrentExact(t *testing.T) {
	b := New(1000, 100)
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				now := at(time.Duration(i) * ms)
				if b.AllowN(now, 1) {
					admitted.Add(1)
				}
				if g == 0 && i%100 == 0 {
					b.SetRate(now, 1000) // no-op change: must not disturb
					b.SetBurst(now, 100)
				}
			}
		})
	}
	wg.Wait()
	// Over 2 s of explicit time at 1000/s with burst 100: at most 100 + 1999 + 1.
	if got := admitted.Load(); got > 2100 || got < 1000 {
		t.Errorf("admitted %d, want at most 2100 and at least 1000", got)
	}
}

func TestSetRateRaceKeepsTokens(t *testing.T) {
	b := New(10, 10)
	b.AllowN(at(0), 4) // 6 left: a state the conversion must keep, not a full bucket
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range 1000 {
				b.SetRate(at(0), float64(1+i%7))
			}
		})
		wg.Go(func() {
			for range 1000 {
				b.Tokens(at(0))
			}
		})
	}
	wg.Wait()
	if got := b.Tokens(at(0)); math.Abs(got-6) > 1e-6 {
		t.Errorf("Tokens after rate churn at one instant = %v, want 6", got)
	}
}

func TestForgive(t *testing.T) {
	b := New(1, 2)
	now := at(0)
	for range 5 {
		b.ReserveN(now, 1) // 2 from the burst, then 3 of debt
	}
	if got := b.Tokens(now); math.Abs(got+3) > 1e-9 {
		t.Fatalf("Tokens = %v, want -3", got)
	}
	b.Forgive(now, 2)
	if got := b.Tokens(now); math.Abs(got+1) > 1e-9 {
		t.Errorf("after Forgive(2): Tokens = %v, want -1", got)
	}
	b.Forgive(now, 5)
	if got := b.Tokens(now); got != 0 {
		t.Errorf("after Forgive(5): Tokens = %v, want 0 (never above empty)", got)
	}
	b2 := New(1, 2)
	b2.Drain(now)
	b2.Forgive(now, 1)
	if got := b2.Tokens(now); got != 0 {
		t.Errorf("Forgive after Drain: Tokens = %v, want 0", got)
	}
}

// A cut of the rate does not stretch tokens reserved at the old rate: they
// were granted at its spacing, and the new rate runs from the instant their
// debt would have been paid. A rise does shorten it.
func TestSetRateKeepsReservedTime(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		name     string
		from, to float64
		want     time.Duration // when the next token is there, after 6 reserved at 0
	}{
		{"cut", 1000, 0.5, 6*ms + 2*time.Second}, // not 6 tokens × 2 s later
		{"rise", 0.5, 1000, 7 * ms},              // 6 tokens and one at 1 ms, not 12 s
		{"halved", 10, 5, 800 * ms},              // the 6th at 600 ms, then 200 ms
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := New(tc.from, 1)
			b.AllowN(at(0), 1) // empty the bucket
			for range 6 {      // the 1st to 6th intervals, at the old rate
				if _, err := b.ReserveN(at(0), 1); err != nil {
					t.Fatal(err)
				}
			}
			b.SetRate(at(0), tc.to)
			r, err := b.ReserveN(at(0), 1)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.DelayFrom(at(0)); got != tc.want {
				t.Errorf("next token after %v, want %v", got, tc.want)
			}
		})
	}
}

// A zero time.Time is as far before epoch as a Duration goes, which is the
// very number that marks a setter at work: published as the state by a
// setter, it froze the bucket for good and every later take spun forever.
func TestZeroTimeNeverFreezes(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(b *Bucket)
	}{
		{"SetRate Inf", func(b *Bucket) { b.SetRate(time.Time{}, Inf) }},
		{"SetRate 0", func(b *Bucket) { b.SetRate(time.Time{}, 0) }},
		{"SetBurst", func(b *Bucket) { b.SetBurst(time.Time{}, 5) }},
		{"Drain", func(b *Bucket) { b.Drain(time.Time{}) }},
		{"AllowN", func(b *Bucket) { b.AllowN(time.Time{}, 1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := New(10, 1)
			tc.set(b)
			if f := b.full.Load(); f == frozen {
				t.Fatalf("state after %s at the zero time is frozen", tc.name)
			}
			b.SetRate(at(0), 10) // would spin forever on a frozen state
			if !b.AllowN(at(time.Hour), 1) {
				t.Errorf("AllowN an hour later = false, want true")
			}
		})
	}
}

// A time far in the future saturated to math.MaxInt64, and a take's end
// then wrapped around to a state far in the past. Instants are now read
// no later than 73 years after epoch: the state stays what a take at that
// bound leaves, and the bucket keeps answering.
func TestFarFutureDoesNotWrap(t *testing.T) {
	far := time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	b := New(10, 1)
	if !b.AllowN(far, 1) {
		t.Fatal("AllowN in 9999 = false on a full bucket")
	}
	if f := b.full.Load(); f < maxNow {
		t.Fatalf("state after a take in 9999 = %d, before the instant it was read as (%d): it wrapped", f, int64(maxNow))
	}
	b.Drain(far)
	b.SetRate(far, 20)
	if b.AllowN(far, 1) {
		t.Error("AllowN in 9999 right after a drain = true")
	}
}

// Cancels after a cut of the rate give back tokens at the new, higher
// cost: thousands of them walked the state below math.MinInt64, and it
// wrapped to a debt of centuries that refused every take.
func TestCancelsAfterRateCutDoNotWrap(t *testing.T) {
	b := New(1000, 10)
	var rs []Reservation
	for range 10_000 {
		r, err := b.ReserveN(at(0), 1)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	b.SetRate(at(0), MinRate) // a token now costs about 11.6 days
	for _, r := range rs {
		r.CancelAt(at(0))
	}
	if f := b.full.Load(); f < longAgo || f > nanos(at(0)) {
		t.Fatalf("state after the cancels = %d, want within [longAgo, now]: a full bucket", f)
	}
	if !b.AllowN(at(0), 1) {
		t.Error("AllowN after every reservation was cancelled = false")
	}
}

// costOf skips mulSat's division with a bound computed once per settings;
// it must give the same spans, saturation included, at every rate.
func TestCostOfMatchesMulSat(t *testing.T) {
	rates := []float64{MinRate, 1e-3, 0.3, 1, 3, 7, 1e3, 1e6, 3e8, 1e9, 2e9, Inf}
	for _, r := range rates {
		p := newParams(r, 10, false, false)
		ns := []int{-1, 0, 1, 2, 10, 1 << 20, math.MaxInt32, math.MaxInt}
		if p.cost > 0 {
			m := int(maxSpan / p.cost)
			ns = append(ns, m-1, m, m+1)
		}
		for _, n := range ns {
			if got, want := p.costOf(n), mulSat(int64(n), p.cost); got != want {
				t.Errorf("rate %g (cost %d ns): costOf(%d) = %d, mulSat gives %d", r, p.cost, n, got, want)
			}
		}
	}
}

// NextAt is the instant a take first succeeds, to the nanosecond, at any
// rate and in either mode: a take at NextAt gets its token, a take a
// nanosecond before does not (issue 33: a NextToken computed in floating
// point came back early, and a job at 19.9/s ran at half that).
func TestNextAtExact(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	for _, rate := range []float64{1, 3.7, 7.3, 19.9, 20, 333.3} {
		for _, smooth := range []bool{false, true} {
			b := New(rate, 2)
			if smooth {
				b = NewSmooth(rate)
			}
			now := t0
			for i := range 50 {
				at := b.NextAt(now)
				if at.After(now) {
					if b.AllowN(at.Add(-time.Nanosecond), 1) { // refused: nothing taken
						t.Fatalf("rate %v smooth %v take %d: a token a nanosecond before NextAt %v", rate, smooth, i, at)
					}
					now = at
				}
				if !b.AllowN(now, 1) {
					t.Fatalf("rate %v smooth %v take %d: no token at NextAt %v", rate, smooth, i, now)
				}
			}
		}
	}
	if at := New(0, 1).NextAt(t0); !at.IsZero() {
		t.Errorf("rate 0: NextAt = %v, want never (the zero Time)", at)
	}
}
