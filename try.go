package polite

import (
	"errors"
	"iter"
	"net/http"
	"time"
)

// Ready answers, taking nothing, whether a request to the host with this
// key could be admitted at now: 0 and "" when it could; otherwise how long
// until it may be (as far as the host's state says now) and why. The
// reasons are the gates' own, in the order RoundTrip meets them:
// ReasonBlock (wait 0: a request would fail with ErrBlocked), a pause's
// reason, ReasonBreaker, ReasonSlot (wait 0: a slot frees when a request
// in flight ends, at no time known in advance) and ReasonRate.
//
// A scheduler asks Ready before it hands a request to a worker (and Try
// after), so that no worker waits on a host; crawl does. A request put off
// for the rate is demand on it, which Ready tells a Store that is a
// DemandNoter. The key is the one the Transport's Key gives (see
// Transport.KeyOf).
func (t *Transport) Ready(key string, now time.Time) (time.Duration, Reason) {
	t.init()
	h := t.reg.Get(key)
	defer t.reg.Put(h)
	st := t.store.State(h, now)
	if t.KeepBlocked {
		st.Blocked = "" // the mark is kept, and sends anyway
	}
	d, why := st.Gate(now)
	if why == ReasonRate && t.demand != nil {
		t.demand.NoteDemand(h, now) // a request waits for the rate: demand presses on it
	}
	return d, why
}

// Unblock lifts the block mark of the host with this key, so that its
// next request is sent and read again (a page that looked like a challenge
// may have been a false positive, or the challenge may have expired). It
// reports whether the host was blocked and its Store could lift the mark
// (see Unblocker).
func (t *Transport) Unblock(key string) bool {
	t.init()
	u, ok := t.store.(Unblocker)
	if !ok {
		return false
	}
	h := t.reg.Get(key)
	defer t.reg.Put(h)
	return u.Unblock(h)
}

// KeyOf returns the key the Transport keeps req's host state under (see
// Transport.Key): the key Ready and State take.
func (t *Transport) KeyOf(req *http.Request) (string, error) {
	t.init()
	if req.URL == nil {
		return "", errors.New("polite: request has no URL")
	}
	return t.keyer.Key(req.Context(), req.URL)
}

// BudgetKey returns the key of the budget a host is under (see
// Transport.Key), given the host's canonical key (HostKey), without
// resolving anything: ok is false when only a DNS lookup could tell (KeyIP,
// a name not resolved in the last TTL). A scheduler that groups URLs by
// host asks Ready and State with it, so that with KeyDomain or KeyIP it
// reads the budget its requests draw on, not a fresh entry of the host's
// own.
func (t *Transport) BudgetKey(host string) (key string, ok bool) {
	t.init()
	return t.keyer.cached(host)
}

// State returns a snapshot of the host with this key, and false when the
// Transport holds no state for it (never used, or evicted when idle).
func (t *Transport) State(key string) (HostState, bool) {
	t.init()
	h, _, _ := t.reg.find(key)
	if h == nil {
		return HostState{}, false
	}
	defer t.reg.Put(h)
	return t.store.State(h, time.Now()), true
}

// RetryBudget returns the retries the Transport's global retry budget
// (GlobalBudget) would allow now, fractional: for metrics.
func (t *Transport) RetryBudget() float64 {
	t.init()
	now := time.Now()
	t.flushDeposits(now)
	return t.budget.Tokens(now)
}

// Hosts yields a snapshot of every host the Transport holds state for, in
// no particular order: the view metrics and reports read. Hosts may be
// added or evicted meanwhile.
func (t *Transport) Hosts() iter.Seq[HostState] {
	t.init()
	return func(yield func(HostState) bool) {
		now := time.Now()
		var batch []*Host
		t.reg.Range(func(h *Host) bool {
			batch = append(batch, h)
			return true
		})
		// The store is asked outside the registry's locks: a remote one
		// may take its time.
		for _, h := range batch {
			if !yield(t.store.State(h, now)) {
				return
			}
		}
	}
}

// TryOptions are the terms of one Try.
type TryOptions struct {
	// Attempt is this attempt's number, 1 for the first: it picks the
	// backoff, and the first earns the retry budget the request's share.
	Attempt int
	// Retries is how many attempts may follow the first: a failed attempt
	// asks the retry budget for a retry only while Attempt <= Retries.
	Retries int
	// Prev is, when Attempt > 1, the outcome of the attempt before this
	// one: why the request is sent again. It goes on the attempt's Events
	// as PrevOutcome, as RoundTrip's retries carry theirs (metrics count
	// retries by it). Zero (OK) when the caller does not know.
	Prev Outcome
}

// Tried is what one Try came to.
type Tried struct {
	// Sent says the request went out. When it did not, the host was not
	// ready: Reason says why (a pause's reason, ReasonBreaker, ReasonSlot,
	// ReasonRate) and At when to try again.
	Sent bool
	// Outcome is the attempt's outcome (when Sent), Status the response's
	// status (0 without one), and Block the soft block's reason when the
	// Outcome is Blocked.
	Outcome Outcome
	Status  int
	Block   string
	// Latency is the time from sending to the response headers (or to the
	// error).
	Latency time.Duration
	// Retry says the request may be tried again, not before At (for a
	// throttle, At is now: the host's pause holds every request back, and
	// Ready says until when). Without Retry, Reason says why not when the
	// outcome was worth a retry: ReasonAttempts (none left),
	// ReasonRetryAfter (a Retry-After beyond MaxRetryAfter), ReasonBudget
	// (the retry budget is spent; a scheduler may wait and try again, as it
	// would for a new request).
	Retry  bool
	At     time.Time
	Reason Reason
}

// Try makes one attempt at req without waiting at the host's gates: when
// the host is not ready (paused, breaker open, no slot, no token) it
// returns at once, not sent, with when to try again. It never retries and
// never sleeps; what comes next is the caller's to schedule. It is the
// Transport for a scheduler that keeps its own queue of requests, such as a
// crawl job, with the same gates, store, classification, pauses and budgets
// as RoundTrip.
//
// Like RoundTrip, a response means err == nil and its body holds the
// host's slot until closed. Errors mean no response: robots.txt disallows
// the URL, the host is blocked or paused for longer than MaxRetryAfter, or
// the attempt failed without a response (*Error; then Tried says whether
// it may be retried).
func (t *Transport) Try(req *http.Request, o TryOptions) (*http.Response, Tried, error) {
	req = withoutInjected(req)
	h, err := t.enter(req)
	if err != nil {
		closeBody(req)
		return nil, Tried{}, err
	}
	ctx := req.Context()
	opts := optsOf(ctx)
	a := attempt{req: req, h: h, n: max(o.Attempt, 1), id: t.requestID(opts), obs: opts.obs, now: time.Now(), cost: opts.cost}
	a.grant = a.n > 1
	if a.grant {
		a.prev = o.Prev
	}
	if adm, ok := t.tryAdmit(&a); !ok {
		t.reg.Put(h)
		closeBody(req)
		if adm.Err != nil && adm.Reason != ReasonBreaker {
			return nil, Tried{}, adm.Err
		}
		if adm.Wait > t.maxAfter {
			return nil, Tried{}, &PausedError{Host: h.key, Until: a.now.Add(adm.Wait), Reason: adm.Reason}
		}
		return nil, Tried{Reason: adm.Reason, At: a.now.Add(adm.Wait)}, nil
	}
	if a.n == 1 && t.pending.Add(1) >= 64 {
		t.flushDeposits(a.now)
	}
	replay := replayable(req, t.RetryNonIdempotent) && !opts.noRetries
	a.retry = replay && a.n <= o.Retries
	sent := a.now
	if err := t.do(ctx, &a); err != nil {
		t.release(&a)
		t.reg.Put(h)
		return nil, Tried{}, err
	}
	tr := Tried{Sent: true, Outcome: a.out, Status: a.status, Latency: a.now.Sub(sent), At: a.now}
	if a.out == Blocked {
		tr.Block = a.block
	}
	switch {
	case !a.out.retryable() || !replay:
	case a.v.GiveUp:
		tr.Reason = ReasonRetryAfter
	case a.n > o.Retries:
		tr.Reason = ReasonAttempts
	case !a.v.Retry || !t.withdraw(a.now):
		tr.Reason = ReasonBudget
	default:
		tr.Retry = true
		if a.out != Throttled {
			tr.At = a.now.Add(t.Backoff.Next(a.n, 0))
		}
	}
	resp, err := t.finish(&a)
	if err != nil {
		t.reg.Put(h)
	}
	return resp, tr, err
}

// tryAdmit takes the host's slot, the store's admission and the global
// slot without waiting for any, or none of them.
func (t *Transport) tryAdmit(a *attempt) (Admission, bool) {
	h := a.h
	if !h.gate.TryAcquire() {
		return Admission{Reason: ReasonSlot}, false
	}
	adm := t.store.Admit(h, Query{Now: a.now, First: !a.grant, Cost: a.cost})
	if !adm.Granted {
		h.gate.Release()
		return adm, false
	}
	a.lease, a.spare = adm.Lease, adm.Spare
	if t.global != nil && !t.global.TryAcquire() {
		t.store.Cancel(h, a.now, a.cost)
		t.releaseLease(a)
		h.gate.Release()
		return Admission{Reason: ReasonSlot}, false
	}
	return adm, true
}
