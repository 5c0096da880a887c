package bucket

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"time"
)

// Inf is the rate that admits everything: a bucket at Inf never refuses and
// never records a debt.
const Inf = math.MaxFloat64

// MinRate is the smallest positive rate a Bucket keeps exactly; lower
// positive rates are raised to it (one token per about 11.6 days).
const MinRate = 1e-6

// ErrExceedsBurst is returned (wrapped) when a single request costs more
// tokens than the bucket can ever hold: waiting would never help.
var ErrExceedsBurst = errors.New("bucket: cost exceeds burst")

// ErrZeroRate is returned (wrapped) when a bucket at rate zero is asked to
// reserve or wait: no token will ever arrive.
var ErrZeroRate = errors.New("bucket: rate is zero")

// epoch anchors the bucket's integer clock. Times are converted with
// now.Sub(epoch), which uses the monotonic reading when both have one, so
// wall-clock jumps do not mint or confiscate tokens.
var epoch = time.Now()

// frozen marks a bucket whose parameters are being replaced; see update.
const frozen = math.MinInt64

// minNow and maxNow bound the instants the arithmetic sees: times further
// from epoch than about 73 years either way (the zero time.Time, a year
// 9999) are read as the bound. Unclamped, such a time saturated to
// math.MinInt64 or math.MaxInt64: the first is the very value that marks a
// setter at work, and a setter given the zero time published it as the
// state (frozen for good, every take spinning); from the second a take's
// end wrapped around to a state far in the past.
const (
	minNow = -maxSpan
	maxNow = maxSpan
)

// longAgo is the state of a new bucket: full since before any instant a
// caller can pass (times before epoch are negative, and no lower than minNow).
const longAgo = -(int64(1) << 62)

// maxSpan bounds every duration the arithmetic handles (about 73 years), so
// sums of two spans never overflow an int64.
const maxSpan = int64(1) << 61

// params are a bucket's settings, immutable once published. Several buckets
// may share one params value.
type params struct {
	rate   float64 // tokens per second as set; Inf admits all, 0 admits none
	burst  int     // capacity in tokens; 1 in smooth mode
	smooth bool    // evenly spaced: a request is admitted only when no debt remains
	pacing bool    // a client paces itself by it: lateness forgiven (see lateSlack)
	cost   int64   // ns per token (ceil of 1e9/rate); 0 when rate is Inf
	tau    int64   // burst*cost: the span a full bucket covers
	maxN   int64   // most tokens whose span fits in maxSpan: costOf needs no division
}

// In a pacing bucket (Settings.Pacing), a taker that comes for its token a
// little after the bucket filled (a timer fired late, a goroutine waited
// for a CPU) keeps its place: the bucket counts the take from the instant
// it filled, so the lateness is not lost. Without that a caller pacing
// itself at rate r with burst 1 gets r/(1 + r×lateness): 95 req/s for 100 under a 0.5 ms hiccup, live.
// What is forgiven is at most lateSlack and a tenth of a token, so no two
// requests come closer than 0.9/r, and no span sees more than burst plus a
// tenth of a token beyond r × its length. Smooth mode (Crawl-delay,
// --smooth) forgives nothing: its spacing is a promise. Nor does a bucket
// that is not pacing: one that judges others' requests (the guard's
// arithmetic is this bucket's) cannot tell lateness from eagerness.
const lateSlack = 2 * time.Millisecond

func newParams(rate float64, burst int, smooth, pacing bool) *params {
	if math.IsNaN(rate) || rate < 0 {
		rate = 0
	}
	if burst < 0 {
		burst = 0
	}
	if smooth {
		burst = 1
	}
	p := &params{rate: rate, burst: burst, smooth: smooth, pacing: pacing, maxN: math.MaxInt64}
	switch {
	case rate >= Inf:
		p.rate = Inf
	case rate == 0:
	default:
		if rate < MinRate {
			rate = MinRate
		}
		// Ceil: a bucket may run a hair slow, never fast. At 3 req/s the cost is
		// 333,333,334 ns, so an hour admits 10,800 tokens after the first burst.
		p.cost = int64(math.Ceil(1e9 / rate))
		if p.cost < 1 {
			p.cost = 1
		}
		p.tau = mulSat(int64(burst), p.cost)
		p.maxN = maxSpan / p.cost
	}
	return p
}

// costOf is the span n tokens cover, saturated at maxSpan as mulSat would,
// without its division: a 64-bit divide in the window between a take's load
// and its compare-and-swap cost a tenth of the take on two contending cores.
func (p *params) costOf(n int) int64 {
	switch {
	case n <= 0:
		return 0
	case int64(n) > p.maxN:
		return maxSpan
	}
	return int64(n) * p.cost
}

func mulSat(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > maxSpan/b {
		return maxSpan
	}
	return a * b
}

// Bucket is a token bucket with lazy, greedy refill: tokens accrue
// continuously at Rate up to Burst, and nothing runs in the background.
//
// The state is the two numbers of the textbook bucket, tokens and the instant
// they were counted, folded into one: the instant the bucket will be full
// again ("full"). At time now the bucket holds
//
//	tokens = burst - (full - now) / cost    (burst when full <= now)
//
// where cost = ceil(1e9/rate) nanoseconds per token. Taking n tokens moves full
// to max(full, now) + n*cost, and is allowed when the result lies no further
// than burst*cost past now. All of it is integer nanoseconds, so long runs do
// not drift: the only rounding is the ceil in cost, at most 1 ns per token, and
// it errs on the slow side. This is the GCRA formulation; the same arithmetic
// runs in the Redis script of fleet mode, in microseconds there.
//
// The zero Bucket admits nothing; use New or NewSmooth. A Bucket is safe for
// concurrent use and lock-free: Allow, Reserve and Wait are one
// compare-and-swap on the state; setters freeze the state while they publish.
// A Bucket is 16 bytes plus its settings, which buckets created with the same
// arguments by Init may share.
type Bucket struct {
	full atomic.Int64           // ns since epoch when the bucket is full again; frozen while a setter runs
	p    atomic.Pointer[params] // current settings
}

// New returns a bucket that admits rate tokens per second with bursts of up
// to burst tokens, starting full. Rate Inf admits everything; rate 0 admits
// nothing.
func New(rate float64, burst int) *Bucket {
	b := &Bucket{}
	b.full.Store(longAgo)
	b.p.Store(newParams(rate, burst, false, false))
	return b
}

// NewSmooth returns a bucket in smooth mode: burst 1, requests spaced evenly
// 1/rate apart (a request of cost n is followed by a gap of n/rate). It is
// for hosts that must not see bursts.
func NewSmooth(rate float64) *Bucket {
	b := &Bucket{}
	b.full.Store(longAgo)
	b.p.Store(newParams(rate, 1, true, false))
	return b
}

// Settings are a rate, a burst and a mode, prepared once and shared by any
// number of buckets: a registry of a million hosts keeps one per rule rather
// than one per host. The zero Settings admit nothing.
type Settings struct{ p *params }

// NewSettings prepares settings for Init. Smooth forces burst 1.
func NewSettings(rate float64, burst int, smooth bool) Settings {
	return Settings{newParams(rate, burst, smooth, false)}
}

// Pacing returns s for a bucket a client paces its own requests by (the
// Transport's per-host buckets): a take that comes up to 2 ms, and a tenth
// of a token, after its token was due keeps its place, so that the
// lateness of timers and goroutines does not lower the rate. It never lets
// more than a tenth of a token past the burst over any span.
func (s Settings) Pacing() Settings {
	if s.p == nil {
		return s
	}
	return Settings{newParams(s.p.rate, s.p.burst, s.p.smooth, true)}
}

// Init makes b a full bucket with settings s, for buckets embedded by value.
// It must not race with any other use of b.
func (b *Bucket) Init(s Settings) {
	b.full.Store(longAgo)
	b.p.Store(s.p)
}

// Full reports whether the bucket has been full since at least since: no
// token has been taken from it after that instant (minus the time a full
// refill takes). A registry evicts such a bucket without granting anything:
// a new bucket would start full too.
func (b *Bucket) Full(since time.Time) bool {
	f, p := b.snapshot()
	if p == nil || p.cost == 0 {
		return true
	}
	return f <= nanos(since)
}

func nanos(t time.Time) int64 {
	return min(max(int64(t.Sub(epoch)), minNow), maxNow)
}

func fromNanos(ns int64) time.Time { return epoch.Add(time.Duration(ns)) }

// load returns the state and the params. A setter may publish between the
// two loads, pairing an old state with new params: writers need no more,
// as their CompareAndSwap of the state then fails and they load again.
// Readers that act on the pair without a CAS use snapshot.
func (b *Bucket) load() (int64, *params) {
	for {
		f := b.full.Load()
		if f != frozen {
			return f, b.p.Load()
		}
		runtime.Gosched() // a setter is between freeze and publish: a few ns
	}
}

// snapshot is load for readers: a pair no setter came between.
func (b *Bucket) snapshot() (int64, *params) {
	for {
		f, p := b.load()
		if b.full.Load() == f {
			return f, p
		}
	}
}

// Rate returns the current rate in tokens per second.
func (b *Bucket) Rate() float64 {
	if p := b.p.Load(); p != nil {
		return p.rate
	}
	return 0
}

// Burst returns the current capacity in tokens.
func (b *Bucket) Burst() int {
	if p := b.p.Load(); p != nil {
		return p.burst
	}
	return 0
}

// Smooth reports whether the bucket is in smooth mode.
func (b *Bucket) Smooth() bool {
	p := b.p.Load()
	return p != nil && p.smooth
}

// Tokens returns the tokens available at now. It is negative when
// reservations have run the bucket into debt.
func (b *Bucket) Tokens(now time.Time) float64 {
	f, p := b.snapshot()
	return tokensAt(f, p, nanos(now))
}

func tokensAt(f int64, p *params, now int64) float64 {
	switch {
	case p == nil || p.rate == 0:
		return 0
	case p.cost == 0:
		return float64(p.burst)
	case f <= now:
		return float64(p.burst)
	}
	return float64(p.burst) - float64(f-now)/float64(p.cost)
}

// NextAt returns the instant a take of one token would first succeed: now
// when it would already, the zero Time when never (rate 0). It is the
// take's own integer arithmetic, so a caller that comes back at NextAt
// gets its token; one computed from Tokens and the rate in floating point
// came back a few nanoseconds early, was refused, and lost a whole poll:
// a job at 19.9/s sent at half that (issue 33).
func (b *Bucket) NextAt(now time.Time) time.Time {
	f, p := b.snapshot()
	switch {
	case p == nil || p.rate == 0:
		return time.Time{}
	case p.cost == 0:
		return now
	}
	n := nanos(now)
	limit := p.tau
	if p.smooth {
		limit = p.cost
	}
	wait := max(f, n) + p.cost - limit - n
	if wait <= 0 {
		return now
	}
	return fromNanos(n + wait)
}

// Allow reports whether one token is available now and takes it if so.
func (b *Bucket) Allow() bool { return b.AllowN(time.Now(), 1) }

// AllowN reports whether n tokens are available at now and takes them if so.
// It never waits. A cost above the burst is never allowed.
func (b *Bucket) AllowN(now time.Time, n int) bool {
	_, ok, _ := b.takeN(nanos(now), n, 0)
	return ok
}

// takeN is the whole algorithm: it moves full forward by n tokens if they are
// available within maxWait of now, and returns the instant they are (act).
// ok is false when they are not; err says why waiting cannot help.
func (b *Bucket) takeN(now int64, n int, maxWait int64) (act int64, ok bool, err error) {
	if n <= 0 {
		return now, true, nil
	}
	for {
		f := b.full.Load() // load, by hand: it is too big to inline
		if f == frozen {
			runtime.Gosched()
			continue
		}
		p := b.p.Load()
		switch {
		case p == nil || p.rate == 0:
			return 0, false, ErrZeroRate
		case p.cost == 0:
			return now, true, nil
		case n > p.burst && !p.smooth:
			return 0, false, fmt.Errorf("%w: cost %d, burst %d", ErrExceedsBurst, n, p.burst)
		}
		c := p.costOf(n)
		limit := p.tau
		if p.smooth {
			limit = c // admitted once the previous debt is paid
		}
		start := max(f, now)
		if p.pacing && !p.smooth && f < now && now-f <= min(int64(lateSlack), p.cost/10) {
			start = f // a taker late by a scheduler's hiccup keeps its place
		}
		next := start + c
		if next > now+maxSpan {
			return 0, false, nil // debt beyond any sane horizon
		}
		wait := next - limit - now // how long until next-now fits in limit
		if wait < 0 {
			wait = 0
		}
		if wait > maxWait {
			return now + wait, false, nil
		}
		if b.full.CompareAndSwap(f, next) {
			return now + wait, true, nil
		}
		_ = backoff()
	}
}

// backoff follows a take's lost compare-and-swap: another core took from the
// bucket in between. Retrying at once pulls the state's cache line away from
// the winner in the middle of its next take, and two cores then trade the
// line on every take: 23-28 ns a take with two cores on one bucket here, three
// times one core's 7-9. Waiting a few hundred nanoseconds lets the winner's
// next takes hit its own cache: 10-11 ns a take. The wait is random, 256 to
// 1,279 steps of a loop (about 85 to 430 ns), so two losers do not return in
// step and collide again: a fixed 1,024 steps did, on every try, and ran as
// slow as no wait at all. A take loses a race only to another take of the
// same bucket in the same few nanoseconds, so on a request path of
// microseconds the wait is rare, and it never changes what is granted.
//
// It returns what its loop computed, so that the compiler must keep the
// loop; callers drop it.
//
//go:noinline
func backoff() int {
	x := 0
	for i := range 256 + rand.IntN(1024) {
		x ^= i
	}
	return x
}

// Reservation holds tokens taken ahead of time. It is a small value; the zero
// Reservation is not OK and cancelling it does nothing.
type Reservation struct {
	b   *Bucket
	n   int
	act int64 // ns since epoch when the tokens are there
	ok  bool
}

// OK reports whether the reservation holds tokens.
func (r Reservation) OK() bool { return r.ok }

// TimeToAct returns the instant the reserved tokens are available.
func (r Reservation) TimeToAct() time.Time { return fromNanos(r.act) }

// DelayFrom returns how long after now the caller must wait before acting.
func (r Reservation) DelayFrom(now time.Time) time.Duration {
	if !r.ok {
		return time.Duration(math.MaxInt64)
	}
	d := r.act - nanos(now)
	if d < 0 {
		return 0
	}
	return time.Duration(d)
}

// Cancel is CancelAt(time.Now()).
func (r Reservation) Cancel() { r.CancelAt(time.Now()) }

// CancelAt gives the reservation's tokens back if their time has not yet
// come at now; once it has, the tokens count as used and nothing changes.
// Cancelling twice gives back twice: cancel a reservation once.
func (r Reservation) CancelAt(now time.Time) {
	if !r.ok || r.b == nil || r.n <= 0 || nanos(now) >= r.act {
		return
	}
	r.b.giveBack(r.n)
}

// giveBack moves the state back by n tokens at the current cost, no
// further than longAgo: after a cut of the rate the tokens given back are
// dearer than when they were taken, and thousands of cancels at a cost of
// days each once wrapped the state around to a debt of centuries.
func (b *Bucket) giveBack(n int) {
	for {
		f, p := b.load()
		if p == nil || p.cost == 0 {
			return
		}
		next := max(f-p.costOf(n), longAgo)
		if b.full.CompareAndSwap(f, next) {
			return
		}
	}
}

// Reserve is ReserveN(time.Now(), 1).
func (b *Bucket) Reserve() (Reservation, error) { return b.ReserveN(time.Now(), 1) }

// ReserveN takes n tokens now, paid for by waiting: the reservation says when
// they are available. It fails only when waiting cannot help: a cost above the
// burst, or a rate of zero.
func (b *Bucket) ReserveN(now time.Time, n int) (Reservation, error) {
	t := nanos(now)
	act, ok, err := b.takeN(t, n, maxSpan)
	if err != nil {
		return Reservation{}, err
	}
	if !ok {
		return Reservation{}, fmt.Errorf("bucket: reservation of %d tokens lies beyond any horizon", n)
	}
	return Reservation{b: b, n: n, act: act, ok: true}, nil
}

// Wait is WaitN(ctx, 1).
func (b *Bucket) Wait(ctx context.Context) error { return b.WaitN(ctx, 1) }

// WaitN blocks until n tokens are available and takes them. It returns
// promptly with ctx's error when ctx ends first, and gives the tokens back.
// When ctx has a deadline that falls before the tokens would be there, it
// returns at once with an error wrapping context.DeadlineExceeded and takes
// nothing. It does not allocate unless it has to sleep.
func (b *Bucket) WaitN(ctx context.Context, n int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := time.Now()
	t := nanos(now)
	maxWait := maxSpan
	if dl, ok := ctx.Deadline(); ok {
		maxWait = max(0, nanos(dl)-t)
	}
	act, ok, err := b.takeN(t, n, maxWait)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("bucket: wait of %v for %d tokens would outlast the deadline: %w",
			time.Duration(act-t), n, context.DeadlineExceeded)
	}
	if act <= t {
		return nil
	}
	timer := time.NewTimer(time.Duration(act - t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		Reservation{b: b, n: n, act: act, ok: true}.CancelAt(time.Now())
		return ctx.Err()
	}
}

// Forgive gives back n tokens that were taken but not used, as far as the
// bucket is in debt: it moves the bucket back toward empty, never above
// empty, so it cannot undo a Drain. A caller that took a token and then was
// told to stand down (a host paused meanwhile) forgives it, or waiters that
// loop would run the bucket ever deeper into debt.
func (b *Bucket) Forgive(now time.Time, n int) {
	t := nanos(now)
	for {
		f, p := b.load()
		if p == nil || p.cost == 0 || n <= 0 {
			return
		}
		empty := t + p.tau
		if f <= empty {
			return
		}
		next := max(f-p.costOf(n), empty)
		if b.full.CompareAndSwap(f, next) {
			return
		}
	}
}

// Drain empties the bucket at now, as a host's 429 asks: the next token
// arrives 1/rate later. Outstanding debt is kept, never forgiven.
func (b *Bucket) Drain(now time.Time) {
	t := nanos(now)
	for {
		f, p := b.load()
		if p == nil || p.cost == 0 {
			return
		}
		next := max(f, t+p.tau)
		if next == f || b.full.CompareAndSwap(f, next) {
			return
		}
	}
}

// SetRate changes the rate at now. Tokens accrued so far are kept exactly
// (neither lost nor invented), and refill continues at the new rate. Setting
// rate 0 empties the bucket: raising it later starts from empty.
func (b *Bucket) SetRate(now time.Time, rate float64) {
	b.update(now, func(old *params) *params {
		if old == nil {
			return newParams(rate, 0, false, false)
		}
		if old.rate == rate {
			return nil
		}
		return newParams(rate, old.burst, old.smooth, old.pacing)
	})
}

// SetBurst changes the capacity at now, keeping the tokens held (capped at
// the new burst). It leaves smooth mode.
func (b *Bucket) SetBurst(now time.Time, burst int) {
	b.update(now, func(old *params) *params {
		if old == nil {
			return newParams(0, burst, false, false)
		}
		if old.burst == burst && !old.smooth {
			return nil
		}
		return newParams(old.rate, burst, false, old.pacing)
	})
}

// SetSmooth switches smooth mode on (burst 1, evenly spaced) or off, with
// the given burst, at now.
func (b *Bucket) SetSmooth(now time.Time, smooth bool, burst int) {
	b.update(now, func(old *params) *params {
		rate, pacing := 0.0, false
		if old != nil {
			rate, pacing = old.rate, old.pacing
		}
		return newParams(rate, burst, smooth, pacing)
	})
}

// update publishes the params change returns (nil: no change), converting the
// state so the token count at now is unchanged. It freezes the state word
// first, which makes the setter exclusive and keeps any take from committing
// against the old settings while the new ones are published; takes spin for
// the few nanoseconds this lasts. (A take that read the state just before the
// freeze can still commit afterwards only if the converted state is the very
// same number, in which case the two settings agree on it.)
func (b *Bucket) update(now time.Time, change func(old *params) *params) {
	t := nanos(now)
	var f int64
	for {
		f = b.full.Load()
		if f != frozen && b.full.CompareAndSwap(f, frozen) {
			break
		}
		runtime.Gosched()
	}
	old := b.p.Load()
	np := change(old)
	if np == nil {
		b.full.Store(f)
		return
	}
	var next int64
	switch {
	case np.cost == 0:
		// Rate Inf admits all and rate 0 none: the state is unused until the
		// rate changes again, and a rise from 0 starts empty (tokensAt is 0).
		next = t
	default:
		tok := tokensAt(f, old, t) // 0 for a nil or zero-rate old
		if tok >= float64(np.burst) {
			next = t
		} else {
			debt := (float64(np.burst) - tok) * float64(np.cost)
			if debt > float64(maxSpan) {
				debt = float64(maxSpan)
			}
			next = t + int64(math.Round(debt))
			if tok < 0 && old != nil && old.cost > 0 {
				// Tokens reserved ahead (negative tokens) were granted at
				// the old rate, and their requests go at the times it gave
				// them: the debt ends no later than it would have, and the
				// new rate runs from there. Repaid at a cut rate instead,
				// a few reservations made at a high rate would stall the
				// bucket for many intervals of the new one.
				end := f - old.tau // the instant the old debt is paid
				next = min(next, end+np.tau)
			}
		}
	}
	b.p.Store(np)
	b.full.Store(next)
}
