package otelpolite

import (
	"context"
	"strconv"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/polite-go/polite"
)

// TraceOptions configure NewTracer; the zero value uses the global
// TracerProvider.
type TraceOptions struct {
	// TracerProvider makes the spans. If nil, otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// Root makes a span for an attempt whose request's context carries no
	// recording span. By default attempts are traced only under a caller's
	// span, so a program that traces nothing pays nothing.
	Root bool
}

// Tracer makes a Transport's attempts spans: one CLIENT span per attempt
// sent over the wire (the semantic conventions' HTTP client span, with
// http.request.resend_count from the second attempt on), from when it was
// sent to its response's headers, as a child of the request's span; and
// puts polite's decisions on the request's span as events: each wait
// ("polite.wait", with polite.wait.reason and its planned length), pause,
// rate change, breaker change and give-up, with their inputs. It is a
// polite.ContextObserver: combine it with a Metrics with Tee.
type Tracer struct {
	tracer trace.Tracer
	root   bool
}

// NewTracer returns a Tracer.
func NewTracer(o TraceOptions) *Tracer {
	tp := o.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return &Tracer{tracer: tp.Tracer(ScopeName), root: o.Root}
}

// Observe implements polite.Observer (without a context: attempts are
// traced only with Root).
func (t *Tracer) Observe(e polite.Event) { t.ObserveContext(context.Background(), e) }

// ObserveContext implements polite.ContextObserver.
func (t *Tracer) ObserveContext(ctx context.Context, e polite.Event) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() && !(t.root && e.Kind == polite.EventAttempt) {
		return
	}
	switch e.Kind {
	case polite.EventAttempt:
		t.attempt(ctx, e)
	case polite.EventWait:
		parent.AddEvent("polite.wait", trace.WithTimestamp(e.Time), trace.WithAttributes(
			attribute.String("polite.wait.reason", string(e.Reason)), attribute.Float64("polite.wait.planned", e.Delay.Seconds()),
			attribute.String("server.address", e.Host)))
	case polite.EventPause, polite.EventRate, polite.EventBreaker, polite.EventGiveUp, polite.EventBlocked, polite.EventRobots:
		kv := []attribute.KeyValue{attribute.String("server.address", e.Host), attribute.String("polite.reason", string(e.Reason))}
		if e.Delay != 0 {
			kv = append(kv, attribute.Float64("polite.delay", e.Delay.Seconds()))
		}
		if e.RetryAfter != "" {
			kv = append(kv, attribute.String("polite.retry_after", e.RetryAfter), attribute.Bool("polite.clamped", e.Clamped))
		}
		if e.Kind == polite.EventRate {
			kv = append(kv, attribute.Float64("polite.rate", e.Rate), attribute.Float64("polite.rate.previous", e.Prev))
			if e.Capacity > 0 {
				kv = append(kv, attribute.Float64("polite.capacity", e.Capacity), attribute.String("polite.phase", e.Phase))
			}
		}
		if e.Detail != "" {
			kv = append(kv, attribute.String("polite.detail", e.Detail))
		}
		parent.AddEvent("polite."+e.Kind.String(), trace.WithTimestamp(e.Time), trace.WithAttributes(kv...))
	}
}

// attempt records an attempt's span after the fact, from its send to its
// answer.
func (t *Tracer) attempt(ctx context.Context, e polite.Event) {
	method := e.Method
	if method == "" {
		method = "GET"
	}
	kv := []attribute.KeyValue{attribute.String("http.request.method", method), attribute.String("server.address", e.Host)}
	if e.Attempt > 1 {
		kv = append(kv, attribute.Int("http.request.resend_count", e.Attempt-1))
	}
	if e.Status != 0 {
		kv = append(kv, attribute.Int("http.response.status_code", e.Status))
	} else {
		kv = append(kv, attribute.String("error.type", errorType(e)))
	}
	_, span := t.tracer.Start(ctx, method, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(e.Time.Add(-e.Latency)), trace.WithAttributes(kv...))
	switch {
	case e.Status >= 400:
		span.SetStatus(codes.Error, strconv.Itoa(e.Status))
	case e.Status == 0:
		span.SetStatus(codes.Error, errorType(e))
	}
	span.End(trace.WithTimestamp(e.Time))
}

// Tee returns an Observer handing each Event to every one of obs in turn,
// with its context to those that take one.
func Tee(obs ...polite.Observer) polite.ContextObserver { return tee(obs) }

type tee []polite.Observer

func (t tee) Observe(e polite.Event) { t.ObserveContext(context.Background(), e) }

func (t tee) ObserveContext(ctx context.Context, e polite.Event) {
	for _, o := range t {
		if co, ok := o.(polite.ContextObserver); ok {
			co.ObserveContext(ctx, e)
		} else {
			o.Observe(e)
		}
	}
}
