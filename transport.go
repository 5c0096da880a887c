package polite

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	// DefaultRobotsAgent is the product token robots.txt groups are
	// matched against when a Transport has no UserAgent: what Go's
	// http.Client sends without one ("Go-http-client/1.1").
	DefaultRobotsAgent   = "Go-http-client"
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

	// PublicOnly refuses connections to addresses that are not public
	// (IsPublic: loopback, private, link-local such as 169.254.169.254,
	// ...), checked at dial time on the resolved address, so a URL list,
	// a redirect or a robots.txt redirect cannot reach internal services
	// (server-side request forgery; issue 17, defect 6). It applies to a
	// nil Base or an *http.Transport (see PublicDialer to build one's own
	// with exceptions); with another Base every request fails.
	PublicOnly bool

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

	// Classify, when set, reads each attempt's outcome before polite does
	// (see Classifier).
	Classify Classifier

	// Blocks recognises soft blocks. If nil, DefaultBlocks is used.
	Blocks BlockDetector
	// KeepBlocked keeps sending to a host after it answered with a block. By
	// default later requests to it fail fast with ErrBlocked.
	KeepBlocked bool

	// UserAgent is set on requests that carry none. It is also the product
	// token robots.txt groups are matched against.
	UserAgent string

	// IgnoreRobots turns robots.txt off. By default a Transport fetches
	// each origin's robots.txt (through its own limits, cached per origin,
	// RFC 9309), refuses disallowed URLs with a *robots.DisallowedError
	// without sending them, and makes the Crawl-delay (or Request-rate) the
	// host's rate ceiling, evenly spaced. The group obeyed is UserAgent's
	// product token's, or without a UserAgent that of Go's own
	// ("Go-http-client", DefaultRobotsAgent), which most files only meet in
	// their "*" group.
	IgnoreRobots bool
	// CrawlDelay validates robots.txt delays: the zero value caps them at 60 s
	// and uses none when robots.txt gives none. Its Max caps the spacing
	// of RateLimit ceilings too.
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
	// fields). A Rater may also be an adaptive.CeilingRater (SetMax) to
	// learn those ceilings, an adaptive.CurrentRater (Rate) to set the
	// host's starting rate, an adaptive.ConcurrencyRater (Concurrency) to
	// move the host's in-flight cap, and an adaptive.CapacityRater,
	// CapacityErrorRater and PhaseRater for what HostState and Events
	// report of it.
	NewRater func(key string, l Limits) adaptive.Rater

	// StartRate, when set, returns the rate (requests per second) a host
	// whose rate is adaptive (Adaptive or NewRater) starts at, in place of
	// its Limits.Rate: the rate an earlier run learned for it, say, so
	// that a resumed crawl does not start every host cold again (issue
	// 33, item 14). It is asked with the host's key when the host is first
	// used (again after an eviction); 0 (or less, or bucket.Inf) leaves
	// Limits.Rate. The rate is kept under the host's Limits.MaxRate and
	// the controller's Max and Min; a NewRater gets it as its Limits.Rate.
	// Only the local store uses it.
	StartRate func(key string) float64

	// Store keeps every host's admission state (pause, block, breaker,
	// tokens, retry budget, ceilings, adaptive rate). If nil, the local
	// store keeps it in memory, configured by the fields above; a Store of
	// your own (shared by a fleet, say) brings its own configuration, and
	// the Breaker, Budget, KeepBlocked, MaxRetryAfter, Adaptive and NewRater
	// fields configure only the local one.
	Store Store

	// Logger receives a record of every decision: Debug for attempts and
	// waits, Info for state changes, Warn for give-ups. If nil, nothing is
	// logged.
	Logger *slog.Logger
	// Observer receives every Event. If nil, none is sent.
	Observer Observer

	ctxObs   ContextObserver // Observer, when it is one
	seq      atomic.Uint64   // request ids not given by the caller
	once     sync.Once
	regOnce  sync.Once
	regErr   error
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
	store    Store
	demand   DemandNoter // store, when it is one
	agent    []string    // UserAgent as a header value, shared by every request
	initErr  error       // a malformed Rule: every request fails with it
}

// initRegistry sets up the registry from the Transport's fields. It is
// apart from init so that Registry, which a Store kept elsewhere needs to
// be built, does not fix the rest (the Store among it) before the caller
// has set it.
func (t *Transport) initRegistry() {
	t.regOnce.Do(func() {
		t.reg.Limits = t.Limits
		t.reg.Rules = t.Rules
		t.reg.IdleTimeout = t.IdleTimeout
		t.regErr = t.reg.Check()
	})
}

func (t *Transport) init() {
	t.once.Do(func() {
		t.base = t.Base
		if t.PublicOnly {
			t.base, t.initErr = publicBase(t.Base)
		}
		if t.base == nil {
			t.base = http.DefaultTransport
		}
		t.initRegistry()
		if t.initErr == nil {
			t.initErr = t.regErr
		}
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
		t.agent = []string{t.UserAgent}
		t.ctxObs, _ = t.Observer.(ContextObserver)
		t.store = t.Store
		if t.store == nil {
			t.store = NewLocalStore(&t.reg, t.LocalOptions())
		}
		t.demand, _ = t.store.(DemandNoter)
		if !t.IgnoreRobots {
			t.robots = t.RobotsCache
			if t.robots == nil {
				t.robots = &robots.Cache{Client: &http.Client{Transport: t}, UserAgent: t.UserAgent, Logger: t.Logger}
			}
		}
	})
}

// LocalOptions returns the per-host policy settings of the Transport's
// fields, as its local store gets them: what a Store kept elsewhere (a
// fleet's) takes to apply the same rules.
func (t *Transport) LocalOptions() LocalOptions {
	return LocalOptions{Breaker: t.Breaker, Budget: t.Budget, Backoff: t.Backoff, MaxRetryAfter: t.MaxRetryAfter,
		KeepBlocked: t.KeepBlocked, NewRater: t.rater(), MaxSpacing: t.CrawlDelay.Max}
}

// rater returns the Rater factory of the Transport's settings: NewRater,
// else polite's controller when Adaptive is set, else nil; given a host's
// StartRate in place of its Limits.Rate.
func (t *Transport) rater() func(key string, l Limits) adaptive.Rater {
	f := t.NewRater
	if f == nil && t.Adaptive != nil {
		cfg := *t.Adaptive
		f = func(key string, l Limits) adaptive.Rater {
			return adaptive.New(HostAdaptive(cfg, l), time.Now())
		}
	}
	if f == nil || t.StartRate == nil {
		return f
	}
	start := t.StartRate
	return func(key string, l Limits) adaptive.Rater {
		if r := start(key); r > 0 && r < bucket.Inf {
			l.Rate = r
			if l.MaxRate > 0 {
				l.Rate = min(r, l.MaxRate)
			}
		}
		return f(key, l)
	}
}

// HostAdaptive returns the controller Config a host with Limits l gets from
// a Transport's Adaptive cfg: l.Rate is the starting rate unless cfg sets
// Initial (bucket.Inf starts at the Config's Max), and l.MaxRate lowers
// the Config's Max. A fleet's store (package redisstore) makes its hosts'
// controllers with it, so that one process and a fleet start alike.
func HostAdaptive(cfg adaptive.Config, l Limits) adaptive.Config {
	c := cfg
	switch {
	case c.Initial != 0 || !(l.Rate > 0):
	case l.Rate >= bucket.Inf:
		// No limit asked for: start at the ceiling, and let the
		// host's first throttle bring the rate down.
		c.Initial = c.Max
		if c.Initial <= 0 {
			c.Initial = adaptive.DefaultMax
		}
	default:
		c.Initial = l.Rate
	}
	if l.MaxRate > 0 && (c.Max <= 0 || l.MaxRate < c.Max) {
		c.Max = l.MaxRate
		if c.Initial > c.Max {
			c.Initial = c.Max
		}
	}
	return c
}

// Registry returns the Transport's per-host entries, for inspection.
func (t *Transport) Registry() *Registry {
	t.initRegistry()
	return &t.reg
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
	req = withoutInjected(req)
	h, err := t.enter(req)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	resp, err := t.send(req, h)
	if err != nil {
		t.reg.Put(h)
		return nil, err
	}
	return resp, nil
}

// enter finds req's host, holding a registry reference to it, and checks
// robots.txt.
func (t *Transport) enter(req *http.Request) (*Host, error) {
	t.init()
	if t.initErr != nil {
		return nil, t.initErr
	}
	if req.URL == nil {
		return nil, errors.New("polite: request has no URL")
	}
	ctx := req.Context()
	key, err := t.keyer.Key(ctx, req.URL)
	if err != nil {
		return nil, err
	}
	if !httpScheme(req.URL.Scheme) {
		return nil, fmt.Errorf("%w: %q", ErrUnsupportedScheme, req.URL.Scheme)
	}
	h := t.reg.Get(key)
	if t.robots != nil && !robots.IsFetch(req) {
		if err := t.checkRobots(ctx, req, h); err != nil {
			t.reg.Put(h)
			return nil, err
		}
	}
	return h, nil
}

// withoutInjected returns req, or when it is a redirect hop whose URL
// carries credentials the first request of its chain did not (a Location
// of http://user:secret@host/, which http.Client turns into an
// Authorization field), a copy without them: a redirect must not make us
// send credentials (issue 17, defect 5).
func withoutInjected(req *http.Request) *http.Request {
	if req.URL == nil || req.URL.User == nil || req.Response == nil {
		return req
	}
	first := req
	for first.Response != nil && first.Response.Request != nil {
		first = first.Response.Request
	}
	if first.URL != nil && first.URL.User != nil && first.URL.User.String() == req.URL.User.String() &&
		strings.EqualFold(first.URL.Host, req.URL.Host) {
		return req // the caller's own, on its own host
	}
	r := req.Clone(req.Context())
	r.URL.User = nil
	r.Header.Del("Authorization")
	return r
}

// httpScheme reports whether s is http or https, in any case.
func httpScheme(s string) bool {
	return strings.EqualFold(s, "http") || strings.EqualFold(s, "https")
}

// send runs the attempts. On success the returned response's body holds the
// host's slot, the global slot and the registry reference.
func (t *Transport) send(req *http.Request, h *Host) (resp *http.Response, err error) {
	ctx := req.Context()
	opts := optsOf(ctx)
	a := attempt{req: req, h: h, id: t.requestID(opts), obs: opts.obs, now: time.Now(), cost: opts.cost, low: opts.low}
	start := a.now
	defer func() {
		end := a.now // read when the answer came
		if err != nil {
			end = time.Now() // a wait may have ended it
		}
		t.emit(ctx, a.obs, Event{Kind: EventDone, Time: end, Host: h.Key(), ID: a.id, Status: a.status, Outcome: a.out,
			Attempt: a.sent, Latency: end.Sub(start), Err: err, Method: req.Method})
	}()
	// The global budget is shared by every request: count deposits with an
	// atomic and fold them in every 64, or when a retry needs the budget,
	// so the hot path takes no global lock.
	if t.pending.Add(1) >= 64 {
		t.flushDeposits(a.now)
	}
	replay := replayable(req, t.RetryNonIdempotent) && !opts.noRetries
	var prevDelay time.Duration
	for a.n = 1; ; a.n++ {
		err := t.admit(ctx, &a)
		t.unmarkWaiting(&a)
		if err != nil {
			if a.n == 1 {
				closeBody(req)
			}
			return nil, err
		}
		a.retry = replay && a.n <= t.retries
		if err := t.do(ctx, &a); err != nil {
			t.release(&a)
			return nil, err
		}
		now, out := a.now, a.out
		if !out.retryable() || a.v.GiveUp || !replay {
			return t.finish(&a)
		}
		if a.n > t.retries {
			t.emit(ctx, a.obs, Event{Kind: EventGiveUp, Time: now, Host: h.Key(), ID: a.id, Reason: ReasonAttempts, Status: a.status, Attempt: a.n})
			return t.finish(&a)
		}
		if !a.v.Retry || !t.withdraw(now) {
			t.emit(ctx, a.obs, Event{Kind: EventGiveUp, Time: now, Host: h.Key(), ID: a.id, Reason: ReasonBudget, Status: a.status, Attempt: a.n})
			return t.finish(&a)
		}
		if a.resp != nil {
			drainClose(a.resp.Body)
		}
		t.release(&a)
		a.prev = out
		// A throttle paused the whole host in Report: admit waits that out
		// with every other request to it. Other failures back off this
		// request alone.
		if out != Throttled {
			wait := t.Backoff.Next(a.n, prevDelay)
			prevDelay = wait
			t.emit(ctx, a.obs, Event{Kind: EventWait, Time: now, Host: h.Key(), ID: a.id, Reason: ReasonBackoff, Delay: wait, Attempt: a.n + 1})
			if err := sleep(ctx, wait); err != nil {
				return nil, err
			}
		}
	}
}

// withdraw takes a retry from the global budget.
func (t *Transport) withdraw(now time.Time) bool {
	t.flushDeposits(now)
	return t.budget.Withdraw(now)
}

func (t *Transport) flushDeposits(now time.Time) {
	if n := t.pending.Swap(0); n > 0 {
		t.budget.DepositN(now, int(n))
	}
}

// finish returns the attempt's result: a response whose body holds the
// slots, or an error after releasing them.
func (t *Transport) finish(a *attempt) (*http.Response, error) {
	h, resp := a.h, a.resp
	if a.err != nil {
		t.release(a)
		return nil, &Error{Host: h.Key(), Attempts: a.n, Err: a.err}
	}
	if resp.Body == nil {
		resp.Body = http.NoBody
	}
	var b *slotBody
	if a.first != nil {
		b = &a.first.body
	} else {
		b = new(slotBody)
	}
	b.ReadCloser, b.t, b.h, b.lease = resp.Body, t, h, a.lease
	resp.Body = b
	return resp, nil
}

// release gives back the slots and lease an attempt held.
func (t *Transport) release(a *attempt) {
	t.releaseSlots(a.h, a.lease)
	a.lease = 0
}

// releaseSlots gives back a host's slot, the store's lease (0: none) and
// the global slot.
func (t *Transport) releaseSlots(h *Host, lease uint64) {
	h.gate.Release()
	if lease != 0 {
		t.store.Release(h, lease)
	}
	if t.global != nil {
		t.global.Release()
	}
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
