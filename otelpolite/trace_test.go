package otelpolite

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/retry"
)

// TestTracer: under a caller's span, each attempt is a CLIENT child span
// with its resend count and status, and the backoff wait between them an
// event on the caller's span with its reason; without a span, nothing.
func TestTracer(t *testing.T) {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		if n == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	mp, _ := sdk(t)
	m, err := New(Options{MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	tr := &polite.Transport{IgnoreRobots: true, Limits: polite.Limits{Rate: 1000, Burst: 10},
		Backoff: retry.Backoff{Base: 1e6, Cap: 1e6}, Observer: Tee(m, NewTracer(TraceOptions{TracerProvider: tp}))}
	c := &http.Client{Transport: tr}
	ctx, parent := tp.Tracer("test").Start(context.Background(), "fetch")
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	parent.End()
	resp, err = c.Get(srv.URL) // no span: no trace
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	var attempts []sdktrace.ReadOnlySpan
	var fetch sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch s.Name() {
		case "GET":
			attempts = append(attempts, s)
		case "fetch":
			fetch = s
		}
	}
	if len(attempts) != 2 {
		t.Fatalf("%d attempt spans, want 2", len(attempts))
	}
	for i, s := range attempts {
		if s.SpanKind() != trace.SpanKindClient || s.Parent().SpanID() != fetch.SpanContext().SpanID() {
			t.Errorf("attempt %d: kind %v, parent %v; want a client span under fetch", i+1, s.SpanKind(), s.Parent().SpanID())
		}
		attrs := map[string]any{}
		for _, kv := range s.Attributes() {
			attrs[string(kv.Key)] = kv.Value.AsInterface()
		}
		wantStatus := []int64{500, 204}[i]
		if attrs["http.response.status_code"] != wantStatus || (i == 1) != (attrs["http.request.resend_count"] == int64(1)) {
			t.Errorf("attempt %d attributes %v, want status %d and resend_count on the second", i+1, attrs, wantStatus)
		}
	}
	waited := false
	for _, ev := range fetch.Events() {
		if ev.Name == "polite.wait" {
			for _, kv := range ev.Attributes {
				if kv.Key == "polite.wait.reason" && kv.Value.AsString() == "backoff" {
					waited = true
				}
			}
		}
	}
	if !waited {
		t.Errorf("fetch span events %v, want a polite.wait for backoff", fetch.Events())
	}
}
