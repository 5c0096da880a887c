package testbed

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Stats is a host's server-side truth since it started: what it received and
// how it answered. Every arrival ends as exactly one of Admitted, Rejected,
// Shed, Blocked or TimedOut, or is still InFlight:
//
//	Arrivals == Admitted + Rejected + Shed + Blocked + TimedOut + InFlight
type Stats struct {
	// Elapsed is the time since the host started.
	Elapsed time.Duration
	// Arrivals counts every request received, /robots.txt included.
	Arrivals int64
	// Admitted counts requests that passed every check and were answered by
	// the page (or robots.txt) handler: the host's goodput.
	Admitted int64
	// Rejected counts answers with Status (429 or 503) because the bucket was
	// empty.
	Rejected int64
	// Shed counts 503 answers because the queue was full (MaxQueue).
	Shed int64
	// Blocked counts soft-block challenge answers.
	Blocked int64
	// TimedOut counts requests whose client gave up (context ended, connection
	// closed) before the answer: hung, queued or in service.
	TimedOut int64
	// Robots counts requests for /robots.txt (also counted above).
	Robots int64
	// InFlight is the number of requests inside the host's handler now.
	InFlight int
	// MaxInFlight is the most requests ever inside the handler at once: an
	// upper bound the client's own concurrency cap must respect.
	MaxInFlight int
	// Queued is the number of requests waiting now, for a server or (under
	// NoThrottle) for a token; MaxQueued the most ever waiting.
	Queued, MaxQueued int
	// P50, P95, P99 and Max are latencies of admitted requests, from arrival
	// to answer (queueing included). Exact while the host has admitted at most
	// 8192 requests; beyond, they come from a uniform reservoir sample of 8192.
	P50, P95, P99, Max time.Duration
}

// Second is one 1-second window of a host's run, [Start, Start+1s). Requests
// are counted in the window they arrived in, whenever they finish, so that
// Admitted compares with the capacity that admitted them.
type Second struct {
	// Start is the window's offset since the host started.
	Start time.Duration
	// Arrivals, Admitted, Rejected, Shed, Blocked and TimedOut count the
	// requests that arrived in the window, by outcome; requests still in
	// flight are in Arrivals only.
	Arrivals, Admitted, Rejected, Shed, Blocked, TimedOut int
	// MaxInFlight is the most requests inside the handler at once during the
	// window.
	MaxInFlight int
	// Capacity is the host's capacity in requests per second, averaged over
	// the window: the bucket's rate in force (Schedule, SetCapacity), capped by
	// what the servers sustain when all are busy, Servers/Latency (divided by
	// 1 + Slowdown × (Servers-1) under Slowdown; 1/(Latency × Slowdown) with
	// unlimited servers). Zero means unlimited.
	Capacity float64
}

// reservoirSize bounds the latency samples a host keeps (64 KiB).
const reservoirSize = 8192

// reservoir is a uniform sample of latencies (Vitter's Algorithm R): exact
// while fewer than reservoirSize have been seen, an unbiased sample beyond.
type reservoir struct {
	samples []time.Duration
	seen    int64
	max     time.Duration
	rng     rand.PCG
}

func (r *reservoir) add(d time.Duration) {
	r.seen++
	r.max = max(r.max, d)
	if len(r.samples) < reservoirSize {
		r.samples = append(r.samples, d)
		return
	}
	if j := r.rng.Uint64() % uint64(r.seen); j < reservoirSize {
		r.samples[j] = d
	}
}

// percentiles returns the nearest-rank percentiles ps of the sample.
func (r *reservoir) percentiles(ps ...float64) []time.Duration {
	out := make([]time.Duration, len(ps))
	if len(r.samples) == 0 {
		return out
	}
	s := slices.Clone(r.samples)
	slices.Sort(s)
	for i, p := range ps {
		k := int(math.Ceil(p*float64(len(s)))) - 1
		out[i] = s[min(max(k, 0), len(s)-1)]
	}
	return out
}

// fillCapacity sets Capacity on each window from the capacity changes (sorted
// by at) and the servers' rate svc (0 = unlimited).
func fillCapacity(win []Second, changes []change, svc float64) {
	eff := func(rate float64) float64 { // +Inf = unlimited
		r := math.Inf(1)
		if rate > 0 {
			r = rate
		}
		if svc > 0 {
			r = min(r, svc)
		}
		return r
	}
	k := 0
	for i := range win {
		from, to := win[i].Start, win[i].Start+time.Second
		for k+1 < len(changes) && changes[k+1].at <= from {
			k++
		}
		var sum float64
		for j := k; j < len(changes) && changes[j].at < to; j++ {
			lo := max(changes[j].at, from)
			hi := to
			if j+1 < len(changes) {
				hi = min(changes[j+1].at, to)
			}
			if hi <= lo {
				continue // superseded at the same instant
			}
			sum += eff(changes[j].rate) * (hi - lo).Seconds()
		}
		if math.IsInf(sum, 1) || math.IsNaN(sum) {
			sum = 0
		}
		win[i].Capacity = sum
	}
}
