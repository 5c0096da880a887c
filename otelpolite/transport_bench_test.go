package otelpolite

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/metric/noop"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/bucket"
	"github.com/polite-go/polite/inflight"
)

// nopBase answers every request at once, from memory.
type nopBase struct{}

func (nopBase) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
}

// BenchmarkTransport: whole requests through a Transport (robots.txt off,
// no limit binding, an in-memory base) without an Observer, with an empty
// one (what handing the events over costs the Transport), and with Metrics
// on the no-op provider and on the SDK: the differences from empty are
// what Metrics adds per request.
func BenchmarkTransport(b *testing.B) {
	mp, _ := sdk(b)
	req, _ := http.NewRequest("GET", "http://metrics.test/", nil)
	for _, tc := range []struct {
		name string
		obs  func() polite.Observer
	}{
		{"none", func() polite.Observer { return nil }},
		{"empty", func() polite.Observer { return polite.ObserverFunc(func(polite.Event) {}) }},
		{"noop", func() polite.Observer { m, _ := New(Options{MeterProvider: noop.NewMeterProvider()}); return m }},
		{"sdk", func() polite.Observer { m, _ := New(Options{MeterProvider: mp}); return m }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			tr := &polite.Transport{Base: nopBase{}, IgnoreRobots: true, Limits: polite.Limits{Rate: bucket.Inf, Concurrency: inflight.Max}}
			if o := tc.obs(); o != nil {
				tr.Observer = o
			}
			b.ReportAllocs()
			for b.Loop() {
				resp, err := tr.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
			}
		})
	}
}
