package politeness

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/polite-go/polite/testbed"
)

// LiveFlags are the `polite fetch` flags of every live run: what a new user
// tries first (issue 16). A knee scenario sets its own --concurrency.
var LiveFlags = []string{
	"--rate", "5", "--max-rate", "200", "--concurrency", "8", "--retries", "8", "--timeout", "5s",
	"--bodies", "none", "--progress", "none",
}

// LiveScenario is one scenario of the live benchmark: hosts served on
// loopback (the testbed's, or nginx's) and a URL list the built CLI fetches
// in a process of its own, in real time.
type LiveScenario struct {
	// Name identifies the scenario, such as "bucket-load".
	Name string
	// About says in one line what it tests.
	About string
	// Twin names the simulated scenario (testbed.Scenarios) whose hosts it
	// serves, "" if none.
	Twin string
	// Hosts are the testbed hosts fetched from; with Nginx, the backends
	// nginx proxies to (at most one), if any.
	Hosts []testbed.HostConfig
	// Nginx puts nginx in front: its limits, not the testbed's, decide.
	Nginx *NginxSite
	// Seconds is the run's length at capacity: each host gets the pages its
	// capacity serves in that time. URLs, when set, overrides it for every
	// host.
	Seconds float64
	URLs    int
	// Path is each URL's path before its page number; "" means "/page/".
	Path string
	// Target says in words what the issue asks of the scenario.
	Target string
	// Concurrency replaces LiveFlags' --concurrency when set: the
	// client's in-flight cap is part of a knee's shape.
	Concurrency int
}

// flags returns the `polite fetch` flags of the scenario's runs:
// LiveFlags, with its --concurrency when it has one.
func (sc LiveScenario) flags() []string {
	f := slices.Clone(LiveFlags)
	if i := slices.Index(f, "--concurrency"); i >= 0 && sc.Concurrency > 0 {
		f[i+1] = strconv.Itoa(sc.Concurrency)
	}
	return f
}

// LiveScenarios returns the live benchmark's scenarios: every simulated
// scenario's hosts (its twin), the hosts of issue 16, and nginx.
func LiveScenarios() []LiveScenario {
	const ms = time.Millisecond
	var out []LiveScenario
	for _, sc := range testbed.Scenarios() {
		l := LiveScenario{Name: sc.Name, About: sc.About, Twin: sc.Name, Hosts: sc.Hosts, Seconds: 30, Concurrency: sc.Concurrency}
		switch {
		case sc.Name == "mixed-20":
			l.Seconds = 20
		case strings.HasPrefix(sc.Name, "knee-"):
			// Twenty seconds each: the knees are many, and a live run of
			// them all stays within a few minutes (issue 34).
			l.Seconds, l.Target = 20, "p95 ≤ 3× unloaded at ≥ 80 % of the knee, ≤ 1 % 429"
		}
		out = append(out, l)
	}
	return append(out,
		LiveScenario{
			Name: "bucket-load", About: "20 req/s bucket, burst 5, 429; latency 10 ms + 10 ms per request in flight",
			Hosts:  []testbed.HostConfig{{Name: "load.test", Rate: 20, Burst: 5, Latency: 10 * ms, Slowdown: 1}},
			URLs:   1500,
			Target: "goodput ≥ 95 %, ≤ 1 % 429",
		},
		LiveScenario{
			Name: "step-40-10", About: "bucket 40 → 10 req/s at 15 s",
			Hosts: []testbed.HostConfig{{Name: "down.test", Rate: 40, Burst: 20, Latency: 20 * ms,
				Schedule: []testbed.Step{{At: 15 * time.Second, Rate: 10, Burst: 5}}}},
			Seconds: 30,
			Target:  "≤ 2 % 429 after the step and overall; settle ≤ 5 s",
		},
		LiveScenario{
			Name: "step-10-40", About: "bucket 10 → 40 req/s at 15 s",
			Hosts: []testbed.HostConfig{{Name: "up.test", Rate: 10, Burst: 5, Latency: 20 * ms,
				Schedule: []testbed.Step{{At: 15 * time.Second, Rate: 40, Burst: 20}}}},
			Seconds: 30,
			Target:  "settle ≤ 10 s, ≤ 2 % 429",
		},
		LiveScenario{
			Name: "queue-knee", About: "FIFO queue, never 429: 1 server × 10 ms (100 req/s)",
			Hosts:   []testbed.HostConfig{{Name: "queue.test", NoThrottle: true, Servers: 1, Latency: 10 * ms, Jitter: 0.1}},
			Seconds: 20,
			Target:  "p95 ≤ 3× unloaded at ≥ 80 % of the knee",
		},
		LiveScenario{
			Name: "not-found", About: "50 req/s bucket answering 404 to every page",
			Hosts:   []testbed.HostConfig{{Name: "gone.test", Rate: 50, Burst: 25, Latency: 20 * ms}},
			Seconds: 20, Path: "/status/404?n=",
			Target: "404 counts as healthy: ramps to capacity",
		},
		LiveScenario{
			Name: "nginx-nodelay", About: "nginx limit_req rate=20r/s burst=5 nodelay, 429",
			Nginx:  &NginxSite{Rate: 20, Burst: 5, NoDelay: true, Status: 429},
			URLs:   1500, // as bucket-load: the same capacity, the same run
			Target: "goodput ≥ 95 %, ≤ 1 % 429",
		},
		LiveScenario{
			Name: "nginx-delay", About: "nginx limit_req rate=10r/s burst=20 (delay: a queue; 503 past it)",
			Nginx:   &NginxSite{Rate: 10, Burst: 20, Status: 503},
			Seconds: 30,
			Target:  "p95 ≤ 100 ms at ≥ 8 req/s (80 %), no 503",
		},
		LiveScenario{
			Name: "nginx-conn", About: "nginx limit_conn 5 (503) before a 100 ms backend (50 req/s)",
			Nginx:   &NginxSite{Conn: 5, Status: 503},
			Hosts:   []testbed.HostConfig{{Name: "backend.test", Latency: 100 * ms}},
			Seconds: 30,
		},
	)
}

// LiveOptions configure RunLive.
type LiveOptions struct {
	// Polite is the path of the built CLI. Required.
	Polite string
	// Scenarios to run; nil means LiveScenarios().
	Scenarios []LiveScenario
	// Runs of each scenario; zero means 3.
	Runs int
	// Parallel is how many runs go at once (each against its own hosts and
	// process); zero means 1.
	Parallel int
	// Dir holds each run's job directory and logs; "" means a temporary
	// directory, removed at the end.
	Dir string
	// Progress, when set, gets a line as each run ends.
	Progress io.Writer
	// Fleets are the rows of each scenario: 0 is one `polite fetch`
	// process alone; N ≥ 1 a fleet of N processes with the same flags and
	// --redis (a redis-server started for the run) and --fleet, started
	// together, the URL list dealt out among them. The servers judge their
	// combined traffic as they judge one process's. Nil means {0}.
	Fleets []int
	// RedisServer is the redis-server binary a fleet row starts; "" means
	// the one on PATH.
	RedisServer string
}

// LiveRun is one run of a live scenario, measured on the server's side.
type LiveRun struct {
	Scenario string  `json:"scenario"`
	Run      int     `json:"run"`
	Wall     float64 `json:"wall_s"` // the fetch process's wall time
	Exit     int     `json:"exit"`   // its exit status
	Load     float64 `json:"load1"`  // 1-minute load average at the start
	// Goodput is the requests the hosts admitted (served) over what their
	// capacity allowed during the process's wall time (for a host whose
	// URLs ran out sooner, up to its last second with requests).
	Goodput float64 `json:"goodput"`
	// Refused is the share of requests answered 429 or 503; RefusedAfter
	// the same after a capacity step (the scenario's first).
	Refused      float64 `json:"refused"`
	RefusedAfter float64 `json:"refused_after"`
	// P95 is the worst host's p95 server-side latency of served requests,
	// queueing included; P95Ratio the same over its unloaded latency.
	// Unloaded is that host's unloaded latency, measured before the run
	// (see unloadedLatency), or its configured one when not measured.
	P95      time.Duration `json:"p95_ns"`
	P95Ratio float64       `json:"p95_ratio"`
	Unloaded time.Duration `json:"unloaded_ns,omitempty"`
	// Settle is the time from a step until the requests sent were within
	// 10 % of the new capacity (the simulated benchmark's definition); -1
	// never, 0 without a step.
	Settle   time.Duration `json:"settle_ns"`
	Requests int64         `json:"requests"`
	Admitted int64         `json:"admitted"`
	Err      string        `json:"error,omitempty"`
	// Fleet is the workers of a fleet row, 0 for one process; Row names
	// the row ("one process", "fleet×4").
	Fleet int    `json:"fleet"`
	Row   string `json:"row"`
	// Of a fleet row: each worker's exit status and wall time, and what
	// its Redis did over the run (INFO commandstats and cpu): the scripts
	// workers ran, all commands (those scripts called included), and the
	// server's CPU seconds.
	Exits         []int     `json:"exits,omitempty"`
	Walls         []float64 `json:"walls_s,omitempty"`
	RedisScripts  int64     `json:"redis_scripts,omitempty"`
	RedisCommands int64     `json:"redis_commands,omitempty"`
	RedisCPU      float64   `json:"redis_cpu_s,omitempty"`
	// Sent and Capacity per 1-second window since the hosts started (the
	// first host with a schedule, or the first host).
	Sent     []int     `json:"sent"`
	Denied   []int     `json:"denied"`
	Capacity []float64 `json:"capacity"`
}

// RunLive runs every scenario Runs times with the built CLI and measures
// each run from the servers' records.
func RunLive(ctx context.Context, o LiveOptions) ([]LiveRun, error) {
	if o.Polite == "" {
		return nil, errors.New("politeness: live: no CLI to run")
	}
	if o.Scenarios == nil {
		o.Scenarios = LiveScenarios()
	}
	if o.Runs <= 0 {
		o.Runs = 3
	}
	if o.Parallel <= 0 {
		o.Parallel = 1
	}
	if o.Fleets == nil {
		o.Fleets = []int{0}
	}
	for _, f := range o.Fleets {
		if f < 0 {
			return nil, fmt.Errorf("politeness: live: fleet of %d workers", f)
		}
		if f > 0 && o.RedisServer == "" {
			p, err := RedisBinary()
			if err != nil {
				return nil, err
			}
			o.RedisServer = p
		}
	}
	if o.Dir == "" {
		d, err := os.MkdirTemp("", "polite-live-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		o.Dir = d
	}
	type job struct {
		sc    LiveScenario
		run   int
		fleet int
	}
	var jobs []job
	for r := range o.Runs { // runs of one scenario apart in time
		for _, sc := range o.Scenarios {
			for _, f := range o.Fleets {
				jobs = append(jobs, job{sc, r, f})
			}
		}
	}
	out := make([]LiveRun, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex // guards o.Progress
	for range o.Parallel {
		wg.Go(func() {
			for i := range next {
				j := jobs[i]
				res, err := runLiveOne(ctx, o, j.sc, j.run, j.fleet)
				if err != nil {
					res.Err = err.Error()
				}
				out[i] = res
				if o.Progress != nil {
					name, redis := res.Scenario, ""
					if res.Fleet > 0 {
						name += " " + res.Row
						if n := float64(res.Requests); n > 0 {
							redis = fmt.Sprintf("  redis per request: %.1f scripts, %.1f commands, %.0f µs CPU",
								float64(res.RedisScripts)/n, float64(res.RedisCommands)/n, 1e6*res.RedisCPU/n)
						}
					}
					mu.Lock()
					fmt.Fprintf(o.Progress, "%-16s run %d  wall %5.1f s  goodput %5.1f%%  refused %5.2f%%  p95 %6.1f ms  settle %s  load %.2f  exit %d%s %s\n",
						name, res.Run+1, res.Wall, 100*res.Goodput, 100*res.Refused,
						float64(res.P95)/1e6, fmtSettle(res.Settle), res.Load, res.Exit, redis, res.Err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range jobs {
		select {
		case next <- i:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	return out, ctx.Err()
}

// rowName names a row of fleet workers (0: one process).
func rowName(fleet int) string {
	if fleet == 0 {
		return "one process"
	}
	return fmt.Sprintf("fleet×%d", fleet)
}

// runLiveOne serves a scenario's hosts afresh, runs `polite fetch` over
// them once (fleet processes sharing a Redis, or one alone), and measures
// the run.
func runLiveOne(ctx context.Context, o LiveOptions, sc LiveScenario, run, fleet int) (LiveRun, error) {
	res := LiveRun{Scenario: sc.Name, Run: run, Fleet: fleet, Row: rowName(fleet), Load: loadAvg()}
	dir := filepath.Join(o.Dir, fmt.Sprintf("%s-%d", sc.Name, run+1))
	if fleet > 0 {
		dir = filepath.Join(o.Dir, fmt.Sprintf("%s-fleet%d-%d", sc.Name, fleet, run+1))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, err
	}
	var tb *testbedProc
	var unloaded []time.Duration
	if len(sc.Hosts) > 0 {
		var err error
		if unloaded, err = unloadedLatency(ctx, o.Polite, filepath.Join(dir, "unloaded"), sc.Hosts); err != nil {
			return res, err
		}
		if tb, err = startTestbed(ctx, o.Polite, dir, sc.Hosts); err != nil {
			return res, err
		}
		defer func() {
			if tb != nil {
				tb.stop()
			}
		}()
	}
	var ng *nginx
	var bases []string
	var pages []int
	if sc.Nginx != nil {
		backend := ""
		if tb != nil {
			backend = tb.urls[0]
		}
		var err error
		if ng, err = startNginx(ctx, filepath.Join(dir, "nginx"), *sc.Nginx, backend); err != nil {
			return res, err
		}
		defer ng.stop()
		bases = []string{ng.url}
		pages = []int{sc.urls(sc.Nginx.capacity(sc.Hosts) * sc.Seconds)}
	} else {
		for i, h := range sc.Hosts {
			bases = append(bases, tb.urls[i])
			pages = append(pages, sc.urls(capacityOver(h, time.Duration(sc.Seconds*float64(time.Second)))))
		}
	}
	list := filepath.Join(dir, "urls.txt")
	urls := urlList(bases, pages, sc.Path)
	if err := os.WriteFile(list, urls, 0o644); err != nil {
		return res, err
	}
	lists := []string{list}
	var extra []string
	var rd *redisProc
	if fleet > 0 {
		lists = nil
		for i, part := range dealList(urls, fleet) {
			l := filepath.Join(dir, fmt.Sprintf("urls-w%d.txt", i+1))
			if err := os.WriteFile(l, part, 0o644); err != nil {
				return res, err
			}
			lists = append(lists, l)
		}
		var err error
		if rd, err = startRedis(ctx, o.RedisServer, filepath.Join(dir, "redis")); err != nil {
			return res, err
		}
		defer rd.stop()
		extra = []string{"--redis", rd.url(), "--fleet", "live"}
	}

	// Bound the run in time: three times its length at capacity, and a
	// minute more for slow starts and retries.
	limit := 3*time.Duration(max(sc.Seconds, float64(slices.Max(pages))/10)*float64(time.Second)) + time.Minute
	rctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	procs, t0, err := fetchAll(rctx, o.Polite, dir, lists, append(sc.flags(), extra...))
	if err != nil {
		return res, fmt.Errorf("fetch: %w", err)
	}
	t1 := t0
	for i, p := range procs {
		if p.end.After(t1) {
			t1 = p.end
		}
		who := ""
		if fleet > 0 {
			who = fmt.Sprintf(" w%d", i+1)
			if p.stderr.Len() > 0 {
				os.WriteFile(filepath.Join(dir, fmt.Sprintf("stderr-w%d", i+1)), p.stderr.Bytes(), 0o644)
			}
		}
		code := 0
		var exit *exec.ExitError
		switch {
		case errors.As(p.err, &exit):
			code = exit.ExitCode()
		case p.err != nil:
			return res, fmt.Errorf("fetch%s: %w", who, p.err)
		}
		switch {
		case code != 0 && code != 4: // 4: some URLs did not end ok, which we measure
			if fleet == 0 {
				os.WriteFile(filepath.Join(dir, "stderr"), p.stderr.Bytes(), 0o644)
			}
			if err == nil {
				err = fmt.Errorf("fetch%s exit %d: %s", who, code, lastLine(p.stderr.String()))
				res.Exit = code
			}
		case res.Exit == 0:
			res.Exit = code
		}
		if fleet > 0 {
			res.Exits = append(res.Exits, code)
			res.Walls = append(res.Walls, p.end.Sub(t0).Seconds())
		}
	}
	res.Wall = t1.Sub(t0).Seconds()
	if rctx.Err() != nil {
		err = fmt.Errorf("fetch stopped after %v", limit)
	}
	if rd != nil {
		if st, info, err2 := rd.stats(); err2 == nil {
			res.RedisScripts, res.RedisCommands, res.RedisCPU = st.Scripts, st.Commands, st.CPU
			os.WriteFile(filepath.Join(dir, "redis", "info.txt"), []byte(info), 0o644)
		}
	}
	if ng != nil {
		ng.stop()
		secs, lat, err2 := ng.timeline(t0, sc.Nginx.capacity(sc.Hosts))
		if err2 != nil {
			return res, err2
		}
		base := time.Duration(0)
		if len(sc.Hosts) > 0 {
			base = cmp.Or(unloaded[0], sc.Hosts[0].Latency)
		}
		res.measure(secs, 0, res.Wall, percentile(lat, 0.95), base)
		return res, err
	}
	recs, err2 := tb.stop()
	tb = nil
	if err2 != nil {
		return res, err2
	}
	for i := range recs {
		recs[i].unloaded = unloaded[i]
	}
	res.measureHosts(recs, t0, t1)
	return res, err
}

// fetchProc is one `polite fetch` process of a run.
type fetchProc struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	end    time.Time // when Wait returned
	err    error     // what Wait returned
}

// fetchAll runs `polite fetch` over each list, with flags, all started
// together, and waits for every one. t0 is when the first started. Each
// process has its own job directory: out, or out-wN of many.
func fetchAll(ctx context.Context, polite, dir string, lists, flags []string) ([]*fetchProc, time.Time, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	procs := make([]*fetchProc, len(lists))
	for i, list := range lists {
		out := "out"
		if len(lists) > 1 {
			out = fmt.Sprintf("out-w%d", i+1)
		}
		args := append([]string{"fetch"}, flags...)
		args = append(args, "--out", filepath.Join(dir, out), list)
		p := &fetchProc{cmd: exec.CommandContext(ctx, polite, args...)}
		p.cmd.Stdout, p.cmd.Stderr = io.Discard, &p.stderr
		p.cmd.WaitDelay = 5 * time.Second
		procs[i] = p
	}
	t0 := time.Now()
	var wg sync.WaitGroup
	for _, p := range procs {
		if err := p.cmd.Start(); err != nil {
			cancel() // the ones started are killed
			wg.Wait()
			return nil, t0, err
		}
		wg.Go(func() {
			p.err = p.cmd.Wait()
			p.end = time.Now()
		})
	}
	wg.Wait()
	return procs, t0, nil
}

// dealList deals a URL list's lines out to n lists in turn, as `split -n
// r/N` does: each worker gets its share of every host, from the first
// page to the last.
func dealList(list []byte, n int) [][]byte {
	out := make([][]byte, n)
	i := 0
	for line := range bytes.Lines(list) {
		out[i%n] = append(out[i%n], line...)
		i++
	}
	return out
}

// measureHosts fills r from the testbed hosts' timelines between the
// process's start t0 and end t1.
func (r *LiveRun) measureHosts(hosts []hostRecord, t0, t1 time.Time) {
	var capSum, adm float64
	var all, refused, afterAll, afterRefused int64
	settle := time.Duration(0)
	shown := -1 // the host whose timeline r shows: the first with a step, else the first
	for i, h := range hosts {
		if shown < 0 || len(h.cfg.Schedule) > 0 && len(hosts[shown].cfg.Schedule) == 0 {
			shown = i
		}
	}
	for i, h := range hosts {
		cfg, tl := h.cfg, h.timeline
		// From the process's start to its end, or to the end of the
		// host's last second with arrivals when its list ran out sooner:
		// hosts of a mixed list finish at their own times.
		from, to := t0.Sub(h.started).Seconds(), t1.Sub(h.started).Seconds()
		for i := len(tl) - 1; i >= 0; i-- {
			if tl[i].Arrivals > 0 {
				to = min(to, tl[i].Start.Seconds()+1)
				break
			}
		}
		for _, w := range tl {
			s := w.Start.Seconds()
			overlap := math.Max(0, math.Min(s+1, to)-math.Max(s, from))
			capSum += w.Capacity * overlap
			adm += float64(w.Admitted)
			all += int64(w.Arrivals)
			refused += int64(w.Rejected + w.Shed)
			if len(cfg.Schedule) > 0 && w.Start >= cfg.Schedule[0].At {
				afterAll += int64(w.Arrivals)
				afterRefused += int64(w.Rejected + w.Shed)
			}
		}
		st := h.stats
		if st.P95 > r.P95 {
			r.P95 = st.P95
		}
		if base := cmp.Or(h.unloaded, cfg.Latency); base > 0 && float64(st.P95)/float64(base) >= r.P95Ratio {
			r.P95Ratio, r.Unloaded = float64(st.P95)/float64(base), base
		}
		for _, step := range cfg.Schedule {
			if d := settleTime(tl, step.At); d < 0 || settle < 0 {
				settle = -1
			} else {
				settle = max(settle, d)
			}
		}
		if i == shown {
			for _, w := range tl {
				r.Sent = append(r.Sent, w.Arrivals)
				r.Denied = append(r.Denied, w.Rejected+w.Shed)
				r.Capacity = append(r.Capacity, w.Capacity)
			}
		}
	}
	r.Settle = settle
	if capSum > 0 {
		r.Goodput = adm / capSum
	}
	if all > 0 {
		r.Refused = float64(refused) / float64(all)
	}
	if afterAll > 0 {
		r.RefusedAfter = float64(afterRefused) / float64(afterAll)
	}
	r.Requests, r.Admitted = all, int64(adm)
}

// measure fills r from one host's windows (since the process started, which
// ran for wall seconds from from), for sources without a testbed host.
func (r *LiveRun) measure(tl []testbed.Second, from, wall float64, p95, unloaded time.Duration) {
	var capSum, adm float64
	var all, refused int64
	for _, w := range tl {
		s := w.Start.Seconds()
		overlap := math.Max(0, math.Min(s+1, from+wall)-math.Max(s, from))
		capSum += w.Capacity * overlap
		adm += float64(w.Admitted)
		all += int64(w.Arrivals)
		refused += int64(w.Rejected + w.Shed)
		r.Sent = append(r.Sent, w.Arrivals)
		r.Denied = append(r.Denied, w.Rejected+w.Shed)
		r.Capacity = append(r.Capacity, w.Capacity)
	}
	if capSum > 0 {
		r.Goodput = adm / capSum
	}
	if all > 0 {
		r.Refused = float64(refused) / float64(all)
	}
	r.P95 = p95
	if unloaded > 0 {
		r.P95Ratio, r.Unloaded = float64(p95)/float64(unloaded), unloaded
	}
	r.Requests, r.Admitted = all, int64(adm)
}

// urls is the page count of a host whose capacity serves n in the
// scenario's Seconds.
func (sc LiveScenario) urls(n float64) int {
	if sc.URLs > 0 {
		return sc.URLs
	}
	return max(int(math.Ceil(n)), 1)
}

// capacityOver is the requests host c's capacity serves over d from its
// start: its bucket's rate (Schedule included), capped by its servers.
func capacityOver(c testbed.HostConfig, d time.Duration) float64 {
	svc := c.ServiceRate()
	eff := func(rate float64) float64 {
		if rate == 0 || svc > 0 && svc < rate {
			return svc
		}
		return rate
	}
	at, rate := time.Duration(0), c.Rate
	var n float64
	for _, s := range c.Schedule {
		if s.At >= d {
			break
		}
		n += eff(rate) * (s.At - at).Seconds()
		at, rate = s.At, s.Rate
	}
	return n + eff(rate)*(d-at).Seconds()
}

// urlList interleaves pages[i] URLs of each base, one per line.
func urlList(bases []string, pages []int, path string) []byte {
	if path == "" {
		path = "/page/"
	}
	var b bytes.Buffer
	for p := range slices.Max(pages) {
		for i, base := range bases {
			if p < pages[i] {
				fmt.Fprintf(&b, "%s%s%d\n", base, path, p)
			}
		}
	}
	return b.Bytes()
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	k := int(math.Ceil(p*float64(len(s)))) - 1
	return s[min(max(k, 0), len(s)-1)]
}

// loadAvg is the 1-minute load average (Linux), or 0.
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var l float64
	fmt.Sscan(string(b), &l)
	return l
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}
