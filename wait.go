package polite

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/polite-go/polite/inflight"
)

// Wait waits until the host with this key would admit a request, and takes
// its token: the same per-host budget RoundTrip spends, for a client that
// does not speak HTTP through this Transport (a gRPC or database client, a
// headless browser) but shares the host with requests that do. It waits at
// the same gates, in the same order: the host's in-flight slot, its block
// mark, pause, breaker and token, then the global slot; the slots are given
// back when Wait returns, as there is no response body to hold them. It
// fails as RoundTrip would without sending: ErrBlocked, a *PausedError for
// a pause beyond MaxRetryAfter, breaker.ErrOpen (unless BreakerWait), or the
// context's error.
//
// The key is the one the Transport keeps the host under (see KeyOf and
// HostKey). Nothing is learned from what the caller then sends: outcomes
// reach the host's breaker, pauses and adaptive rate only through requests
// the Transport sends itself.
func (t *Transport) Wait(ctx context.Context, key string) error {
	t.init()
	if t.initErr != nil {
		return t.initErr
	}
	if key == "" {
		return errors.New("polite: Wait: empty host key")
	}
	h := t.reg.Get(key)
	defer t.reg.Put(h)
	opts := optsOf(ctx)
	a := attempt{h: h, id: opts.id, obs: opts.obs, now: time.Now(), cost: opts.cost, low: opts.low}
	err := t.admit(ctx, &a)
	t.unmarkWaiting(&a)
	if err != nil {
		return err
	}
	t.releaseHeld(&a, t.global != nil)
	return nil
}

// reqOpts are the per-request terms a context carries to a Transport,
// looked up once per request.
type reqOpts struct {
	cost      int      // tokens each attempt takes; 0 is 1
	noRetries bool     // send once
	low       bool     // background priority
	id        uint64   // the request's id (WithRequestID); 0: the Transport numbers it
	obs       Observer // the request's own Observer (WithObserver)
}

// Priority orders requests to one host that wait for its tokens.
type Priority int

const (
	// Normal is every request's priority unless told otherwise.
	Normal Priority = iota
	// Background requests take a host's tokens only when no request of
	// normal priority waits for them, and reserve none ahead: a crawl of
	// an API's archive beside the calls a user is waiting on. Under steady
	// normal demand they wait; each wait is bounded by the request's
	// context.
	Background
)

// WithPriority returns a context under which a request to a Transport
// (RoundTrip or Wait) has priority p among the requests to its host.
func WithPriority(ctx context.Context, p Priority) context.Context {
	o := optsOf(ctx)
	o.low = p == Background
	return context.WithValue(ctx, optsKey{}, o)
}

// yieldPoll is how often a background request looks again while requests
// of normal priority wait for its host.
const yieldPoll = 20 * time.Millisecond

// markWaiting counts a's request among its host's waiting ones, once, if it
// has normal priority.
func (t *Transport) markWaiting(a *attempt) {
	if a.low || a.wait {
		return
	}
	a.wait = true
	t.ext(a.h).waiting.Add(1)
}

// unmarkWaiting takes a's request off its host's waiting count.
func (t *Transport) unmarkWaiting(a *attempt) {
	if a.wait {
		a.wait = false
		t.ext(a.h).waiting.Add(-1)
	}
}

// optsKey is the context key of a request's reqOpts.
type optsKey struct{}

// optsOf returns the terms ctx carries.
func optsOf(ctx context.Context) reqOpts {
	o, _ := ctx.Value(optsKey{}).(reqOpts)
	return o
}

// WithCost returns a context under which a request to a Transport (RoundTrip,
// Try or Wait) takes n of its host's tokens instead of one, each attempt:
// an endpoint that costs the server more (a search, a batch of 10, an
// export) spends more of the host's budget, as APIs that price their calls
// by weight expect. n below 1 is 1. A cost above the host's burst can never
// be admitted, and fails with an error that says so (bucket.ErrExceedsBurst).
func WithCost(ctx context.Context, n int) context.Context {
	o := optsOf(ctx)
	o.cost = max(n, 1)
	return context.WithValue(ctx, optsKey{}, o)
}

// WithoutRetries returns a context under which a Transport sends each
// request once: a failed attempt comes back as it is (a 429 or 503 as a
// response, a network failure as an error), without backoff. The host still
// hears it: a throttle pauses the host for every other request. For a
// request a caller would rather drop than delay, or retries on its own.
func WithoutRetries(ctx context.Context) context.Context {
	o := optsOf(ctx)
	o.noRetries = true
	return context.WithValue(ctx, optsKey{}, o)
}

// slotWarnAfter is how long a request waits for its host's in-flight slot
// before the Transport logs a warning: a response body left unclosed holds
// its slot for good, and the host then seems to hang.
const slotWarnAfter = time.Minute

// acquireSlot waits for h's in-flight slot, and warns once the wait passes
// slotWarnAfter (with a Logger to warn to).
func (t *Transport) acquireSlot(ctx context.Context, h *Host) error {
	if t.Logger == nil {
		return h.gate.Acquire(ctx)
	}
	wctx, cancel := context.WithTimeout(ctx, slotWarnAfter)
	err := h.gate.Acquire(wctx)
	cancel()
	if err == nil || ctx.Err() != nil {
		return err
	}
	n, limit := h.InFlight()
	t.Logger.WarnContext(ctx, "polite: a request has waited long for its host's slot; is a response body left unclosed? (it holds the slot until closed)",
		"host", h.Key(), "waited", slotWarnAfter, "in_flight", n, "limit", limit)
	return h.gate.Acquire(ctx)
}

// An asker is a host's turn to ask the Store for a token it has not got.
// Requests that must wait for the host's rate take turns: one asks again
// when told (Admission.Poll) and reserves the token; the others wait for
// their turn, first come first served, without asking. Without turns each
// waiting request asked on its own every interval, and was sent in no
// order: with a Store shared by a fleet, a round trip to Redis each. With
// 8 requests waiting in each of 4 workers at 80 req/s, that was 26 calls
// to Redis per request sent, and is 6 (redisstore's
// TestWorkersShareOneRate holds 4 in each of 2 workers to at most 6: 7.7
// before). Requests of low priority take no turn: they yield to those
// waiting.
//
// The turn is a Gate of one slot (FIFO, honouring contexts), made at the
// host's first wait: a pointer is all a host that never waits pays.
type asker struct{ gate atomic.Pointer[inflight.Gate] }

// turn returns the host's Gate of one, making it on first use.
func (k *asker) turn() *inflight.Gate {
	if g := k.gate.Load(); g != nil {
		return g
	}
	k.gate.CompareAndSwap(nil, inflight.New(1))
	return k.gate.Load()
}
