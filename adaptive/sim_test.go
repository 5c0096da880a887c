package adaptive

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"
)

// simHost is a host with a hidden capacity for driving a Controller without
// goroutines: a token bucket of rate and burst, whose capacity may step at
// a moment (or a pool of servers without a queue), answering what it admits
// after lat and throttling the rest at once.
type simHost struct {
	rate, burst float64
	servers     int // with servers > 0, no bucket: at most this many in flight, the rest refused
	lat         time.Duration
	stepAt      time.Duration // when rate becomes stepRate; 0: never
	stepRate    float64

	tokens float64
	last   time.Duration
}

func (h *simHost) admit(at time.Duration, inFlight int) bool {
	if h.servers > 0 {
		return inFlight < h.servers
	}
	if h.stepAt > 0 && at >= h.stepAt && h.last < h.stepAt {
		h.tokens += (h.stepAt - h.last).Seconds() * h.rate
		h.tokens = min(h.tokens, h.burst)
		h.last = h.stepAt
		h.rate = h.stepRate
		h.burst = max(h.stepRate/2, 1)
	}
	h.tokens = min(h.tokens+(at-h.last).Seconds()*h.rate, h.burst)
	h.last = at
	if h.tokens >= 1 {
		h.tokens--
		return true
	}
	return false
}

// simRater is what the simulations drive: a Controller, or one that
// records the calls it hears (see recorder in snapshot_test.go).
type simRater interface {
	Observe(now time.Time, s Signal) float64
	Rate() float64
	Concurrency() int
}

type simResult struct {
	sent, admitted, throttled int
	perSec                    []int // requests sent per second
	thrPerSec                 []int // requests throttled per second
}

// simulate sends requests evenly at the controller's rate for d (the
// client always has work) and feeds the answers back in time order.
func simulate(c simRater, h *simHost, d time.Duration) simResult {
	h.tokens = h.burst
	var res simResult
	res.perSec = make([]int, int(d/time.Second)+1)
	res.thrPerSec = make([]int, len(res.perSec))
	var pending []time.Duration // OK answers due, in order (constant latency)
	next := time.Duration(0)
	for next < d {
		if len(pending) > 0 && pending[0] <= next {
			c.Observe(t0.Add(pending[0]), ok(h.lat))
			pending = pending[1:]
			continue
		}
		res.sent++
		res.perSec[next/time.Second]++
		r := c.Rate()
		if h.admit(next, len(pending)) {
			res.admitted++
			pending = append(pending, next+h.lat)
		} else {
			res.throttled++
			res.thrPerSec[next/time.Second]++
			r = c.Observe(t0.Add(next), throttle(0))
		}
		next += time.Duration(float64(time.Second) / r)
	}
	return res
}

func TestSimSteadyCapacity(t *testing.T) {
	for _, tc := range []struct {
		rate               float64
		lat                time.Duration
		minGoodput, maxThr float64
	}{
		// At 5 req/s a few throttles are a large share: each probe for
		// more capacity costs one.
		{5, 100 * ms, 0.85, 0.03},
		{20, 50 * ms, 0.9, 0.02},
		{50, 20 * ms, 0.9, 0.02},
		{100, 50 * ms, 0.9, 0.02},
	} {
		h := &simHost{rate: tc.rate, burst: max(tc.rate/2, 1), lat: tc.lat}
		c := New(Config{}, t0)
		res := simulate(c, h, 60*time.Second)
		goodput := float64(res.admitted) / (tc.rate * 60)
		share := float64(res.throttled) / float64(res.sent)
		t.Logf("%g req/s: goodput %.1f%%, throttled %.2f%% of %d", tc.rate, 100*goodput, 100*share, res.sent)
		if goodput < tc.minGoodput || share > tc.maxThr {
			t.Errorf("%g req/s over 60 s: goodput %.1f%%, throttled %.2f%%; want ≥ %.0f%% and ≤ %.0f%%",
				tc.rate, 100*goodput, 100*share, 100*tc.minGoodput, 100*tc.maxThr)
		}
		if cap, measured := c.Capacity(); !measured || cap < 0.9*tc.rate || cap > 1.05*tc.rate {
			t.Errorf("%g req/s: Capacity() = %.2f, %v", tc.rate, cap, measured)
		}
	}
}

func TestSimCapacitySteps(t *testing.T) {
	for _, tc := range []struct{ from, to float64 }{{50, 10}, {10, 50}} {
		h := &simHost{rate: tc.from, burst: tc.from / 2, lat: 50 * ms, stepAt: 15 * time.Second, stepRate: tc.to}
		c := New(Config{}, t0)
		res := simulate(c, h, 45*time.Second)
		// Seconds after the step until three in a row are within 10 %.
		settle, run := -1, 0
		for s := 15; s < 45; s++ {
			if n := float64(res.perSec[s]); n >= 0.9*tc.to && n <= 1.1*tc.to {
				if run++; run == 3 {
					settle = s - 2 - 15
					break
				}
			} else {
				run = 0
			}
		}
		t.Logf("%g → %g req/s: within 10%% after %d s; sent per second %v; throttled %v", tc.from, tc.to, settle, res.perSec[13:30], res.thrPerSec[13:30])
		if settle < 0 || settle > 12 {
			t.Errorf("%g → %g req/s: settled after %d s, want within 12 s", tc.from, tc.to, settle)
		}
		// A drop costs one wave of throttles and a cut or two, not a
		// second of sending at twice the new capacity.
		if thr := res.thrPerSec[15] + res.thrPerSec[16] + res.thrPerSec[17]; tc.to < tc.from && thr > 8 {
			t.Errorf("%g → %g req/s: %d throttled in the 3 s after the drop, want at most 8", tc.from, tc.to, thr)
		}
	}
}

// After a fall the budget for throttles, 2 % of the requests, holds over the
// time that follows it, the fall's own throttles included: a blind cut
// that a request sent at the new pace still met is cut again at once, and
// the probes after the fall wait until its throttles are paid for. Live,
// 40 -> 10 req/s (testbed, 20 ms), before both: 3.2 % of the 15 s after the
// step (issue 16).
func TestSimFallWithinBudget(t *testing.T) {
	for _, lat := range []time.Duration{20 * ms, 50 * ms} {
		h := &simHost{rate: 40, burst: 20, lat: lat, stepAt: 15 * time.Second, stepRate: 10}
		c := New(Config{}, t0)
		res := simulate(c, h, 33*time.Second)
		var sent, thr int
		for s := 15; s < 33; s++ {
			sent += res.perSec[s]
			thr += res.thrPerSec[s]
		}
		t.Logf("%v: %d of %d throttled after the step; sent per second %v; throttled %v", lat, thr, sent, res.perSec[14:33], res.thrPerSec[14:33])
		if share := float64(thr) / float64(sent); share > 0.02 {
			t.Errorf("latency %v, 40 -> 10 req/s: %d of %d requests in the 18 s after the step throttled (%.1f%%), want ≤ 2%%", lat, thr, sent, 100*share)
		}
		if cap, _ := c.Capacity(); cap < 9 || cap > 10.5 {
			t.Errorf("latency %v: capacity %.2f at the end, want 10 within 10%%", lat, cap)
		}
	}
}

// Issue 34's bucket-load: a token bucket of 20 req/s and burst 5, 10 ms
// away, fetched from 5 req/s for 75 s, and its capacity scaled 0.86 to
// 1.14 as TestTune's variants scale it. Settled, a probe every
// MaxProbeInterval costs about 0.7 % of the requests; the start must not
// push a run past 1 %. A probe from a lower bound that ran on the host's
// savings and was bisected toward the rate they carried it to cost two
// throttles more and a probe to measure again: 1.13 % at 18 req/s.
func TestSimBucketLoad(t *testing.T) {
	for _, f := range []float64{0.86, 0.9, 0.92, 0.95, 0.97, 1, 1.03, 1.06, 1.1, 1.14} {
		h := &simHost{rate: 20 * f, burst: math.Floor(5 * f), lat: 10 * ms}
		c := New(Config{Initial: 5}, t0)
		res := simulate(c, h, 75*time.Second)
		share := float64(res.throttled) / float64(res.sent)
		t.Logf("%.1f req/s: %d of %d throttled (%.2f%%); throttled per second %v", h.rate, res.throttled, res.sent, 100*share, res.thrPerSec[:15])
		if share > 0.01 {
			t.Errorf("%.1f req/s, burst %g: %d of %d requests throttled (%.2f%%), want ≤ 1%%", h.rate, h.burst, res.throttled, res.sent, 100*share)
		}
	}
}

// A host of 5 servers without a queue (50 req/s at 100 ms) refuses the
// moment a sixth request arrives: it keeps no savings, so a probe meets its
// capacity at once, and the rate that met it bounds the capacity from above.
// The controller narrows it down from both sides instead of sitting at the
// rate it happened to be served at before its first probe.
func TestSimNoBurstHost(t *testing.T) {
	h := &simHost{servers: 5, lat: 100 * ms}
	c := New(Config{}, t0)
	res := simulate(c, h, 60*time.Second)
	last := 0
	for _, n := range res.perSec[40:60] {
		last += n
	}
	share := float64(res.throttled) / float64(res.sent)
	t.Logf("sent %d, refused %.2f%%; per second %v", res.sent, 100*share, res.perSec)
	if perSec := float64(last) / 20; perSec < 45 || perSec > 50 {
		t.Errorf("sends %.1f req/s over the last 20 s, want 45-50 (capacity 50)", perSec)
	}
	if share > 0.01 {
		t.Errorf("refused %.2f%%, want ≤ 1%%", 100*share)
	}
	if !c.noBurst {
		t.Error("the host was not found to keep no savings")
	}
}

// queueHost is a host without a bucket: servers that each take svc (±10 %,
// deterministic noise) per request, and a FIFO queue in front of them. It
// never refuses; its latency is the only signal of overload.
type queueHost struct {
	free []time.Duration // when each server is next free
	svc  time.Duration
	x    uint64
}

// serve returns when a request that arrives at is answered.
func (h *queueHost) serve(at time.Duration) time.Duration {
	k := 0
	for i, f := range h.free {
		if f < h.free[k] {
			k = i
		}
	}
	h.x = h.x*6364136223846793005 + 1442695040888963407
	d := h.svc + time.Duration(int64(h.x>>33)%int64(h.svc/5)) - h.svc/10
	done := max(at, h.free[k]) + d
	h.free[k] = done
	return done
}

// server is a host that never refuses: serve returns when a request that
// arrives at is answered.
type server interface {
	serve(at time.Duration) time.Duration
}

// waitHost is a host that never refuses, whose queue forms at a rate of its
// own: each request waits for a token of a bucket of rate (burst 1), as
// nginx's limit_req delays, then takes svc. A request that waits, waits
// 1/rate for each one ahead of it, however short svc is.
type waitHost struct {
	rate float64
	svc  time.Duration
	next time.Duration // when the next token is free
}

func (h *waitHost) serve(at time.Duration) time.Duration {
	start := max(at, h.next)
	h.next = start + time.Duration(float64(time.Second)/h.rate)
	return start + h.svc
}

type queueResult struct {
	peakRate float64 // highest rate the controller set
	perSec   []int   // requests sent per second
	lat      [][]time.Duration
}

// over returns the rate requests were sent at from second from to second
// to, and the p95 latency of their answers.
func (res queueResult) over(from, to int) (rate float64, p95 time.Duration) {
	var lats []time.Duration
	sent := 0
	for s := from; s < to; s++ {
		sent += res.perSec[s]
		lats = append(lats, res.lat[s]...)
	}
	slices.Sort(lats)
	return float64(sent) / float64(to-from), lats[len(lats)*95/100]
}

// simulateQueue sends requests evenly at the controller's rate, at most
// its Concurrency in flight (as polite.Transport does), for d, and feeds the
// answers back in time order.
func simulateQueue(c simRater, h server, d time.Duration) queueResult {
	type answer struct{ at, lat time.Duration }
	var res queueResult
	res.perSec = make([]int, int(d/time.Second)+1)
	res.lat = make([][]time.Duration, len(res.perSec))
	var pending []answer // in order of at
	next := time.Duration(0)
	for next < d {
		if len(pending) > 0 && (pending[0].at <= next || len(pending) >= c.Concurrency()) {
			next = max(next, pending[0].at)
			a := pending[0]
			pending = pending[1:]
			res.peakRate = max(res.peakRate, c.Observe(t0.Add(a.at), ok(a.lat)))
			continue
		}
		res.perSec[next/time.Second]++
		done := h.serve(next)
		res.lat[next/time.Second] = append(res.lat[next/time.Second], done-next)
		i := len(pending)
		for i > 0 && pending[i-1].at > done {
			i--
		}
		pending = append(pending, answer{})
		copy(pending[i+1:], pending[i:])
		pending[i] = answer{at: done, lat: done - next}
		next += time.Duration(float64(time.Second) / c.Rate())
	}
	return res
}

func TestSimLatencyKnee(t *testing.T) {
	// 4 servers × 100 ms: 40 req/s, and a queue beyond. The knee is found
	// from latency alone, and found early: the queue a cold start leaves
	// stays under 3 × the unloaded latency. Then the rate settles within
	// 3 % of the capacity, the capacity is learned as the rate the host
	// served with a queue in front of it, and the latency stays near its
	// unloaded level.
	h := &queueHost{free: make([]time.Duration, 4), svc: 100 * ms, x: 1}
	c := New(Config{}, t0)
	res := simulateQueue(c, h, 60*time.Second)
	var early time.Duration
	for s := range 15 {
		for _, l := range res.lat[s] {
			early = max(early, l)
		}
	}
	rate, p95 := res.over(30, 60)
	capacity, measured := c.Capacity()
	t.Logf("cold start: worst latency %v; 30-60 s: %.1f req/s, p95 %v; Capacity() = %.2f, %v", early, rate, p95, capacity, measured)
	if early >= 300*ms {
		t.Errorf("cold start: worst latency %v, want under 300 ms (3 × unloaded)", early)
	}
	// 3.5 %: probes take the newest half second's count as a lower bound
	// of the capacity (issue 16: 6 points of goodput live on a real
	// queue); here the bursts of four answers at a time make it read a
	// little high, and failed probes come a little more often: 38.7 req/s
	// where 39.3 were.
	if rate < 0.965*40 || rate > 40 {
		t.Errorf("30-60 s: %.1f req/s, want within 3.5 %% under 40", rate)
	}
	// 155 ms: probes now read the knee from their first answers past it
	// (issue 16), and what they were served raises the capacity: 39.3
	// req/s at a p95 of 150.6 ms, where 39.2 req/s had 142 ms.
	if p95 > 155*ms {
		t.Errorf("30-60 s: p95 latency %v, want at most 155 ms (1.55 × unloaded)", p95)
	}
	if !measured || capacity < 38 || capacity > 42 {
		t.Errorf("Capacity() = %.2f, %v; want 40 ± 2, measured", capacity, measured)
	}
}

// Issue 34: a host whose queue forms at 15 req/s, each request waiting for
// a token (1/15 s for each ahead of it) and then served in 10 ms, with the
// in-flight cap of polite.Transport. One request waiting costs 6.7 × the
// unloaded latency; the p95 stays within 3 × it (cold start, probes and
// all) at 80 % of the knee or more.
func TestSimSteepKnee(t *testing.T) {
	h := &waitHost{rate: 15, svc: 10 * ms}
	c := New(Config{Initial: 5}, t0)
	res := simulateQueue(c, h, 30*time.Second)
	rate, p95 := res.over(0, 30)
	t.Logf("0-30 s: %.1f req/s, p95 %v; %d decreases", rate, p95, c.decreases)
	if p95 > 30*ms {
		t.Errorf("p95 %v, want at most 30 ms (3 × unloaded)", p95)
	}
	if rate < 0.8*15 {
		t.Errorf("%.1f req/s, want at least 80 %% of 15", rate)
	}
}

// simClient is a client as polite.Transport is to one host: it paces its
// requests at the controller's rate (a client bucket of burst 1), keeps at
// most conc of them in flight (and no more than the controller's
// Concurrency), pauses the host for a throttle's Retry-After, and, with
// idle > 0, runs out of work for idle after every busy spell of sending.
type simClient struct {
	conc       int
	retryAfter string // "": none; "seconds": whole seconds, at least 1; "date": an HTTP-date, whole seconds
	busy, idle time.Duration
}

// simAnswer is an answer due at at, to a request sent at at-lat.
type simAnswer struct {
	at, lat, wait time.Duration
	kind          Kind
	spare         bool
}

// simulateClient runs cl against h for d, feeding the controller every
// answer in time order, and calls check after each.
func simulateClient(c *Controller, h *simHost, cl simClient, d time.Duration, check func(at time.Duration)) simResult {
	h.tokens = h.burst
	var res simResult
	res.perSec = make([]int, int(d/time.Second)+1)
	res.thrPerSec = make([]int, len(res.perSec))
	var pending []simAnswer // in order of at
	now, last, pauseEnd := time.Duration(0), time.Duration(math.MinInt64/2), time.Duration(0)
	for {
		send := max(last+time.Duration(float64(time.Second)/c.Rate()), now)
		held := send > now // the rate held it back
		if send < pauseEnd {
			send, held = pauseEnd, false
		}
		if cl.idle > 0 {
			if p := send % (cl.busy + cl.idle); p >= cl.busy {
				send, held = send-p+cl.busy+cl.idle, false // no work until the next busy spell
			}
		}
		conc := min(cl.conc, c.Concurrency())
		if len(pending) > 0 && (pending[0].at <= send || len(pending) >= conc) {
			a := pending[0]
			pending = pending[1:]
			now = max(now, a.at)
			c.Observe(t0.Add(a.at), Signal{Kind: a.kind, Latency: a.lat, Wait: a.wait, Spare: a.spare})
			if a.wait > 0 {
				pauseEnd = max(pauseEnd, a.at+a.wait)
			}
			check(a.at)
			continue
		}
		if send >= d {
			return res
		}
		now, last = send, send
		res.sent++
		res.perSec[send/time.Second]++
		a := simAnswer{at: send + h.lat, lat: h.lat, kind: OK, spare: !held && len(pending)+1 < conc}
		if !h.admit(send, len(pending)) {
			res.throttled++
			res.thrPerSec[send/time.Second]++
			a = simAnswer{at: send, kind: Throttle}
			// When the next token comes, as the testbed says it.
			next := time.Duration((1 - h.tokens) / h.rate * float64(time.Second))
			switch cl.retryAfter {
			case "seconds":
				a.wait = max((next + time.Second - 1).Truncate(time.Second), time.Second)
			case "date":
				a.wait = (send + next + time.Second - 1).Truncate(time.Second) - send
			}
		} else {
			res.admitted++
		}
		i := len(pending)
		for i > 0 && pending[i-1].at > a.at {
			i--
		}
		pending = slices.Insert(pending, i, a)
	}
}

// A host's bucket refilled during a pause or an idle spell of the client's
// is its burst, not its capacity: what the host serves right after one
// measures nothing. The capacity a Controller reports, measured or a lower
// bound, never claims more than the host bears beyond the error it states
// itself, at any moment; and with work to do, the client ends near the
// truth. (Issue 33: busy.test, 5 req/s with a burst of 5, 503s with a
// Retry-After date, read a measured capacity of 7.0-8.4 in polite demo;
// here such a host, paused a second per throttle, read 8.08 as a lower
// bound after its first pause, then as measured.)
func TestSimCapacityHonest(t *testing.T) {
	hosts := []struct {
		name        string
		rate, burst float64
		lat         time.Duration
		// near: the least share of the rate the estimate ends at, when the
		// client never runs out of work; 0, not checked. Pauses and idle
		// spells that outlast the burst bias the estimate low (the bucket
		// overflows, and brackets only bound the capacity from below), and
		// a host of burst 1 is never measured at all: a low estimate costs
		// some rate, a high one throttles.
		near float64
	}{
		{"5/s burst 5", 5, 5, 50 * ms, 0.8},
		{"5/s burst 5 100ms", 5, 5, 100 * ms, 0.8},
		{"5/s burst 2 100ms", 5, 2, 100 * ms, 0.75},
		{"5/s burst 1 10ms", 5, 1, 10 * ms, 0},
		{"10/s burst 5", 10, 5, 30 * ms, 0.8},
		{"20/s burst 20", 20, 20, 20 * ms, 0},
	}
	var clients []simClient
	for _, ra := range []string{"", "seconds", "date"} {
		for _, conc := range []int{1, 2, 4, 8} {
			clients = append(clients, simClient{conc: conc, retryAfter: ra})
			clients = append(clients, simClient{conc: conc, retryAfter: ra, busy: 4 * time.Second, idle: 3 * time.Second})
		}
	}
	for _, hc := range hosts {
		for _, cl := range clients {
			name := fmt.Sprintf("%s/conc=%d/retry-after=%q/idle=%v", hc.name, cl.conc, cl.retryAfter, cl.idle)
			t.Run(name, func(t *testing.T) {
				h := &simHost{rate: hc.rate, burst: hc.burst, lat: hc.lat}
				c := New(Config{}, t0)
				var over struct {
					by, est, err float64
					measured     bool
					at           time.Duration
				}
				res := simulateClient(c, h, cl, 60*time.Second, func(at time.Duration) {
					est, measured := c.Capacity()
					err := c.CapacityError() // 0 for a lower bound
					if by := est - err - hc.rate; est > 0 && by > over.by {
						over.by, over.est, over.err, over.measured, over.at = by, est, err, measured, at
					}
				})
				est, measured := c.Capacity()
				err := c.CapacityError()
				t.Logf("Capacity() = %.2f ± %.2f, %v; sent %d, throttled %d", est, err, measured, res.sent, res.throttled)
				if over.by > 1e-9 {
					t.Errorf("at %v: Capacity() = %.2f ± %.2f, %v: over the host's %g req/s", over.at, over.est, over.err, over.measured, hc.rate)
				}
				if hc.near > 0 && cl.idle == 0 && (est < hc.near*hc.rate || est-err > hc.rate) {
					t.Errorf("after 60 s: Capacity() = %.2f ± %.2f, %v; want %g, at least %g of it", est, err, measured, hc.rate, hc.near)
				}
			})
		}
	}
}
