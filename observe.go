package polite

import (
	"context"
	"log/slog"
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
)

var eventNames = [...]string{"attempt", "wait", "give-up", "rate", "breaker", "blocked", "pause", "robots", "refuse"}

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

// emit hands e to the observer and the logger, at Debug per attempt and
// wait, Info on state changes, Warn on degraded paths.
func (t *Transport) emit(ctx context.Context, e Event) {
	if t.Observer != nil {
		t.Observer.Observe(e)
	}
	lg := t.Logger
	if lg == nil {
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
	attrs := []slog.Attr{slog.String("host", e.Host)}
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
		attrs = append(attrs, slog.Float64("rate", e.Rate))
	}
	if e.Detail != "" {
		attrs = append(attrs, slog.String("detail", e.Detail))
	}
	if e.Err != nil {
		attrs = append(attrs, slog.String("error", e.Err.Error()))
	}
	lg.LogAttrs(ctx, level, "polite "+e.Kind.String(), attrs...)
}
