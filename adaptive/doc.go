// Package adaptive sets a host's request rate from what the host says: its
// throttles, its timeouts and its latency. It is polite's answer to "what
// rate?" when nobody published one.
//
// A Rater hears the outcome of every attempt to one host as a Signal and
// answers with the rate to use from then on. Controller is polite's Rater;
// the Transport keeps one per host and applies its rate to the host's token
// bucket. What a Rater can do beyond that is an optional interface of its
// own, each of which Controller implements: CurrentRater (the starting
// rate), ConcurrencyRater (the host's in-flight cap), CeilingRater (the
// host's robots.txt and RateLimit ceilings), and CapacityRater,
// CapacityErrorRater and PhaseRater (the estimate and phase polite
// reports).
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
// Falls. A throttle while settled cuts blind (Config.Backoff): the capacity
// fell by an unknown amount. The host's bucket was empty when it refused,
// so a request sent one interval of the new rate later is refused only if
// that rate is still over the capacity: such a refusal cuts again at once,
// once, instead of at the window's end. The throttles a fall cost (the
// refusals it met, and the probe that pins the new capacity down) are
// charged to the probes' 2 %: the next probe waits until they and its own are
// one in 50 requests at the new capacity, however long MaxProbeInterval.
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
// Latency. The median latency of the newest answers, and the least of the
// very newest four (a queue building at the pace of the rate shows in all
// of them before the median moves), are compared with a baseline, the
// least such median over the last half minute (a min filter, as in TCP
// Vegas and BBR), taken from the first few answers of a cold start on,
// plus an allowance for the noise those answers showed (not now: a
// growing queue widens the spread, and would hide itself), and never less
// than 2 ms over it: scheduler and GC noise over a backend that answers in
// microseconds is not a queue. Above Config.LatencyTolerance, while
// requests of ours wait at the host (served × latency, Little's law, is a
// quarter of a request or more: otherwise the latency rose for another
// reason, such as the client's own contention, and only holds the rate)
// and the host serves fewer answers than it is sent, a queue is growing;
// while it serves all it is sent but one of ours waits there on average
// (served × the latency's rise over the baseline is a request or more), a
// queue stands: the in-flight cap keeps it from growing, and a rate a
// hair under the knee drains it no faster than noise refills it (issue
// 34). Either way the host is serving at its capacity, so what it serves
// is measured as the capacity (over the last half second when the rate
// was growing, for the last second's count lags it), and the rate drops
// below it for a window to drain the queue; a probe that meets rising
// latency ends the same way, and what the host served meanwhile raises
// the estimate. A median still high while the newest answers are back
// under the limit counts a queue that has drained (the one a decrease
// drained): no cut. Other high latency holds the rate where it is: no
// growth, no probes. Concurrency caps the requests in flight to what the
// rate needs at the unloaded latency, so that a queue at the host stays
// short even when the rate overshoots (the idea behind Vector's adaptive
// request concurrency).
//
// Steep knees. Behind a queue that forms at a rate of its own (nginx's
// limit_req in delay mode, a token bucket that delays), a request waiting
// waits 1/capacity per request ahead of it, whatever the unloaded latency:
// at 15 req/s and 10 ms unloaded, one waiting is 7.7 × the unloaded
// latency. There, on a host that never throttled, where 1/capacity is more
// than twice the baseline (before a capacity is known: 1/served), the
// rate settles at Target less 5 % of the capacity, so that a queue noise
// leaves drains in a few requests; a cold start stops growing, and a probe
// ends, as soon as the mean of the newest four answers is past the limit
// (one answer that waited lifts it), not only when the least of them is.
//
// Retry-After. A throttle's advertised wait delays the reaction window: the
// caller pauses the host, and only requests sent after the pause judge the
// decrease. The host's bucket refilled while the client waited, so what it
// serves first after the pause is its burst, earned during the pause: the
// rate settles against what the window served, as after any decrease, but
// the capacity a Controller reports counts the pause's time with the
// window's, and so claims no more than the answers prove (issue 33).
// Hosts that answer with waits are probed less often.
//
// Failures. Other 5xx answers and network errors slow the rate (by
// Config.Backoff) only when most answers in a window are failures; a circuit
// breaker is the better tool for a host that is down.
//
// # Phases
//
// A Controller is in one of four phases, and in a sub-state of one of them:
//
//   - starting: slow start from Config.Initial, until the first congestion
//     signal. It is never entered again.
//   - settled: at Target × the capacity (less at a steep knee), or at a
//     lower bound of it, until
//     the next probe is due.
//   - reacting: settled with a reaction window open, right after a
//     decrease: the rate stays at the decrease, throttles to requests sent
//     before it start no other decrease, and the answers to requests sent
//     after it judge it when the window ends. Every decrease, whatever the
//     phase before, lands here. (A sub-state rather than a phase: with a
//     ProbeInterval under 4 ns, a probe can start within a window.)
//   - probing: reaching above the capacity, its excess doubling every
//     300 ms (on a host that never throttled, where only latency shows
//     the knee, no faster than 8 answers at the capacity come back), to
//     see whether the capacity grew.
//   - ramping: the probe found room; the capacity is now a lower bound,
//     and the rate grows as in slow start, at half the pace.
//
// Events are Observe's answer (OK, a throttle or overload, a failure) and,
// before it is handled, what the time alone brings (a window's end, a
// probe falling due, the latency). A throttle below means a Throttle or an
// Overload answer while no reaction window is open; "served" is the OK
// answers per second over the last second, and the latency is high when
// the median of the newest 16, or each of the newest 4, is past the
// baseline by more than LatencyTolerance × the baseline (plus the unloaded
// noise; 2 ms at least), or by half as much "at the knee", where on a
// host that never throttled the mean of the newest 4 past it counts too;
// "newest mean high" is that mean past the full tolerance. Rows of one
// phase and event are tried top to bottom:
//
//	from      event, condition                          to        effect
//	starting  OK answer                                 starting  rate += Growth, unless latency holds
//	starting  throttle                                  reacting  Backoff × rate, and no more than
//	                                                              Target × served (from 4/s served)
//	any but   latency high, newest mean high, past the  reacting  capacity := served; the share of
//	reacting  first second, served × latency ≥ 0.25,              it to settle at (Target, or less
//	          and served under 95 % of the rate or                5 % at a steep knee), less 10 %
//	          served × (latency - baseline) ≥ 1                   to drain the queue
//	any but   latency high (starting at a steep knee:   same      latency holds: no growth, no probe
//	reacting  or the newest mean high), otherwise
//	settled   probe due: settled for the probe wait,    probing   the host's savings are reckoned
//	          a capacity known, latency not holding
//	settled   throttle, rate within 1.25 × a lower      reacting  the bound becomes the capacity;
//	          bound of the capacity                               Target × min(capacity, rate)
//	settled   throttle, otherwise                       reacting  Backoff × rate; capacity ≤ rate
//	reacting  throttle or overload                      reacting  counted, no decision: the wave the
//	                                                              decrease answers
//	reacting  early: 2+ post-cut throttles, at least   reacting  cut again to what was served since
//	          as many as served, past stragglers,                 the decrease (no deeper than Backoff)
//	          and served far under the rate
//	reacting  window end: still throttled late, fewer   reacting  the same window, held open longer
//	          than 6 served, under 4 windows long
//	reacting  window end: still throttled late, fewer   reacting  Backoff × rate, a new window
//	          than 6 served
//	reacting  window end: still throttled late          reacting  capacity := what was served (unless
//	                                                              the estimate agrees within the
//	                                                              count's error); Target × it, a new
//	                                                              window
//	reacting  window end: most of 8+ post-cut           reacting  Backoff × rate, a new window
//	          answers are failures
//	reacting  window end, after a latency decrease      settled   Target × capacity
//	reacting  window end, otherwise                     settled   with no capacity measured, what was
//	                                                              served is a lower bound of it
//	probing   served more than the host's savings       ramping   the capacity becomes a lower bound
//	          explain
//	probing   latency high at the knee                  reacting  probe failed; capacity ≥ served
//	                                                              (the last second's, or the newest
//	                                                              half second's, or the probe's own);
//	                                                              10 % under its share of capacity
//	probing   throttle, a host without savings (two     reacting  capacity := midway to the rate the
//	          probes running refused far above it)                probe met, as a lower bound
//	probing   throttle long before the savings earlier  reacting  the capacity fell: Backoff × rate;
//	          probes were served ran out                          capacity ≤ rate
//	probing   throttle, capacity measured, or the rate  reacting  probe failed, the next waits longer;
//	          within 1.25 × a lower bound, or served no           Target × min(capacity, rate); a
//	          more than the savings it reckoned                   lower bound becomes the capacity
//	probing   throttle, otherwise (far above a bound)   reacting  as starting, but no lower than about
//	                                                              midway from the bound to the rate
//	ramping   OK answer                                 ramping   rate += Growth/2, unless latency holds
//	ramping   throttle, rate within 1.25 × the bound    reacting  as probing from a measured capacity
//	ramping   throttle, otherwise                       reacting  as starting, but no lower than about
//	                                                              midway from the bound to the rate
//
// A Retry-After wait with a throttle opens the window after the wait. A
// bracket (what was served between two throttles) raises the capacity, or
// replaces a coarser estimate it agrees with, in any phase; settled, the
// rate follows it (reacting, only up). Failures change nothing until a
// window's end judges them.
//
// # Time and concurrency
//
// Every method takes the current time: a Controller reads no clock, starts no
// goroutine and sets no timer, so tests drive it with explicit instants.
// Rate changes are discrete: increases at most every 100 ms and only by at
// least 1 %, decreases at once. A Controller is safe for concurrent use (one
// mutex), Observe does not allocate, and a Controller takes at most 568
// bytes (a test holds it to that: the 576-byte size class).
//
// # Snapshots
//
// A Controller's state marshals to 534 bytes (MarshalBinary, AppendBinary)
// and restores into another (UnmarshalBinary), so that a fleet of processes
// can keep replicas of one host's controller: each hears the same Observe
// and SetMax calls, and a process that joins late restores a snapshot and
// hears the rest. The snapshot holds what the Controller learned, not its
// Config nor its start: restore into New(cfg, start) with the original's.
// The replicas answer alike, call for call, when every instant they are
// given comes from one clock the fleet shares, without a monotonic reading
// (time.UnixMicro of it, say), never time.Now of each process.
package adaptive
