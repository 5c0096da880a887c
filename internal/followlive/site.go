package followlive

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/polite-go/polite/testbed"
)

// The crawl every part but memory runs: the rate polite is asked for and
// the hidden capacity of each host of the site (above it, so that a
// polite crawl meets no 429).
const (
	crawlRate  = 10
	crawlBurst = 2
	siteRate   = 20
	siteBurst  = 5
)

// siteTOML is the --site file: the zero Site (the issue's), every host
// with a hidden capacity.
var siteTOML = fmt.Sprintf("[site]\n[site.Host]\nRate = %d\nBurst = %d\n", siteRate, siteBurst)

// Harness runs the parts. Set its exported fields, then call Setup.
type Harness struct {
	Polite string // the built CLI
	Dir    string // the run dir: every process's files
	Logf   func(format string, args ...any)
	// Seed seeds the kill instants; Kills is how many (20).
	Seed  uint64
	Kills int
	// Timeout bounds each part.
	Timeout time.Duration

	web      *testbed.Website
	site     string // the --site file
	seeds    []string
	Depth    int // the --max-depth the crawls use, Setup's choice
	DepthWhy string
	expect   testbed.Expectation
}

// Setup writes the site file, generates the site here too (for Expected)
// and chooses the depth: the least that Expected needs to include every
// page of the site but the calendar's, from every host's root.
func (h *Harness) Setup() error {
	h.site = filepath.Join(h.Dir, "site.toml")
	if err := os.WriteFile(h.site, []byte(siteTOML), 0o644); err != nil {
		return err
	}
	web, err := testbed.Site{}.Generate()
	if err != nil {
		return err
	}
	h.web, h.seeds = web, web.Seeds()
	all := web.Expected(testbed.Crawl{Seeds: h.seeds, Scope: "domain", MaxDepth: -1, Sitemaps: true})
	for _, u := range all.Fetch {
		h.Depth = max(h.Depth, all.Depth[u])
	}
	h.expect = web.Expected(testbed.Crawl{Seeds: h.seeds, Scope: "domain", MaxDepth: h.Depth, Sitemaps: true})
	if len(h.expect.Fetch) != len(all.Fetch) {
		return fmt.Errorf("followlive: depth %d leaves %d of %d URLs out", h.Depth, len(all.Fetch)-len(h.expect.Fetch), len(all.Fetch))
	}
	h.DepthWhy = fmt.Sprintf("an unbounded crawl's deepest URL is at depth %d (of %d, calendar aside); at it, %d calendar months",
		h.Depth, len(all.Fetch), len(h.expect.Trap))
	return nil
}

// crawl is one `polite fetch --follow` of the site against a testbed
// process, and what the testbed logged of it.
type crawl struct {
	Dir     string
	Out     string // the job's --out
	Seeds   string // the seed list
	Testbed *Testbed
	Fetch   *Proc
	Reqs    []testbed.Request
	Results []Result
}

// fetchArgs are the crawl's flags, against addr, into out.
func (h *Harness) fetchArgs(addr, out, seeds string, extra ...string) []string {
	args := []string{"fetch", "--follow", "--sitemaps", "--scope", "domain", "--max-depth", strconv.Itoa(h.Depth),
		"--connect-to", "::" + addr, "--rate", strconv.Itoa(crawlRate), "--burst", strconv.Itoa(crawlBurst),
		"--adaptive=false", "--progress", "none", "--max-time", h.Timeout.String(), "--out", out}
	return append(append(args, extra...), seeds)
}

// crawlOnce serves the site (at version) from a testbed process of its
// own and crawls it once into dir/out.
func (h *Harness) crawlOnce(ctx context.Context, dir string, version int, extra ...string) (*crawl, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	c := &crawl{Dir: dir, Out: filepath.Join(dir, "out"), Seeds: filepath.Join(dir, "seeds.txt")}
	tb, err := startTestbed(ctx, h.Polite, dir, "testbed", h.site, time.Minute, "--urls", c.Seeds, "--site-version", strconv.Itoa(version))
	if err != nil {
		return nil, err
	}
	c.Testbed = tb
	c.Fetch, err = run(ctx, h.Polite, dir, "fetch", h.fetchArgs(tb.Addr, c.Out, c.Seeds, extra...)...)
	tb.Stop()
	if err != nil {
		return c, err
	}
	if c.Reqs, err = readTestbedLog(tb.Log); err != nil {
		return c, err
	}
	c.Results, err = readResults(filepath.Join(c.Out, "results.jsonl"))
	return c, err
}

// SiteFigures are part 1's.
type SiteFigures struct {
	Seeds    int
	Depth    int
	DepthWhy string
	Args     []string
	Load     string // before the part
	// Wall is the fetch process's, start to exit; PagesPerSec its URLs
	// with a result over it (robots.txt aside), RequestsPerSec every
	// request the testbed logged over it.
	Wall           time.Duration
	PagesPerSec    float64
	RequestsPerSec float64
	CPU            time.Duration // polite's
	TestbedCPU     time.Duration
	MaxRSS         int64
	Requests       int
	Status         map[int]int
	Status429      int
	Results        int
	Outcomes       map[string]int
	// Expected's sizes: URLs fetched once, calendar months, sitemaps,
	// robots.txt, URLs never to request.
	ExpFetch, ExpTrap, ExpSitemaps, ExpRobots, ExpNever int
	Problems                                            Problems
	Windows                                             Windows
	// TrapMonths is the calendar months requested; TrapSkips the links
	// state.db's skips table counts as max_depth on h00 (the calendar's
	// host), with its example.
	TrapMonths  int
	TrapSkips   string
	ReportCrawl bool // `polite report` wrote a Crawl section
	ReportErr   string
}

// SitePart is part 1: one crawl of the site, judged by the testbed's log.
func (h *Harness) SitePart(ctx context.Context) (*crawl, SiteFigures, []Row, error) {
	f := SiteFigures{Seeds: len(h.seeds), Depth: h.Depth, DepthWhy: h.DepthWhy, Load: loadAvg()}
	c, err := h.crawlOnce(ctx, filepath.Join(h.Dir, "site"), 0)
	if c != nil && c.Fetch != nil {
		f.Args = c.Fetch.Args
		f.Wall, f.CPU, f.MaxRSS = c.Fetch.Wall, c.Fetch.CPU, c.Fetch.MaxRSS
		f.TestbedCPU = c.Testbed.Proc.CPU
	}
	if err != nil {
		return c, f, nil, err
	}
	e := h.expect
	f.ExpFetch, f.ExpTrap, f.ExpSitemaps, f.ExpRobots, f.ExpNever = len(e.Fetch), len(e.Trap), len(e.Sitemaps), len(e.Robots), len(e.Never)
	f.Problems = problems(e.Check(c.Reqs))
	f.Requests = len(c.Reqs)
	f.Status = statuses(c.Reqs)
	f.Status429 = f.Status[429]
	f.Results = len(c.Results)
	f.Outcomes = outcomes(c.Results)
	f.PagesPerSec = float64(f.Results) / f.Wall.Seconds()
	f.RequestsPerSec = float64(f.Requests) / f.Wall.Seconds()
	f.Windows = windows(c.Reqs, crawlRate, crawlBurst)
	months := map[string]bool{}
	for _, r := range c.Reqs {
		if strings.HasPrefix(r.URI, "/calendar/") {
			months[r.URI] = true
		}
	}
	f.TrapMonths = len(months)
	host0 := h.web.Hosts()[0]
	if out, err := sqlite(ctx, filepath.Join(c.Out, "state.db"),
		"SELECT n || ' (e.g. ' || example || ')' FROM skips WHERE reason = 'max_depth' AND host = '"+host0+"'"); err != nil {
		f.TrapSkips = err.Error()
	} else if out == "" {
		f.TrapSkips = "0"
	} else {
		f.TrapSkips = out
	}
	if _, err := run(ctx, h.Polite, c.Dir, "report", "report", c.Out); err != nil {
		f.ReportErr = err.Error()
	} else if b, err := os.ReadFile(filepath.Join(c.Out, "report.html")); err != nil {
		f.ReportErr = err.Error()
	} else {
		f.ReportCrawl = strings.Contains(string(b), "<h2>Crawl</h2>")
	}

	const from = "testbed --access-log"
	var rows []Row
	row := func(fig, val, goal, src string, bad bool) {
		rows = append(rows, Row{Part: "site", Figure: fig, Measured: val, Goal: goal, From: src, Bad: bad})
	}
	row("command", strings.Join(append([]string{"polite"}, f.Args...), " "), "", "", false)
	row("seeds, --max-depth", fmt.Sprintf("%d roots (every host's), %d", f.Seeds, f.Depth), "every page but the calendar's", "", false)
	row("  why that depth", h.DepthWhy, "", "Website.Expected", false)
	row("load average before", f.Load, "", "/proc/loadavg", false)
	row("expected: fetch once / calendar ≤ once / sitemaps / robots / never", fmt.Sprintf("%d / %d / %d / %d / %d", f.ExpFetch, f.ExpTrap, f.ExpSitemaps, f.ExpRobots, f.ExpNever), "", "Website.Expected", false)
	row("Expectation.Check", f.Problems.Short(), "none", from, len(f.Problems) > 0)
	for _, k := range slices.Sorted(maps.Keys(f.Problems)) {
		row("  "+k, f.Problems[k].Examples, "", from, true)
	}
	row("requests, by status", fmt.Sprintf("%d: %s", f.Requests, fmtCounts(f.Status)), "", from, false)
	row("429s", strconv.Itoa(f.Status429), "0 (capacity 20+5 > asked 10+2)", from, f.Status429 > 0)
	row("busiest 1-s window of a host: all / pages", fmt.Sprintf("%d / %d (%s)", f.Windows.Worst, f.Windows.WorstPages, f.Windows.WorstHost), fmt.Sprintf("≤ rate + burst = %d", f.Windows.Allowed), from, f.Windows.Worst > f.Windows.Allowed)
	row("hosts over rate + burst in a 1-s window", strconv.Itoa(f.Windows.Over), "0", from, f.Windows.Over > 0)
	if f.Windows.Worst > f.Windows.Allowed {
		row("  its arrivals (s from the first) / polite's latency (ms)", windowDetail(f.Windows.Busiest, c.Results), "", from+"; results.jsonl latency_ms", false)
	}
	row("slack the arrivals need to fit the bucket", fmt.Sprintf("%v (%s)", f.Windows.Slack.Round(time.Microsecond), f.Windows.SlackHost), "≤ 0 fits; a few ms: scheduling", from, false)
	row("calendar months requested", fmt.Sprintf("%d of the %d within depth %d", f.TrapMonths, f.ExpTrap, f.Depth), "bounded", from, f.TrapMonths > f.ExpTrap)
	row("max_depth skips on "+host0, f.TrapSkips, "", "state.db skips", false)
	row("results, outcomes", fmt.Sprintf("%d: %s", f.Results, fmtCounts(f.Outcomes)), "", "results.jsonl", false)
	row("wall, URLs/s, requests/s", fmt.Sprintf("%v, %.0f, %.0f", f.Wall.Round(time.Millisecond), f.PagesPerSec, f.RequestsPerSec), fmt.Sprintf("floor: %d URLs a host at %d/s", len(e.Fetch)/len(h.seeds), crawlRate), "fetch process; results.jsonl; testbed log", false)
	row("CPU polite / testbed, polite peak RSS", fmt.Sprintf("%v / %v, %s", f.CPU.Round(time.Millisecond), f.TestbedCPU.Round(time.Millisecond), mib(f.MaxRSS)), "", "rusage CPU; VmHWM", false)
	row("polite report: Crawl section", fmt.Sprint(f.ReportCrawl)+f.ReportErr, "true", "report.html", !f.ReportCrawl)
	return c, f, rows, nil
}

// KillFigures are part 2's.
type KillFigures struct {
	Seed   uint64
	Span   time.Duration // the uninterrupted crawl's wall: kills fall within it
	Kills  []Kill
	Load   string
	Killed int // kills done (the crawl may end before the last)
	Final  time.Duration
	// Results is the final results.jsonl's lines, Twice the URLs with
	// more than one line; OnlyKilled and OnlyRef the URLs with a result
	// in one run and not the other.
	Results, Twice, OnlyKilled, OnlyRef int
	ExOnlyKilled, ExOnlyRef             string
	// Again lists URLs in results.jsonl at a kill and requested (not
	// 429/503) after the next run started.
	Again []string
	// Repeats lists every URL answered more than once over the whole
	// series (in flight at a kill). SameRun lists those answered twice
	// within one run (arrivals between one run's start and the next's);
	// AcrossKill counts the others, and BeforeKill is the longest any of
	// them was answered before its run's SIGKILL (negative: logged after
	// the signal, the request already on its way).
	Repeats    []string
	SameRun    []string
	AcrossKill int
	BeforeKill time.Duration
	Requests   int
	Status     map[int]int
	Problems   Problems
}

// Kill is one kill: when the process was started and killed, and how
// many results.jsonl lines there were after it.
type Kill struct {
	After   time.Duration // run time at the kill
	Lines   int
	Started time.Time
}

// KillPart is part 2: the crawl killed with SIGKILL at h.Kills random
// instants within span (the uninterrupted crawl's wall), resumed each
// time, then run to its end; judged against ref's results and by the
// testbed's log.
func (h *Harness) KillPart(ctx context.Context, ref *crawl) (KillFigures, []Row, error) {
	f := KillFigures{Seed: h.Seed, Span: ref.Fetch.Wall, Load: loadAvg()}
	dir := filepath.Join(h.Dir, "kill")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return f, nil, err
	}
	out, seeds := filepath.Join(dir, "out"), filepath.Join(dir, "seeds.txt")
	tb, err := startTestbed(ctx, h.Polite, dir, "testbed", h.site, time.Minute, "--urls", seeds)
	if err != nil {
		return f, nil, err
	}
	defer tb.Stop()
	rng := rand.New(rand.NewPCG(h.Seed, 35))
	instants := make([]time.Duration, h.Kills)
	for i := range instants {
		instants[i] = time.Duration(rng.Int64N(int64(f.Span)))
	}
	slices.Sort(instants)
	args := h.fetchArgs(tb.Addr, out, seeds)
	type snap struct {
		urls map[string]int
		next time.Time // the next run's start
	}
	var snaps []snap
	prev := time.Duration(0)
	finished := false
	for i, at := range instants {
		gap := at - prev
		prev = at
		p, err := start(ctx, h.Polite, dir, fmt.Sprintf("fetch-%02d", i), args...)
		if err != nil {
			return f, nil, err
		}
		exited := make(chan error, 1)
		go func() { exited <- p.Wait() }()
		select {
		case <-time.After(gap):
			p.cmd.Process.Signal(syscall.SIGKILL)
			<-exited
		case err := <-exited:
			if err != nil {
				return f, nil, err
			}
			finished = true
		}
		if len(snaps) > 0 {
			snaps[len(snaps)-1].next = p.Start
		}
		if finished {
			break
		}
		rs, err := readResults(filepath.Join(out, "results.jsonl"))
		if err != nil && !os.IsNotExist(err) {
			return f, nil, err
		}
		f.Kills = append(f.Kills, Kill{After: gap, Lines: len(rs), Started: p.Start})
		snaps = append(snaps, snap{urls: resultSet(rs)})
		f.Killed++
	}
	var last *Proc
	if !finished {
		last, err = run(ctx, h.Polite, dir, "fetch-final", args...)
		if err != nil {
			return f, nil, err
		}
		snaps[len(snaps)-1].next = last.Start
		f.Final = last.Wall
	}
	tb.Stop()
	reqs, err := readTestbedLog(tb.Log)
	if err != nil {
		return f, nil, err
	}
	rs, err := readResults(filepath.Join(out, "results.jsonl"))
	if err != nil {
		return f, nil, err
	}
	final := resultSet(rs)
	f.Results = len(rs)
	for _, n := range final {
		if n > 1 {
			f.Twice++
		}
	}
	f.OnlyKilled, f.OnlyRef, f.ExOnlyKilled, f.ExOnlyRef = diff(final, resultSet(ref.Results))
	again := map[string]bool{}
	for _, s := range snaps {
		if s.next.IsZero() {
			continue
		}
		for _, r := range reqs {
			if !r.Time.Before(s.next) && !retried(r.Status) && s.urls[urlOf(r)] > 0 {
				again[urlOf(r)] = true
			}
		}
	}
	f.Again = slices.Sorted(maps.Keys(again))
	f.Repeats = repeats(reqs)
	starts := []time.Time{}
	for _, k := range f.Kills {
		starts = append(starts, k.Started)
	}
	if last != nil {
		starts = append(starts, last.Start)
	}
	f.SameRun, f.AcrossKill, f.BeforeKill = byRun(reqs, starts, f.Kills)
	f.Requests = len(reqs)
	f.Status = statuses(reqs)
	f.Problems = problems(h.expect.Check(reqs))

	const from = "testbed --access-log"
	var rows []Row
	row := func(fig, val, goal, src string, bad bool) {
		rows = append(rows, Row{Part: "kill", Figure: fig, Measured: val, Goal: goal, From: src, Bad: bad})
	}
	var gaps []string
	for _, k := range f.Kills {
		gaps = append(gaps, fmt.Sprintf("%.1fs→%d", k.After.Seconds(), k.Lines))
	}
	row("kills (SIGKILL), seed", fmt.Sprintf("%d of %d, seed %d, instants uniform in the %v of part 1's crawl", f.Killed, h.Kills, f.Seed, f.Span.Round(time.Millisecond)), "", "", f.Killed < h.Kills)
	row("each run's time to its kill → results.jsonl lines", strings.Join(gaps, " "), "", "results.jsonl after each kill", false)
	row("last run (to the end)", f.Final.Round(time.Millisecond).String(), "", "fetch process", false)
	row("final results: lines, URLs with more than one", fmt.Sprintf("%d, %d", f.Results, f.Twice), "0 twice", "results.jsonl", f.Twice > 0)
	row("URLs with a result: only killed run / only uninterrupted", fmt.Sprintf("%d / %d %s %s", f.OnlyKilled, f.OnlyRef, f.ExOnlyKilled, f.ExOnlyRef), "0 / 0", "results.jsonl of both", f.OnlyKilled+f.OnlyRef > 0)
	row("URLs in results.jsonl at a kill requested again after", fmt.Sprintf("%d %s", len(f.Again), first(f.Again, 5)), "0", from+" vs results.jsonl snapshots", len(f.Again) > 0)
	row("URLs answered more than once (in flight at a kill)", fmt.Sprintf("%d %s", len(f.Repeats), first(f.Repeats, 5)), "few; each in flight at a kill", from, false)
	row("  of them answered twice within one run", fmt.Sprintf("%d %s", len(f.SameRun), first(f.SameRun, 5)), "0", from+" (runs split at each start)", len(f.SameRun) > 0)
	row("  across a kill: URLs, longest answered before the SIGKILL", fmt.Sprintf("%d, %v", f.AcrossKill, f.BeforeKill.Round(time.Millisecond)), "in flight: ms", from+"; kill instants", false)
	row("requests, by status", fmt.Sprintf("%d: %s", f.Requests, fmtCounts(f.Status)), "", from, false)
	other := Problems{}
	for k, p := range f.Problems {
		if k != "answered more than once" {
			other[k] = p
		}
	}
	row("Expectation.Check besides repeats", other.Short(), "none", from, len(other) > 0)
	for _, k := range slices.Sorted(maps.Keys(other)) {
		row("  "+k, other[k].Examples, "", from, true)
	}
	return f, rows, nil
}

// byRun splits the answers (429/503/504 and robots.txt aside) of URLs
// answered more than once by run, runs starting at starts: the URLs
// answered twice within one run, the count of the others (answered in
// different runs: in flight at a kill), and the longest time from a URL's
// first answer to its run's kill.
func byRun(reqs []testbed.Request, starts []time.Time, kills []Kill) (same []string, across int, before time.Duration) {
	runOf := func(t time.Time) int {
		i, _ := slices.BinarySearchFunc(starts, t, func(s, t time.Time) int {
			if s.After(t) {
				return 1
			}
			return -1
		})
		return i - 1 // the last run started at or before t
	}
	answers := map[string][]time.Time{}
	for _, r := range reqs {
		if !retried(r.Status) && r.URI != "/robots.txt" {
			answers[urlOf(r)] = append(answers[urlOf(r)], r.Time)
		}
	}
	before = -time.Hour
	for _, u := range slices.Sorted(maps.Keys(answers)) {
		ts := answers[u]
		if len(ts) < 2 {
			continue
		}
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		runs := map[int]bool{}
		twice := false
		for _, t := range ts {
			i := runOf(t)
			twice = twice || runs[i]
			runs[i] = true
		}
		if twice {
			same = append(same, u)
			continue
		}
		across++
		if i := runOf(ts[0]); i >= 0 && i < len(kills) {
			before = max(before, kills[i].Started.Add(kills[i].After).Sub(ts[0]))
		}
	}
	return same, across, before
}

// SinceFigures are part 3's.
type SinceFigures struct {
	Args     []string
	Load     string
	Wall     time.Duration
	Requests int
	Status   map[int]int
	// Share304 is the 304s over every request; Share304Cond over the
	// conditional ones (robots.txt, 404s and 301s are asked without
	// validators, having none).
	Share304, Share304Cond float64
	Conditional            int
	// Bytes is the body bytes the testbed sent: the first crawl, the
	// re-crawl.
	BytesFirst, BytesSince int64
	Results                int
	Outcomes               map[string]int
	OnlySince, OnlyFirst   int
	ExOnlySince, ExOnlyF   string
	Problems               Problems
}

// SincePart is part 3: a re-crawl with --since the first crawl's job,
// against the site at version 1, served by a testbed process of its own.
func (h *Harness) SincePart(ctx context.Context, ref *crawl) (SinceFigures, []Row, error) {
	f := SinceFigures{Load: loadAvg()}
	c, err := h.crawlOnce(ctx, filepath.Join(h.Dir, "since"), 1, "--since", ref.Out)
	if c != nil && c.Fetch != nil {
		f.Args, f.Wall = c.Fetch.Args, c.Fetch.Wall
	}
	if err != nil {
		return f, nil, err
	}
	f.Requests = len(c.Reqs)
	f.Status = statuses(c.Reqs)
	for _, r := range c.Reqs {
		if r.Conditional {
			f.Conditional++
		}
		f.BytesSince += r.Bytes
	}
	for _, r := range ref.Reqs {
		f.BytesFirst += r.Bytes
	}
	f.Share304 = float64(f.Status[304]) / float64(max(1, f.Requests))
	f.Share304Cond = float64(f.Status[304]) / float64(max(1, f.Conditional))
	f.Results = len(c.Results)
	f.Outcomes = outcomes(c.Results)
	f.OnlySince, f.OnlyFirst, f.ExOnlySince, f.ExOnlyF = diff(resultSet(c.Results), resultSet(ref.Results))
	f.Problems = problems(h.expect.Check(c.Reqs))

	const from = "testbed --access-log"
	var rows []Row
	row := func(fig, val, goal, src string, bad bool) {
		rows = append(rows, Row{Part: "since", Figure: fig, Measured: val, Goal: goal, From: src, Bad: bad})
	}
	row("command", "polite "+strings.Join(f.Args, " "), "", "testbed --site-version 1 (1% of pages changed)", false)
	row("requests, by status", fmt.Sprintf("%d: %s", f.Requests, fmtCounts(f.Status)), "", from, false)
	row("304 share of all requests", fmt.Sprintf("%.1f %% (%d of %d)", 100*f.Share304, f.Status[304], f.Requests), "≥ 95 %", from, f.Share304 < 0.95)
	row("304 share of conditional requests", fmt.Sprintf("%.1f %% (%d of %d)", 100*f.Share304Cond, f.Status[304], f.Conditional), "≈ 99 % (1% changed)", from, false)
	row("body bytes: first crawl → re-crawl", fmt.Sprintf("%s → %s (%.1f %%)", kib(f.BytesFirst), kib(f.BytesSince), 100*float64(f.BytesSince)/float64(max(1, f.BytesFirst))), "", from+" bytes column", false)
	row("URLs with a result: only re-crawl / only first", fmt.Sprintf("%d / %d %s %s", f.OnlySince, f.OnlyFirst, f.ExOnlySince, f.ExOnlyF), "0 / 0", "results.jsonl of both", f.OnlySince+f.OnlyFirst > 0)
	row("results, outcomes", fmt.Sprintf("%d: %s", f.Results, fmtCounts(f.Outcomes)), "", "results.jsonl", false)
	row("Expectation.Check", f.Problems.Short(), "none", from, len(f.Problems) > 0)
	for _, k := range slices.Sorted(maps.Keys(f.Problems)) {
		row("  "+k, f.Problems[k].Examples, "", from, true)
	}
	row("wall", f.Wall.Round(time.Millisecond).String(), "", "fetch process", false)
	return f, rows, nil
}

// windowDetail is each request of a window as its arrival, from the
// first, and the latency polite measured for its URL: a latency far above
// the testbed's (under a millisecond) is time the request spent before
// the server logged it, which moves its arrival later.
func windowDetail(win []testbed.Request, results []Result) string {
	lat := map[string]float64{}
	for _, r := range results {
		lat[r.URL] = r.LatencyMS
	}
	var parts []string
	for _, r := range win {
		parts = append(parts, fmt.Sprintf("%.3f/%.0f", r.Time.Sub(win[0].Time).Seconds(), lat[urlOf(r)]))
	}
	return strings.Join(parts, " ")
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
func kib(b int64) string { return fmt.Sprintf("%.0f KiB", float64(b)/(1<<10)) }
