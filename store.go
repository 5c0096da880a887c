package polite

import (
	"net/http"
	"time"

	"github.com/polite-go/polite/breaker"
)

// Store owns the per-host state that decides admission: the block mark, the
// pause, the breaker, the token bucket, the retry budget, the rate ceilings
// and the adaptive rate. A Transport asks it two things per attempt, each in
// one call: Admit before sending (block, pause, breaker, token, atomically)
// and Report after (pause, block, breaker, throttle wave, quota, rate). A
// store kept elsewhere (Redis, for a fleet of workers) therefore costs two
// round trips per attempt, and a third (Keep, Cancel) only when a token was
// reserved ahead of time or must wait for the global cap. (Release, when a
// store leases in-flight slots, need not be waited for.)
//
// Every method gets the Host entry the Transport's registry holds for the
// destination: its Key names the host, and a store may keep local state in
// it (the local store keeps its token bucket there). The requests in flight
// are capped by the Host's own gate, outside the store.
//
// The root package declares Store and never imports an implementation. The
// zero Transport uses the local store, which keeps everything in memory;
// package storetest holds the conformance suite every Store must pass.
// Implementations must be safe for concurrent use.
//
// What a Store may do beyond these methods is an interface of its own,
// declared below, which the Transport looks for as net/http looks for a
// ResponseWriter's Flusher: Unblocker (lifting a block mark) and
// DemandNoter (hearing a request wait for the rate). A Store that wraps
// another loses them unless it implements them too.
type Store interface {
	// Admit decides one admission to h at q.Now: the block mark, the pause,
	// the breaker and a token, in that order, in one atomic step. When a
	// token is due within q.MaxWait it is reserved and Admit grants with At
	// at that instant; the caller sends then, after Keep.
	Admit(h *Host, q Query) Admission
	// Keep reports whether cost tokens reserved at reserved (Admission.At
	// after Query.Now) still stand at now: no throttle was heard since they
	// were granted and the host is not paused. When they do not, the store
	// takes them back and the caller asks Admit again.
	Keep(h *Host, now, reserved time.Time, cost int) bool
	// Cancel gives back cost tokens granted at now to a request that will
	// not use them (it waits for another gate first), as far as the bucket
	// owes them: never above empty, so it cannot undo a throttle's drain.
	Cancel(h *Host, now time.Time, cost int)
	// Report tells the host's state what an attempt came to and returns
	// what changed. A throttle extends the pause (never shortens it); the
	// throttles of one wave (requests sent before the first was heard) count
	// once against the breaker and the rate.
	Report(h *Host, r Report) Verdict
	// SetRate sets the host's rate, keeping the tokens it has accrued, under
	// its ceilings; it returns the rate in force.
	SetRate(h *Host, now time.Time, rate float64) float64
	// SetCeiling sets (rate > 0) or clears (rate 0) the host's rate ceiling
	// from a source (ReasonCrawlDelay: evenly spaced, burst 1;
	// ReasonRateLimit) and keeps the rate under it. It returns the rate in
	// force and whether it changed.
	SetCeiling(h *Host, now time.Time, why Reason, rate float64) (float64, bool)
	// State returns a snapshot of the host's state.
	State(h *Host, now time.Time) HostState
	// Release gives back the in-flight lease an admission took
	// (Admission.Lease), once the request is done with: its response body
	// closed, or it failed. A store shared by a fleet caps the requests in
	// flight to a host fleet-wide with leases that expire, so a worker
	// killed mid-request holds its slots no longer than the lease time; the
	// local store takes none (the Host's gate is its cap).
	Release(h *Host, lease uint64)
}

// Unblocker is a Store that can lift a host's block mark, so that the
// host is asked again: a soft block may have been a false positive or a
// challenge that has since expired. Transport.Unblock uses it; a Store
// without it keeps a block for good (until the host's state is evicted).
type Unblocker interface {
	// Unblock clears h's block mark and reports whether there was one.
	Unblock(h *Host) bool
}

// A DemandNoter is a Store that hears when a request to a host waited for
// the host's rate without asking Admit: Transport.Ready puts such a request
// off itself, for a scheduler that asks before it sends (Admit hears of
// the others, as it refuses them or reserves their tokens).
//
// The note is what keeps an adaptive rate growing under a scheduler. An
// admission is Spare (see Admission.Spare and adaptive.Signal.Spare) when
// the host's bucket was full and nothing held the request back; answers to
// Spare requests never raise the rate, since a rate nobody uses is no
// evidence the host bears it. A scheduler sends exactly when a token is
// due, so its requests find the bucket full: unless the store knows they
// waited, every one reads as Spare and the rate never grows past its
// start. A DemandNoter must therefore not grant a Spare admission within
// two token intervals (10 ms to 1 s) of a note. A Store without it still
// works; it only cannot tell demand from idleness behind a scheduler. A
// Store that wraps another should pass the note on.
type DemandNoter interface {
	// NoteDemand tells the store that a request to h waited for the
	// host's rate at now. It takes nothing (no token, no slot), and it
	// must be cheap: Ready calls it on every answer of ReasonRate.
	NoteDemand(h *Host, now time.Time)
}

// Query is one admission question.
type Query struct {
	Now time.Time
	// MaxWait is how far ahead a token may be reserved; 0 takes only a
	// token that is there now.
	MaxWait time.Duration
	// First marks a request's first attempt until it is granted: the grant
	// earns the host's retry budget the request's share.
	First bool
	// Cost is the tokens the request takes (WithCost); 0 means 1. A cost
	// above the host's burst can never be admitted: Admission.Err says so.
	Cost int
}

// cost returns the tokens q asks for.
func (q Query) cost() int { return max(q.Cost, 1) }

// Admission is a Store's answer to a Query.
type Admission struct {
	// Granted: a token is taken. The request may go at At: Query.Now, or a
	// later instant within MaxWait for which a token was reserved.
	Granted bool
	At      time.Time
	// When not granted, Wait is how long until the host may admit (as far
	// as the store knows now) and Reason why: the pause's reason,
	// ReasonBreaker or ReasonRate. Poll is when asking again is worthwhile:
	// Wait, or less when the answer may change sooner (a token bucket whose
	// rate may move).
	Wait   time.Duration
	Poll   time.Duration
	Reason Reason
	// Spare: the host's bucket was full when the token was taken and the
	// request did not take its last in-flight slot, so neither the rate
	// nor the cap held it back (see adaptive.Signal.Spare). Stores that
	// cannot tell leave it false.
	Spare bool
	// Lease, when not 0, is the in-flight lease the grant took, for
	// Release.
	Lease uint64
	// Err refuses the request: *BlockedError, or the breaker's
	// *breaker.OpenError (Wait says until when it lets a probe through).
	Err error
}

// Report is what one attempt came to, for Store.Report.
type Report struct {
	Now  time.Time // when the answer came
	Sent time.Time // when the request went
	// Outcome is polite's reading of the attempt; Block the soft block's
	// reason when it is Blocked.
	Outcome Outcome
	Block   string
	// Status is the response's status (0 without one), Header its header
	// (nil without one).
	Status int
	Header http.Header
	// Latency is Now - Sent, the time to the response headers.
	Latency time.Duration
	// Attempt is the request's attempt number, 1 for the first.
	Attempt int
	// Retry asks the host's retry budget for a retry of this request, if
	// its outcome is one worth retrying; Verdict.Retry says whether it was
	// granted.
	Retry bool
	// Spare is the Admission's: the request's token was waiting for it.
	Spare bool
	// Aside marks polite's own request for the host's robots.txt: a small
	// static file, answered far faster than the host's pages, so its
	// latency is no reading of the host's load (four workers of a fleet
	// fetching it first once set a latency baseline a fiftieth of the
	// pages' and read every page as a queue). A rate controller hears its
	// throttles, not its served answers.
	Aside bool
}

// Verdict is what a Report changed, so the caller can act on it and say
// so. Zero fields changed nothing.
type Verdict struct {
	// Advertised is a sane Retry-After the host sent (0 if none). One longer
	// than the store's MaxRetryAfter makes GiveUp true.
	Advertised time.Duration
	// GiveUp: the request must not be retried (a block; a Retry-After past
	// the maximum).
	GiveUp bool
	// Retry: Report.Retry was asked and the host's retry budget granted it.
	Retry bool
	// Pause is how far a throttle extended the host's pause, and PauseWhy
	// why (its Retry-After, or backoff); QuotaPause how far a RateLimit
	// quota spent extended it (to the quota's reset).
	Pause      time.Duration
	PauseWhy   Reason
	QuotaPause time.Duration
	// Blocked: this report set the host's block mark.
	Blocked bool
	// Breaker is the breaker's transition, if it moved.
	Breaker breaker.Transition
	// QuotaRate is the rate the host was cut or raised to by a RateLimit
	// ceiling (0: unchanged); Rate the one the adaptive controller set.
	QuotaRate float64
	Rate      float64
	// RateFrom is the rate in force before the report changed it (set
	// when QuotaRate or Rate is). Capacity, Measured and Phase are the
	// adaptive controller's state when it set Rate (see Event), where the
	// store can tell.
	RateFrom float64
	Capacity float64
	// CapacityErr is how far off Capacity may be, either way (0: unknown).
	CapacityErr float64
	Measured    bool
	Phase       string
}

// HostState is a snapshot of one host, for schedulers, metrics and reports.
type HostState struct {
	Key string
	// Rate is the rate in force, requests per second (bucket.Inf for none);
	// Tokens what the bucket holds now, and NextToken when it holds one
	// (the zero time when it does already).
	Rate      float64
	Tokens    float64
	NextToken time.Time
	// Capacity is the adaptive controller's estimate of what the host
	// admits (0 before any, or without a controller), and Measured whether
	// it was read under congestion rather than only seen served;
	// CapacityErr how far off it may be, either way (0: unknown).
	Capacity    float64
	CapacityErr float64
	Measured    bool
	// Ceiling is the lowest rate ceiling (robots.txt, RateLimit), 0 for
	// none, and CeilingWhy which one it is (ReasonCrawlDelay or
	// ReasonRateLimit; "" when the Store cannot tell).
	Ceiling    float64
	CeilingWhy Reason
	// Rule is the pattern of the Rule the host's limits come from, "" for
	// the Transport's defaults.
	Rule string
	// InFlight and Concurrency are the requests in flight and their cap.
	InFlight, Concurrency int
	// PausedUntil is the end of the host's pause (zero when not paused),
	// and PauseWhy its reason.
	PausedUntil time.Time
	PauseWhy    Reason
	// Breaker is the breaker's state, and BreakerUntil when an open one
	// lets its next probe through.
	Breaker      breaker.State
	BreakerUntil time.Time
	// Blocked is the soft block's reason, "" when not blocked.
	Blocked string
	// RetryBudget is the retries the host's retry budget would allow now
	// (fractional).
	RetryBudget float64
}

// Gate says, from the snapshot alone, whether a request to the host could
// be admitted at now: 0 and "" when it could; otherwise how long until it
// may be and which gate holds it, the first of them in the order every
// Store's Admit checks them (storetest's GateOrder holds each Store to
// it): the block mark (ReasonBlock, wait 0: the request would fail), the
// pause (its reason), the breaker (ReasonBreaker), the in-flight cap
// (ReasonSlot, wait 0: a slot frees when a request ends, at no time known
// in advance) and the token (ReasonRate). Transport.Ready is Gate over the
// Store's State.
func (st HostState) Gate(now time.Time) (time.Duration, Reason) {
	switch {
	case st.Blocked != "":
		return 0, ReasonBlock
	case st.PausedUntil.After(now):
		return st.PausedUntil.Sub(now), st.PauseWhy
	case st.BreakerUntil.After(now):
		return st.BreakerUntil.Sub(now), ReasonBreaker
	case st.Concurrency > 0 && st.InFlight >= st.Concurrency:
		return 0, ReasonSlot
	case st.NextToken.After(now):
		return st.NextToken.Sub(now), ReasonRate
	}
	return 0, ""
}
