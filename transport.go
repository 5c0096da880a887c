package polite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polite-go/polite/adaptive"
	"github.com/polite-go/polite/breaker"
	"github.com/polite-go/polite/bucket"
	"github.com/polite-go/polite/inflight"
	"github.com/polite-go/polite/retry"
	"github.com/polite-go/polite/robots"
)

// Defaults for Transport fields left zero.
const (
	DefaultRetries       = 5
	DefaultMaxRetryAfter = 10 * time.Minute
)

var _ http.RoundTripper = (*Transport)(nil)

// Transport is an http.RoundTripper that treats every host politely: each
// destination gets its own token bucket, in-flight cap, pause, breaker and
// retry budget (see the package doc for the order of the gates).
//
// The zero Transport works: it sends through http.DefaultTransport with
// DefaultRate, DefaultBurst and DefaultConcurrency per host and DefaultRetries
// retries. Fields are read at first use and must not change afterwards. A
// Transport is safe for concurrent use and should be reused: per-host state
// lives in it.
type Transport struct {
	// Base sends the requests. If nil, http.DefaultTransport is used.
	Base http.RoundTripper

	// Limits are every host's rate, burst and in-flight cap; zero fields
	// take the package defaults. Rules override them by host pattern; a
	// malformed pattern fails every request with an error that names it.
	Limits Limits
	Rules  []Rule
	// Key says what the per-host state is keyed by. The zero value is
	// KeyHost.
	Key KeyBy
	// IdleTimeout is how long a host stays idle before its state may be
	// dropped. If zero, DefaultIdleTimeout is used.
	IdleTimeout time.Duration
	// MaxInFlight caps requests in flight over all hosts. If zero, there is
	// no global cap.
	MaxInFlight int

	// Retries is how many times a failed attempt is retried (after the
	// first). If zero, DefaultRetries is used; if negative, none.
	Retries int
	// Backoff is the delay schedule between retries when the host names no
	// Retry-After. The zero value is full jitter from 500 ms to 60 s.
	Backoff retry.Backoff
	// MaxRetryAfter is the longest Retry-After a request waits for. A longer
	// one is never shortened: the request gives up and returns the response,
	// and the host stays paused until the instant the server named, during
	// which requests to it fail fast with ErrPaused. If zero,
	// DefaultMaxRetryAfter is used.
	MaxRetryAfter time.Duration
	// RetryNonIdempotent allows retrying requests whose method is not
	// idempotent (POST, PATCH) when their body can be replayed (GetBody set,
	// or no body). By default only GET, HEAD, OPTIONS, TRACE, PUT and DELETE,
	// and requests with an Idempotency-Key header, are retried.
	RetryNonIdempotent bool
	// Budget is each host's retry budget, and GlobalBudget the one over all
	// hosts: a retry needs a token from both. The zero values allow retries
	// up to 20 % of recent requests plus 1 per second.
	Budget       retry.BudgetConfig
	GlobalBudget retry.BudgetConfig

	// Breaker configures each host's circuit breaker. The zero value opens
	// after 5 consecutive failures within 30 s.
	Breaker breaker.Config
	// BreakerWait makes requests to a host whose breaker is open wait for
	// the probe instead of failing fast with breaker.ErrOpen.
	BreakerWait bool

	// Blocks recognises soft blocks. If nil, DefaultBlocks is used.
	Blocks BlockDetector
	// KeepBlocked keeps sending to a host after it answered with a block. By
	// default later requests to it fail fast with ErrBlocked.
	KeepBlocked bool

	// UserAgent is set on requests that carry none. It is also the product
	// token robots.txt groups are matched against.
	UserAgent string

	// IgnoreRobots turns robots.txt off. By default a Transport with a
	// UserAgent fetches each origin's robots.txt (through its own limits,
	// cached per origin, RFC 9309), refuses disallowed URLs with a
	// *robots.DisallowedError without sending them, and makes the
	// Crawl-delay (or Request-rate) the host's rate ceiling, evenly spaced.
	// Without a UserAgent there is no product token to match, so robots.txt
	// is not consulted.
	IgnoreRobots bool
	// CrawlDelay validates robots.txt delays: the zero value caps them at 60 s
	// and uses none when robots.txt gives none.
	CrawlDelay robots.DelayPolicy
	// RobotsCache fetches and keeps robots.txt files. If nil, a Cache that
	// fetches through this Transport is used.
	RobotsCache *robots.Cache

	// Adaptive, when set, makes each host's rate adaptive with polite's own
	// controller (adaptive.New with this Config): a low cold start that
	// ramps until the host's first congestion signal, then the rate settles
	// just under the capacity the host was measured to admit, and re-probes
	// gently. A host's Limits.Rate is its starting rate unless the Config
	// sets Initial (bucket.Inf starts at the Config's Max), and its
	// Limits.Concurrency caps the controller's concurrency. Ignored when
	// NewRater is set.
	Adaptive *adaptive.Config

	// NewRater, when set, makes each host's rate adaptive: the Rater it
	// returns for a host hears every attempt's outcome and sets the host's
	// rate, kept under the host's ceilings (robots.txt Crawl-delay, RateLimit
	// fields). A Rater may also implement SetMax(float64) to learn those
	// ceilings, Rate() float64 to set the host's starting rate, and
	// Concurrency() int to move the host's in-flight cap.
	NewRater func(key string, l Limits) adaptive.Rater

	// Logger receives a record of every decision: Debug for attempts and
	// waits, Info for state changes, Warn for give-ups. If nil, nothing is
	// logged.
	Logger *slog.Logger
	// Observer receives every Event. If nil, none is sent.
	Observer Observer

	once     sync.Once
	base     http.RoundTripper
	reg      Registry
	keyer    Keyer
	global   *inflight.Gate
	budget   retry.Budget // global; deposits batched through pending
	pending  atomic.Int64 // requests not yet deposited in budget
	retries  int
	maxAfter time.Duration
	blocks   BlockDetector
	robots   *robots.Cache // nil when robots.txt is off
	newRater func(key string, l Limits) adaptive.Rater
	initErr  error // a malformed Rule: every request fails with it
}

// ErrBlocked is returned (wrapped in *BlockedError) for requests to a host
// that answered with a soft block.
var ErrBlocked = errors.New("polite: host blocked us")

// ErrPaused is returned (wrapped in *PausedError) for requests to a host
// paused for longer than MaxRetryAfter.
var ErrPaused = errors.New("polite: host paused")

// BlockedError says which host blocked and how it was recognised.
type BlockedError struct {
	Host   string
	Reason string
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("polite: host %q blocked us (%s)", e.Host, e.Reason)
}

// Unwrap returns ErrBlocked.
func (e *BlockedError) Unwrap() error { return ErrBlocked }

// PausedError says which host is paused, until when, and why.
type PausedError struct {
	Host   string
	Until  time.Time
	Reason Reason
}

func (e *PausedError) Error() string {
	return fmt.Sprintf("polite: host %q paused until %s (%s)", e.Host, e.Until.Format(time.RFC3339), e.Reason)
}

// Unwrap returns ErrPaused.
func (e *PausedError) Unwrap() error { return ErrPaused }

// Error is a request that failed without a response after polite's retries.
type Error struct {
	Host     string
	Attempts int
	Err      error
}

func (e *Error) Error() string {
	return fmt.Sprintf("polite: host %q: %d attempts: %v", e.Host, e.Attempts, e.Err)
}

// Unwrap returns the last attempt's error.
func (e *Error) Unwrap() error { return e.Err }

func (t *Transport) init() {
	t.once.Do(func() {
		t.base = t.Base
		if t.base == nil {
			t.base = http.DefaultTransport
		}
		t.reg.Limits = t.Limits
		t.reg.Rules = t.Rules
		t.reg.IdleTimeout = t.IdleTimeout
		t.initErr = t.reg.Check()
		t.keyer.By = t.Key
		if t.MaxInFlight > 0 {
			t.global = inflight.New(t.MaxInFlight)
		}
		t.budget = *retry.NewBudget(t.GlobalBudget)
		t.retries = t.Retries
		if t.retries == 0 {
			t.retries = DefaultRetries
		}
		t.maxAfter = t.MaxRetryAfter
		if t.maxAfter <= 0 {
			t.maxAfter = DefaultMaxRetryAfter
		}
		t.blocks = t.Blocks
		if t.blocks == nil {
			t.blocks = DefaultBlocks
		}
		t.newRater = t.NewRater
		if t.newRater == nil && t.Adaptive != nil {
			cfg := *t.Adaptive
			t.newRater = func(key string, l Limits) adaptive.Rater {
				c := cfg
				switch {
				case c.Initial != 0 || !(l.Rate > 0):
				case l.Rate >= bucket.Inf:
					// No limit asked for: start at the ceiling, and let
					// the host's first throttle bring the rate down.
					c.Initial = c.Max
					if c.Initial <= 0 {
						c.Initial = adaptive.DefaultMax
					}
				default:
					c.Initial = l.Rate
				}
				return adaptive.New(c, time.Now())
			}
		}
		if t.UserAgent != "" && !t.IgnoreRobots {
			t.robots = t.RobotsCache
			if t.robots == nil {
				t.robots = &robots.Cache{Client: &http.Client{Transport: t}, UserAgent: t.UserAgent, Logger: t.Logger}
			}
		}
	})
}

// Registry returns the Transport's per-host state, for inspection.
func (t *Transport) Registry() *Registry {
	t.init()
	return &t.reg
}

// ext returns h's transport state, creating it on first use.
func (t *Transport) ext(h *Host) *hostExt {
	if x := h.ext.Load(); x != nil {
		return x
	}
	x := &hostExt{breaker: breaker.New(t.Breaker)}
	x.budget = *retry.NewBudget(t.Budget)
	if t.newRater != nil {
		x.rater = t.newRater(h.key, t.reg.rule(h.rule).limits)
	}
	if !h.ext.CompareAndSwap(nil, x) {
		return h.ext.Load()
	}
	if r, ok := x.rater.(interface{ Rate() float64 }); ok {
		if rate := r.Rate(); rate > 0 {
			h.bucket.SetRate(time.Now(), rate)
		}
	}
	// A cold start must not let the static cap send a wave the controller
	// never asked for.
	t.followConcurrency(h, x)
	return x
}

// followConcurrency moves the host's in-flight cap to its Rater's, when the
// Rater has one, within the host's Limits.Concurrency.
func (t *Transport) followConcurrency(h *Host, x *hostExt) {
	if c, ok := x.rater.(interface{ Concurrency() int }); ok {
		n := min(c.Concurrency(), t.reg.rule(h.rule).limits.Concurrency)
		if n > 0 && n != h.gate.Limit() {
			h.gate.SetLimit(n)
		}
	}
}

// RoundTrip sends req politely. It waits for the host's gates, retries
// throttled and failed attempts within the budget, and returns the last
// response when retries run out (so a 429 comes back as a response, not an
// error). Errors mean there is no response: the host is blocked, paused too
// long or its breaker is open, the context ended, or every attempt failed
// without one (*Error).
//
// The host's in-flight slot is held until the response body is closed.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.init()
	if t.initErr != nil {
		closeBody(req)
		return nil, t.initErr
	}
	if req.URL == nil {
		closeBody(req)
		return nil, errors.New("polite: request has no URL")
	}
	ctx := req.Context()
	key, err := t.keyer.Key(ctx, req.URL)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	h := t.reg.Get(key)
	x := t.ext(h)
	if t.robots != nil && !robots.IsFetch(req) {
		if err := t.checkRobots(ctx, req, h, x); err != nil {
			t.reg.Put(h)
			closeBody(req)
			return nil, err
		}
	}
	resp, err := t.send(ctx, req, h, x)
	if err != nil {
		t.reg.Put(h)
		return nil, err
	}
	return resp, nil
}

// send runs the attempts. On success the returned response's body holds the
// host's slot, the global slot and the registry reference.
func (t *Transport) send(ctx context.Context, req *http.Request, h *Host, x *hostExt) (*http.Response, error) {
	now := time.Now()
	x.budget.Deposit(now)
	// The global budget is shared by every request: count deposits with an
	// atomic and fold them in every 64, or when a retry needs the budget,
	// so the hot path takes no global lock.
	if t.pending.Add(1) >= 64 {
		t.flushDeposits(now)
	}
	replay := replayable(req, t.RetryNonIdempotent)
	var prevDelay time.Duration
	for attempt := 1; ; attempt++ {
		var err error
		if now, err = t.admit(ctx, now, h, x); err != nil {
			if attempt == 1 {
				closeBody(req)
			}
			return nil, err
		}
		// Holding: h.gate, t.global. Send.
		r := req
		if attempt > 1 || (t.UserAgent != "" && req.Header.Get("User-Agent") == "") {
			if r, err = t.prepare(ctx, req, attempt); err != nil {
				t.release(h)
				return nil, err
			}
		}
		start := now
		resp, err := t.base.RoundTrip(r)
		now = time.Now()
		latency := now.Sub(start)

		var out Outcome
		status := 0
		blockReason := ""
		if err != nil {
			out = classifyError(ctx, err)
		} else {
			status = resp.StatusCode
			out = classifyStatus(status)
			if t.blocks.Peek(resp) {
				var peek []byte
				peek, resp.Body = peekBody(resp.Body)
				if blockReason = t.blocks.Detect(resp, peek); blockReason != "" {
					out = Blocked
				}
			} else if blockReason = t.blocks.Detect(resp, nil); blockReason != "" {
				out = Blocked
			}
		}
		t.emit(ctx, Event{Kind: EventAttempt, Time: now, Host: h.key, Status: status, Outcome: out,
			Attempt: attempt, Latency: latency, Err: err})

		advertised, giveUp := t.feedback(ctx, now, start, h, x, resp, out, blockReason, attempt)
		if x.rater != nil {
			t.adapt(ctx, now, h, x, out, latency, advertised)
		}

		// Return, or retry?
		if !out.retryable() || giveUp {
			return t.finish(h, resp, err, attempt)
		}
		if attempt > t.retries {
			t.emit(ctx, Event{Kind: EventGiveUp, Time: now, Host: h.key, Reason: ReasonAttempts, Status: status, Attempt: attempt})
			return t.finish(h, resp, err, attempt)
		}
		if !replay {
			return t.finish(h, resp, err, attempt)
		}
		t.flushDeposits(now)
		if !t.budget.Withdraw(now) || !x.budget.Withdraw(now) {
			t.emit(ctx, Event{Kind: EventGiveUp, Time: now, Host: h.key, Reason: ReasonBudget, Status: status, Attempt: attempt})
			return t.finish(h, resp, err, attempt)
		}
		if resp != nil {
			drainClose(resp.Body)
		}
		t.release(h)
		// A throttle paused the whole host in feedback: admit waits that
		// out with every other request to it. Other failures back off this
		// request alone.
		if out != Throttled {
			wait := t.Backoff.Next(attempt, prevDelay)
			prevDelay = wait
			t.emit(ctx, Event{Kind: EventWait, Time: now, Host: h.key, Reason: ReasonBackoff, Delay: wait, Attempt: attempt + 1})
			if err := sleep(ctx, wait); err != nil {
				return nil, err
			}
		}
	}
}

// checkRobots refuses a URL robots.txt disallows, and keeps the host's rate
// under the Crawl-delay each time a new copy of robots.txt is in force.
func (t *Transport) checkRobots(ctx context.Context, req *http.Request, h *Host, x *hostExt) error {
	rb, err := t.robots.Get(ctx, req.URL)
	if err != nil {
		return fmt.Errorf("polite: robots.txt for %q: %w", h.key, err)
	}
	if x.robotsSeen.Swap(rb) != rb {
		t.applyCrawlDelay(ctx, h, x, rb)
	}
	v := rb.Test(t.UserAgent, req.URL.RequestURI())
	if v.Allowed {
		return nil
	}
	u := *req.URL
	u.RawQuery, u.Fragment, u.User = "", "", nil // never log credentials or query strings
	t.emit(ctx, Event{Kind: EventRobots, Time: time.Now(), Host: h.key, Reason: ReasonRobots,
		Detail: fmt.Sprintf("%s (line %d, %s)", v.Rule, v.Rule.Line, rb.Source())})
	return &robots.DisallowedError{URL: u.String(), Rule: v.Rule}
}

// applyCrawlDelay makes the robots.txt delay the host's ceiling: rate
// 1/delay, burst 1, so consecutive requests are at least delay apart.
func (t *Transport) applyCrawlDelay(ctx context.Context, h *Host, x *hostExt, rb *robots.Robots) {
	g := rb.Group(t.UserAgent)
	d := t.CrawlDelay.Delay(g)
	now := time.Now()
	if d <= 0 {
		if x.robotsCeiling.Swap(0) != 0 {
			// A new copy dropped the delay: back to the host's own shape,
			// and (without a Rater, which raises its own) its own rate.
			l := t.reg.rule(h.rule).limits
			h.bucket.SetSmooth(now, l.Smooth, l.Burst)
			t.followCeiling(now, h, x)
		}
		return
	}
	c := 1 / d.Seconds()
	x.robotsCeiling.Store(math.Float64bits(c))
	if !h.bucket.Smooth() {
		h.bucket.SetSmooth(now, true, 1)
	}
	t.followCeiling(now, h, x)
	agent, line := "*", 0
	if g != nil {
		agent, line = g.Agent(), g.Line()
	}
	t.emit(ctx, Event{Kind: EventRate, Time: now, Host: h.key, Reason: ReasonCrawlDelay, Rate: h.bucket.Rate(),
		Delay: d, Detail: fmt.Sprintf("group %q (line %d)", agent, line)})
}

func (t *Transport) flushDeposits(now time.Time) {
	if n := t.pending.Swap(0); n > 0 {
		t.budget.DepositN(now, int(n))
	}
}

// finish returns the attempt's result: a response whose body holds the
// slots, or an error after releasing them.
func (t *Transport) finish(h *Host, resp *http.Response, err error, attempts int) (*http.Response, error) {
	if err != nil {
		t.release(h)
		return nil, &Error{Host: h.key, Attempts: attempts, Err: err}
	}
	if resp.Body == nil {
		resp.Body = http.NoBody
	}
	resp.Body = &slotBody{ReadCloser: resp.Body, t: t, h: h}
	return resp, nil
}

// release gives back the slots an attempt held.
func (t *Transport) release(h *Host) {
	h.gate.Release()
	if t.global != nil {
		t.global.Release()
	}
}

// admit waits at the host's gates in order: block mark, pause, breaker,
// in-flight slot (host, then global), token. It returns holding both slots,
// with the time it got them (now itself when nothing waited: a clock reading
// costs as much as the rest of the bookkeeping, so it is taken only after a
// wait).
func (t *Transport) admit(ctx context.Context, now time.Time, h *Host, x *hostExt) (time.Time, error) {
	for {
		if r := x.blocked.Load(); r != nil && !t.KeepBlocked {
			return now, &BlockedError{Host: h.key, Reason: *r}
		}
		if d, why := x.paused(now); d > 0 {
			if d > t.maxAfter {
				return now, &PausedError{Host: h.key, Until: now.Add(d), Reason: why}
			}
			t.emit(ctx, Event{Kind: EventWait, Time: now, Host: h.key, Reason: why, Delay: d})
			if err := sleep(ctx, d); err != nil {
				return now, err
			}
			now = time.Now()
			continue
		}
		if err := x.breaker.Allow(now); err != nil {
			var oe *breaker.OpenError
			if !t.BreakerWait || !errors.As(err, &oe) {
				return now, fmt.Errorf("polite: host %q: %w", h.key, err)
			}
			d := oe.Until.Sub(now)
			t.emit(ctx, Event{Kind: EventWait, Time: now, Host: h.key, Reason: ReasonBreaker, Delay: d})
			if err := sleep(ctx, max(d, time.Millisecond)); err != nil {
				return now, err
			}
			now = time.Now()
			continue
		}
		if !h.gate.TryAcquire() {
			t.emit(ctx, Event{Kind: EventWait, Time: now, Host: h.key, Reason: ReasonSlot})
			if err := h.gate.Acquire(ctx); err != nil {
				return now, err
			}
			now = time.Now()
		}
		if t.global != nil && !t.global.TryAcquire() {
			if err := t.global.Acquire(ctx); err != nil {
				h.gate.Release()
				return now, err
			}
			now = time.Now()
		}
		// The token comes last, right before sending: taken before a wait
		// for the global slot, tokens taken apart in time would all be
		// spent at once when slots free up.
		waited, granted, err := t.token(ctx, now, h)
		if err != nil {
			t.release(h)
			return now, err
		}
		if waited {
			now = time.Now()
			// A throttle heard after our token was reserved means it was
			// granted at the rate of before: stand down and give it back
			// (or every waiter would take one per throttle and sink the
			// bucket into debt), then wait again at the rate of now,
			// behind the pause if there is one. A token taken after the
			// throttle was granted at the rate of now: it stands, or
			// giving it back to a drained bucket would lose it.
			if d, _ := x.paused(now); d > 0 || x.lastThrottle.Load() > granted.UnixNano() {
				h.bucket.Forgive(now, 1)
				t.release(h)
				continue
			}
		}
		return now, nil
	}
}

// throttledAgain marks, inside feedback, a throttle that belongs to a wave
// already counted.
const throttledAgain Outcome = -1

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

// token takes one token from the host's bucket, waiting for it. It reports
// whether it waited, and when the token was granted at the rate of the
// moment: taken then, or reserved then for later.
func (t *Transport) token(ctx context.Context, now time.Time, h *Host) (waited bool, granted time.Time, err error) {
	if h.bucket.AllowN(now, 1) {
		return false, now, nil
	}
	for {
		r, err := h.bucket.ReserveN(now, 1)
		if err != nil {
			return true, now, fmt.Errorf("polite: host %q: %w", h.key, err)
		}
		d := r.DelayFrom(now)
		if dl, ok := ctx.Deadline(); ok && dl.Before(now.Add(d)) {
			r.CancelAt(now)
			return true, now, fmt.Errorf("polite: host %q: waiting %v for a token would outlast the deadline: %w", h.key, d, context.DeadlineExceeded)
		}
		// Hold the reservation if the token comes within about one token
		// interval at the rate of now; otherwise sleep until about one
		// interval before it is due and look again.
		poll := maxHold
		if rate := h.bucket.Rate(); rate > 0 {
			poll = max(time.Duration(min(1e9/rate, float64(maxHold))), minPoll)
		}
		hold := d <= poll
		if !hold {
			r.CancelAt(now)
			d = min(max(d-poll, minPoll), maxHold)
		}
		t.emit(ctx, Event{Kind: EventWait, Time: now, Host: h.key, Reason: ReasonRate, Delay: d})
		reserved := now
		if err := sleep(ctx, d); err != nil {
			if hold {
				r.CancelAt(time.Now())
			}
			return true, now, err
		}
		if hold {
			return true, reserved, nil
		}
		now = time.Now()
		if h.bucket.AllowN(now, 1) {
			return true, now, nil
		}
	}
}

// feedback tells the host's state what an attempt came to. It returns the
// wait the server advertised (a sane Retry-After; 0 if none) and whether the
// request must give up regardless of retries left.
func (t *Transport) feedback(ctx context.Context, now, sent time.Time, h *Host, x *hostExt, resp *http.Response,
	out Outcome, blockReason string, attempt int) (advertised time.Duration, giveUp bool) {
	switch out {
	case Throttled:
		// Answers to requests sent before the last throttle was heard are
		// the same congestion event (a wave of in-flight requests meeting
		// one overshoot): they may lengthen the pause, never shorten it, but
		// they count once against the breaker, not once each.
		if x.throttleWave(sent, now) {
			out = throttledAgain
		}
		d, ok := retry.ParseAfter(resp.Header, now)
		pauseWhy := ReasonRetryAfter
		if ok {
			advertised = d
		} else {
			pauseWhy = ReasonBackoff
			if x.rater != nil {
				// Adaptive: the Rater cuts the rate on this very answer and
				// the bucket is drained below, so the host already waits
				// 1/rate at the cut rate; a guessed backoff on top would
				// idle it for nothing (measured: 5-10 % of its capacity).
				d = 0
			} else {
				// Unlike other failures, a throttle pauses the whole host for
				// the backoff delay: every request to it waits, not just
				// this one.
				d = t.Backoff.Next(attempt, 0)
			}
			if p, _ := x.paused(now); p > 0 {
				d = max(d, p)
			}
		}
		if ok && d > t.maxAfter {
			giveUp = true
			t.emit(ctx, Event{Kind: EventGiveUp, Time: now, Host: h.key, Reason: ReasonRetryAfter, Status: resp.StatusCode, Delay: d})
		}
		if x.pause(now.Add(d), pauseWhy) {
			t.emit(ctx, Event{Kind: EventPause, Time: now, Host: h.key, Reason: pauseWhy, Delay: d, Status: resp.StatusCode})
		}
		h.bucket.Drain(now)
	case Blocked:
		if x.blocked.Load() == nil {
			r := blockReason
			x.blocked.Store(&r)
			t.emit(ctx, Event{Kind: EventBlocked, Time: now, Host: h.key, Reason: ReasonBlock, Detail: blockReason, Status: statusOf(resp)})
		}
		giveUp = true
	}
	if resp != nil && out != Blocked {
		t.readQuota(ctx, now, h, x, resp)
	}
	switch {
	case out == throttledAgain:
	case out.failure():
		t.breakerRecord(ctx, now, h, x, false)
	case out == OK || out == ClientError:
		t.breakerRecord(ctx, now, h, x, true)
	}
	return advertised, giveUp
}

func (t *Transport) breakerRecord(ctx context.Context, now time.Time, h *Host, x *hostExt, ok bool) {
	tr := x.breaker.Record(now, ok)
	if tr.From != tr.To {
		t.emit(ctx, Event{Kind: EventBreaker, Time: now, Host: h.key, Reason: ReasonBreaker, Detail: tr.To.String()})
	}
}

// kinds maps outcomes to what a rate controller hears.
var kinds = [...]adaptive.Kind{
	OK: adaptive.OK, Throttled: adaptive.Throttle, Overloaded: adaptive.Overload, Blocked: adaptive.Neutral,
	ServerError: adaptive.Failure, NetworkError: adaptive.Failure, ClientError: adaptive.Neutral, Canceled: adaptive.Neutral,
}

// adapt feeds an attempt to the host's Rater and applies the rate it answers,
// under the host's ceilings.
func (t *Transport) adapt(ctx context.Context, now time.Time, h *Host, x *hostExt, out Outcome,
	latency, advertised time.Duration) {
	// Only a wait the server advertised, never our own backoff.
	sig := adaptive.Signal{Kind: kinds[out], Wait: advertised}
	if out != NetworkError && out != Canceled {
		sig.Latency = latency
	}
	ceiling := x.maxRate()
	if m, ok := x.rater.(interface{ SetMax(float64) }); ok {
		if b := math.Float64bits(ceiling); x.lastMax.Swap(b) != b {
			m.SetMax(ceiling)
		}
	}
	rate := min(x.rater.Observe(now, sig), ceiling)
	t.followConcurrency(h, x)
	cur := h.bucket.Rate()
	if rate <= 0 || (rate > cur*0.98 && rate < cur*1.02) {
		return // SetRate allocates: skip changes under 2 %
	}
	h.bucket.SetRate(now, rate)
	t.emit(ctx, Event{Kind: EventRate, Time: now, Host: h.key, Reason: ReasonAdaptive, Rate: rate, Outcome: out})
}

// quotaPaceMin is the least time to a quota's reset over which readQuota
// spreads what is left of it.
const quotaPaceMin = 10 * time.Second

// readQuota paces the host from RateLimit / X-RateLimit fields: with no
// quota left it pauses the host until the reset, before a 429 comes; a
// stated limit per window caps the host's rate; without one, what is left of
// a long window's quota is spread over the time to its reset.
func (t *Transport) readQuota(ctx context.Context, now time.Time, h *Host, x *hostExt, resp *http.Response) {
	if !hasQuotaFields(resp.Header) {
		return
	}
	q, ok := retry.ParseRateLimit(resp.Header, now)
	if !ok {
		return
	}
	if q.Remaining == 0 && q.Reset > 0 {
		if x.pause(now.Add(q.Reset), ReasonRateLimit) {
			t.emit(ctx, Event{Kind: EventPause, Time: now, Host: h.key, Reason: ReasonRateLimit, Delay: q.Reset})
		}
		return
	}
	// A stated policy (Limit per Window) is the host's sustainable rate.
	// Without one, a quota that resets only after a long wait (an hourly API
	// quota, say) is spread over the time to the reset. Remaining/Reset of
	// a short window is no ceiling: the quota comes back within seconds,
	// and a token-bucket server run near its capacity shows little left
	// nearly always, so reading it as one would pin the host far under
	// what it serves.
	ceiling, _ := q.Rate()
	if ceiling <= 0 && q.Remaining > 0 && q.Reset >= quotaPaceMin {
		ceiling = float64(q.Remaining) / q.Reset.Seconds()
	}
	if ceiling <= 0 {
		return
	}
	x.setCeiling(ceiling)
	if rate, changed := t.followCeiling(now, h, x); changed {
		t.emit(ctx, Event{Kind: EventRate, Time: now, Host: h.key, Reason: ReasonRateLimit, Rate: rate})
	}
}

// followCeiling keeps the host's rate under its ceilings (robots.txt's
// Crawl-delay, RateLimit fields) as they change. Without a Rater the rate is
// the host's Limits.Rate under them, so it also comes back up when a
// ceiling loosens; a Rater's rate is only cut here, and rises through adapt.
// A rise under 2 % is skipped: SetRate allocates.
func (t *Transport) followCeiling(now time.Time, h *Host, x *hostExt) (rate float64, changed bool) {
	cur := h.bucket.Rate()
	rate = min(cur, x.maxRate())
	if x.rater == nil {
		rate = min(t.reg.rule(h.rule).limits.Rate, x.maxRate())
	}
	if rate == cur || (rate > cur && rate < cur*1.02) {
		return cur, false // cuts are exact; rises under 2 % wait
	}
	h.bucket.SetRate(now, rate)
	return rate, true
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

// prepare returns the request to send for this attempt: a clone with the
// user agent set and, on a retry, the body rewound.
func (t *Transport) prepare(ctx context.Context, req *http.Request, attempt int) (*http.Request, error) {
	r := req.Clone(ctx)
	if t.UserAgent != "" && r.Header.Get("User-Agent") == "" {
		r.Header.Set("User-Agent", t.UserAgent)
	}
	if attempt > 1 && req.Body != nil && req.Body != http.NoBody {
		b, err := req.GetBody()
		if err != nil {
			return nil, fmt.Errorf("polite: rewinding the body for attempt %d: %w", attempt, err)
		}
		r.Body = b
	}
	return r, nil
}

// replayable reports whether req may be sent again.
func replayable(req *http.Request, nonIdempotent bool) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	if _, ok := req.Header["Idempotency-Key"]; ok {
		return true
	}
	if _, ok := req.Header["X-Idempotency-Key"]; ok {
		return true
	}
	return nonIdempotent
}

func statusOf(resp *http.Response) int {
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// drainClose reads a little of a body we are done with, so its connection
// can be reused, and closes it.
func drainClose(b io.ReadCloser) {
	if b == nil {
		return
	}
	_, _ = io.CopyN(io.Discard, b, 64<<10)
	b.Close()
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// peekBody reads up to MaxPeek bytes of b and returns them with a body that
// replays them ahead of the rest.
func peekBody(b io.ReadCloser) ([]byte, io.ReadCloser) {
	pooled := peekPool.Get().(*[MaxPeek]byte)
	n, err := io.ReadFull(b, pooled[:])
	buf := bytes.Clone(pooled[:n]) // only what was read outlives the call
	peekPool.Put(pooled)
	pb := &peekedBody{head: bytes.NewReader(buf), rest: b}
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		pb.err = err
	}
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		pb.eof = true
	}
	return buf, pb
}

var peekPool = sync.Pool{New: func() any { return new([MaxPeek]byte) }}

type peekedBody struct {
	head *bytes.Reader
	rest io.ReadCloser
	err  error // from the peek, returned after head
	eof  bool  // rest was exhausted by the peek
}

func (p *peekedBody) Read(b []byte) (int, error) {
	if p.head.Len() > 0 {
		return p.head.Read(b)
	}
	if p.err != nil {
		return 0, p.err
	}
	if p.eof {
		return 0, io.EOF
	}
	return p.rest.Read(b)
}

func (p *peekedBody) Close() error { return p.rest.Close() }

// slotBody holds a request's slots and registry reference until the caller
// closes the body (or reads it to the end).
type slotBody struct {
	io.ReadCloser
	t    *Transport
	h    *Host
	once sync.Once
}

func (b *slotBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.done()
	}
	return n, err
}

func (b *slotBody) Close() error {
	err := b.ReadCloser.Close()
	b.done()
	return err
}

func (b *slotBody) done() {
	b.once.Do(func() {
		b.t.release(b.h)
		b.t.reg.Put(b.h)
	})
}
