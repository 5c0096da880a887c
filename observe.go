package polite

import (
	"context"
	"log/slog"
	"net/http"
	"time"
)

// Reason says why polite made a request wait, gave up, or changed a host.
type Reason string

// Reasons carried by Events and logs.
const (
	ReasonRate       Reason = "rate"        // the host's token bucket
	ReasonSlot       Reason = "concurrency" // the host's (or the global) in-flight cap
	ReasonCrawlDelay Reason = "crawl-delay" // robots.txt Crawl-delay / Request-rate
	ReasonRetryAfter Reason = "retry-after" // the host's Retry-After
	ReasonBackoff    Reason = "backoff"     // computed backoff after a failure
	ReasonRateLimit  Reason = "ratelimit"   // RateLimit / X-RateLimit headers
	ReasonBudget     Reason = "budget"      // retry budget exhausted
	ReasonBreaker    Reason = "breaker"     // circuit breaker open
	ReasonBlock      Reason = "block"       // soft block detected
	ReasonAdaptive   Reason = "adaptive"    // the adaptive controller moved the rate
	ReasonRobots     Reason = "robots"      // robots.txt disallows the URL
	ReasonAttempts   Reason = "attempts"    // no retries left
	ReasonStore      Reason = "store"       // a shared Store is unreachable and sends nothing meanwhile
	ReasonPriority   Reason = "priority"    // a background request yields to requests of normal priority
	ReasonPolicy     Reason = "policy"      // the host's configured limits (Limits, or a Rule: Detail), as a scheduler first sends to it
)

// EventKind says what an Event reports.
type EventKind int

const (
	// EventAttempt: one attempt finished (Status, Outcome, Latency, Attempt).
	EventAttempt EventKind = iota
	// EventWait: a request is about to wait Delay for Reason.
	EventWait
	// EventGiveUp: a request ends without a retry it could otherwise have
	// had, for Reason (budget, attempts, a Retry-After beyond the maximum).
	EventGiveUp
	// EventRate: the host's rate changed to Rate, for Reason.
	EventRate
	// EventBreaker: the host's breaker changed state (Detail: "open",
	// "half-open", "closed").
	EventBreaker
	// EventBlocked: the host answered with a soft block (Detail says which).
	EventBlocked
	// EventPause: the whole host is paused until Time+Delay, for Reason.
	EventPause
	// EventRobots: robots.txt disallowed a URL (Detail: the rule). A
	// Crawl-delay taking effect is an EventRate with ReasonCrawlDelay.
	EventRobots
	// EventRefuse: the server-side guard refused a request (Host: the
	// identity's key; Reason: ReasonRate, or ReasonStore when its store
	// failed; Delay: the Retry-After; Status: the answer sent; Detail: the
	// violated policy, with " (dry-run)" when it let the request through).
	EventRefuse
	// EventSend: an attempt (Attempt, Method) is about to go on the wire,
	// all waits done; its EventAttempt follows. For in-flight gauges and
	// spans; the logger and the audit log skip it.
	EventSend
	// EventDone: a request is finished, with its final answer (Status,
	// Outcome) or error (Err): Latency is its logical duration, from
	// entering the Transport's attempt loop to that answer, polite's waits
	// and every retry included, and Attempt the attempts sent (0 when it
	// ended before its first). For a logical-duration metric; the logger
	// and the audit log skip it (its attempts' lines say the same).
	EventDone
)

var eventNames = [...]string{"attempt", "wait", "give-up", "rate", "breaker", "blocked", "pause", "robots", "refuse", "send", "done"}

// String returns the kind's name.
func (k EventKind) String() string {
	if k >= 0 && int(k) < len(eventNames) {
		return eventNames[k]
	}
	return "unknown"
}

// Event is one thing polite did or saw for a host. Fields that do not apply
// to the Kind are zero.
type Event struct {
	Kind    EventKind
	Time    time.Time
	Host    string // the host key
	Reason  Reason
	Delay   time.Duration
	Status  int
	Outcome Outcome
	Attempt int // 1 for the first attempt
	Latency time.Duration
	Rate    float64
	Detail  string
	Err     error
	// Method is the request's method on EventSend, EventAttempt and
	// EventDone.
	Method string
	// PrevOutcome, on the EventSend and EventAttempt of a retry (Attempt >
	// 1), is the outcome of the attempt before it: why the request was
	// sent again.
	PrevOutcome Outcome

	// ID is the request's id: the one WithRequestID put in its context,
	// else a number the Transport gave it (unique within the Transport,
	// and from OwnIDs up, so that it is not one of the caller's ids: a
	// robots.txt fetch made for a crawl's URL 2 is not URL 2).
	// Every event of one request carries the same ID, so an audit log
	// joins them to what the caller kept (the crawl job's results.jsonl
	// carries the URL's id).
	ID uint64

	// The inputs of a decision, where it had them.
	//
	// Prev is the rate before an EventRate changed it (0 when unknown).
	// Capacity, Measured and Phase are the adaptive controller's estimate
	// of what the host admits, whether it was measured under congestion,
	// and its phase ("starting", "settled", "probing", "ramping") when it
	// set the rate (EventRate with ReasonAdaptive).
	Prev     float64
	Capacity float64
	// CapacityErr is how far off Capacity may be, either way, in req/s
	// (0: unknown).
	CapacityErr float64
	Measured    bool
	Phase       string
	// RetryAfter is the raw Retry-After field behind an EventPause or
	// EventGiveUp for ReasonRetryAfter. Requested is what the host asked
	// for (a Retry-After, a robots.txt delay) and Clamped says polite
	// applied less (Delay, Rate) or, on a give-up, would not wait that
	// long (MaxRetryAfter).
	RetryAfter string
	Requested  time.Duration
	Clamped    bool
	// Header is the response's header on an EventAttempt and on the
	// events a response caused (pause, rate, breaker, blocked, give-up),
	// nil otherwise: its RateLimit fields are the inputs of a
	// ReasonRateLimit decision. Observers must not keep or modify it, and
	// must not log it whole (it may carry cookies).
	Header http.Header
}

// ContextObserver is an Observer that is also given the context of the
// request an Event belongs to (the background context for host-wide
// events), to make spans or read trace ids from. A Transport whose Observer
// implements it calls ObserveContext instead of Observe.
type ContextObserver interface {
	Observer
	ObserveContext(ctx context.Context, e Event)
}

// WithRequestID returns a context whose requests carry id as their Events'
// ID (not 0), so events join to the caller's own records. An id under
// OwnIDs is never one the Transport gives a request of its own.
func WithRequestID(ctx context.Context, id uint64) context.Context {
	o := optsOf(ctx)
	o.id = id
	return context.WithValue(ctx, optsKey{}, o)
}

// WithObserver returns a context whose requests' Events also go to o
// (after the Transport's own Observer): a caller sharing a Transport
// observes its own requests, as the crawl job writes its audit log. o is
// given the context too when it is a ContextObserver.
func WithObserver(ctx context.Context, o Observer) context.Context {
	opts := optsOf(ctx)
	opts.obs = o
	return context.WithValue(ctx, optsKey{}, opts)
}

// RequestID returns the id WithRequestID put in ctx, or 0.
func RequestID(ctx context.Context) uint64 { return optsOf(ctx).id }

// OwnIDs is the first id a Transport numbers a request with that has no
// id of its own (WithRequestID): its robots.txt fetches, and requests of
// callers that do not number theirs. A caller whose ids stay under it
// (2^52, so that they are also exact in a JSON reader's float64) never
// shares one with the Transport's.
const OwnIDs = 1 << 52

// requestID returns the id of a request with terms o: its own, or the
// Transport's next number.
func (t *Transport) requestID(o reqOpts) uint64 {
	if o.id != 0 {
		return o.id
	}
	return OwnIDs + t.seq.Add(1) - 1
}

// Observer receives every Event. Observe is called synchronously on the
// request path, from many goroutines at once: it must be quick, safe for
// concurrent use, and must not retain the Event's Err beyond the call if it
// cares about memory. A metrics implementation counts; a UI samples.
type Observer interface {
	Observe(Event)
}

// ObserverFunc is a function that is an Observer.
type ObserverFunc func(Event)

// Observe calls f(e).
func (f ObserverFunc) Observe(e Event) { f(e) }

// emit hands e to the Transport's observer, the request's (obs, from its
// context; nil for none) and the logger, at Debug per attempt and wait,
// Info on state changes, Warn on degraded paths.
func (t *Transport) emit(ctx context.Context, obs Observer, e Event) {
	if t.ctxObs != nil {
		t.ctxObs.ObserveContext(ctx, e)
	} else if t.Observer != nil {
		t.Observer.Observe(e)
	}
	if obs != nil {
		if co, ok := obs.(ContextObserver); ok {
			co.ObserveContext(ctx, e)
		} else {
			obs.Observe(e)
		}
	}
	lg := t.Logger
	if lg == nil || e.Kind == EventSend || e.Kind == EventDone {
		return
	}
	level := slog.LevelDebug
	switch e.Kind {
	case EventBreaker, EventBlocked, EventRate, EventPause:
		level = slog.LevelInfo
	case EventGiveUp:
		level = slog.LevelWarn
	}
	if !lg.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{slog.String("host", e.Host), slog.Uint64("id", e.ID)}
	if e.Reason != "" {
		attrs = append(attrs, slog.String("reason", string(e.Reason)))
	}
	if e.Status != 0 {
		attrs = append(attrs, slog.Int("status", e.Status))
	}
	if e.Attempt != 0 {
		attrs = append(attrs, slog.Int("attempt", e.Attempt))
	}
	if e.Delay != 0 {
		attrs = append(attrs, slog.Duration("delay", e.Delay))
	}
	if e.Kind == EventAttempt {
		attrs = append(attrs, slog.String("outcome", e.Outcome.String()), slog.Duration("latency", e.Latency))
	}
	if e.Kind == EventRate {
		attrs = append(attrs, slog.Float64("rate", e.Rate), slog.Float64("prev", e.Prev))
	}
	if e.RetryAfter != "" {
		attrs = append(attrs, slog.String("retry_after", e.RetryAfter))
	}
	if e.Clamped {
		attrs = append(attrs, slog.Duration("requested", e.Requested), slog.Bool("clamped", true))
	}
	if e.Detail != "" {
		attrs = append(attrs, slog.String("detail", e.Detail))
	}
	if e.Err != nil {
		attrs = append(attrs, slog.String("error", e.Err.Error()))
	}
	lg.LogAttrs(ctx, level, "polite "+e.Kind.String(), attrs...)
}
