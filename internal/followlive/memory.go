package followlive

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/polite-go/polite/testbed"
)

// MemorySize is one crawl of the memory part: a site of Pages pages over
// Hosts hosts (the same pages per host at every size), crawled as fast as
// the machine goes.
type MemorySize struct {
	Pages, Hosts int
}

// MemoryRun is one size's figures.
type MemoryRun struct {
	MemorySize
	Args []string
	// TestbedReady is the testbed's time from start to listening (the
	// site's generation), TestbedRSS its peak RSS.
	TestbedReady time.Duration
	TestbedRSS   int64
	// MaxRSS is the polite process's peak RSS (Proc.MaxRSS), Wall its
	// start to exit, CPU its user + system time.
	MaxRSS   int64
	Wall     time.Duration
	CPU      time.Duration
	Requests int // the testbed logged
	Status   map[int]int
	Results  int
	Outcomes map[string]int
	PerSec   float64 // results over wall
	// Problems is Expectation.Check's findings on the testbed's log (the
	// site generated here too, after the testbed has stopped).
	Problems Problems
	Load     string
	Err      string
}

// memoryDepth is the memory crawls' --max-depth: beyond any page's depth
// at these sizes (chains of 12), the calendar to 20 months either way.
const memoryDepth = 20

// MemoryPart crawls each size in turn (the whole part bounded by
// h.Timeout) and returns their figures: the peak RSS of polite at each.
func (h *Harness) MemoryPart(ctx context.Context, sizes []MemorySize, workers, concurrency int) ([]MemoryRun, []Row, error) {
	ctx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	var runs []MemoryRun
	var rows []Row
	row := func(fig, val, goal, src string, bad bool) {
		rows = append(rows, Row{Part: "memory", Figure: fig, Measured: val, Goal: goal, From: src, Bad: bad})
	}
	for _, sz := range sizes {
		m := MemoryRun{MemorySize: sz, Load: loadAvg()}
		err := h.memoryRun(ctx, &m, deadline, workers, concurrency)
		if err != nil {
			m.Err = err.Error()
		}
		runs = append(runs, m)
		name := fmt.Sprintf("%d pages / %d hosts", sz.Pages, sz.Hosts)
		if len(runs) == 1 {
			row("command ("+name+")", "polite "+joinArgs(m.Args), "", "", false)
		}
		row(name+": polite peak RSS", mib(m.MaxRSS), "", "VmHWM of the fetch process (/proc, every 20 ms)", m.Err != "")
		row(name+": wall, URLs/s, CPU", fmt.Sprintf("%v, %.0f, %v", m.Wall.Round(time.Millisecond), m.PerSec, m.CPU.Round(time.Millisecond)), "", "fetch process; results.jsonl", false)
		row(name+": results, outcomes", fmt.Sprintf("%d: %s", m.Results, fmtCounts(m.Outcomes)), "", "results.jsonl", false)
		row(name+": Expectation.Check", m.Problems.Short(), "none", "testbed --access-log", len(m.Problems) > 0)
		row(name+": requests, by status", fmt.Sprintf("%d: %s", m.Requests, fmtCounts(m.Status)), "", "testbed --access-log", false)
		row(name+": testbed generation, peak RSS", fmt.Sprintf("%v, %s", m.TestbedReady.Round(time.Millisecond), mib(m.TestbedRSS)), "", "testbed process", false)
		row(name+": load average before", m.Load, "", "/proc/loadavg", false)
		if m.Err != "" {
			row(name+": error", m.Err, "", "", true)
			return runs, rows, err
		}
	}
	if len(runs) == 2 && runs[0].MaxRSS > 0 {
		r := float64(runs[1].MaxRSS) / float64(runs[0].MaxRSS)
		row(fmt.Sprintf("peak RSS %d pages / %d pages", runs[1].Pages, runs[0].Pages), fmt.Sprintf("%.2f", r), "≤ 1.5", "VmHWM", r > 1.5)
	}
	return runs, rows, nil
}

func (h *Harness) memoryRun(ctx context.Context, m *MemoryRun, deadline time.Time, workers, concurrency int) error {
	dir := filepath.Join(h.Dir, "memory", strconv.Itoa(m.Pages))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	site := filepath.Join(dir, "site.toml")
	if err := os.WriteFile(site, fmt.Appendf(nil, "[site]\nPages = %d\nHosts = %d\n", m.Pages, m.Hosts), 0o644); err != nil {
		return err
	}
	seeds := filepath.Join(dir, "seeds.txt")
	tb, err := startTestbed(ctx, h.Polite, dir, "testbed", site, 5*time.Minute, "--urls", seeds)
	if err != nil {
		return err
	}
	defer tb.Stop()
	m.TestbedReady = tb.Ready
	out := filepath.Join(dir, "out")
	m.Args = []string{"fetch", "--follow", "--sitemaps", "--scope", "domain", "--max-depth", strconv.Itoa(memoryDepth),
		"--connect-to", "::" + tb.Addr, "--rate", "inf", "--bodies", "none", "--adaptive=false",
		"--workers", strconv.Itoa(workers), "--concurrency", strconv.Itoa(concurrency),
		"--progress", "log", "--max-time", time.Until(deadline).Round(time.Second).String(), "--out", out, seeds}
	p, err := run(ctx, h.Polite, dir, "fetch", m.Args...)
	if p != nil {
		m.MaxRSS, m.Wall, m.CPU = p.MaxRSS, p.Wall, p.CPU
	}
	tb.Stop()
	m.TestbedRSS = tb.Proc.MaxRSS
	if err != nil {
		return err
	}
	reqs, err := readTestbedLog(tb.Log)
	if err != nil {
		return err
	}
	m.Requests = len(reqs)
	m.Status = statuses(reqs)
	web, err := testbed.Site{Pages: m.Pages, Hosts: m.Hosts}.Generate()
	if err != nil {
		return err
	}
	m.Problems = problems(web.Expected(testbed.Crawl{Seeds: web.Seeds(), Scope: "domain", MaxDepth: memoryDepth, Sitemaps: true}).Check(reqs))
	rs, err := readResults(filepath.Join(out, "results.jsonl"))
	if err != nil {
		return err
	}
	m.Results = len(rs)
	m.Outcomes = outcomes(rs)
	m.PerSec = float64(m.Results) / m.Wall.Seconds()
	return nil
}

// parseSizes reads "PAGES/HOSTS,PAGES/HOSTS".
func parseSizes(s string) ([]MemorySize, error) {
	var out []MemorySize
	for f := range strings.SplitSeq(s, ",") {
		p, hs, ok := strings.Cut(strings.TrimSpace(f), "/")
		pages, err1 := strconv.Atoi(p)
		hosts, err2 := strconv.Atoi(hs)
		if !ok || err1 != nil || err2 != nil || pages <= 0 || hosts <= 0 {
			return nil, fmt.Errorf("followlive: memory size %q: want PAGES/HOSTS", f)
		}
		out = append(out, MemorySize{Pages: pages, Hosts: hosts})
	}
	return out, nil
}
