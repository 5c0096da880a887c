// Package otelpolite records a polite.Transport's decisions as
// OpenTelemetry metrics, through the OpenTelemetry metric API only (the
// SDK and an exporter are the program's choice).
//
// A Metrics is a polite.Observer. Set it as a Transport's Observer:
//
//	m, err := otelpolite.New(otelpolite.Options{MeterProvider: mp, Transport: tr})
//	tr.Observer = m
//
// It records, per attempt, the stable HTTP client instruments
// http.client.request.duration (the time on the wire: polite's waits are
// not in it) and http.client.active_requests, and polite's own:
//
//	polite.request.duration         histogram, s      as http.client.request.duration, of the final answer
//	polite.throttle.wait.duration   histogram, s      polite.wait.reason, server.address
//	polite.request.retries          counter           polite.retry.reason, server.address
//	polite.request.give_ups         counter           polite.giveup.reason
//	polite.robots.disallowed        counter           server.address
//	polite.host.blocks              counter           server.address
//	polite.host.pauses              counter           polite.pause.reason, server.address
//	polite.host.pause.duration      histogram, s      polite.pause.reason, polite.pause.clamped
//	polite.host.rate.changes        counter           polite.rate.direction, polite.rate.reason
//	polite.breaker.transitions      counter           polite.breaker.state
//	polite.host.rate.limit          gauge, {request}/s server.address (tracked hosts only)
//	polite.host.capacity            gauge, {request}/s server.address, polite.capacity.measured (tracked hosts only)
//	polite.host.count               updowncounter     polite.host.state (with Options.Transport)
//	polite.retry.budget             gauge, {retry}    (the Transport's global budget, with Options.Transport)
//	polite.host.retry.budget        gauge, {retry}    server.address (tracked hosts, with Options.Transport)
//
// polite.request.duration is a request's logical duration: from its first
// attempt's admission to its final answer, polite's waits and every retry
// included (polite.Event's EventDone); a request that ended in an error
// carries its error.type. polite.retry.reason is the outcome of the
// attempt before the retry (polite.Outcome's name: throttled,
// server_error, overloaded, network_error).
//
// server.address is bounded: MaxHosts hosts are tracked by name for good
// (sticky). Half of the slots go to the first hosts seen, so that a job
// of a few hosts has every one by name; the rest are kept for the first
// hosts to be throttled, paused, cut, blocked or have their breaker move.
// Every other host is "_other", which keeps the status and the reason. A
// run over a million hosts therefore exports as many series as one over a
// hundred. A host key's port, when it keeps one (not the scheme's
// default), is server.port, as the semantic conventions have it; _other
// has none.
//
// A request in flight when its host comes to be tracked was counted up in
// http.client.active_requests under _other and is counted down under the
// host's name: the two drift apart by the requests in flight at that
// instant, once per tracked host (MaxHosts times at most).
//
// error.type, on attempts without a response, is one of: "network",
// "timeout" (the request's context ended), "canceled", "_OTHER"; on
// polite.request.duration also "polite" (polite ended the request before
// any attempt: a breaker open, robots.txt, a store's refusal).
package otelpolite

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/breaker"
)

// ScopeName is the instrumentation scope of the instruments.
const ScopeName = "github.com/polite-go/polite/otelpolite"

// DefaultMaxHosts is how many hosts are tracked by name when
// Options.MaxHosts is zero.
const DefaultMaxHosts = 20

// Other is the server.address of the hosts not tracked by name.
const Other = "_other"

// Options configure New; the zero value records to the global
// MeterProvider.
type Options struct {
	// MeterProvider makes the instruments. If nil, otel.GetMeterProvider()
	// is used (a no-op until the program sets one).
	MeterProvider metric.MeterProvider
	// MaxHosts is how many hosts are tracked by name: the first
	// MaxHosts/2 seen, and the first to be constrained (throttled, paused,
	// cut, blocked, a breaker moved) for the rest. If zero,
	// DefaultMaxHosts; if negative, none (every host is _other).
	MaxHosts int
	// Transport, when set, is read at each collection for
	// polite.host.count (hosts by state).
	Transport *polite.Transport
}

// Advisory bucket boundaries: the semantic conventions' for an attempt,
// long ones for waits and pauses, which run to minutes.
var (
	attemptBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}
	longBuckets    = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 3600}
)

// Metrics records Events as metrics. It is safe for concurrent use.
type Metrics struct {
	duration  metric.Float64Histogram
	logical   metric.Float64Histogram
	active    metric.Int64UpDownCounter
	wait      metric.Float64Histogram
	retries   metric.Int64Counter
	giveUps   metric.Int64Counter
	pauses    metric.Int64Counter
	pauseLen  metric.Float64Histogram
	rates     metric.Int64Counter
	breaker   metric.Int64Counter
	robots    metric.Int64Counter
	blocks    metric.Int64Counter
	reg       metric.Registration
	transport *polite.Transport

	max   int          // hosts tracked by name
	quiet int          // of which hosts not constrained may take
	hosts sync.Map     // host key → *slot, for tracked hosts
	n     atomic.Int64 // slots taken
	mu    sync.Mutex   // guards admitting a host (n and hosts together)
	other *slot
	slots []*slot // tracked, in admission order; guarded by mu

	sets attrCache // attribute sets of low-cardinality labels
}

// New returns a Metrics making its instruments with o's MeterProvider.
func New(o Options) (*Metrics, error) {
	mp := o.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := &Metrics{transport: o.Transport, max: o.MaxHosts}
	if m.max == 0 {
		m.max = DefaultMaxHosts
	}
	m.quiet = m.max / 2
	m.other = newSlot(Other)
	meter := mp.Meter(ScopeName)
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	hist := func(name, desc string, bounds []float64) metric.Float64Histogram {
		h, err := meter.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(bounds...))
		add(err)
		return h
	}
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		add(err)
		return c
	}
	m.duration = hist("http.client.request.duration", "Duration of HTTP client requests (one attempt, polite's waits excluded).", attemptBuckets)
	m.logical = hist("polite.request.duration",
		"Duration of requests from their first attempt to their final answer, polite's waits and retries included.", longBuckets)
	m.wait = hist("polite.throttle.wait.duration", "Time a request was made to wait before an attempt, by reason.", longBuckets)
	m.pauseLen = hist("polite.host.pause.duration", "Length of host pauses, by reason and whether polite applied less than asked.",
		longBuckets)
	m.retries = counter("polite.request.retries", "{retry}", "Attempts after a request's first, by why it was resent.")
	m.giveUps = counter("polite.request.give_ups", "{request}", "Requests that ended without a retry they could have had, by reason.")
	m.pauses = counter("polite.host.pauses", "{pause}", "Times a host was paused, by reason.")
	m.rates = counter("polite.host.rate.changes", "{change}", "Changes of a host's rate, by direction and reason.")
	m.breaker = counter("polite.breaker.transitions", "{transition}", "Circuit breaker transitions, by the new state.")
	m.robots = counter("polite.robots.disallowed", "{request}", "Requests robots.txt disallowed.")
	m.blocks = counter("polite.host.blocks", "{block}", "Soft blocks (a WAF or anti-bot answer) hosts gave.")
	var err error
	m.active, err = meter.Int64UpDownCounter("http.client.active_requests", metric.WithUnit("{request}"),
		metric.WithDescription("Number of active HTTP requests."))
	add(err)
	gauge := func(name, unit, desc string) metric.Float64ObservableGauge {
		g, err := meter.Float64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		add(err)
		return g
	}
	rate := gauge("polite.host.rate.limit", "{request}/s", "The rate in force for the tracked hosts.")
	capacity := gauge("polite.host.capacity", "{request}/s", "The adaptive controller's capacity estimate for the tracked hosts.")
	budget := gauge("polite.retry.budget", "{retry}", "Retries the Transport's global retry budget allows now.")
	hostBudget := gauge("polite.host.retry.budget", "{retry}", "Retries the tracked hosts' retry budgets allow now.")
	count, err := meter.Int64ObservableUpDownCounter("polite.host.count", metric.WithUnit("{host}"),
		metric.WithDescription("Hosts by state (with a Transport to read)."))
	add(err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	m.reg, err = meter.RegisterCallback(func(_ context.Context, ob metric.Observer) error {
		m.observeHosts(ob, rate, capacity)
		if m.transport != nil {
			m.observeStates(ob, count)
			m.observeBudgets(ob, budget, hostBudget)
		}
		return nil
	}, rate, capacity, count, budget, hostBudget)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Close unregisters the Metrics' callback.
func (m *Metrics) Close() error { return m.reg.Unregister() }

// Observe implements polite.Observer.
func (m *Metrics) Observe(e polite.Event) { m.ObserveContext(context.Background(), e) }

// ObserveContext implements polite.ContextObserver: measurements carry
// the request's context (for exemplars).
func (m *Metrics) ObserveContext(ctx context.Context, e polite.Event) {
	switch e.Kind {
	case polite.EventSend:
		if m.active.Enabled(ctx) {
			m.active.Add(ctx, 1, m.slotOf(e.Host, false).active(e.Method).add...)
		}
	case polite.EventAttempt:
		// Counted down under the name it was counted up under, as far as
		// it can tell: before this answer may admit the host.
		if m.active.Enabled(ctx) {
			m.active.Add(ctx, -1, m.slotOf(e.Host, false).active(e.Method).add...)
		}
		if !m.duration.Enabled(ctx) && !m.retries.Enabled(ctx) {
			return
		}
		s := m.slotOf(e.Host, e.Status == 429 || e.Status == 503)
		m.duration.Record(ctx, e.Latency.Seconds(), s.attempt(e.Method, e.Status, errorType(e)).rec...)
		if e.Attempt > 1 {
			m.retries.Add(ctx, 1, s.retry(e.PrevOutcome).add...)
		}
	case polite.EventDone:
		if m.logical.Enabled(ctx) {
			s := m.slotOf(e.Host, false)
			m.logical.Record(ctx, e.Latency.Seconds(), s.attempt(e.Method, e.Status, doneErrorType(e)).rec...)
		}
	case polite.EventRobots:
		if m.robots.Enabled(ctx) {
			m.robots.Add(ctx, 1, m.slotOf(e.Host, false).plain.add...)
		}
	case polite.EventBlocked:
		if m.blocks.Enabled(ctx) {
			m.blocks.Add(ctx, 1, m.slotOf(e.Host, true).plain.add...)
		}
	case polite.EventWait:
		if m.wait.Enabled(ctx) {
			m.wait.Record(ctx, e.Delay.Seconds(), m.slotOf(e.Host, false).reason(e.Reason, "polite.wait.reason").rec...)
		}
	case polite.EventPause:
		s := m.slotOf(e.Host, true)
		if m.pauses.Enabled(ctx) {
			m.pauses.Add(ctx, 1, s.reason(e.Reason, "polite.pause.reason").add...)
		}
		if m.pauseLen.Enabled(ctx) {
			m.pauseLen.Record(ctx, e.Delay.Seconds(), m.sets.pause(e.Reason, e.Clamped).rec...)
		}
	case polite.EventGiveUp:
		if m.giveUps.Enabled(ctx) {
			m.giveUps.Add(ctx, 1, m.sets.one("polite.giveup.reason", string(e.Reason)).add...)
		}
	case polite.EventRate:
		s := m.slotOf(e.Host, e.Prev > e.Rate)
		s.setRate(e.Rate, e.Capacity, e.Measured)
		if m.rates.Enabled(ctx) {
			dir := "up"
			if e.Prev > e.Rate {
				dir = "down"
			}
			m.rates.Add(ctx, 1, m.sets.two("polite.rate.direction", dir, "polite.rate.reason", string(e.Reason)).add...)
		}
	case polite.EventBreaker:
		m.slotOf(e.Host, true)
		if m.breaker.Enabled(ctx) {
			m.breaker.Add(ctx, 1, m.sets.one("polite.breaker.state", e.Detail).add...)
		}
	}
}

// slotOf returns host's slot: its own when it is tracked, or when a slot
// is free for it (it then takes it for good), else _other's. Any host may
// take one of the first m.quiet slots; only a constrained one the rest.
func (m *Metrics) slotOf(host string, constrained bool) *slot {
	if v, ok := m.hosts.Load(host); ok {
		return v.(*slot)
	}
	limit := int64(m.quiet)
	if constrained {
		limit = int64(m.max)
	}
	if m.n.Load() >= limit {
		return m.other
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.hosts.Load(host); ok {
		return v.(*slot)
	}
	if m.n.Load() >= limit {
		return m.other
	}
	s := newSlot(host)
	m.slots = append(m.slots, s)
	m.hosts.Store(host, s)
	m.n.Add(1)
	return s
}

func (m *Metrics) observeHosts(ob metric.Observer, rate, capacity metric.Float64Observable) {
	m.mu.Lock()
	slots := m.slots
	m.mu.Unlock()
	for _, s := range slots {
		r, c, measured := s.rates()
		if r > 0 && r < 1e15 {
			ob.ObserveFloat64(rate, r, s.plain.obs...)
		}
		if c > 0 {
			ob.ObserveFloat64(capacity, c, s.capSet(measured).obs...)
		}
	}
}

// Host states of polite.host.count.
var states = []string{"active", "idle", "paused", "breaker_open", "breaker_half_open", "blocked"}

func (m *Metrics) observeStates(ob metric.Observer, count metric.Int64Observable) {
	var n [6]int64
	reg := m.transport.Registry()
	reg.Range(func(h *polite.Host) bool {
		st, ok := m.transport.State(h.Key())
		if !ok {
			return true
		}
		n[stateOf(st)]++
		return true
	})
	for i, name := range states {
		ob.ObserveInt64(count, n[i], m.sets.one("polite.host.state", name).obs...)
	}
}

// observeBudgets reports the global retry budget and the tracked hosts'.
func (m *Metrics) observeBudgets(ob metric.Observer, global, host metric.Float64Observable) {
	ob.ObserveFloat64(global, m.transport.RetryBudget())
	m.mu.Lock()
	slots := m.slots
	m.mu.Unlock()
	for _, s := range slots {
		if st, ok := m.transport.State(s.name); ok {
			ob.ObserveFloat64(host, st.RetryBudget, s.plain.obs...)
		}
	}
}

// errorType is an attempt's error.type: "" with a response.
func errorType(e polite.Event) string {
	if e.Status != 0 {
		return ""
	}
	switch e.Outcome {
	case polite.NetworkError:
		if errors.Is(e.Err, context.DeadlineExceeded) {
			return "timeout"
		}
		return "network"
	case polite.Canceled:
		return "canceled"
	}
	return "_OTHER"
}

// doneErrorType is a finished request's error.type: "" with an answer,
// "polite" when polite itself ended it (a breaker open, a retry budget
// spent, robots.txt), else as errorType.
func doneErrorType(e polite.Event) string {
	if e.Status != 0 && e.Err == nil {
		return ""
	}
	if e.Attempt == 0 && e.Err != nil && !errors.Is(e.Err, context.Canceled) && !errors.Is(e.Err, context.DeadlineExceeded) {
		return "polite"
	}
	switch {
	case errors.Is(e.Err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(e.Err, context.Canceled):
		return "canceled"
	}
	return errorType(e)
}

// stateOf returns the index in states of a host's state.
func stateOf(st polite.HostState) int {
	switch {
	case st.Blocked != "":
		return 5
	case st.PausedUntil.After(time.Now()):
		return 2
	case st.Breaker == breaker.Open:
		return 3
	case st.Breaker == breaker.HalfOpen:
		return 4
	case st.InFlight > 0:
		return 0
	}
	return 1
}
