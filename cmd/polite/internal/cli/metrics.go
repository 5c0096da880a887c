package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/crawl"
	"github.com/polite-go/polite/otelpolite"
)

// metricsHostsHelp documents --metrics-hosts (fetch and proxy).
const metricsHostsHelp = "name at most `N` hosts in --metrics's server_address, the rest being _other: half go to the first hosts seen, " +
	"half are kept for the first throttled, paused or blocked (each name costs a few hundred series; 0: none)"

// defaultMetricsHosts is --metrics-hosts's default: enough for a job of
// ten hosts to name every one.
const defaultMetricsHosts = otelpolite.DefaultMaxHosts

// metricsHosts is otelpolite's MaxHosts for --metrics-hosts n: 0 names
// none (otelpolite's 0 is its default).
func metricsHosts(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

// serveMetrics serves metrics for Prometheus on addr's /metrics
// (--metrics), until stop is called: the process's own (go_*,
// process_*), extra's, and, when tr is not nil, the Transport's through
// the OpenTelemetry SDK and its Prometheus exporter, naming at most hosts
// hosts (--metrics-hosts). It makes the metrics tr's
// Observer, so it must be called before tr is first used. The address it
// listens on is returned (addr may name port 0).
func serveMetrics(addr string, tr *polite.Transport, hosts int, extra ...prometheus.Collector) (bound string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, usageErr("--metrics %q: %v", addr, err)
	}
	fail := func(err error) (string, func(), error) {
		ln.Close()
		return "", nil, fmt.Errorf("--metrics: %w", err)
	}
	reg := prometheus.NewRegistry()
	extra = append(extra, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, c := range extra {
		if err := reg.Register(c); err != nil {
			return fail(err)
		}
	}
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return fail(err)
	}
	res, err := metricsResource()
	if err != nil {
		return fail(err)
	}
	// The cardinality limit is a backstop above what the host policy
	// allows; the SDK's overflow series should never appear.
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithResource(res), sdkmetric.WithCardinalityLimit(10000))
	var m *otelpolite.Metrics
	if tr != nil {
		if m, err = otelpolite.New(otelpolite.Options{MeterProvider: mp, Transport: tr, MaxHosts: metricsHosts(hosts)}); err != nil {
			return fail(err)
		}
		tr.Observer = m
	}
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
		if m != nil {
			m.Close()
		}
		mp.Shutdown(ctx)
	}, nil
}

// metricsResource describes the process to the exporter (its target_info):
// service.name polite and the version, where the SDK would say
// unknown_service:polite. OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
// still win.
func metricsResource() (*resource.Resource, error) {
	return resource.New(context.Background(), resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", "polite"), attribute.String("service.version", version())),
		resource.WithFromEnv())
}

// jobMetrics is --metrics's view of a crawl job (polite fetch): its URLs
// by state and outcome, its queue and the bytes it kept, read from the job
// at each scrape. It reports nothing until the job is set.
type jobMetrics struct {
	job atomic.Pointer[crawl.Job]
}

var (
	descURLs     = prometheus.NewDesc("polite_crawl_urls", "URLs in the job, over every run.", nil, nil)
	descPending  = prometheus.NewDesc("polite_crawl_urls_pending", "URLs of the job not finished yet (loaded or not).", nil, nil)
	descFinished = prometheus.NewDesc("polite_crawl_urls_finished", "URLs finished, by outcome, over every run of the job.", []string{"outcome"}, nil)
	descDone     = prometheus.NewDesc("polite_crawl_urls_done_total", "URLs finished by this run.", nil, nil)
	descQueue    = prometheus.NewDesc("polite_crawl_queue_urls",
		"URLs in the scheduler by state: in_flight (being fetched), queued (ready once their host's rate or cap lets them), "+
			"delayed (put off by a backoff, a pause or an open breaker).", []string{"state"}, nil)
	descBytes = prometheus.NewDesc("polite_crawl_body_bytes_total", "Body bytes kept by this run.", nil, nil)
)

// set makes j the job reported (nil: none).
func (c *jobMetrics) set(j *crawl.Job) { c.job.Store(j) }

// Describe implements prometheus.Collector.
func (c *jobMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descURLs, descPending, descFinished, descDone, descQueue, descBytes} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *jobMetrics) Collect(ch chan<- prometheus.Metric) {
	j := c.job.Load()
	if j == nil {
		return
	}
	p := j.Progress(0)
	gauge := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	gauge(descURLs, p.Total)
	gauge(descPending, max(p.Total-p.Done, 0))
	for outcome, n := range p.Outcomes {
		gauge(descFinished, n, outcome)
	}
	ch <- prometheus.MustNewConstMetric(descDone, prometheus.CounterValue, float64(p.DoneNow))
	gauge(descQueue, p.InFlight, "in_flight")
	gauge(descQueue, p.Queued, "queued")
	gauge(descQueue, p.Delayed, "delayed")
	ch <- prometheus.MustNewConstMetric(descBytes, prometheus.CounterValue, float64(j.Bytes()))
}
