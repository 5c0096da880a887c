package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/otelpolite"
)

// metricsHosts is how many hosts the CLI's metrics name (the most
// constrained first to be seen); the rest are _other.
const metricsHosts = 10

// serveMetrics serves the Transport's metrics (and extra's) for
// Prometheus on addr's /metrics (--metrics), through the OpenTelemetry SDK and its Prometheus
// exporter, until stop is called. It makes the metrics tr's Observer, so
// it must be called before tr is first used. The address it listens on is
// returned (addr may name port 0).
func serveMetrics(addr string, tr *polite.Transport, extra ...prometheus.Collector) (bound string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, usageErr("--metrics %q: %v", addr, err)
	}
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		ln.Close()
		return "", nil, fmt.Errorf("--metrics: %w", err)
	}
	for _, c := range extra {
		if err := reg.Register(c); err != nil {
			ln.Close()
			return "", nil, fmt.Errorf("--metrics: %w", err)
		}
	}
	// The cardinality limit is a backstop above what the host policy
	// allows; the SDK's overflow series should never appear.
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithCardinalityLimit(10000))
	m, err := otelpolite.New(otelpolite.Options{MeterProvider: mp, Transport: tr, MaxHosts: metricsHosts})
	if err != nil {
		ln.Close()
		return "", nil, fmt.Errorf("--metrics: %w", err)
	}
	tr.Observer = m
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the listener is ours; Serve ends only on Shutdown
		}
	}()
	return ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
		m.Close()
		mp.Shutdown(ctx)
	}, nil
}
