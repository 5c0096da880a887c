package polite

import (
	"context"
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
	// Reservation, when set, is the admission Reserve took for this
	// request: Try waits for its instant (or the request's context) and
	// sends under it instead of asking the Store. Try owns it from the
	// call on, and gives it back (CancelReservation) whenever it does not
	// send under it: a request to another host, a cost it was not taken
	// for, robots.txt to fetch first, no free slot, an error before
	// sending.
	Reservation *Reservation
}

// A Reservation is an admission Reserve took ahead of its request: every
// gate of the host passed, a slot leased in its Store and a token taken,
// due at At. It is spent by one Try (TryOptions.Reservation) or given back
// by CancelReservation; one dropped otherwise costs the host a token and,
// until its lease expires, a slot.
type Reservation struct {
	h     *Host
	at    time.Time
	cost  int
	lease uint64
	spare bool
}

// At is when the reserved token is due: the request may go then.
func (r *Reservation) At() time.Time { return r.at }

// Reserve takes the admission of the next request to the host with this
// key ahead of the request, as Try's would be taken: the block mark, a
// pause, the breaker, a slot in the Store and a token, reserved when due
// within maxWait (and within the Store's hold, about a token interval; 0
// takes only a token there now). Granted, it returns the Reservation, for
// Try to send under at its At; otherwise nil, how long until the host may
// admit and why, as Ready answers. first says the request is a first
// attempt (it earns the retry budget its share, as Try's Attempt 1 does),
// cost is its tokens (0: 1).
//
// A scheduler whose Transport shares its Store with other processes (a
// fleet's Redis) reserves instead of asking Ready: one call where Ready
// and Try made two, and Ready's answer, read by every process for the
// same token, is stale for all but the first to send.
func (t *Transport) Reserve(key string, now time.Time, maxWait time.Duration, first bool, cost int) (*Reservation, time.Duration, Reason) {
	t.init()
	h := t.reg.Get(key)
	adm := t.store.Admit(h, Query{Now: now, MaxWait: max(maxWait, 0), First: first, Cost: cost})
	if !adm.Granted {
		t.reg.Put(h)
		// The refusal is demand on the host's rate, which the Store noted
		// itself (as for Try's and RoundTrip's): Ready notes it only
		// because State takes nothing.
		why := adm.Reason
		if why == "" {
			why = ReasonRate
		}
		return nil, adm.Wait, why
	}
	at := adm.At
	if at.IsZero() {
		at = now
	}
	return &Reservation{h: h, at: at, cost: max(cost, 1), lease: adm.Lease, spare: adm.Spare}, 0, ""
}

// CancelReservation gives back what r holds: its token (as far as the
// host's bucket is still in debt for it) and its slot. r must not be used
// again; nil is a no-op.
func (t *Transport) CancelReservation(r *Reservation) {
	if r == nil || r.h == nil {
		return
	}
	h := r.h
	r.h = nil
	t.store.Cancel(h, time.Now(), r.cost)
	if r.lease != 0 {
		t.store.Release(h, r.lease)
	}
	t.reg.Put(h)
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
// never sleeps, but until the instant of a Reservation it is given
// (TryOptions.Reservation); what comes next is the caller's to schedule. It is the
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
	if r := o.Reservation; r != nil && !t.robotsKnown(req, r.h) {
		// robots.txt is fetched first, as a request of its own: it must not
		// wait for a slot the reservation holds.
		t.CancelReservation(r)
		o.Reservation = nil
	}
	h, err := t.enter(req)
	if err != nil {
		t.CancelReservation(o.Reservation)
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
	admit := t.tryAdmit
	if r := o.Reservation; r != nil {
		admit = func(a *attempt) (Admission, bool) { return t.reserved(ctx, a, r) }
	}
	if adm, ok := admit(&a); !ok {
		t.reg.Put(h)
		closeBody(req)
		if adm.Err != nil && adm.Reason != ReasonBreaker {
			return nil, Tried{}, adm.Err
		}
		if adm.Wait > t.maxAfter {
			return nil, Tried{}, &PausedError{Host: h.Key(), Until: a.now.Add(adm.Wait), Reason: adm.Reason}
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

// reserved admits a under r: it takes the host's slot and the global slot
// without waiting, waits for r's token, and sends under r's lease. A
// reservation for another host or cost is given back and the store asked
// instead (tryAdmit); one that cannot be sent under (no slot, the context
// done) is given back. One taken for a first attempt serves a retry (and
// the other way round): the retry budget's share is a share's worth off,
// where giving it back would lose the host a token (Store.Cancel never
// lifts a bucket above empty).
func (t *Transport) reserved(ctx context.Context, a *attempt, r *Reservation) (Admission, bool) {
	if r.h != a.h || r.cost != max(a.cost, 1) {
		t.CancelReservation(r)
		return t.tryAdmit(a)
	}
	h := a.h
	if !h.gate.TryAcquire() {
		t.CancelReservation(r)
		return Admission{Reason: ReasonSlot}, false
	}
	if t.global != nil && !t.global.TryAcquire() {
		h.gate.Release()
		t.CancelReservation(r)
		return Admission{Reason: ReasonSlot}, false
	}
	if err := sleep(ctx, time.Until(r.at)); err != nil {
		t.releaseSlots(h, 0)
		t.CancelReservation(r)
		return Admission{Err: err}, false
	}
	a.lease, a.spare = r.lease, r.spare
	a.now = time.Now()
	r.h = nil
	t.reg.Put(h) // the reservation's hold on the host; a holds its own
	return Admission{Granted: true, At: r.at, Lease: r.lease, Spare: r.spare}, true
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
