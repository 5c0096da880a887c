package otelpolite

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/polite-go/polite"
)

var t0 = time.Date(2026, 11, 23, 22, 0, 0, 0, time.UTC)

func sdk(t testing.TB) (*sdkmetric.MeterProvider, *sdkmetric.ManualReader) {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	return mp, r
}

func collect(t testing.TB, r *sdkmetric.ManualReader) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

// series counts what a Prometheus scrape of the metrics would hold: a
// line per counter or gauge point, and per histogram point one per bucket
// (and +Inf) plus _sum and _count.
func series(ms map[string]metricdata.Aggregation) int {
	n := 0
	for _, a := range ms {
		switch d := a.(type) {
		case metricdata.Histogram[float64]:
			for _, p := range d.DataPoints {
				n += len(p.Bounds) + 1 + 2
			}
		case metricdata.Sum[int64]:
			n += len(d.DataPoints)
		case metricdata.Sum[float64]:
			n += len(d.DataPoints)
		case metricdata.Gauge[float64]:
			n += len(d.DataPoints)
		case metricdata.Gauge[int64]:
			n += len(d.DataPoints)
		}
	}
	return n
}

// metrics returns Metrics on the SDK with a ManualReader, closed when
// the test ends.
func metrics(t testing.TB) (*Metrics, *sdkmetric.ManualReader) {
	t.Helper()
	mp, r := sdk(t)
	m, err := New(Options{MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, r
}

// request sends the events of one request to host through m: a wait for
// the rate, the send, the attempt, the request done.
func request(m polite.Observer, host string, status int) {
	now := t0
	m.Observe(polite.Event{Kind: polite.EventWait, Time: now, Host: host, Reason: polite.ReasonRate, Delay: 20 * time.Millisecond})
	m.Observe(polite.Event{Kind: polite.EventSend, Time: now, Host: host, Attempt: 1, Method: "GET"})
	out := polite.OK
	if status == 429 {
		out = polite.Throttled
	}
	m.Observe(polite.Event{Kind: polite.EventAttempt, Time: now, Host: host, Attempt: 1, Method: "GET", Status: status,
		Outcome: out, Latency: 30 * time.Millisecond})
	m.Observe(polite.Event{Kind: polite.EventDone, Time: now, Host: host, Attempt: 1, Method: "GET", Status: status,
		Outcome: out, Latency: 50 * time.Millisecond})
}

// retried sends the events of a request to host whose first attempt
// failed with out and whose second answered 200.
func retried(m polite.Observer, host string, out polite.Outcome) {
	now := t0
	m.Observe(polite.Event{Kind: polite.EventAttempt, Time: now, Host: host, Attempt: 1, Method: "GET", Outcome: out, Status: 500})
	m.Observe(polite.Event{Kind: polite.EventAttempt, Time: now, Host: host, Attempt: 2, Method: "GET", Status: 200, PrevOutcome: out})
	m.Observe(polite.Event{Kind: polite.EventDone, Time: now, Host: host, Attempt: 2, Method: "GET", Status: 200, Latency: 3 * time.Second})
}

// throttle sends what a 429 with Retry-After does to host.
func throttle(m polite.Observer, host string) {
	now := t0
	request(m, host, 429)
	m.Observe(polite.Event{Kind: polite.EventPause, Time: now, Host: host, Reason: polite.ReasonRetryAfter, Delay: 5 * time.Second})
	m.Observe(polite.Event{Kind: polite.EventRate, Time: now, Host: host, Reason: polite.ReasonAdaptive, Rate: 2, Prev: 4,
		Capacity: 3, Measured: true})
}

// TestCardinality: a run over 1,000,000 hosts, one in ten of them
// throttled, exports at most 5,000 series, with no overflow.
func TestCardinality(t *testing.T) {
	hosts := 1_000_000
	if testing.Short() {
		hosts = 100_000
	}
	m, r := metrics(t)
	for i := range hosts {
		h := fmt.Sprintf("host-%07d.example", i)
		switch {
		case i%10 == 0:
			throttle(m, h)
		case i%97 == 0:
			request(m, h, 503)
		default:
			request(m, h, 200)
		}
		if i%1000 == 0 {
			m.Observe(polite.Event{Kind: polite.EventBreaker, Host: h, Reason: polite.ReasonBreaker, Detail: "open"})
			m.Observe(polite.Event{Kind: polite.EventBlocked, Host: h, Reason: polite.ReasonBlock, Detail: "captcha"})
		}
		if i%31 == 0 {
			retried(m, h, polite.Outcome(i%9))
			m.Observe(polite.Event{Kind: polite.EventRobots, Host: h, Reason: polite.ReasonRobots})
			m.Observe(polite.Event{Kind: polite.EventGiveUp, Host: h, Reason: polite.ReasonBudget})
		}
	}
	ms := collect(t, r)
	n := series(ms)
	t.Logf("%d hosts: %d series", hosts, n)
	if n > 5000 {
		t.Errorf("%d hosts: %d series, want ≤ 5,000", hosts, n)
	}
	d := ms["http.client.request.duration"].(metricdata.Histogram[float64])
	addrs := map[string]bool{}
	for _, p := range d.DataPoints {
		v, _ := p.Attributes.Value("server.address")
		addrs[v.AsString()] = true
		if p.Attributes.HasValue("otel.metric.overflow") {
			t.Error("the SDK's cardinality limit overflowed")
		}
	}
	if len(addrs) != DefaultMaxHosts+1 || !addrs[Other] {
		t.Errorf("%d server.address values, want %d tracked and %s", len(addrs), DefaultMaxHosts, Other)
	}
	g := ms["polite.host.rate.limit"].(metricdata.Gauge[float64])
	if n := len(g.DataPoints); n == 0 || n > DefaultMaxHosts {
		t.Errorf("rate gauge has %d hosts, want some of the %d tracked (those with a rate)", n, DefaultMaxHosts)
	}
}

// TestFromTransport: a Transport's requests show up in the semconv and
// polite instruments, the throttled host under its own name.
func TestFromTransport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	mp, r := sdk(t)
	tr := &polite.Transport{IgnoreRobots: true, Retries: -1, Limits: polite.Limits{Rate: 1000, Burst: 10}}
	m, err := New(Options{MeterProvider: mp, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	tr.Observer = m
	c := &http.Client{Transport: tr}
	for _, p := range []string{"/", "/", "/slow"} {
		resp, err := c.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	ms := collect(t, r)
	host := srv.Listener.Addr().String()
	d := ms["http.client.request.duration"].(metricdata.Histogram[float64])
	got := map[string]uint64{}
	for _, p := range d.DataPoints {
		a, _ := p.Attributes.Value("server.address")
		port, _ := p.Attributes.Value("server.port")
		s, _ := p.Attributes.Value("http.response.status_code")
		got[fmt.Sprintf("%s:%d %d", a.AsString(), port.AsInt64(), s.AsInt64())] += p.Count
	}
	// The first host seen takes a slot at once (half of them go to the
	// first seen), its port in server.port.
	if got[host+" 204"] != 2 || got[host+" 429"] != 1 {
		t.Errorf("request durations by host and status = %v, want 2 × %s 204 and 1 × 429", got, host)
	}
	act := ms["http.client.active_requests"].(metricdata.Sum[int64])
	for _, p := range act.DataPoints {
		if p.Value != 0 {
			t.Errorf("active requests %v = %d after all ended, want 0", p.Attributes.ToSlice(), p.Value)
		}
	}
	pauses := ms["polite.host.pauses"].(metricdata.Sum[int64])
	if len(pauses.DataPoints) != 1 || !pauses.DataPoints[0].Attributes.HasValue("polite.pause.reason") {
		t.Errorf("pauses = %+v, want one with its reason", pauses.DataPoints)
	}
	count := ms["polite.host.count"].(metricdata.Sum[int64])
	paused := int64(0)
	for _, p := range count.DataPoints {
		if v, _ := p.Attributes.Value("polite.host.state"); v.AsString() == "paused" {
			paused = p.Value
		}
	}
	if paused != 1 {
		t.Errorf("hosts paused = %d, want 1", paused)
	}
	// No retry was taken: the budgets are at least their full floor (10
	// under the defaults), plus what the requests earned.
	if g := ms["polite.retry.budget"].(metricdata.Gauge[float64]); len(g.DataPoints) != 1 || g.DataPoints[0].Value < 10 {
		t.Errorf("polite.retry.budget = %+v, want one point, at least the full floor of 10", g.DataPoints)
	}
	hb := ms["polite.host.retry.budget"].(metricdata.Gauge[float64])
	if len(hb.DataPoints) != 1 || hb.DataPoints[0].Value < 10 {
		t.Errorf("polite.host.retry.budget = %+v, want the throttled (tracked) host's, at least 10", hb.DataPoints)
	} else if v, _ := hb.DataPoints[0].Attributes.Value("server.address"); v.AsString() != srv.Listener.Addr().(*net.TCPAddr).IP.String() {
		t.Errorf("polite.host.retry.budget is for %q, want %q", v.AsString(), host)
	}
}

// TestRequestInstruments: the logical duration is recorded apart from the
// attempts' (retries and waits in it), retries by why they were sent,
// robots.txt refusals and blocks by host.
func TestRequestInstruments(t *testing.T) {
	m, r := metrics(t)
	throttle(m, "hot.example")
	retried(m, "hot.example", polite.ServerError)
	retried(m, "cold.example", polite.Throttled)
	m.Observe(polite.Event{Kind: polite.EventRobots, Host: "cold.example", Reason: polite.ReasonRobots})
	m.Observe(polite.Event{Kind: polite.EventBlocked, Host: "waf.example", Reason: polite.ReasonBlock, Detail: "captcha"})
	m.Observe(polite.Event{Kind: polite.EventDone, Host: "gone.example", Err: fmt.Errorf("polite: breaker open")})
	ms := collect(t, r)
	logical := ms["polite.request.duration"].(metricdata.Histogram[float64])
	var n uint64
	var sum float64
	byPolite := 0
	for _, p := range logical.DataPoints {
		n, sum = n+p.Count, sum+p.Sum
		if v, _ := p.Attributes.Value("error.type"); v.AsString() == "polite" {
			byPolite++
		}
	}
	if n != 4 || sum < 6 || byPolite != 1 {
		t.Errorf("polite.request.duration = %d requests, %.2fs, %d ended by polite; want 4, ≥ 6s (two retried requests of 3s), 1", n, sum, byPolite)
	}
	attempts := ms["http.client.request.duration"].(metricdata.Histogram[float64])
	n = 0
	for _, p := range attempts.DataPoints {
		n += p.Count
	}
	if n != 5 {
		t.Errorf("http.client.request.duration has %d attempts, want 5 (one per attempt, not per request)", n)
	}
	got := map[string]int64{}
	for name, key := range map[string]string{"polite.request.retries": "polite.retry.reason", "polite.robots.disallowed": "server.address",
		"polite.host.blocks": "server.address"} {
		for _, p := range ms[name].(metricdata.Sum[int64]).DataPoints {
			v, _ := p.Attributes.Value(attribute.Key(key))
			got[name+" "+v.AsString()] += p.Value
		}
	}
	want := map[string]int64{"polite.request.retries server_error": 1, "polite.request.retries throttled": 1,
		"polite.robots.disallowed cold.example": 1, "polite.host.blocks waf.example": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("counters = %v, want %v", got, want)
	}
}

// TestNoAllocs: recording a request allocates nothing, with the SDK or
// without a provider.
func TestNoAllocs(t *testing.T) {
	mp, _ := sdk(t)
	for name, o := range map[string]Options{"noop": {MeterProvider: noop.NewMeterProvider()}, "sdk": {MeterProvider: mp}} {
		m, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		throttle(m, "hot.example") // tracked
		request(m, "a.example", 200)
		retried(m, "hot.example", polite.Throttled)
		if n := testing.AllocsPerRun(100, func() {
			request(m, "hot.example", 200)
			request(m, "cold.example", 200)
			retried(m, "hot.example", polite.Throttled)
		}); n != 0 {
			t.Errorf("%s: %v allocations per two requests, want 0", name, n)
		}
		m.Close()
	}
}

// BenchmarkRequest: the cost one request's events (a wait, the send, the
// attempt) cost: handed to an empty Observer (none: what the Transport
// pays to make and hand over the events anyway), to Metrics with the
// no-op provider, and with the SDK (cumulative, a ManualReader). What
// Metrics adds is the difference from none.
func BenchmarkRequest(b *testing.B) {
	mp, _ := sdk(b)
	for _, tc := range []struct {
		name string
		mp   func() polite.Observer
	}{
		{"none", func() polite.Observer { return polite.ObserverFunc(func(polite.Event) {}) }},
		{"noop", func() polite.Observer { m, _ := New(Options{MeterProvider: noop.NewMeterProvider()}); return m }},
		{"sdk", func() polite.Observer { m, _ := New(Options{MeterProvider: mp}); return m }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			m := tc.mp()
			throttle(m, "hot.example")
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					h := "hot.example"
					if i&1 == 1 {
						h = "cold.example"
					}
					request(m, h, 200)
					i++
				}
			})
		})
	}
}

// TestServerPort: a host key's port is server.port, not part of
// server.address (issue 33, item 6); a key without one has none.
func TestServerPort(t *testing.T) {
	m, r := metrics(t)
	for _, h := range []string{"a.test:8080", "b.test", "[2001:db8::1]:8443", "192.0.2.1:9000"} {
		request(m, h, 200)
	}
	got := map[string]bool{}
	for _, p := range collect(t, r)["http.client.request.duration"].(metricdata.Histogram[float64]).DataPoints {
		a, _ := p.Attributes.Value("server.address")
		k := a.AsString()
		if port, ok := p.Attributes.Value("server.port"); ok {
			k += fmt.Sprintf(" port %d", port.AsInt64())
		}
		got[k] = true
	}
	want := map[string]bool{"a.test port 8080": true, "b.test": true, "2001:db8::1 port 8443": true, "192.0.2.1 port 9000": true}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("server.address and server.port = %v, want %v", got, want)
	}
}

// TestSmallJobNamed: a job of eight hosts, half of them never
// constrained, has every host by name under the default cap (issue 33,
// item 6: the demo's four quiet hosts were all _other); past the cap's
// half, quiet hosts are _other while constrained ones still take the
// slots kept for them.
func TestSmallJobNamed(t *testing.T) {
	m, r := metrics(t)
	for i := range 8 {
		h := fmt.Sprintf("h%d.test", i)
		if i%2 == 0 {
			request(m, h, 200)
		} else {
			throttle(m, h)
		}
	}
	for i := range 30 {
		request(m, fmt.Sprintf("quiet%d.test", i), 200)
	}
	for i := range 30 {
		throttle(m, fmt.Sprintf("hot%d.test", i))
	}
	named := map[string]bool{}
	for _, p := range collect(t, r)["http.client.request.duration"].(metricdata.Histogram[float64]).DataPoints {
		a, _ := p.Attributes.Value("server.address")
		named[a.AsString()] = true
	}
	for i := range 8 {
		if h := fmt.Sprintf("h%d.test", i); !named[h] {
			t.Errorf("%s is not named", h)
		}
	}
	quiet, hot := 0, 0
	for h := range named {
		switch {
		case strings.HasPrefix(h, "quiet"):
			quiet++
		case strings.HasPrefix(h, "hot"):
			hot++
		}
	}
	// h0-h7 took 8 of the 10 slots any host may take (each was seen before
	// it was throttled), two quiet ones the rest; the 10 kept for
	// constrained hosts went to hot ones.
	if quiet != DefaultMaxHosts/2-8 || hot != DefaultMaxHosts/2 || !named[Other] {
		t.Errorf("named %d quiet and %d hot hosts (and _other: %v), want %d and %d", quiet, hot, named[Other], DefaultMaxHosts/2-8, DefaultMaxHosts/2)
	}
}

// TestRetryReasonUnknown: a retry whose reason was not told (a Try
// without TryOptions.Prev: PrevOutcome OK) counts as _OTHER, never "ok".
func TestRetryReasonUnknown(t *testing.T) {
	m, r := metrics(t)
	retried(m, "a.test", polite.OK)
	for _, p := range collect(t, r)["polite.request.retries"].(metricdata.Sum[int64]).DataPoints {
		if v, _ := p.Attributes.Value("polite.retry.reason"); v.AsString() != "_OTHER" {
			t.Errorf("retry reason %q, want _OTHER", v.AsString())
		}
	}
}
