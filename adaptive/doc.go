// Package adaptive sets a host's request rate from what the host says: its
// throttles, its timeouts and its latency. It is polite's answer to "what
// rate?" when nobody published one.
//
// A Rater hears the outcome of every attempt to one host as a Signal and
// answers with the rate to use from then on. Controller is polite's Rater;
// the Transport keeps one per host and applies its rate to the host's token
// bucket (and its Concurrency to the host's in-flight cap).
//
// # Model
//
// Controller is AIMD, additive increase and multiplicative decrease as in TCP
// (RFC 5681), with three changes that take it past the roughly 75 % of
// capacity a halving sawtooth averages.
//
// Slow start. A cold host starts low (Config.Initial) and every answer
// served adds to the rate, which doubles about every half second until the
// first congestion signal: a throttle (429, 503), an overload (408, 504, a
// timeout) or a queue read from the latency.
//
// One decrease per reaction window. A decrease opens a window of max(Window,
// p95 latency, 8 requests at the rate). Answers to requests sent before the
// decrease belong to the congestion event that caused it, however many of
// them come back throttled: they never count again. At the window's end, the
// answers to requests sent after the decrease judge it. (When most of those
// are throttled, the decrease was plainly not enough, and the rate is cut
// again at once to what they were served.)
//
// Measured capacity. A host that throttles from a token bucket has an empty
// bucket whenever it throttles, so while a client keeps it throttled, what
// the host serves is exactly its capacity: if the window after a decrease is
// still throttled late in it, the rate of answers served in it is the
// capacity, and the rate settles at Config.Target (97 %) of it instead of
// halving again. Between any two throttles the same reasoning gives a lower
// bound, the answers served over the time between them (BBR's long-term
// sampling of token-bucket policers measures the same way), which refines
// the estimate upwards as the run goes on.
//
// Gentle probes. A settled rate would never see the capacity grow, so it
// probes: after Config.ProbeInterval it climbs from the capacity, slowly at
// first, faster the longer the host keeps serving. The host's bucket refilled
// while the rate sat under its capacity, so a probe is first served from
// those savings (what the host earned at its capacity since it last
// throttled, less what it served); only service beyond them shows more
// capacity, and turns the probe into a ramp (slow start again) until the
// next throttle measures the new capacity. A probe that finds nothing costs
// one throttled request, so each makes the next wait longer, up to
// Config.MaxProbeInterval and at least long enough that probes cost no more
// than 2 % of the requests. A throttle that comes well before a probe could
// have used up the host's savings (as earlier probes measured them) means the
// capacity fell, and is handled as one.
//
// Hosts without savings. Some hosts keep no bucket to save in: a pool of
// workers without a queue refuses the moment one more request arrives
// (Vector's "drops at high concurrency"). There, the estimate only ever
// measures the rate the client happened to send, and every probe fails. When
// two probes in a row are refused far above the estimate after being served
// almost none of the savings they were allowed, the host is taken to keep
// none: the rate a probe had when it sent the refused request then bounds
// the capacity from above, and the estimate moves halfway to it after each
// such probe, until the two bounds lie within 5 % of each other.
//
// Latency. The median latency of the newest answers is compared with a
// baseline, the least such median over the last half minute (a min filter,
// as in TCP Vegas and BBR), plus an allowance for the noise the latencies
// showed when that baseline was taken (not now: a growing queue widens the
// spread, and would hide itself). Above Config.LatencyTolerance, while the
// host serves fewer answers than it is sent, a queue is growing: the host is
// serving at its capacity, so what it serves is measured as the capacity
// (over the last half second when the rate was growing, for the last
// second's count lags it), and the rate drops below it for a window to
// drain the queue; a probe that meets rising latency ends the same way, and
// what the host served meanwhile raises the estimate. High latency without a
// growing queue
// holds the rate where it is: no growth, no probes. Concurrency caps the
// requests in flight to what the rate needs at the unloaded latency, so that
// a queue at the host stays short even when the rate overshoots (the idea
// behind Vector's adaptive request concurrency).
//
// Retry-After. A throttle's advertised wait delays the reaction window: the
// caller pauses the host, and only requests sent after the pause judge the
// decrease. Hosts that answer with waits are probed less often.
//
// Failures. Other 5xx answers and network errors slow the rate (by
// Config.Backoff) only when most answers in a window are failures; a circuit
// breaker is the better tool for a host that is down.
//
// # Time and concurrency
//
// Every method takes the current time: a Controller reads no clock, starts no
// goroutine and sets no timer, so tests drive it with explicit instants.
// Rate changes are discrete: increases at most every 100 ms and only by at
// least 1 %, decreases at once. A Controller is safe for concurrent use (one
// mutex), Observe does not allocate, and its state is about 1.5 KB.
package adaptive
