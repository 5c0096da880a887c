package adaptive

import (
	"strconv"
	"time"
)

// Kind classifies the outcome of one attempt for rate control.
type Kind int

const (
	// OK is an answer the host served at its pace: 2xx, 3xx, or a 4xx that
	// says the request was wrong rather than too soon (404, 410).
	OK Kind = iota
	// Throttle is the host asking to slow down: 429 Too Many Requests or
	// 503 Service Unavailable.
	Throttle
	// Overload is a sign of a host past its capacity without saying so:
	// 408, 504 and client-side timeouts.
	Overload
	// Failure is another 5xx or a network error: the host is unwell, which
	// slows the rate only when it persists.
	Failure
	// Neutral is an outcome that says nothing about load (a soft block, a
	// cancelled request): it is ignored.
	Neutral
)

var kindNames = [...]string{"ok", "throttle", "overload", "failure", "neutral"}

// String returns the kind's lower-case name, such as "throttle".
func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return "kind(" + strconv.Itoa(int(k)) + ")"
	}
	return kindNames[k]
}

// Signal is what one attempt told about its host.
type Signal struct {
	// Kind classifies the outcome.
	Kind Kind
	// Latency is the time from sending the request to the response headers;
	// zero when there was no response.
	Latency time.Duration
	// Wait is the wait the server advertised (Retry-After), zero if none.
	Wait time.Duration
	// Spare says the request found its host's rate idle: its token had
	// been waiting for it (the client's bucket was full), so the rate was
	// not what held the client back. An answer to such a request is no
	// reason to raise the rate: a rate nobody uses is no evidence the host
	// bears it. Callers that cannot tell leave it false.
	Spare bool
}

// Rater is a per-host rate policy: it hears the outcome of every attempt to
// its host and answers with the rate to use from then on, in requests per
// second. The caller applies the rate (to a token bucket) when it changes.
//
// Observe must be safe for concurrent use; now never goes far backwards but
// calls from several goroutines may arrive slightly out of order.
//
// A Rater may do more than Observe: each capability beyond it is an
// interface of its own, declared below, that the caller looks for as
// net/http looks for a ResponseWriter's Flusher (CurrentRater,
// ConcurrencyRater, CeilingRater, CapacityRater, CapacityErrorRater,
// PhaseRater). Controller has them all. Each says what polite's local store
// (the Transport's, unless it is given another Store) does with it; a Rater
// without one goes without what it buys.
type Rater interface {
	Observe(now time.Time, s Signal) float64
}

// A CurrentRater is a Rater that tells its rate before it has heard any
// outcome. The local store starts a new host's token bucket at it, so the
// first requests go at the Rater's pace rather than at the rate configured
// for the host.
type CurrentRater interface {
	// Rate returns the rate in force, in requests per second.
	Rate() float64
}

// A ConcurrencyRater is a Rater that also caps the requests in flight to
// its host. The local store sets the host's in-flight cap to it (never
// above the cap configured for the host) when the host is first used and
// after every outcome, so that a rate that overshoots cannot build a long
// queue at the host.
type ConcurrencyRater interface {
	// Concurrency returns how many requests may be in flight to the host.
	Concurrency() int
}

// A CeilingRater is a Rater that learns its host's rate ceilings. Before
// an outcome is observed, the local store calls SetMax with the lowest
// ceiling (robots.txt's Crawl-delay, RateLimit fields; +Inf for none)
// whenever it changed, so the Rater keeps its own state under it. A Rater
// without it is only clipped from outside: it may go on climbing against a
// ceiling it cannot see, and reckon its cuts from a rate the host never
// saw.
type CeilingRater interface {
	// SetMax sets the ceiling on the rate; zero, a negative rate or +Inf
	// removes it.
	SetMax(rate float64)
}

// A CapacityRater is a Rater that estimates what its host admits. The local
// store reports the estimate in the host's state (polite's HostState) and
// with every rate change (its Verdict and Event), for schedulers, metrics
// and reports.
type CapacityRater interface {
	// Capacity returns the host's capacity in requests per second, 0
	// before any estimate, and whether it was measured under congestion
	// rather than only seen served (a lower bound).
	Capacity() (rate float64, measured bool)
}

// A CapacityErrorRater is a Rater that says how far off its capacity
// estimate (CapacityRater) may be. The local store reports it beside the
// estimate, for an error band.
type CapacityErrorRater interface {
	// CapacityError returns the error either way, in requests per second;
	// 0 when unknown.
	CapacityError() float64
}

// A PhaseRater is a Rater that names the phase of its control (Controller:
// "starting", "settled", "probing", "ramping"). The local store reports it
// with every rate change, to say why the rate moved.
type PhaseRater interface {
	// Phase returns the phase's name.
	Phase() string
}
