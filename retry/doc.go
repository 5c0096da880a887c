// Package retry holds the pieces a polite client needs to decide when to try
// again: what the server said (Retry-After, RateLimit headers), what to do
// when it said nothing (jittered exponential backoff), and whether retrying
// is still fair to the server at all (a retry budget).
//
// It knows nothing of transports or hosts; the root package composes these
// pieces. Everything here is pure in time: functions and methods take now,
// start no goroutines and set no timers.
//
// # Precedence
//
// A sane Retry-After wins over the computed backoff (RFC 9110 §10.2.3 makes
// it the server's word on its own recovery). Without one, Backoff computes
// the delay. A RateLimit field with no quota left says how long until the
// quota resets, which paces requests before a 429 arrives. Before any retry
// is sent, the Budget must grant a token.
//
// # Retry-After
//
// ParseAfter reads both forms RFC 9110 allows. An HTTP-date is measured from
// the response's Date field when present, so a client whose clock is off by
// minutes still waits what the server meant. A past date means "retry now"
// (0); anything else that is neither form, a negative number included,
// reports ok == false, and the caller falls back to Backoff. Absurdly long values are returned as they
// are (clamped only at the largest time.Duration): whether to honour them is
// the caller's policy, not the parser's.
//
// # RateLimit headers
//
// ParseRateLimit reads the IETF httpapi draft's fields in the current
// structured form and its two older forms, and the vendor X-RateLimit-*
// fields, into one Quota. Unknown fields are negative.
//
// # Backoff
//
// Backoff implements the schedules from Marc Brooker's "Exponential Backoff
// and Jitter" (AWS Architecture Blog, 2015): full jitter (the default),
// equal jitter, decorrelated jitter, and none. Delay is deterministic given
// its random draw, for tests; Next draws one.
//
// # Budget
//
// Backoff spreads retries in time but does not reduce them; as Brooker put
// it later ("What is Backoff For?", 2022), under sustained overload deferring
// work does not help. Budget bounds the retries themselves: a share of the
// original requests plus a small floor per second.
package retry
