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
type Rater interface {
	Observe(now time.Time, s Signal) float64
}
