package politeness

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/polite-go/polite/testbed"
)

// Defaults for Options fields left zero.
const (
	DefaultWorkers     = 32 // requests each host's clients keep going at once, at most
	DefaultConcurrency = 32 // the client's cap on requests in flight per host
)

// Options configure Run. The zero Options run every standard scenario
// against every default policy in memory.
type Options struct {
	// Scenarios to run. Nil means testbed.Scenarios().
	Scenarios []testbed.Scenario
	// Policies to compare. Nil means Peers().
	Policies []Policy
	// Duration overrides each scenario's duration when positive; steps of
	// a schedule keep their times.
	Duration time.Duration
	// Realtime serves the testbed on loopback sockets and runs in real time.
	// Otherwise hosts serve over an in-memory network: inside a
	// testing/synctest bubble a run then takes no real time.
	Realtime bool
	// Parallel runs the policies of a scenario at once, each against its
	// own hosts: a realtime run then takes the sum of the scenarios'
	// durations, not that times the number of policies.
	Parallel bool
	// Workers is the number of requests kept going per host: the demand,
	// which is endless. Zero means DefaultWorkers.
	Workers int
	// Concurrency is the client's cap on requests in flight per host, for
	// every policy (a policy may lower it). Zero means DefaultConcurrency.
	Concurrency int
	// Bare drives each policy through a minimal per-host limiter (in-flight
	// cap, token bucket, pause on Retry-After) instead of polite.Transport:
	// the policy alone, without the Transport's retries, breaker and
	// backoff pauses.
	Bare bool
	// Progress, when set, gets a line as each run ends.
	Progress io.Writer
}

// Report is the outcome of Run: one Result per scenario and policy, in the
// order of Options.Scenarios, then Options.Policies.
type Report struct {
	Realtime bool     `json:"realtime"`
	Bare     bool     `json:"bare"`
	Policies []string `json:"policies"`
	Results  []Result `json:"results"`
}

// Result is what one policy did to one scenario's hosts, measured by the
// hosts themselves (the testbed's server-side truth).
type Result struct {
	Scenario string        `json:"scenario"`
	Policy   string        `json:"policy"`
	Duration time.Duration `json:"duration_ns"`

	// Goodput is the requests the hosts admitted as a share of their hidden
	// capacity over the run (summed over hosts and 1-second windows).
	Goodput float64 `json:"goodput"`
	// Refused is the share of requests answered 429 or 503 (throttled or
	// shed): how often the client made a host say no.
	Refused float64 `json:"refused"`
	// Settle is the time from a capacity step until the requests sent over
	// 3 seconds were within 10 % of the new capacity (and each second's
	// within 20 %), the worst
	// over hosts with a step; -1 if it never did, 0 for scenarios without
	// a step.
	Settle time.Duration `json:"settle_ns"`
	// P95 is the worst host's p95 latency of admitted requests (server
	// side, queueing included) over its unloaded latency; 0 when hosts have
	// no latency.
	P95 float64 `json:"p95_ratio"`
	// Peak is the worst 1-second window's requests over that window's
	// capacity: the most a host was asked to bear, as a multiple of what it
	// could.
	Peak float64 `json:"peak"`

	Requests int64 `json:"requests"`
	Admitted int64 `json:"admitted"`

	Hosts []HostResult `json:"hosts"`
}

// HostResult is one host's share of a Result, with its timeline.
type HostResult struct {
	Host     string  `json:"host"`
	Goodput  float64 `json:"goodput"`
	Refused  float64 `json:"refused"`
	P95      float64 `json:"p95_ratio"`
	Peak     float64 `json:"peak"`
	Settle   float64 `json:"settle_s"` // -1 never, 0 no step
	Requests int64   `json:"requests"`
	Admitted int64   `json:"admitted"`
	// Per 1-second window: capacity, requests, admitted, refused, and the
	// client's rate at the window's end.
	Capacity []float64 `json:"capacity"`
	Sent     []int     `json:"sent"`
	Served   []int     `json:"served"`
	Denied   []int     `json:"denied"`
	Rate     []float64 `json:"rate"`
}

// Run runs every policy against every scenario and measures each pair.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if opts.Scenarios == nil {
		opts.Scenarios = testbed.Scenarios()
	}
	if opts.Policies == nil {
		opts.Policies = Peers()
	}
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	rep := &Report{Realtime: opts.Realtime, Bare: opts.Bare}
	for _, p := range opts.Policies {
		rep.Policies = append(rep.Policies, p.Name)
	}
	for _, sc := range opts.Scenarios {
		if opts.Duration > 0 {
			sc.Duration = opts.Duration
		}
		results := make([]Result, len(opts.Policies))
		errs := make([]error, len(opts.Policies))
		var wg sync.WaitGroup
		var progress sync.Mutex // guards opts.Progress, written by parallel runs
		for i, p := range opts.Policies {
			one := func() {
				results[i], errs[i] = RunOne(ctx, sc, p, opts)
				if opts.Progress != nil && errs[i] == nil {
					r := results[i]
					progress.Lock()
					defer progress.Unlock()
					fmt.Fprintf(opts.Progress, "%-16s %-14s goodput %5.1f%%  refused %5.2f%%\n",
						r.Scenario, r.Policy, 100*r.Goodput, 100*r.Refused)
				}
			}
			if opts.Parallel {
				wg.Go(one)
			} else {
				one()
			}
		}
		wg.Wait()
		for i := range results {
			if errs[i] != nil {
				return rep, errs[i]
			}
			rep.Results = append(rep.Results, results[i])
		}
		if err := ctx.Err(); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// RunOne runs policy p against a fresh set of sc's hosts for sc.Duration,
// with sc.Concurrency in place of Options.Concurrency when it is set.
// Options.Scenarios, Policies, Duration and Parallel are not used.
func RunOne(ctx context.Context, sc testbed.Scenario, p Policy, opts Options) (Result, error) {
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if sc.Concurrency > 0 {
		opts.Concurrency = sc.Concurrency // part of the scenario's shape
	}
	srv := testbed.NewServer(sc.Hosts...)
	if opts.Realtime {
		if err := srv.Start(); err != nil {
			return Result{}, fmt.Errorf("politeness: %s: %w", sc.Name, err)
		}
	} else {
		srv.StartInMemory()
	}
	defer srv.Close()
	base := srv.Transport()
	base.MaxIdleConnsPerHost = opts.Concurrency
	tr := newTracer()
	client := &http.Client{Transport: newClientTransport(base, p, opts.Concurrency, opts.Bare, tr)}

	runCtx, cancel := context.WithTimeout(ctx, sc.Duration)
	defer cancel()
	var wg sync.WaitGroup
	for _, h := range srv.Hosts() {
		url := srv.URL(h.Name())
		for w := range opts.Workers {
			wg.Go(func() { load(runCtx, client, url, w, opts.Workers) })
		}
	}
	wg.Wait()
	base.CloseIdleConnections()
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	return measure(sc, p.Name, srv, tr), nil
}

// load keeps one request going to url until ctx ends.
func load(ctx context.Context, c *http.Client, url string, w, stride int) {
	for n := w; ctx.Err() == nil; n += stride {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/page/"+strconv.Itoa(n), nil)
		if err != nil {
			return
		}
		resp, err := c.Do(req)
		if err != nil {
			// Not a busy loop: the bucket refuses at once a wait that would
			// outlast the run, and fake time only moves when all are idle.
			t := time.NewTimer(10 * time.Millisecond)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// measure reads the hosts' timelines into a Result.
func measure(sc testbed.Scenario, policy string, srv *testbed.Server, tr *tracer) Result {
	res := Result{Scenario: sc.Name, Policy: policy, Duration: sc.Duration}
	secs := int(sc.Duration / time.Second)
	var capSum, admSum float64
	var arrivals, refused int64
	settle := time.Duration(0)
	for _, h := range srv.Hosts() {
		cfg := h.Config()
		tl := h.Timeline()
		if len(tl) > secs {
			tl = tl[:secs]
		}
		hr := HostResult{Host: h.Name(), Settle: 0}
		var hCap, hAdm float64 // over windows with a capacity: goodput's terms
		var hArr, hRef, hAll int64
		for _, w := range tl {
			hr.Capacity = append(hr.Capacity, w.Capacity)
			hr.Sent = append(hr.Sent, w.Arrivals)
			hr.Served = append(hr.Served, w.Admitted)
			hr.Denied = append(hr.Denied, w.Rejected+w.Shed)
			hArr += int64(w.Arrivals)
			hRef += int64(w.Rejected + w.Shed)
			hAll += int64(w.Admitted)
			if w.Capacity > 0 {
				hCap += w.Capacity
				hAdm += float64(w.Admitted)
				hr.Peak = max(hr.Peak, float64(w.Arrivals)/w.Capacity)
			}
		}
		hr.Rate = tr.perSecond(h.Name(), h.Started(), len(tl))
		hr.Requests, hr.Admitted = hArr, hAll
		if hCap > 0 {
			hr.Goodput = hAdm / hCap
		}
		if hArr > 0 {
			hr.Refused = float64(hRef) / float64(hArr)
		}
		if cfg.Latency > 0 {
			hr.P95 = float64(h.Stats().P95) / float64(cfg.Latency)
		}
		for _, step := range cfg.Schedule {
			d := settleTime(tl, step.At)
			switch {
			case d < 0:
				settle, hr.Settle = -1, -1
			case hr.Settle >= 0:
				hr.Settle = max(hr.Settle, d.Seconds()) // the worst step
				if settle >= 0 {
					settle = max(settle, d)
				}
			}
		}
		capSum += hCap
		admSum += hAdm
		arrivals += hArr
		refused += hRef
		res.P95 = max(res.P95, hr.P95)
		res.Peak = max(res.Peak, hr.Peak)
		res.Hosts = append(res.Hosts, hr)
	}
	if capSum > 0 {
		res.Goodput = admSum / capSum
	}
	if arrivals > 0 {
		res.Refused = float64(refused) / float64(arrivals)
	}
	res.Settle = settle
	res.Requests = arrivals
	for _, hr := range res.Hosts {
		res.Admitted += hr.Admitted
	}
	return res
}

// settleTime is the time from a step at `at` until the requests sent over
// settleRun 1-second windows in a row are within 10 % of those windows'
// capacity, and each window's within 20 % of its own (a sum, so that whole
// requests counted at a few per second do not read as misses: at 9.2 req/s
// only 9 and 10 lie within 10 %); -1 if never.
func settleTime(tl []testbed.Second, at time.Duration) time.Duration {
	const settleRun = 3
	first := int(at / time.Second)
	if at%time.Second != 0 {
		first++ // the step's own window mixes two capacities
	}
	for i := first; i+settleRun <= len(tl); i++ {
		var sent, capacity float64
		steady := true
		for _, w := range tl[i : i+settleRun] {
			sent += float64(w.Arrivals)
			capacity += w.Capacity
			steady = steady && math.Abs(float64(w.Arrivals)-w.Capacity) <= 0.2*w.Capacity
		}
		if capacity > 0 && steady && math.Abs(sent-capacity) <= 0.1*capacity {
			return time.Duration(i)*time.Second - at
		}
	}
	return -1
}

// tracer records the rate each host's Rater set, over time.
type tracer struct {
	mu    sync.Mutex // guards hosts
	hosts map[string][]ratePoint
}

type ratePoint struct {
	at   time.Time
	rate float64
}

func newTracer() *tracer { return &tracer{hosts: make(map[string][]ratePoint)} }

func (t *tracer) rate(host string, at time.Time, r float64) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.hosts[host] = append(t.hosts[host], ratePoint{at, r})
	t.mu.Unlock()
}

// perSecond returns the rate in force at the end of each of n seconds from
// start.
func (t *tracer) perSecond(host string, start time.Time, n int) []float64 {
	t.mu.Lock()
	pts := t.hosts[host]
	t.mu.Unlock()
	out := make([]float64, n)
	j, cur := 0, 0.0
	for i := range out {
		end := start.Add(time.Duration(i+1) * time.Second)
		for j < len(pts) && !pts[j].at.After(end) {
			cur = pts[j].rate
			j++
		}
		out[i] = math.Round(cur*100) / 100
	}
	return out
}
