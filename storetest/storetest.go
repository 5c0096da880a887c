// Package storetest is the conformance suite every polite.Store must pass:
// the local store (in memory) and any store kept elsewhere, such as one
// shared through Redis by a fleet of workers.
//
// Each case runs in a testing/synctest bubble, so time.Now is a fake clock
// that moves only when the case sleeps; the steps pass explicit times. A
// store that keeps time of its own (Redis's TIME) must follow the bubble's
// clock for these cases or be run with a harness that does.
package storetest

import (
	"errors"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/adaptive"
	"github.com/polite-go/polite/breaker"
)

// Config is what a case needs of the store under test. New must return a
// fresh store whose hosts get Limits, with a breaker that opens after
// BreakerThreshold consecutive failures for BreakerOpen (no jitter), and
// the Registry whose Host entries it is handed.
type Config struct {
	Limits           polite.Limits
	BreakerThreshold int
	BreakerOpen      time.Duration
	IdleTimeout      time.Duration
	// LeaseTTL is how long an in-flight lease lives, for a store that
	// leases slots (Admission.Lease); the others ignore it.
	LeaseTTL time.Duration
	// Adaptive, for RunAdaptive's cases only: each host's rate is polite's
	// controller with this Config (polite.HostAdaptive of it and the
	// host's Limits), born at Origin (adaptive.New(..., Origin)).
	Adaptive *adaptive.Config
	Origin   time.Time
}

// New makes the store under test for one case.
type New func(t *testing.T, c Config) (polite.Store, *polite.Registry)

// Run runs every case against stores made by newStore.
func Run(t *testing.T, newStore New) {
	cases := []struct {
		name string
		run  func(t *testing.T, newStore New)
	}{
		{"PauseNeverShortened", pauseNeverShortened},
		{"ThrottleWaveCountsOnce", throttleWaveCountsOnce},
		{"OneBreakerProbe", oneBreakerProbe},
		{"BlockIsKept", blockIsKept},
		{"RateChangeKeepsTokens", rateChangeKeepsTokens},
		{"LateTakerKeepsItsPlace", lateTakerKeepsItsPlace},
		{"EvictionGrantsOneBucket", evictionGrantsOneBucket},
		{"ConcurrentAdmitsKeepTheBucket", concurrentAdmits},
		{"ReservationStandsDown", reservationStandsDown},
		{"LeasesKeepTheCap", leasesKeepTheCap},
		{"CostTakesItsTokens", costTakesItsTokens},
		{"RetryBudgetInState", retryBudgetInState},
		{"DemandNoteTakesNothing", demandNoteTakesNothing},
		{"GateOrder", gateOrder},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { c.run(t, newStore) })
		})
	}
}

// defaults leave the in-flight cap out of the way: only leasesKeepTheCap
// asks a store about it.
func defaults() Config {
	return Config{Limits: polite.Limits{Rate: 1, Burst: 1, Concurrency: 1000}, BreakerThreshold: 3, BreakerOpen: 10 * time.Second,
		LeaseTTL: time.Minute}
}

// host gets key's entry and puts it back when the case ends.
func host(t *testing.T, reg *polite.Registry, key string) *polite.Host {
	h := reg.Get(key)
	t.Cleanup(func() { reg.Put(h) })
	return h
}

// throttle is a 429 answer, with a Retry-After of after seconds (none when
// after is negative).
func throttle(sent, now time.Time, after int) polite.Report {
	hdr := http.Header{}
	if after >= 0 {
		hdr.Set("Retry-After", strconv.Itoa(after))
	}
	return polite.Report{Now: now, Sent: sent, Outcome: polite.Throttled, Status: 429, Header: hdr, Attempt: 1}
}

func ok(sent, now time.Time) polite.Report {
	return polite.Report{Now: now, Sent: sent, Outcome: polite.OK, Status: 200, Header: http.Header{}, Attempt: 1}
}

// step is one row of a case's table: at an offset from the case's start,
// an admission is asked and its answer checked.
type step struct {
	at      time.Duration
	granted bool
	reason  polite.Reason // when not granted
}

func admitSteps(t *testing.T, s polite.Store, h *polite.Host, t0 time.Time, steps []step) {
	t.Helper()
	for i, st := range steps {
		a := s.Admit(h, polite.Query{Now: t0.Add(st.at)})
		if a.Granted != st.granted || (!st.granted && a.Reason != st.reason) {
			t.Errorf("step %d: Admit at +%v = granted %v (%s, wait %v, err %v), want granted %v (%s)",
				i, st.at, a.Granted, a.Reason, a.Wait, a.Err, st.granted, st.reason)
		}
	}
}

// pauseNeverShortened: a later, shorter Retry-After leaves the pause where
// the longer one put it.
func pauseNeverShortened(t *testing.T, newStore New) {
	c := defaults()
	c.Limits.Rate = 100
	s, reg := newStore(t, c)
	h := host(t, reg, "a.test")
	t0 := time.Now()
	if a := s.Admit(h, polite.Query{Now: t0}); !a.Granted {
		t.Fatalf("first Admit refused: %+v", a)
	}
	v := s.Report(h, throttle(t0, t0.Add(time.Second), 10))
	if v.Pause != 10*time.Second || v.PauseWhy != polite.ReasonRetryAfter {
		t.Errorf("Report(429, Retry-After 10) paused %v (%s), want 10s (retry-after)", v.Pause, v.PauseWhy)
	}
	s.Report(h, throttle(t0, t0.Add(2*time.Second), 2))
	admitSteps(t, s, h, t0, []step{
		{at: 5 * time.Second, reason: polite.ReasonRetryAfter},
		{at: 10*time.Second + 999*time.Millisecond, reason: polite.ReasonRetryAfter},
		{at: 11*time.Second + time.Millisecond, granted: true},
	})
	st := s.State(h, t0.Add(5*time.Second))
	if want := t0.Add(11 * time.Second); !st.PausedUntil.Equal(want) {
		t.Errorf("State.PausedUntil = %v, want %v", st.PausedUntil, want)
	}
}

// throttleWaveCountsOnce: throttles answering requests sent before the
// first throttle was heard are one event for the breaker; throttles that
// each follow the last one heard are separate events.
func throttleWaveCountsOnce(t *testing.T, newStore New) {
	s, reg := newStore(t, defaults())
	h := host(t, reg, "a.test")
	t0 := time.Now()
	for i := range 6 { // six requests in flight, all sent at t0
		s.Report(h, throttle(t0, t0.Add(time.Duration(i+1)*time.Millisecond), 0))
	}
	if st := s.State(h, t0.Add(time.Second)); st.Breaker != breaker.Closed {
		t.Fatalf("after one wave of 6 throttles the breaker is %v, want closed", st.Breaker)
	}
	var v polite.Verdict
	for i := range 3 { // three waves: each request sent after the last throttle
		sent := t0.Add(time.Duration(i+1) * time.Second)
		v = s.Report(h, throttle(sent, sent.Add(time.Millisecond), 0))
	}
	if v.Breaker.To != breaker.Open {
		t.Errorf("after 3 more waves (4 in all, threshold 3) the breaker went %v → %v, want open", v.Breaker.From, v.Breaker.To)
	}
}

// oneBreakerProbe: once the open delay is over exactly one admission is
// the probe until it is reported.
func oneBreakerProbe(t *testing.T, newStore New) {
	c := defaults()
	c.Limits.Rate = 1000
	c.Limits.Burst = 10
	s, reg := newStore(t, c)
	h := host(t, reg, "a.test")
	t0 := time.Now()
	var v polite.Verdict
	for i := range 3 {
		sent := t0.Add(time.Duration(i) * time.Second)
		v = s.Report(h, polite.Report{Now: sent.Add(time.Millisecond), Sent: sent, Outcome: polite.ServerError, Status: 500, Attempt: 1})
	}
	if v.Breaker.To != breaker.Open {
		t.Fatalf("3 failures left the breaker %v, want open", v.Breaker.To)
	}
	opened := t0.Add(2*time.Second + time.Millisecond)
	a := s.Admit(h, polite.Query{Now: opened.Add(time.Second)})
	var oe *breaker.OpenError
	if a.Granted || a.Reason != polite.ReasonBreaker || !errors.As(a.Err, &oe) {
		t.Fatalf("Admit while open = %+v, want refused by the breaker with *breaker.OpenError", a)
	}
	if want := c.BreakerOpen - time.Second; a.Wait != want {
		t.Errorf("Admit while open: Wait = %v, want %v", a.Wait, want)
	}
	probeAt := opened.Add(c.BreakerOpen)
	admitSteps(t, s, h, probeAt, []step{
		{at: 0, granted: true},
		{at: time.Millisecond, reason: polite.ReasonBreaker},
		{at: time.Second, reason: polite.ReasonBreaker},
	})
	s.Report(h, ok(probeAt, probeAt.Add(2*time.Second)))
	admitSteps(t, s, h, probeAt, []step{
		{at: 2 * time.Second, granted: true},
		{at: 2*time.Second + time.Millisecond, granted: true},
	})
}

// blockIsKept: a soft block refuses every later admission, with the reason.
func blockIsKept(t *testing.T, newStore New) {
	s, reg := newStore(t, defaults())
	h := host(t, reg, "a.test")
	t0 := time.Now()
	v := s.Report(h, polite.Report{Now: t0, Sent: t0, Outcome: polite.Blocked, Block: "captcha", Status: 403, Attempt: 1})
	if !v.Blocked || !v.GiveUp {
		t.Errorf("Report(blocked) = %+v, want Blocked and GiveUp", v)
	}
	a := s.Admit(h, polite.Query{Now: t0.Add(time.Hour)})
	if a.Granted || !errors.Is(a.Err, polite.ErrBlocked) {
		t.Errorf("Admit after a block = %+v, want refused with ErrBlocked", a)
	}
	if st := s.State(h, t0); st.Blocked != "captcha" {
		t.Errorf("State.Blocked = %q, want captcha", st.Blocked)
	}
	// A Store that can lift the mark (the job re-checks a block before
	// giving up a host's URLs) lifts it once and admits again.
	u, ok := s.(polite.Unblocker)
	if !ok {
		return
	}
	if !u.Unblock(h) {
		t.Errorf("Unblock of a blocked host = false, want true")
	}
	if u.Unblock(h) {
		t.Errorf("second Unblock = true, want false: the mark was lifted already")
	}
	if st := s.State(h, t0); st.Blocked != "" {
		t.Errorf("State.Blocked after Unblock = %q, want none", st.Blocked)
	}
	if a := s.Admit(h, polite.Query{Now: t0.Add(time.Hour)}); !a.Granted {
		t.Errorf("Admit after Unblock = %+v, want granted", a)
	}
	if v := s.Report(h, polite.Report{Now: t0.Add(time.Hour), Sent: t0.Add(time.Hour), Outcome: polite.Blocked, Block: "captcha", Status: 403, Attempt: 1}); !v.Blocked {
		t.Errorf("Report(blocked) after Unblock = %+v, want the mark set again", v)
	}
}

// rateChangeKeepsTokens: SetRate neither loses nor invents the tokens
// accrued so far.
func rateChangeKeepsTokens(t *testing.T, newStore New) {
	c := defaults()
	c.Limits.Burst = 10
	s, reg := newStore(t, c)
	h := host(t, reg, "a.test")
	t0 := time.Now()
	for i := range 10 {
		if a := s.Admit(h, polite.Query{Now: t0}); !a.Granted {
			t.Fatalf("Admit %d of a full bucket of 10 refused: %+v", i, a)
		}
	}
	t1 := t0.Add(5 * time.Second) // 5 tokens accrued at 1/s
	if got := s.SetRate(h, t1, 2); got != 2 {
		t.Errorf("SetRate(2) = %v, want 2", got)
	}
	for i := range 5 {
		if a := s.Admit(h, polite.Query{Now: t1}); !a.Granted {
			t.Fatalf("Admit %d of 5 accrued tokens refused after SetRate", i)
		}
	}
	admitSteps(t, s, h, t1, []step{
		{at: 0, reason: polite.ReasonRate},
		{at: 500 * time.Millisecond, granted: true}, // the new rate's interval
	})
}

// lateTakerKeepsItsPlace: a client pacing itself by the bucket that comes
// for its token a little late (a timer, a round trip) keeps its place, by
// at most 2 ms and a tenth of a token, so a host at burst 1 keeps its
// rate; a smooth host forgives nothing (its spacing is a promise).
func lateTakerKeepsItsPlace(t *testing.T, newStore New) {
	const ms = time.Millisecond
	for _, c := range []struct {
		name   string
		smooth bool
		late   time.Duration
		steps  []step // from the token due at +200 ms
	}{
		{"late 1.5 ms", false, 1500 * time.Microsecond, []step{{at: 0, granted: true}}},
		{"late 3 ms", false, 3 * ms, []step{{at: 0, reason: polite.ReasonRate}, {at: 3 * ms, granted: true}}},
		{"smooth, late 1.5 ms", true, 1500 * time.Microsecond, []step{{at: 0, reason: polite.ReasonRate}, {at: 1500 * time.Microsecond, granted: true}}},
	} {
		cfg := defaults()
		cfg.Limits.Rate, cfg.Limits.Smooth = 10, c.smooth // a token every 100 ms, burst 1
		s, reg := newStore(t, cfg)
		h := host(t, reg, "a.test")
		t0 := time.Now()
		for i, st := range append([]step{{at: 0, granted: true}, {at: 100*ms + c.late, granted: true}}, c.steps...) {
			at := st.at
			if i >= 2 {
				at += 200 * ms
			}
			a := s.Admit(h, polite.Query{Now: t0.Add(at)})
			if a.Granted != st.granted || (!st.granted && a.Reason != st.reason) {
				t.Errorf("%s: Admit at +%v = granted %v (%s, wait %v), want granted %v (%s)", c.name, at, a.Granted, a.Reason, a.Wait, st.granted, st.reason)
			}
		}
	}
}

// evictionGrantsOneBucket: a host is dropped only with its bucket full, so
// however often idle hosts are swept, a window of time grants at most one
// full bucket plus the rate; and a host left alone is dropped.
func evictionGrantsOneBucket(t *testing.T, newStore New) {
	c := defaults()
	c.Limits.Burst = 5
	c.IdleTimeout = time.Second
	s, reg := newStore(t, c)
	t0 := time.Now()
	granted := 0
	const span = 20 * time.Second
	for time.Since(t0) < span {
		h := reg.Get("a.test")
		for s.Admit(h, polite.Query{Now: time.Now()}).Granted {
			granted++
		}
		reg.Put(h)
		// Idle past IdleTimeout, but for less than a refill: a host
		// dropped now would come back with a full bucket.
		time.Sleep(2 * time.Second)
		reg.Sweep()
	}
	if limit := c.Limits.Burst + int(span.Seconds()*c.Limits.Rate) + 1; granted > limit {
		t.Errorf("over %v at 1/s, burst 5, with sweeps, %d admissions; want at most %d", span, granted, limit)
	}
	time.Sleep(10 * time.Second)
	reg.Sweep()
	if n := reg.Len(); n != 0 {
		t.Errorf("after 10 s idle with a full bucket, %d hosts held, want 0", n)
	}
}

// concurrentAdmits: admissions racing for one bucket are granted exactly
// the tokens it holds.
func concurrentAdmits(t *testing.T, newStore New) {
	c := defaults()
	c.Limits.Burst = 8
	s, reg := newStore(t, c)
	h := host(t, reg, "a.test")
	now := time.Now()
	var mu sync.Mutex
	granted := 0
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			if s.Admit(h, polite.Query{Now: now}).Granted {
				mu.Lock()
				granted++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if granted != c.Limits.Burst {
		t.Errorf("64 concurrent Admits on a full bucket of %d granted %d", c.Limits.Burst, granted)
	}
}

// reservationStandsDown: a token reserved before a throttle was heard is
// given back by Keep, and one reserved after it stands.
func reservationStandsDown(t *testing.T, newStore New) {
	c := defaults()
	c.Limits.Rate = 10
	s, reg := newStore(t, c)
	h := host(t, reg, "a.test")
	t0 := time.Now()
	s.Admit(h, polite.Query{Now: t0}) // the one token
	a := s.Admit(h, polite.Query{Now: t0, MaxWait: time.Second})
	if !a.Granted || !a.At.After(t0) {
		t.Fatalf("Admit with MaxWait 1s on an empty bucket = %+v, want a token reserved ahead", a)
	}
	heard := t0.Add(50 * time.Millisecond)
	s.Report(h, throttle(t0, heard, 0))
	if s.Keep(h, a.At, t0, 1) {
		t.Errorf("Keep of a token reserved before a throttle was heard = true, want false")
	}
	after := a.At.Add(time.Millisecond)
	b := s.Admit(h, polite.Query{Now: after, MaxWait: time.Second})
	if !b.Granted {
		t.Fatalf("Admit after the throttle, with MaxWait 1s = %+v, want a token reserved ahead", b)
	}
	if !s.Keep(h, b.At, after, 1) {
		t.Errorf("Keep of a token reserved after the throttle = false, want true")
	}
}

// leasesKeepTheCap: a store that leases in-flight slots (a fleet's) grants
// racing admissions no more slots than the cap, a released slot comes back,
// and so does one whose holder never gave it back (a worker killed
// mid-request) once its lease expires. A store that leases nothing (the
// local one: the Transport's gate is its cap) skips this case.
func leasesKeepTheCap(t *testing.T, newStore New) {
	c := defaults()
	c.Limits.Rate, c.Limits.Burst, c.Limits.Concurrency = 1000, 100, 3
	s, reg := newStore(t, c)
	h := host(t, reg, "a.test")
	now := time.Now()
	first := s.Admit(h, polite.Query{Now: now})
	if !first.Granted {
		t.Fatalf("first Admit refused: %+v", first)
	}
	if first.Lease == 0 {
		s.Release(h, 0)
		t.Skip("the store leases no in-flight slots (its cap is the Transport's gate)")
	}
	var mu sync.Mutex
	leases := []uint64{first.Lease}
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			if a := s.Admit(h, polite.Query{Now: now}); a.Granted {
				mu.Lock()
				leases = append(leases, a.Lease)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(leases) != c.Limits.Concurrency {
		t.Fatalf("65 Admits racing for %d slots granted %d", c.Limits.Concurrency, len(leases))
	}
	if a := s.Admit(h, polite.Query{Now: now}); a.Granted || a.Reason != polite.ReasonSlot {
		t.Errorf("Admit with every slot leased = %+v, want refused (%s)", a, polite.ReasonSlot)
	}
	if st := s.State(h, now); st.InFlight != c.Limits.Concurrency {
		t.Errorf("State.InFlight = %d with every slot leased, want %d", st.InFlight, c.Limits.Concurrency)
	}
	s.Release(h, leases[0])
	if a := s.Admit(h, polite.Query{Now: now}); !a.Granted {
		t.Errorf("Admit after a Release = %+v, want granted", a)
	}
	// Nobody gives the others back: they expire.
	later := now.Add(c.LeaseTTL + time.Millisecond)
	for i := range c.Limits.Concurrency {
		if a := s.Admit(h, polite.Query{Now: later}); !a.Granted {
			t.Errorf("Admit %d after the leases expired = %+v, want granted", i, a)
		}
	}
}

// costTakesItsTokens: a request of cost n takes n tokens (Query.Cost), a
// cancelled reservation gives them back, and a cost above the burst is refused
// with an error, never granted nor waited for.
func costTakesItsTokens(t *testing.T, newStore New) {
	c := defaults()
	c.Limits.Rate, c.Limits.Burst = 10, 5
	s, reg := newStore(t, c)
	h := host(t, reg, "a.test")
	t0 := time.Now()
	if a := s.Admit(h, polite.Query{Now: t0, Cost: 3}); !a.Granted {
		t.Fatalf("Admit of cost 3 from a full bucket of 5 = %+v, want granted", a)
	}
	if a := s.Admit(h, polite.Query{Now: t0, Cost: 3}); a.Granted {
		t.Fatalf("Admit of cost 3 with 2 tokens left = granted, want refused")
	} else if a.Reason != polite.ReasonRate || a.Wait != 100*time.Millisecond {
		t.Errorf("Admit of cost 3 with 2 tokens left: %s, wait %v; want rate, 100ms (the third token)", a.Reason, a.Wait)
	}
	if a := s.Admit(h, polite.Query{Now: t0, Cost: 2}); !a.Granted {
		t.Fatalf("Admit of cost 2 with 2 tokens left = %+v, want granted", a)
	}
	// The bucket is empty: cost 2 is reserved 200 ms ahead; cancelled,
	// the next reservation of 2 comes as soon, not 200 ms later.
	r := s.Admit(h, polite.Query{Now: t0, Cost: 2, MaxWait: time.Second})
	if !r.Granted || !r.At.Equal(t0.Add(200*time.Millisecond)) {
		t.Fatalf("Admit of cost 2 on an empty bucket, MaxWait 1s = %+v, want a reservation 200ms ahead", r)
	}
	s.Cancel(h, t0, 2)
	if a := s.Admit(h, polite.Query{Now: t0, Cost: 2, MaxWait: time.Second}); !a.Granted || !a.At.Equal(r.At) {
		t.Errorf("Admit of cost 2 after a reservation of 2 was cancelled = %+v, want one at %v again", a, r.At.Sub(t0))
	}
	if a := s.Admit(h, polite.Query{Now: t0.Add(time.Hour), Cost: 6}); a.Granted || a.Err == nil {
		t.Errorf("Admit of cost 6 over a burst of 5 = %+v, want refused with an error", a)
	}
}

// retryBudgetInState: State says what the host's retry budget allows (the
// default budget: a floor of 1 retry a second up to 10), less a retry it
// granted, and refilled as time passes.
func retryBudgetInState(t *testing.T, newStore New) {
	s, reg := newStore(t, defaults())
	h := host(t, reg, "a.test")
	t0 := time.Now()
	if b := s.State(h, t0).RetryBudget; b != 10 {
		t.Errorf("a new host's retry budget = %v, want 10 (the full floor)", b)
	}
	s.Admit(h, polite.Query{Now: t0})
	r := throttle(t0, t0, -1)
	r.Retry = true
	if v := s.Report(h, r); !v.Retry {
		t.Fatal("a retry was refused by a full budget")
	}
	// 10 less the retry, plus what the first request earned (0.2) if the
	// store has counted it yet.
	if b := s.State(h, t0).RetryBudget; b < 9-1e-9 || b > 9.2+1e-9 {
		t.Errorf("retry budget after one retry = %v, want 9 (or 9.2 with the request's share)", b)
	}
	if b := s.State(h, t0.Add(time.Second)).RetryBudget; b < 10-1e-9 || b > 10.2+1e-9 {
		t.Errorf("retry budget a second later = %v, want the floor back at 10 (and the share, decaying)", b)
	}
}

// demandNoteTakesNothing: a note of demand (polite.DemandNoter, for stores
// that implement it) takes no token, and the admission it precedes is not
// Spare: a request just held back for the rate is demand on it.
func demandNoteTakesNothing(t *testing.T, newStore New) {
	s, reg := newStore(t, defaults())
	d, ok := s.(polite.DemandNoter)
	if !ok {
		t.Skip("the store is not a polite.DemandNoter")
	}
	h := host(t, reg, "demand.test")
	now := time.Now()
	d.NoteDemand(h, now)
	if st := s.State(h, now); st.Tokens != 1 {
		t.Errorf("State(h).Tokens after NoteDemand = %v, want 1 (a note takes nothing)", st.Tokens)
	}
	a := s.Admit(h, polite.Query{Now: now, First: true})
	if !a.Granted {
		t.Fatalf("Admit after NoteDemand = %+v, want granted", a)
	}
	if a.Spare {
		t.Error("Admit right after NoteDemand is Spare, want not: demand pressed on the rate")
	}
}

// gateOrder: a host held at every gate at once (its token spent, its
// breaker open, paused by a Retry-After, blocked) is refused at each in
// the order polite.HostState.Gate gives (block, pause, breaker, token),
// and the State the store reports says the same gate at each step: what
// Transport.Ready tells a scheduler is what Admit would do (issue 34: the
// order was written three times, in Ready, the local store and the Redis
// script, and checked nowhere).
func gateOrder(t *testing.T, newStore New) {
	c := defaults()
	c.BreakerOpen = time.Minute
	// One token per 100 s: spent at the start, it is still missing at
	// every step up to +100 s, so a store that checked the token before
	// the pause or the breaker would name the token there.
	c.Limits.Rate = 0.01
	s, reg := newStore(t, c)
	h := host(t, reg, "a.test")
	t0 := time.Now()
	if a := s.Admit(h, polite.Query{Now: t0}); !a.Granted {
		t.Fatalf("first Admit refused: %+v", a)
	}
	for i := range c.BreakerThreshold {
		sent := t0.Add(time.Duration(i+1) * time.Second)
		s.Report(h, polite.Report{Now: sent.Add(time.Millisecond), Sent: sent, Outcome: polite.ServerError, Status: 500, Attempt: 1})
	}
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	s.Report(h, throttle(at(4*time.Second), at(4*time.Second+time.Millisecond), 30)) // paused until +34 s
	s.Report(h, polite.Report{Now: at(5 * time.Second), Sent: at(5 * time.Second), Outcome: polite.Blocked, Block: "captcha", Status: 403, Attempt: 1})
	check := func(d time.Duration, want polite.Reason) {
		t.Helper()
		now := at(d)
		_, gate := s.State(h, now).Gate(now)
		a := s.Admit(h, polite.Query{Now: now})
		got := a.Reason
		switch {
		case a.Granted:
			got = ""
		case errors.Is(a.Err, polite.ErrBlocked):
			got = polite.ReasonBlock
		}
		if got != want || gate != want {
			t.Errorf("at +%v: Admit = %+v (%q), State's gate %q; want both %q", d, a, got, gate, want)
		}
	}
	check(6*time.Second, polite.ReasonBlock)
	if u, can := s.(polite.Unblocker); !can || !u.Unblock(h) {
		return // the mark stays: nothing past it to see
	}
	check(10*time.Second, polite.ReasonRetryAfter)
	check(40*time.Second, polite.ReasonBreaker)
	// The breaker would let a probe through from +63 s, but the token is
	// not there yet (100 s after the start, or after the throttle drained
	// the bucket); the probe goes when it is, and once it is answered ok
	// the token is the last gate.
	check(70*time.Second, polite.ReasonRate)
	next := s.State(h, at(70*time.Second)).NextToken.Sub(t0)
	if next <= 70*time.Second || next > 200*time.Second {
		t.Fatalf("State.NextToken at +70s: +%v, want within +70s..+200s", next)
	}
	check(next, "")
	s.Report(h, ok(at(next), at(next+100*time.Millisecond)))
	check(next+time.Second, polite.ReasonRate)
}
