package fleetscale

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// Options are what every part of the measurement shares.
type Options struct {
	Polite string // the built CLI
	Redis  string // redis-server
	Dir    string // the run dir: lists, logs, figures
	// Workers is the number of `polite fetch` processes, InFlight each
	// one's --workers.
	Workers, InFlight int
	// Timeout bounds each part.
	Timeout time.Duration
}

// HostName is the name of host i.
func HostName(i int) string { return fmt.Sprintf("h%05d.test", i) }

// URLs lists pages pages of each of hosts hosts, interleaved (page 0 of
// every host, then page 1, …) as a crawl's seed list is.
func URLs(hosts, pages int) []string {
	out := make([]string, 0, hosts*pages)
	for p := range pages {
		for h := range hosts {
			out = append(out, "http://"+HostName(h)+"/p/"+strconv.Itoa(p))
		}
	}
	return out
}

// Capacities are n hosts with hidden capacities from 5 to 50 req/s; a
// third answer beyond it 429 with Retry-After, a third 429 without, a
// third 503 without.
func Capacities(n int) []testbed.HostConfig {
	hosts := make([]testbed.HostConfig, n)
	for i := range hosts {
		rate := float64(5 + (i*7919)%46)
		h := testbed.HostConfig{Name: HostName(i), Rate: rate, Burst: max(1, int(rate/10)),
			Latency: 10 * time.Millisecond, Jitter: 0.5, BodySize: 512}
		switch i % 3 {
		case 0:
			h.RetryAfter = testbed.RetryAfterSeconds
		case 2:
			h.Status = 503
		}
		hosts[i] = h
	}
	return hosts
}

// Unlimited are n hosts that answer every request at once.
func Unlimited(n int) []testbed.HostConfig {
	hosts := make([]testbed.HostConfig, n)
	for i := range hosts {
		hosts[i] = testbed.HostConfig{Name: HostName(i), BodySize: 256}
	}
	return hosts
}

func writeList(path string, urls []string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for _, u := range urls {
		w.WriteString(u)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// workers starts n fetch workers with args (plus each one's --out and
// --worker, and lists[i] when lists is not nil) and waits for all of
// them; it returns them and the wall time from the first start to the
// last exit.
func workers(ctx context.Context, o Options, dir string, lists []string, args ...string) ([]*Proc, time.Duration, error) {
	t0 := time.Now()
	procs := make([]*Proc, o.Workers)
	for w := range procs {
		name := "w" + strconv.Itoa(w)
		argv := append([]string{"fetch", "--out", filepath.Join(dir, name), "--worker", name}, args...)
		if lists != nil {
			argv = append(argv, lists[w])
		}
		p, err := Start(ctx, o.Polite, dir, name, argv...)
		if err != nil {
			return nil, 0, err
		}
		procs[w] = p
	}
	var first error
	for _, p := range procs {
		err := p.Wait()
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 4 {
			continue // the job finished, some URLs not ok: the results say which
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return procs, time.Since(t0), first
}

func cpuOf(procs []*Proc) time.Duration {
	var d time.Duration
	for _, p := range procs {
		d += p.CPU
	}
	return d
}

// Result is one line of `polite status --results`.
type Result struct {
	URL     string `json:"url"`
	Outcome string `json:"outcome"`
	Status  int    `json:"status"`
	Worker  string `json:"worker"`
}

// results reads the fleet's merged results: how many lines, by URL.
func results(ctx context.Context, o Options, dir, redis, fleet string) (map[string]int, []Result, error) {
	_, err := Run(ctx, o.Polite, dir, "status-results", "status", "--redis", redis, "--fleet", fleet, "--results")
	if err != nil {
		return nil, nil, err
	}
	f, err := os.Open(filepath.Join(dir, "status-results.out"))
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	count := map[string]int{}
	var rs []Result
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, nil, fmt.Errorf("fleetscale: result %q: %w", sc.Text(), err)
		}
		count[r.URL]++
		rs = append(rs, r)
	}
	return count, rs, sc.Err()
}

// Once is how a fleet's committed results match its list.
type Once struct {
	Committed int // result lines
	Missing   int // URLs of the list without one
	Twice     int // URLs with more than one
	Strangers int // results for URLs not in the list
	Outcomes  map[string]int
}

func once(urls []string, count map[string]int, rs []Result) Once {
	o := Once{Committed: len(rs), Outcomes: map[string]int{}}
	want := make(map[string]bool, len(urls))
	for _, u := range urls {
		want[u] = true
		switch n := count[u]; {
		case n == 0:
			o.Missing++
		case n > 1:
			o.Twice++
		}
	}
	for u := range count {
		if !want[u] {
			o.Strangers++
		}
	}
	for _, r := range rs {
		o.Outcomes[r.Outcome]++
	}
	return o
}

// Served is what the sites logged of a run.
type Served struct {
	Requests, Pages, Robots int
	Status                  map[int]int
	// Fetched2xx is the pages answered 2xx more than once (a URL fetched
	// again after its lease was lost), FetchedExtra the extra 2xx answers.
	Fetched2xx, FetchedExtra int
}

func served(s *Sites, hosts []testbed.HostConfig) Served {
	v := Served{Status: map[int]int{}}
	for _, h := range hosts {
		ok := map[string]int{}
		for _, hit := range s.Site(h.Name).Hits() {
			v.Requests++
			v.Status[hit.Status]++
			if hit.Path == "/robots.txt" {
				v.Robots++
				continue
			}
			v.Pages++
			if hit.Status/100 == 2 {
				ok[hit.Path]++
			}
		}
		for _, n := range ok {
			if n > 1 {
				v.Fetched2xx++
				v.FetchedExtra += n - 1
			}
		}
	}
	return v
}

// CrawlFigures are the figures of one crawl by a fleet.
type CrawlFigures struct {
	Hosts, URLs, Workers, InFlight int
	Flags                          []string
	// Enqueue is the two overlapping lists' enqueue, at once from two
	// processes: each one's new URLs and the wall time of both.
	EnqueueNew  [2]int
	EnqueueWall time.Duration
	// Wall is from the first worker's start to the last one's exit.
	Wall       time.Duration
	URLsPerSec float64
	Once
	Served
	// The busiest 1-second window of any host against its fleet's
	// ceiling (--max-rate + --burst), over every request and over pages
	// only; Slack the scheduling slack the worst host's arrivals need to
	// fit the bucket; HostsOver the hosts beyond the ceiling in some
	// window.
	Ceiling                 int
	WorstWindow, WorstPages int
	WorstHost               string
	WorstSlack              time.Duration
	SlackHost               string
	HostsOver               int
	// HostSpanP50 and HostSpanMax are how long hosts took from their first
	// request to their last, the median and the longest.
	HostSpanP50, HostSpanMax time.Duration
	// Tail is from the last request any site received to the last
	// worker's exit: how long the fleet took to see it was done.
	Tail time.Duration
	// CPU of the redis-server, the workers, and this process (the sites).
	RedisCPU, WorkersCPU, SitesCPU time.Duration
	Redis                          Info
}

// Crawl runs one crawl of pages pages on each of hosts hosts with hidden
// capacities by o.Workers fleet workers, the list enqueued from two
// processes in overlapping halves, and judges it by the sites' logs and
// the fleet's merged results.
func Crawl(ctx context.Context, o Options, hosts, pages int, rate, maxRate float64, burst int, adaptive bool) (CrawlFigures, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	dir := filepath.Join(o.Dir, "crawl")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return CrawlFigures{}, err
	}
	cfg := Capacities(hosts)
	s, err := Serve(cfg)
	if err != nil {
		return CrawlFigures{}, err
	}
	defer s.Close()
	r, err := StartRedis(o.Redis, filepath.Join(dir, "redis"))
	if err != nil {
		return CrawlFigures{}, err
	}
	defer r.Stop()
	urls := URLs(hosts, pages)
	n := len(urls)
	lists := []string{filepath.Join(dir, "list-a.txt"), filepath.Join(dir, "list-b.txt")}
	if err := writeList(lists[0], urls[:n*2/3]); err != nil {
		return CrawlFigures{}, err
	}
	if err := writeList(lists[1], urls[n/3:]); err != nil {
		return CrawlFigures{}, err
	}
	flags := []string{"--redis", r.URL(), "--fleet", "scale", "--connect-to", "::" + s.Addr, "--allow-private",
		"--rate", fmt.Sprint(rate), "--max-rate", fmt.Sprint(maxRate), "--burst", strconv.Itoa(burst),
		"--workers", strconv.Itoa(o.InFlight), "--bodies", "none", "--progress", "none",
		"--max-time", o.Timeout.String(), "--adaptive=" + strconv.FormatBool(adaptive)}
	f := CrawlFigures{Hosts: hosts, URLs: n, Workers: o.Workers, InFlight: o.InFlight, Flags: flags,
		Ceiling: int(maxRate) + burst}

	// The two halves at once, from two processes.
	t0 := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	procs := make([]*Proc, 2)
	for i, l := range lists {
		wg.Go(func() {
			procs[i], errs[i] = Run(ctx, o.Polite, dir, "enqueue-"+string(rune('a'+i)),
				append(append([]string{"fetch", "--enqueue-only", "--out", filepath.Join(dir, "enq")}, flags...), l)...)
		})
	}
	wg.Wait()
	f.EnqueueWall = time.Since(t0)
	for i, err := range errs {
		if err != nil {
			return f, err
		}
		f.EnqueueNew[i] = newOf(procs[i].Stderr())
	}

	before, err := r.Info()
	if err != nil {
		return f, err
	}
	cpu0 := selfCPU()
	ws, wall, werr := workers(ctx, o, dir, nil, flags...)
	end := time.Now()
	f.SitesCPU = selfCPU() - cpu0
	after, err := r.Info()
	if err != nil {
		return f, err
	}
	f.Redis = after.Sub(before)
	f.RedisCPU = time.Duration(f.Redis.CPU * float64(time.Second))
	f.WorkersCPU = cpuOf(ws)
	f.Wall = wall
	f.URLsPerSec = float64(n) / wall.Seconds()
	if werr != nil {
		return f, werr
	}
	count, rs, err := results(ctx, o, dir, r.URL(), "scale")
	if err != nil {
		return f, err
	}
	f.Once = once(urls, count, rs)
	f.Served = served(s, cfg)
	f.WorstSlack = -time.Hour
	var last time.Time
	var spans []time.Duration
	log, err := os.Create(filepath.Join(dir, "hits.tsv"))
	if err != nil {
		return f, err
	}
	defer log.Close()
	lw := bufio.NewWriterSize(log, 1<<20)
	defer lw.Flush()
	fmt.Fprintf(lw, "host\tpath\tunix_ns\tstatus\n")
	for _, h := range cfg {
		var all, pgs []time.Time
		hits := s.Site(h.Name).Hits()
		if len(hits) > 0 {
			spans = append(spans, hits[len(hits)-1].At.Sub(hits[0].At))
		}
		for _, hit := range hits {
			fmt.Fprintf(lw, "%s\t%s\t%d\t%d\n", h.Name, hit.Path, hit.At.UnixNano(), hit.Status)
			if hit.At.After(last) {
				last = hit.At
			}
			all = append(all, hit.At)
			if hit.Path != "/robots.txt" {
				pgs = append(pgs, hit.At)
			}
		}
		e := Measure(all, maxRate, burst)
		if e.Window > f.WorstWindow {
			f.WorstWindow, f.WorstHost = e.Window, h.Name
		}
		if e.Slack > f.WorstSlack {
			f.WorstSlack, f.SlackHost = e.Slack, h.Name
		}
		if e.Over() > 0 {
			f.HostsOver++
		}
		f.WorstPages = max(f.WorstPages, Measure(pgs, maxRate, burst).Window)
	}
	f.Tail = end.Sub(last)
	if len(spans) > 0 {
		slices.Sort(spans)
		f.HostSpanP50, f.HostSpanMax = spans[len(spans)/2], spans[len(spans)-1]
	}
	return f, nil
}

// ThroughputFigures are the figures of one run against unlimited hosts.
type ThroughputFigures struct {
	Mode        string // "frontier" or "own-list"
	URLs        int
	Flags       []string
	EnqueueWall time.Duration // the list's enqueue (frontier), before the workers start
	Wall        time.Duration
	URLsPerSec  float64
	Once        Once   // frontier: the merged results
	Served      Served // what the sites logged
	// CPU per URL: the redis-server's (INFO cpu); its scripts' own
	// (INFO commandstats usec of eval and evalsha: a script's usec
	// includes the commands it calls, which commandstats counts again
	// under their own names, so the sum of every line counts them twice);
	// the workers', the sites'.
	RedisCPU, WorkersCPU, SitesCPU   time.Duration
	RedisCPUPerURL, ScriptUsecPerURL float64 // µs
	ScriptsPerURL, CommandsPerURL    float64
	Redis                            Info
}

// Throughput runs the URLs of hosts unlimited hosts × pages through
// o.Workers workers, from the fleet's frontier (mode "frontier") or each
// worker its own share of the list with --own-list (the floor: the same
// fetching and rate-sharing, no frontier).
func Throughput(ctx context.Context, o Options, mode string, hosts, pages int) (ThroughputFigures, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	dir := filepath.Join(o.Dir, "throughput-"+mode)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ThroughputFigures{}, err
	}
	cfg := Unlimited(hosts)
	s, err := Serve(cfg)
	if err != nil {
		return ThroughputFigures{}, err
	}
	defer s.Close()
	r, err := StartRedis(o.Redis, filepath.Join(dir, "redis"))
	if err != nil {
		return ThroughputFigures{}, err
	}
	defer r.Stop()
	urls := URLs(hosts, pages)
	flags := []string{"--redis", r.URL(), "--fleet", "tp", "--connect-to", "::" + s.Addr, "--allow-private",
		"--rate", "inf", "--adaptive=false", "--robots=false", "--bodies", "none", "--progress", "none",
		"--workers", strconv.Itoa(o.InFlight), "--max-time", o.Timeout.String()}
	f := ThroughputFigures{Mode: mode, URLs: len(urls), Flags: flags}
	var lists []string
	switch mode {
	case "frontier":
		list := filepath.Join(dir, "list.txt")
		if err := writeList(list, urls); err != nil {
			return f, err
		}
		t0 := time.Now()
		if _, err := Run(ctx, o.Polite, dir, "enqueue", append(append([]string{"fetch", "--enqueue-only", "--out", filepath.Join(dir, "enq")}, flags...), list)...); err != nil {
			return f, err
		}
		f.EnqueueWall = time.Since(t0)
	case "own-list":
		flags = append(flags, "--own-list")
		shares := make([][]string, o.Workers)
		for i, u := range urls {
			shares[i%o.Workers] = append(shares[i%o.Workers], u)
		}
		for w, sh := range shares {
			l := filepath.Join(dir, fmt.Sprintf("list-%d.txt", w))
			if err := writeList(l, sh); err != nil {
				return f, err
			}
			lists = append(lists, l)
		}
	default:
		return f, fmt.Errorf("fleetscale: mode %q", mode)
	}
	before, err := r.Info()
	if err != nil {
		return f, err
	}
	cpu0 := selfCPU()
	ws, wall, werr := workers(ctx, o, dir, lists, flags...)
	f.SitesCPU = selfCPU() - cpu0
	after, err := r.Info()
	if err != nil {
		return f, err
	}
	f.Redis = after.Sub(before)
	f.Wall = wall
	f.URLsPerSec = float64(len(urls)) / wall.Seconds()
	f.RedisCPU = time.Duration(f.Redis.CPU * float64(time.Second))
	f.WorkersCPU = cpuOf(ws)
	n := float64(len(urls))
	f.RedisCPUPerURL = f.Redis.CPU * 1e6 / n
	f.ScriptUsecPerURL = float64(f.Redis.ScriptUsec) / n
	f.ScriptsPerURL = float64(f.Redis.Scripts) / n
	f.CommandsPerURL = float64(f.Redis.Commands) / n
	f.Served = served(s, cfg)
	if werr != nil {
		return f, werr
	}
	if mode == "frontier" {
		count, rs, err := results(ctx, o, dir, r.URL(), "tp")
		if err != nil {
			return f, err
		}
		f.Once = once(urls, count, rs)
	}
	return f, nil
}

// EnqueueFigures are the figures of one large enqueue.
type EnqueueFigures struct {
	URLs, Hosts int
	New         int // the URLs the frontier said were new
	Wall        time.Duration
	URLsPerSec  float64
	// Memory is INFO memory's used_memory grown by the enqueue, and
	// BytesPerURL that over the URLs pending.
	Memory      int64
	BytesPerURL float64
	Keys        int64
	RedisCPU    time.Duration
	EnqueueCPU  time.Duration // the enqueuing process's
	// Again is a second enqueue of the same list: every URL already there.
	AgainNew    int
	AgainWall   time.Duration
	AgainPerSec float64
	AgainMemory int64 // used_memory grown by it
}

// Enqueue enqueues pages URLs of each of hosts hosts with one `polite
// fetch --enqueue-only` into an empty redis-server, then the same list
// again (if again).
func Enqueue(ctx context.Context, o Options, hosts, pages int, again bool) (EnqueueFigures, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	dir := filepath.Join(o.Dir, "enqueue")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return EnqueueFigures{}, err
	}
	f := EnqueueFigures{URLs: hosts * pages, Hosts: hosts}
	list := filepath.Join(dir, "list.txt")
	if err := writeList(list, URLs(hosts, pages)); err != nil {
		return f, err
	}
	r, err := StartRedis(o.Redis, filepath.Join(dir, "redis"))
	if err != nil {
		return f, err
	}
	defer r.Stop()
	args := []string{"fetch", "--enqueue-only", "--redis", r.URL(), "--fleet", "big", "--out", filepath.Join(dir, "out"), "--progress", "none", list}
	before, err := r.Info()
	if err != nil {
		return f, err
	}
	p, err := Run(ctx, o.Polite, dir, "enqueue", args...)
	if err != nil {
		return f, err
	}
	after, err := r.Info()
	if err != nil {
		return f, err
	}
	d := after.Sub(before)
	f.Wall, f.EnqueueCPU = p.Wall, p.CPU
	f.URLsPerSec = float64(f.URLs) / p.Wall.Seconds()
	f.Memory, f.Keys = d.UsedMemory, after.Keys
	f.BytesPerURL = float64(d.UsedMemory) / float64(f.URLs)
	f.RedisCPU = time.Duration(d.CPU * float64(time.Second))
	f.New = newOf(p.Stderr())
	if !again {
		return f, nil
	}
	p, err = Run(ctx, o.Polite, dir, "enqueue-again", args...)
	if err != nil {
		return f, err
	}
	last, err := r.Info()
	if err != nil {
		return f, err
	}
	f.AgainWall, f.AgainNew = p.Wall, newOf(p.Stderr())
	f.AgainPerSec = float64(f.URLs) / p.Wall.Seconds()
	f.AgainMemory = last.UsedMemory - after.UsedMemory
	return f, nil
}

// newOf reads "polite: fleet "NAME": N of the list's M URLs were new…".
func newOf(stderr string) int {
	for line := range strings.Lines(stderr) {
		if _, rest, ok := strings.Cut(line, "\": "); ok && strings.Contains(rest, "were new") {
			var n int
			fmt.Sscanf(rest, "%d", &n)
			return n
		}
	}
	return -1
}
