package crawl

import (
	"fmt"
	"net/http"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/breaker"
	"github.com/polite-go/polite/retry"
)

// A job always ends (issue 17, defect 1). Every wait the job or its
// Transport chooses on its own (backoff, breaker, budget) is capped by the
// backoff's cap; a wait the server names is honoured up to MaxRetryAfter,
// and beyond it the host's waiting URLs are finished at once as throttled,
// the pause kept in state.db so that a rerun leaves the host alone until
// then; and a host failing for HostGiveUp (its breaker not closed, or
// failures in a row however far apart) has its remaining URLs finished
// with the reason. So a dead host costs at most HostGiveUp (plus one
// backoff cap, or one pause it named), not days.

// ready is the scheduler's Transport.Ready, behind the pause an earlier run
// recorded for the host.
func (j *Job) ready(h *host, now time.Time) (time.Duration, polite.Reason) {
	if h.pausedUntil.After(now) {
		return h.pausedUntil.Sub(now), h.pauseWhy
	}
	key, ok := j.budgetKey(h)
	if !ok {
		return 0, "" // a name KeyIP has not resolved yet: the first Try will
	}
	var d time.Duration
	var why polite.Reason
	if j.opts.Reserve && h.sent.Load() {
		if h.inflight > 0 && h.probeOut() {
			return 0, polite.ReasonSlot // a soft block's probe goes alone
		}
		d, why = j.reserve(h, key, now)
	} else {
		d, why = j.tr.Ready(key, now)
	}
	if why == polite.ReasonBlock {
		return j.blockReady(h, now)
	}
	if h.inflight > 0 && h.probeOut() {
		return 0, polite.ReasonSlot // a soft block's probe goes alone
	}
	switch why {
	case polite.ReasonRetryAfter, polite.ReasonRateLimit, polite.ReasonBackoff, polite.ReasonBreaker, polite.ReasonStore:
		if d <= j.opts.MaxRetryAfter { // beyond, its URLs end at once
			h.notePause(now, now.Add(d))
		}
	}
	return d, why
}

// reserve is ready's form for a Transport whose Store other processes
// share (Options.Reserve): the admission of the host's next URL is taken
// now, when a token is there, and kept on the host until handOut gives it
// to the URL; otherwise the host sleeps until the Store says. One call to
// the Store a URL where Ready and Try made two; and where every worker of
// a fleet read the host ready at one token's instant, and all sent a Try
// for it, all but one are refused at once. It reserves nothing ahead: a
// reservation holds one of the host's slots in the fleet until it is sent,
// and a request that asks without reserving (robots.txt's) waited behind
// four workers reserving a second ahead for 20 s, live. A host's first
// request of the run is asked for with Ready, as one process does: its
// robots.txt is fetched first, and a reservation would have to be given
// back for that fetch, its token lost (Store.Cancel never lifts a bucket
// above empty; four workers at --rate 5, burst 5, sent 3 requests in the
// first second where Ready sent 10). Called with the scheduler's lock
// held.
func (j *Job) reserve(h *host, key string, now time.Time) (time.Duration, polite.Reason) {
	if h.resv == nil {
		first := true
		if it := h.peek(); it != nil {
			first = it.firstAttempt()
		}
		r, d, why := j.tr.Reserve(key, now, 0, first, 0)
		if r == nil {
			return d, why
		}
		h.resv = r
	}
	if d := h.resv.At().Sub(now); d > 0 {
		return d, polite.ReasonRate
	}
	return 0, ""
}

// firstAttempt says the next request for it is its first attempt (Try's
// Attempt 1): a redirect hop is part of the attempt that met the redirect.
func (it *item) firstAttempt() bool {
	n := it.attempts + 1
	if it.hop {
		n--
	}
	return n <= 1
}

// notePause adds to the host's paused time the part of [now, until) not
// counted yet: the union of the pauses seen, for the closing stats.
func (h *host) notePause(now, until time.Time) {
	u := until.UnixNano()
	for {
		seen := h.pauseSeen.Load()
		if u <= seen {
			return
		}
		if h.pauseSeen.CompareAndSwap(seen, u) {
			h.paused.Add(u - max(seen, now.UnixNano()))
			return
		}
	}
}

// pausedFor is the time h was paused this run, up to now.
func (h *host) pausedFor(now time.Time) time.Duration {
	return time.Duration(h.paused.Load() - max(0, h.pauseSeen.Load()-now.UnixNano()))
}

// giveUp decides, for a host not ready for d (why), or ready (d 0),
// whether its remaining URLs are finished now. It is called with the scheduler's lock held.
func (j *Job) giveUp(h *host, d time.Duration, why polite.Reason, now time.Time) *givenUp {
	switch why {
	case polite.ReasonRate, polite.ReasonSlot, polite.ReasonBlock, polite.ReasonBreaker:
		// The rate is the job's own pacing (under the host's capped
		// ceilings); a block finishes each URL through Try; the breaker
		// is bounded below.
	default: // a pause: Retry-After, RateLimit quota, backoff
		if d > j.opts.MaxRetryAfter {
			until := now.Add(d)
			return &givenUp{outcome: Throttled, msg: pausedMsg(until, why), until: until, why: why}
		}
	}
	since := h.failing.Load()
	if j.opts.HostGiveUp > 0 && since != 0 && now.Sub(time.Unix(0, since)) >= j.opts.HostGiveUp {
		g := &givenUp{outcome: NetworkError, msg: "no response"}
		if f := h.lastFail.Load(); f != nil {
			g.outcome, g.msg = f.outcome, f.msg
		}
		g.msg = fmt.Sprintf("host given up: failing for %v (its breaker not closed, or every answer a failure; since %s, --host-give-up %v); last attempt: %s",
			now.Sub(time.Unix(0, since)).Round(time.Second), time.Unix(0, since).UTC().Format(time.RFC3339), j.opts.HostGiveUp, g.msg)
		return g
	}
	return nil
}

// pausedMsg is the error of a URL finished because its host is paused
// beyond MaxRetryAfter.
func pausedMsg(until time.Time, why polite.Reason) string {
	return fmt.Sprintf("throttled: host paused until %s (%s), beyond --max-retry-after",
		until.UTC().Format(time.RFC3339), why)
}

// health follows whether h has been failing since its failures began,
// after an attempt that was sent: a failure that finds the breaker not
// closed, or that makes the breaker's threshold of failures in a row,
// starts the count (if not started), anything else stops it. The breaker
// alone missed a host that throttles forever: it opens on its threshold
// of failures within its window, and a host whose Retry-After spaces its
// 429s wider than that kept its breaker closed while every URL spent its
// retries one pause at a time.
func (j *Job) health(h *host, tr polite.Tried, err error, resp *http.Response) {
	if !worthRetry(tr.Outcome) {
		if h.failing.Load() != 0 {
			h.failing.Store(0)
		}
		if h.streak.Load() != 0 {
			h.streak.Store(0)
		}
		return
	}
	now := time.Now()
	streak := h.failedAgain(now.Add(-tr.Latency), now)
	f := &givenUp{outcome: NetworkError}
	switch {
	case resp != nil:
		f.outcome, f.msg = outcomeOf(tr.Outcome), resp.Status
	case err != nil:
		f.msg = unwrapPolite(err).Error()
		if tr.Outcome == polite.Overloaded {
			f.outcome = Timeout
		}
	}
	h.lastFail.Store(f)
	if h.failing.Load() != 0 {
		return
	}
	if streak >= j.breakerThreshold() {
		h.failing.CompareAndSwap(0, now.UnixNano())
		return
	}
	if st, ok := j.tr.State(j.budgetOf(h)); ok && st.Breaker != breaker.Closed {
		h.failing.CompareAndSwap(0, now.UnixNano())
	}
}

// failedAgain notes a failed attempt of h sent at sent and heard at now,
// and returns h's failures in a row: the answers to attempts sent before
// the last failure was heard are one wave (requests in flight together
// meeting one overload), counted once, as the Transport counts them
// against the breaker.
func (h *host) failedAgain(sent, now time.Time) int32 {
	s := sent.UnixNano()
	for {
		last := h.failHeard.Load()
		if last != 0 && s < last {
			return h.streak.Load()
		}
		if h.failHeard.CompareAndSwap(last, now.UnixNano()) {
			return h.streak.Add(1)
		}
	}
}

// breakerThreshold is the failures in a row that open a host's breaker
// (the Transport's Breaker.Threshold, as a Breaker reads it).
func (j *Job) breakerThreshold() int32 { return int32(j.tr.Breaker.WithDefaults().Threshold) }

// persistPause records, once per instant, that h is paused until until, so
// that a rerun does not send to it before then.
func (j *Job) persistPause(h *host, until time.Time, why polite.Reason) {
	ms := until.UnixMilli()
	for {
		cur := h.persisted.Load()
		if ms <= cur {
			return
		}
		if h.persisted.CompareAndSwap(cur, ms) {
			break
		}
	}
	j.commits <- commitMsg{pause: &hostPause{host: h.key, until: until, reason: string(why)}}
}

// maxDelay is the cap on the waits the job chooses itself: the backoff's.
func (j *Job) maxDelay() time.Duration {
	if c := j.backoff.Cap; c > 0 {
		return c
	}
	return retry.DefaultCap
}

// budgetKey returns the key of the Transport budget h's requests draw on
// (Transport.BudgetKey), false while it is not known without a lookup. It
// is kept once it cannot change (by host or domain).
func (j *Job) budgetKey(h *host) (string, bool) {
	if k := h.budget.Load(); k != nil {
		return *k, true
	}
	k, ok := j.tr.BudgetKey(h.key)
	if ok && j.tr.Key != polite.KeyIP {
		h.budget.Store(&k)
	}
	return k, ok
}

// budgetOf is budgetKey, falling back on the host's own key.
func (j *Job) budgetOf(h *host) string {
	if k, ok := j.budgetKey(h); ok {
		return k
	}
	return h.key
}
