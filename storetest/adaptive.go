package storetest

import (
	"math"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/adaptive"
)

// One controller: whatever keeps a host's state, its adaptive rate is
// polite's controller (package adaptive) hearing the host's answers. These
// cases drive a store with the answers of simulated hosts and check, after
// every answer, that the rate in force, the in-flight cap and the capacity
// estimate are what a bare adaptive.Controller fed the same answers says:
// the local store and a fleet's store, with one worker or several, run
// one algorithm.

// NewFleet makes the stores under test for one adaptive case: workers
// stores (1 for a store that is not shared) of one fleet, each with its
// own Registry, whose hosts get c.Limits and whose adaptive rate is
// polite's controller with c.Adaptive (polite.HostAdaptive of it), born at
// c.Origin, the instant of the host's first admission. Stores that keep
// time of their own must follow the caller's.
type NewFleet func(t *testing.T, c Config, workers int) []Worker

// Worker is one store of a fleet and the Registry of its Transport.
type Worker struct {
	Store    polite.Store
	Registry *polite.Registry
}

// RunAdaptive runs the controller cases against stores made by newFleet,
// with the answers spread over workers stores in turn. With more than one
// worker, the last joins late: it hears its first answer after lateJoin
// answers (when a store that keeps a log of them has had to trim it).
func RunAdaptive(t *testing.T, newFleet NewFleet, workers int) {
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) { runScenario(t, newFleet, workers, sc) })
	}
}

// A scenario is a simulated host the reference controller's client sends
// to for 40 s: a token bucket (rate, burst; 0: none) that answers 429 when
// empty, behind a server whose answers queue at capacity (0: none) after
// a base latency; the bucket's rate may step, and a RateLimit ceiling may
// come and go.
type scenario struct {
	name      string
	rate      float64 // the host's bucket (0: no bucket)
	burst     float64
	stepAt    time.Duration // when the bucket's rate steps to stepRate (0: never)
	stepRate  float64
	serve     float64       // requests a second the server serves (0: no queue)
	base      time.Duration // unloaded latency
	after     int           // a throttle's Retry-After, seconds (0: none)
	ceilingAt time.Duration // a RateLimit ceiling of ceiling from ceilingAt to ceilingEnd
	ceiling   float64
	ceilEnd   time.Duration
}

func scenarios() []scenario {
	return []scenario{
		{name: "Bucket", rate: 20, burst: 5, base: 10 * time.Millisecond},
		{name: "StepDown", rate: 40, burst: 5, stepAt: 10 * time.Second, stepRate: 10, base: 5 * time.Millisecond},
		{name: "StepUp", rate: 10, burst: 5, stepAt: 8 * time.Second, stepRate: 40, base: 5 * time.Millisecond},
		{name: "QueueKnee", serve: 15, base: 10 * time.Millisecond},
		{name: "SlowKnee", serve: 6, base: 120 * time.Millisecond},
		{name: "RetryAfter", rate: 10, burst: 2, after: 1, base: 20 * time.Millisecond},
		{name: "Ceiling", rate: 30, burst: 5, base: 10 * time.Millisecond,
			ceilingAt: 5 * time.Second, ceiling: 8, ceilEnd: 12 * time.Second},
	}
}

// lateJoin is when the last of several workers hears its first answer.
const lateJoin = 700

// event is one thing the store hears: an answer, or a change of ceiling.
type event struct {
	at      time.Time
	ceiling float64 // >= 0 with report false: SetCeiling (0 clears)
	report  bool
	rep     polite.Report
	sig     adaptive.Signal // what the controller hears of rep
}

// simulate runs the scenario's host against a client that sends at the
// rate, and within the in-flight cap, the controller ref says, and returns
// what the store would hear, in order.
func (sc scenario) simulate(ref *adaptive.Controller, origin time.Time) []event {
	const span = 40 * time.Second
	type answer struct {
		sent, at time.Time
		status   int
	}
	var (
		evs      []event
		pending  []answer // in answer order: latencies never reorder them here
		next     = origin
		tokens   = sc.burst
		filled   = origin
		done     = origin // when the server's queue is next free
		ceiling  float64
		ceilSent bool
	)
	hear := func(a answer) {
		rep := polite.Report{Now: a.at, Sent: a.sent, Status: a.status, Latency: a.at.Sub(a.sent), Attempt: 1}
		sig := adaptive.Signal{Kind: adaptive.OK, Latency: rep.Latency}
		rep.Outcome = polite.OK
		if a.status == http.StatusTooManyRequests {
			rep.Outcome, sig.Kind = polite.Throttled, adaptive.Throttle
			rep.Header = http.Header{}
			if sc.after > 0 {
				rep.Header.Set("Retry-After", strconv.Itoa(sc.after))
				sig.Wait = time.Duration(sc.after) * time.Second
			}
		}
		ref.Observe(a.at, sig)
		evs = append(evs, event{at: a.at, report: true, rep: rep, sig: sig})
	}
	for next.Sub(origin) < span {
		// The ceiling comes and goes between answers, as a RateLimit
		// header's would.
		if sc.ceiling > 0 {
			el := next.Sub(origin)
			want := 0.0
			if el >= sc.ceilingAt && el < sc.ceilEnd {
				want = sc.ceiling
			}
			if want != ceiling || !ceilSent && want > 0 {
				ceiling, ceilSent = want, true
				ref.SetMax(want)
				evs = append(evs, event{at: next, ceiling: want})
			}
		}
		full := len(pending) >= ref.Concurrency()
		if len(pending) > 0 && (full || !pending[0].at.After(next)) {
			a := pending[0]
			pending = pending[1:]
			hear(a)
			if full && next.Before(a.at) {
				next = a.at
			}
			continue
		}
		sent := next
		el := sent.Sub(origin)
		status := http.StatusOK
		if sc.rate > 0 {
			rate := sc.rate
			if sc.stepAt > 0 && el >= sc.stepAt {
				rate = sc.stepRate
			}
			tokens = math.Min(sc.burst, tokens+sent.Sub(filled).Seconds()*rate)
			filled = sent
			if tokens >= 1 {
				tokens--
			} else {
				status = http.StatusTooManyRequests
			}
		}
		at := sent.Add(sc.base)
		if sc.serve > 0 && status == http.StatusOK {
			start := sent
			if done.After(start) {
				start = done
			}
			done = start.Add(time.Duration(float64(time.Second) / sc.serve))
			at = done.Add(sc.base)
		}
		// Instants in whole µs: a fleet's store stamps its log in µs.
		pending = append(pending, answer{sent: sent.Truncate(time.Microsecond), at: at.Truncate(time.Microsecond), status: status})
		next = sent.Add(time.Duration(float64(time.Second) / ref.Rate()))
	}
	for _, a := range pending {
		hear(a)
	}
	return evs
}

func runScenario(t *testing.T, newFleet NewFleet, workers int, sc scenario) {
	cfg := adaptive.Config{Max: 200}
	limits := polite.Limits{Rate: 5, Burst: 5, Concurrency: 8}
	origin := time.UnixMicro(time.Now().Add(time.Hour).UnixMicro()) // a µs instant, no monotonic reading
	hc := polite.HostAdaptive(cfg, limits)
	evs := sc.simulate(adaptive.New(hc, origin), origin)

	fleet := newFleet(t, Config{Limits: limits, BreakerThreshold: 1 << 20, BreakerOpen: time.Second,
		LeaseTTL: time.Minute, Adaptive: &cfg, Origin: origin}, workers)
	hosts := make([]*polite.Host, len(fleet))
	for i, w := range fleet {
		hosts[i] = host(t, w.Registry, "a.test")
	}
	// The client asks for the host first: its controller is born then.
	fleet[0].Store.Admit(hosts[0], polite.Query{Now: origin})
	// The reference: a bare controller hearing the same, and the rate in
	// force the local store's rules make of it (changes under 2 % are
	// skipped; a ceiling cuts at once).
	ref := adaptive.New(hc, origin)
	inForce, ceiling := hc.Initial, math.Inf(1)
	throttles := 0
	for i, ev := range evs {
		w := i % len(fleet)
		if len(fleet) > 1 && i < lateJoin {
			w = i % (len(fleet) - 1)
		}
		s, h := fleet[w].Store, hosts[w]
		if !ev.report {
			ref.SetMax(ev.ceiling)
			ceiling = math.Inf(1)
			if ev.ceiling > 0 {
				ceiling = ev.ceiling
			}
			inForce = min(inForce, ceiling)
			s.SetCeiling(h, ev.at, polite.ReasonRateLimit, ev.ceiling)
			continue
		}
		if ev.rep.Outcome == polite.Throttled {
			throttles++
		}
		rate := min(ref.Observe(ev.at, ev.sig), ceiling)
		if !(rate > inForce*0.98 && rate < inForce*1.02) {
			inForce = rate
		}
		s.Report(h, ev.rep)
		st := s.State(h, ev.at)
		capacity, measured := ref.Capacity()
		conc := min(ref.Concurrency(), limits.Concurrency)
		if !near(st.Rate, inForce) || st.Capacity != capacity || st.Measured != measured || st.Concurrency != conc {
			t.Fatalf("answer %d of %d (+%v, %v, worker %d): store rate %v, capacity %v (measured %v), cap %d; "+
				"the controller says %v, %v (%v), %d (phase %s)", i, len(evs), ev.at.Sub(origin), ev.rep.Outcome, w,
				st.Rate, st.Capacity, st.Measured, st.Concurrency, inForce, capacity, measured, conc, ref.Phase())
		}
	}
	t.Logf("%d answers (%d throttled), the rate ends at %.2f, capacity %.2f", len(evs), throttles, inForce, func() float64 {
		c, _ := ref.Capacity()
		return c
	}())
}

// near reports whether two rates agree to a part in a billion (a rate
// written to Redis and read back as text keeps 17 digits).
func near(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}
