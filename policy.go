package polite

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/polite-go/polite/adaptive"
	"github.com/polite-go/polite/breaker"
	"github.com/polite-go/polite/internal/nanos"
	"github.com/polite-go/polite/retry"
	"github.com/polite-go/polite/robots"
)

// hostPolicy is the local store's state of one host beyond its bucket and
// gate: the pause, the block mark, the breaker, the retry budget, the rate
// ceilings and the rater; and the Transport's own, whatever its Store: the
// robots.txt copy in force and the requests waiting (see Registry.policy).
// A Registry used on its own never creates one, which keeps an idle Host
// small. Its fields are atomics or safe for concurrent use themselves, so a
// hostPolicy needs no lock. Its instants are of the monotonic clock
// (internal/nanos), not Unix nanoseconds: a step of the wall clock would
// otherwise end a server's pause early or stretch it.
type hostPolicy struct {
	pauseUntil atomic.Int64           // instant (see nanos.Stamp) before which no request goes; 0 = none
	pauseWhy   atomic.Pointer[Reason] // Reason of the current pause (see reasonPtr)
	blocked    atomic.Pointer[string]
	ceiling    atomic.Uint64   // float64 bits: the RateLimit ceiling; 0 = none
	robotsCeil atomic.Uint64   // float64 bits: 1/Crawl-delay; 0 = none
	breaker    breaker.Breaker // reads the store's shared Config
	budget     retry.Budget

	ask          asker        // the Transport's: whose turn it is to ask for a token the host has not got
	lastThrottle atomic.Int64 // instant (see nanos.Stamp) the last throttle event was counted; 0 = none
	waiting      atomic.Int32 // the Transport's: requests of normal priority waiting for a token or a slot
	deposits     atomic.Int32 // first grants not yet deposited in budget (see grant)
	ratePressed  atomic.Int64 // instant (see nanos.Stamp) a request last had to wait for the host's rate (Admit, NoteDemand); 0 = never

	rater adaptive.Rater // nil unless the Transport is adaptive; told each change of ceiling (tellCeiling)

	// The Transport's, whatever its Store: the robots.txt copy whose
	// Crawl-delay is in force. Kept here, not in the Host, so that a
	// Registry used without a Transport pays nothing for it.
	robots    atomic.Pointer[robots.Robots]
	robotsRef robots.Ref // where the Transport's cache keeps the host's robots.txt
}

// pressWindow is how recent a wait for the rate must be for an admission to
// count as pressed by demand: two token intervals, within 10 ms to 1 s.
func pressWindow(rate float64) int64 {
	if !(rate > 0) {
		return int64(time.Second)
	}
	return int64(min(max(2e9/rate, 1e7), 1e9))
}

// depositBatch is how many first grants a host's retry budget hears at once.
const depositBatch = 16

// flushDeposits folds the pending first grants into the retry budget.
func (p *hostPolicy) flushDeposits(now time.Time) {
	if n := p.deposits.Swap(0); n > 0 {
		p.budget.DepositN(now, int(n))
	}
}

// throttleWave reports whether a throttle answering a request sent at sent
// belongs to an event already counted (the request left before it was
// heard); if not, it starts a new event at now.
func (p *hostPolicy) throttleWave(sent, now time.Time) bool {
	s := nanos.Of(sent)
	for {
		last := p.lastThrottle.Load()
		if last != 0 && s < last {
			return true
		}
		if p.lastThrottle.CompareAndSwap(last, nanos.Stamp(now)) {
			return false
		}
	}
}

// throttledSince reports whether a throttle was counted after t.
func (p *hostPolicy) throttledSince(t time.Time) bool {
	last := p.lastThrottle.Load()
	return last != 0 && last > nanos.Of(t)
}

// pressedAt reports whether a request had to wait for the host's rate
// within the press window at that rate (see pressWindow) before now.
func (p *hostPolicy) pressedAt(now time.Time, rate float64) bool {
	rp := p.ratePressed.Load()
	return rp != 0 && nanos.Of(now)-rp <= pressWindow(rate)
}

// maxRate returns the lowest of the host's ceilings (robots.txt, RateLimit
// fields), +Inf when none is set.
func (p *hostPolicy) maxRate() float64 {
	c := math.Inf(1)
	if r := math.Float64frombits(p.ceiling.Load()); r > 0 {
		c = r
	}
	if r := math.Float64frombits(p.robotsCeil.Load()); r > 0 && r < c {
		c = r
	}
	return c
}

// tellCeiling tells p's rater, when it takes one, the lowest of the
// host's ceilings, after one of them changed.
func (p *hostPolicy) tellCeiling() {
	if m, ok := p.rater.(adaptive.CeilingRater); ok {
		m.SetMax(p.maxRate())
	}
}

// idle reports whether nothing in p needs the host kept: no pause pending,
// no block to remember, the breaker closed. (A block or an open breaker must
// outlive idleness, or eviction would forgive it.)
func (p *hostPolicy) idle(now time.Time) bool {
	u := p.pauseUntil.Load()
	return (u == 0 || u <= nanos.Of(now)) && p.blocked.Load() == nil &&
		p.breaker.State(now) == breaker.Closed
}

// maxPause is the longest pause kept: a Retry-After of 10^11 seconds, an
// HTTP-date in 9999 or a far Unix-ms reset once overflowed to a negative
// end and paused nothing (issue 17, defect 2). Capped, it is a pause long
// enough for any caller's MaxRetryAfter to refuse, and leaves callers
// room to add to it (an ETA plus the pause left) without overflow.
const maxPause = 200 * 365 * 24 * time.Hour

// pause extends the host's pause to d after now, at most maxPause (never
// shortens it), and reports whether it moved.
func (p *hostPolicy) pause(now time.Time, d time.Duration, why Reason) bool {
	if d <= 0 {
		return false
	}
	u := nanos.NonZero(nanos.Add(nanos.Of(now), min(d, maxPause)))
	for {
		cur := p.pauseUntil.Load()
		if cur != 0 && u <= cur {
			return false
		}
		if p.pauseUntil.CompareAndSwap(cur, u) {
			p.pauseWhy.Store(reasonPtr(why))
			return true
		}
	}
}

// paused returns how long the host is still paused at now, and why.
func (p *hostPolicy) paused(now time.Time) (time.Duration, Reason) {
	u := p.pauseUntil.Load()
	if u == 0 {
		return 0, ""
	}
	d := time.Duration(nanos.Add(u, -time.Duration(nanos.Of(now))))
	if d <= 0 {
		return 0, ""
	}
	var why Reason
	if r := p.pauseWhy.Load(); r != nil {
		why = *r
	}
	return d, why
}

// drainAt is the instant a throttle drains the bucket at: now, or when the
// host is paused, one token's time before the pause ends. A pause then ends
// with one request, paced from there, not with the burst its length would
// have refilled: against a host whose own burst is small, that burst met a
// 429 at the end of every pause (a 10 req/s host with Retry-After: 1 gave
// one URL a second).
func drainAt(now time.Time, p *hostPolicy, rate float64) time.Time {
	d, _ := p.paused(now)
	if d <= 0 || rate <= 0 || math.IsInf(rate, 1) {
		return now
	}
	return now.Add(max(0, d-time.Duration(float64(time.Second)/rate)))
}

// pauseReasons are the reasons a pause is stored with, each at a fixed
// address, so that storing one costs no allocation.
var pauseReasons = [...]Reason{ReasonRetryAfter, ReasonBackoff, ReasonRateLimit, ReasonBreaker, ReasonBlock}

// reasonPtr returns a pointer to why, from pauseReasons when it is there.
func reasonPtr(why Reason) *Reason {
	for i := range pauseReasons {
		if pauseReasons[i] == why {
			return &pauseReasons[i]
		}
	}
	r := new(Reason) // only here: why itself must not escape
	*r = why
	return r
}

// localStore is the Store a Transport uses unless told otherwise: every
// host's state in memory, in the Transport's Registry (the bucket and gate
// in the Host, the rest in its hostPolicy).
type localStore struct {
	reg         *Registry
	breaker     *breaker.Shared
	budget      *retry.BudgetShare
	backoff     retry.Backoff
	maxAfter    time.Duration
	maxSpacing  time.Duration
	keepBlocked bool
	newRater    func(key string, l Limits) adaptive.Rater
}

var (
	_ Store       = (*localStore)(nil)
	_ Unblocker   = (*localStore)(nil)
	_ DemandNoter = (*localStore)(nil)
)

// LocalOptions configure the local store; each field means what the
// Transport field of the same name does, zero values included.
type LocalOptions struct {
	Breaker       breaker.Config
	Budget        retry.BudgetConfig
	Backoff       retry.Backoff
	MaxRetryAfter time.Duration
	KeepBlocked   bool
	// MaxSpacing caps the time between two requests a RateLimit ceiling
	// may ask for, as robots.DelayPolicy caps a Crawl-delay: a policy of 1
	// request an hour (or per 11.6 days: "w=999999999999999") would keep a
	// job alive that long (issue 17, defect 1). A host that means it says
	// so with a 429 and a Retry-After, which MaxRetryAfter bounds. If zero,
	// robots.DefaultMaxDelay.
	MaxSpacing time.Duration
	// NewRater, when set, gives each host an adaptive rate (see
	// Transport.NewRater).
	NewRater func(key string, l Limits) adaptive.Rater
}

// NewLocalStore returns the in-memory Store every Transport uses unless
// given another, over reg's hosts: what Transport.Store gets when nil, and
// what a conformance suite or a server-side limiter can use on its own.
func NewLocalStore(reg *Registry, o LocalOptions) Store {
	reg.init()
	maxAfter := o.MaxRetryAfter
	if maxAfter <= 0 {
		maxAfter = DefaultMaxRetryAfter
	}
	s := &localStore{reg: reg, breaker: breaker.Share(o.Breaker), budget: retry.ShareBudget(o.Budget), backoff: o.Backoff,
		maxAfter: maxAfter, maxSpacing: o.MaxSpacing, keepBlocked: o.KeepBlocked, newRater: o.NewRater}
	reg.local.CompareAndSwap(nil, s)
	return s
}

// policy returns h's hostPolicy for the Transport's own state (see
// hostPolicy), creating it on first use. A host's policy is created once,
// by whoever needs it first, so it is created by the first local store
// built over the registry when there is one: the Transport, checking
// robots.txt before its Store ever sees the host, would otherwise leave a
// policy without the breaker, retry budget and rater of a local store that
// a Store of another type wraps or falls back on. (The Transport never
// asks what type its Store is.) Without a local store, the policy holds the
// Transport's state alone.
func (r *Registry) policy(h *Host) *hostPolicy {
	if p := h.pol.Load(); p != nil {
		return p
	}
	if s := r.local.Load(); s != nil {
		return s.policy(h)
	}
	p := new(hostPolicy)
	if !h.pol.CompareAndSwap(nil, p) {
		return h.pol.Load()
	}
	return p
}

// policy returns h's policy, creating it on first use.
func (s *localStore) policy(h *Host) *hostPolicy {
	if p := h.pol.Load(); p != nil {
		return p
	}
	p := &hostPolicy{}
	p.breaker.Init(s.breaker)
	p.budget.Init(s.budget)
	if s.newRater != nil {
		p.rater = s.newRater(h.Key(), s.limits(h))
		p.tellCeiling() // none yet
	}
	if !h.pol.CompareAndSwap(nil, p) {
		return h.pol.Load()
	}
	if r, ok := p.rater.(adaptive.CurrentRater); ok {
		if rate := r.Rate(); rate > 0 {
			h.bucket.SetRate(time.Now(), rate)
		}
	}
	// A cold start must not let the static cap send a wave the controller
	// never asked for.
	s.followConcurrency(h, p)
	return p
}

func (s *localStore) limits(h *Host) Limits { return s.reg.rule(h.rule()).limits }

// followConcurrency moves the host's in-flight cap to its Rater's, when the
// Rater has one (adaptive.ConcurrencyRater), within the host's
// Limits.Concurrency.
func (s *localStore) followConcurrency(h *Host, p *hostPolicy) {
	if c, ok := p.rater.(adaptive.ConcurrencyRater); ok {
		n := min(c.Concurrency(), s.limits(h).Concurrency)
		if n > 0 && n != h.gate.Limit() {
			h.gate.SetLimit(n)
		}
	}
}

// A request waiting for a token holds a reservation of one only when it
// comes within about one token interval (1/rate, kept between minPoll and
// maxHold). A longer wait is slept off until about one interval before the
// token is due, and the bucket read again then. A reservation is made at the
// rate of the moment: held long while the rate changes (an adaptive ramp, a
// cut, a cold start), it keeps the request to the old rate. Measured on the
// politeness scenarios (TestTune, 20 variants), holding up to 250 ms whatever
// the rate doubled the 429s on a steady host (1.84 % against 0.88 %), and
// on the concurrency-capped one cost 11 points of goodput.
const (
	minPoll = 10 * time.Millisecond
	maxHold = 250 * time.Millisecond
)

// Unblock implements Unblocker.
func (s *localStore) Unblock(h *Host) bool {
	return s.policy(h).blocked.Swap(nil) != nil
}

// NoteDemand implements DemandNoter: the note counts as a wait for the
// rate, as a token reserved or refused in Admit does (see pressedAt).
func (s *localStore) NoteDemand(h *Host, now time.Time) {
	s.policy(h).ratePressed.Store(nanos.Stamp(now))
}

// Admit implements Store.
func (s *localStore) Admit(h *Host, q Query) Admission {
	p := s.policy(h)
	now := q.Now
	if r := p.blocked.Load(); r != nil && !s.keepBlocked {
		return Admission{Err: &BlockedError{Host: h.Key(), Reason: *r}}
	}
	if d, why := p.paused(now); d > 0 {
		return Admission{Wait: d, Poll: d, Reason: why}
	}
	// The breaker is asked without taking its probe, which goes to the
	// request that gets a token (probe taken, token waited for, and the
	// probe's own next ask would find the breaker half-open and refuse it).
	if u := p.breaker.OpenUntil(now); !u.IsZero() {
		return s.breakerOpen(h, now, u)
	}
	// Spare: neither the rate nor the in-flight cap held the request back
	// (its token was waiting, and it did not take the host's last slot).
	// The cap counts: a controller's rate sets it (Concurrency), so a rate
	// whose cap binds is pressed too. Read only for a rater.
	// A request put off for the rate (here, or by a scheduler asking
	// Ready) within the last two token intervals also counts: a scheduler
	// sends exactly when the token is due, so its requests find the
	// bucket full.
	spare := p.rater != nil && h.bucket.Full(now) && h.gate.InFlight() < h.gate.Limit() &&
		!p.pressedAt(now, h.bucket.Rate())
	n := q.cost()
	if h.bucket.AllowN(now, n) {
		adm := s.grant(h, p, q, now)
		adm.Spare = spare && adm.Granted
		return adm
	}
	r, err := h.bucket.ReserveN(now, n)
	if err != nil {
		return Admission{Reason: ReasonRate, Err: fmt.Errorf("polite: host %q: %w", h.Key(), err)}
	}
	d := r.DelayFrom(now)
	p.ratePressed.Store(nanos.Stamp(now))
	// Hold the reservation if the tokens come within about one request's
	// worth of token intervals at the rate of now (n of them for a cost
	// of n, or a heavy request would never see its tokens together while
	// light ones take each as it comes); otherwise come back about that
	// long before they are due.
	poll := maxHold
	if rate := h.bucket.Rate(); rate > 0 {
		poll = max(time.Duration(min(float64(n)*1e9/rate, float64(maxHold))), minPoll)
	}
	if d <= min(poll, q.MaxWait) {
		return s.grant(h, p, q, now.Add(d))
	}
	r.CancelAt(now)
	return Admission{Wait: d, Poll: min(max(d-poll, minPoll), maxHold), Reason: ReasonRate}
}

// grant completes an admission whose token is taken (or reserved for at):
// the breaker lets it through (as its probe, when half-open), and a first
// grant earns the host's retry budget the request's share.
func (s *localStore) grant(h *Host, p *hostPolicy, q Query, at time.Time) Admission {
	if err := p.breaker.Allow(q.Now); err != nil {
		h.bucket.Forgive(q.Now, q.cost()) // another request took the probe meanwhile
		var oe *breaker.OpenError
		errors.As(err, &oe)
		return s.breakerOpen(h, q.Now, oe.Until)
	}
	if q.First {
		// Deposits are folded in every depositBatch, or before a
		// withdrawal: the budget's lock (and its decay's exp) on every
		// request serialized a hot host's requests across cores.
		if p.deposits.Add(1) >= depositBatch {
			p.flushDeposits(q.Now)
		}
	}
	return Admission{Granted: true, At: at}
}

func (s *localStore) breakerOpen(h *Host, now, until time.Time) Admission {
	err := &breaker.OpenError{Until: until}
	d := until.Sub(now)
	return Admission{Reason: ReasonBreaker, Wait: d, Poll: d, Err: fmt.Errorf("polite: host %q: %w", h.Key(), err)}
}

// Keep implements Store. A throttle heard after the token was reserved
// means it was granted at the rate of before: it is given back (or every
// waiter would take one per throttle and sink the bucket into debt) and
// the request waits again at the rate of now, behind the pause if there is
// one. A token taken after the throttle was granted at the rate of now: it
// stands, or giving it back to a drained bucket would lose it.
func (s *localStore) Keep(h *Host, now, reserved time.Time, cost int) bool {
	p := s.policy(h)
	if d, _ := p.paused(now); d > 0 || p.throttledSince(reserved) {
		h.bucket.Forgive(now, max(cost, 1))
		return false
	}
	return true
}

// Release implements Store: the local store leases nothing.
func (s *localStore) Release(*Host, uint64) {}

// Cancel implements Store.
func (s *localStore) Cancel(h *Host, now time.Time, cost int) { h.bucket.Forgive(now, max(cost, 1)) }

// Report implements Store.
func (s *localStore) Report(h *Host, rep Report) Verdict {
	r := &rep
	p := s.policy(h)
	now := r.Now
	rd := ReadReport(rep, ReadOptions{Backoff: s.backoff, MaxRetryAfter: s.maxAfter, MaxSpacing: s.maxSpacing,
		Adaptive: p.rater != nil})
	v := Verdict{Advertised: rd.Advertised, GiveUp: rd.GiveUp}
	if rd.Throttle {
		// Answers to requests sent before the last throttle was heard are
		// the same congestion event (a wave of in-flight requests meeting
		// one overshoot): they may lengthen the pause, never shorten it, but
		// they count once against the breaker, not once each.
		rd.Failure = !p.throttleWave(r.Sent, now)
		if p.pause(now, rd.Pause, rd.PauseWhy) {
			v.Pause, v.PauseWhy = rd.Pause, rd.PauseWhy
		}
		h.bucket.Drain(drainAt(now, p, h.bucket.Rate()))
	}
	if rd.Block != "" {
		b := rd.Block
		if p.blocked.CompareAndSwap(nil, &b) {
			v.Blocked = true
		}
	}
	if rd.QuotaPause > 0 && p.pause(now, rd.QuotaPause, ReasonRateLimit) {
		v.QuotaPause = rd.QuotaPause
	}
	if rd.Ceiling > 0 {
		if b := math.Float64bits(rd.Ceiling); p.ceiling.Swap(b) != b {
			p.tellCeiling()
		}
		from := h.bucket.Rate()
		if rate, changed := s.followCeiling(now, h, p); changed {
			v.QuotaRate, v.RateFrom = rate, from
		}
	}
	switch {
	case rd.Failure:
		v.Breaker = p.breaker.Record(now, false)
	case rd.Success:
		v.Breaker = p.breaker.Record(now, true)
	}
	if p.rater != nil {
		var from float64
		if v.Rate, from = s.adapt(h, p, r, v.Advertised); v.Rate > 0 {
			if v.QuotaRate == 0 {
				v.RateFrom = from
			}
			v.Capacity, v.CapacityErr, v.Measured, v.Phase = estimate(p.rater)
		}
	}
	if rd.Retry {
		p.flushDeposits(now)
		v.Retry = p.budget.Withdraw(now)
	}
	return v
}

// kinds maps outcomes to what a rate controller hears. A client error (404,
// 410, ...) is the host answering at its pace, so it counts as served: a
// crawl of dead links would otherwise never leave its starting rate (issue
// 16). A soft block says nothing about load.
var kinds = [...]adaptive.Kind{
	OK: adaptive.OK, Throttled: adaptive.Throttle, Overloaded: adaptive.Overload, Blocked: adaptive.Neutral,
	ServerError: adaptive.Failure, NetworkError: adaptive.Failure, ClientError: adaptive.OK, Canceled: adaptive.Neutral,
}

// adapt feeds an attempt to the host's Rater and applies the rate it
// answers, under the host's ceilings. It returns the new rate, 0 if the
// rate did not change, and the rate before.
func (s *localStore) adapt(h *Host, p *hostPolicy, r *Report, advertised time.Duration) (rate, from float64) {
	sig := SignalOf(*r, advertised)
	rate = min(p.rater.Observe(r.Now, sig), p.maxRate())
	s.followConcurrency(h, p)
	cur := h.bucket.Rate()
	if rate <= 0 || (rate > cur*0.98 && rate < cur*1.02) {
		return 0, cur // SetRate allocates: skip changes under 2 %
	}
	h.bucket.SetRate(r.Now, rate)
	return rate, cur
}

// estimate returns what a Rater knows of its host: the capacity estimate,
// how far off it may be, whether it was measured under congestion, and its
// phase, as far as it says (adaptive.CapacityRater, CapacityErrorRater,
// PhaseRater; adaptive.Controller says all four).
func estimate(r adaptive.Rater) (capacity, capErr float64, measured bool, phase string) {
	if c, ok := r.(adaptive.CapacityRater); ok {
		capacity, measured = c.Capacity()
	}
	if c, ok := r.(adaptive.CapacityErrorRater); ok {
		capErr = c.CapacityError()
	}
	if ph, ok := r.(adaptive.PhaseRater); ok {
		phase = ph.Phase()
	}
	return capacity, capErr, measured, phase
}

// followCeiling keeps the host's rate under its ceilings (robots.txt's
// Crawl-delay, RateLimit fields) as they change. Without a Rater the rate is
// the host's Limits.Rate under them, so it also comes back up when a
// ceiling loosens; a Rater's rate is only cut here, and rises through adapt.
// A rise under 2 % is skipped: SetRate allocates.
func (s *localStore) followCeiling(now time.Time, h *Host, p *hostPolicy) (rate float64, changed bool) {
	cur := h.bucket.Rate()
	rate = min(cur, p.maxRate())
	if p.rater == nil {
		rate = min(s.limits(h).Rate, p.maxRate())
	}
	if rate == cur || (rate > cur && rate < cur*1.02) {
		return cur, false // cuts are exact; rises under 2 % wait
	}
	h.bucket.SetRate(now, rate)
	return rate, true
}

// SetRate implements Store.
func (s *localStore) SetRate(h *Host, now time.Time, rate float64) float64 {
	p := s.policy(h)
	rate = min(rate, p.maxRate())
	if rate > 0 && rate != h.bucket.Rate() {
		h.bucket.SetRate(now, rate)
	}
	return h.bucket.Rate()
}

// SetCeiling implements Store. A Crawl-delay ceiling also spaces requests
// evenly (burst 1), so consecutive requests are at least the delay apart;
// cleared, the host gets its own shape back.
func (s *localStore) SetCeiling(h *Host, now time.Time, why Reason, rate float64) (float64, bool) {
	p := s.policy(h)
	bits := math.Float64bits(max(rate, 0))
	if why != ReasonCrawlDelay {
		if rate > 0 {
			bits = math.Float64bits(max(rate, MinCeiling(s.maxSpacing)))
		}
		if p.ceiling.Swap(bits) != bits {
			p.tellCeiling()
		}
		return s.followCeiling(now, h, p)
	}
	if rate <= 0 {
		if p.robotsCeil.Swap(0) == 0 {
			return h.bucket.Rate(), false
		}
		p.tellCeiling()
		l := s.limits(h)
		h.bucket.SetSmooth(now, l.Smooth, l.Burst)
		return s.followCeiling(now, h, p)
	}
	if p.robotsCeil.Swap(bits) != bits {
		p.tellCeiling()
	}
	if !h.bucket.Smooth() {
		h.bucket.SetSmooth(now, true, 1)
	}
	s.followCeiling(now, h, p)
	return h.bucket.Rate(), true
}

// State implements Store.
func (s *localStore) State(h *Host, now time.Time) HostState {
	st := HostState{Key: h.Key(), Rate: h.bucket.Rate(), Tokens: h.bucket.Tokens(now),
		InFlight: h.gate.InFlight(), Concurrency: h.gate.Limit()}
	if ri := h.rule(); ri >= 0 {
		st.Rule = s.reg.pats[ri]
	}
	if st.Tokens < 1 && st.Rate > 0 {
		if at := h.bucket.NextAt(now); at.After(now) {
			st.NextToken = at
		}
	}
	p := h.pol.Load()
	if p == nil {
		var b retry.Budget // untouched: full
		b.Init(s.budget)
		st.RetryBudget = b.Tokens(now)
		return st
	}
	if c := p.maxRate(); !math.IsInf(c, 1) {
		st.Ceiling, st.CeilingWhy = c, ReasonRateLimit
		if math.Float64frombits(p.robotsCeil.Load()) == c {
			st.CeilingWhy = ReasonCrawlDelay
		}
	}
	if d, why := p.paused(now); d > 0 {
		st.PausedUntil, st.PauseWhy = now.Add(d), why
	}
	st.Breaker = p.breaker.State(now)
	st.BreakerUntil = p.breaker.OpenUntil(now)
	if b := p.blocked.Load(); b != nil {
		st.Blocked = *b
	}
	st.Capacity, st.CapacityErr, st.Measured, _ = estimate(p.rater)
	p.flushDeposits(now) // the grants it has earned, as a retry would count them
	st.RetryBudget = p.budget.Tokens(now)
	return st
}

// hasQuotaFields reports whether h has any RateLimit or X-RateLimit field:
// one pass over a handful of keys, cheaper than the parser's lookups on the
// common response that has none.
func hasQuotaFields(h http.Header) bool {
	for k := range h {
		if len(k) >= 9 && (strings.EqualFold(k[:9], "ratelimit") || len(k) >= 11 && strings.EqualFold(k[:11], "x-ratelimit")) {
			return true
		}
	}
	return false
}
