package fleetscale

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
)

var (
	scale       = flag.Bool("scale", false, "run the fleet scale measurement (make fleet-scale)")
	politeBin   = flag.String("polite", "", "the built polite CLI")
	dirFlag     = flag.String("dir", "", "run dir (default a new one under /tmp)")
	parts       = flag.String("parts", "crawl,throughput,enqueue", "parts to run, comma-separated")
	procs       = flag.Int("procs", 8, "polite fetch worker processes")
	inFlight    = flag.Int("inflight", 32, "each worker's --workers")
	crawlHosts  = flag.Int("crawl-hosts", 1000, "crawl: testbed hosts with hidden capacities")
	crawlPages  = flag.Int("crawl-pages", 100, "crawl: pages per host")
	tpHosts     = flag.Int("tp-hosts", 1000, "throughput: unlimited hosts")
	tpPages     = flag.Int("tp-pages", 100, "throughput: pages per host")
	enqHosts    = flag.Int("enqueue-hosts", 100000, "enqueue: hosts")
	enqPages    = flag.Int("enqueue-pages", 100, "enqueue: pages per host")
	crawlAdapt  = flag.Bool("crawl-adaptive", true, "crawl: --adaptive (false: every host at a fixed --rate 10, the ceiling then 10 + burst)")
	partTimeout = flag.Duration("part-timeout", 20*time.Minute, "bound of each part")
)

// TestScale measures issue 31's scale figures with the built CLI as
// separate processes: one crawl by a fleet, the frontier's throughput
// against the --own-list floor, and a large enqueue. It prints a table and
// writes figures.json into the run dir.
func TestScale(t *testing.T) {
	if !*scale {
		t.Skip("run with -scale (make fleet-scale)")
	}
	redisBin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server not found (make deps installs it)")
	}
	if *politeBin == "" {
		t.Fatal("-polite names the built CLI")
	}
	dir := *dirFlag
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "fleet-scale-"+time.Now().UTC().Format("20060102-150405"))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("run dir %s", dir)
	o := Options{Polite: *politeBin, Redis: redisBin, Dir: dir, Workers: *procs, InFlight: *inFlight, Timeout: *partTimeout}
	ctx := context.Background()
	figs := map[string]any{"started": time.Now().UTC(), "procs": *procs, "inflight": *inFlight, "cpus": cpus()}
	save := func() {
		b, _ := json.MarshalIndent(figs, "", "  ")
		if err := os.WriteFile(filepath.Join(dir, "figures.json"), b, 0o644); err != nil {
			t.Error(err)
		}
	}
	var rows [][3]string
	row := func(fig, val, cmd string) { rows = append(rows, [3]string{fig, val, cmd}) }
	defer func() {
		save()
		w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "figure\tmeasured\tgoal / note")
		for _, r := range rows {
			fmt.Fprintf(w, "%s\t%s\t%s\n", r[0], r[1], r[2])
		}
		w.Flush()
		fmt.Printf("figures: %s\n", filepath.Join(dir, "figures.json"))
	}()
	want := map[string]bool{}
	for p := range strings.SplitSeq(*parts, ",") {
		want[strings.TrimSpace(p)] = true
	}

	if want["crawl"] {
		row("load average before crawl", loadAvg(), "another process's CPU skews the figures")
		maxRate := 40.0
		if !*crawlAdapt {
			maxRate = 10 // without --adaptive the rate is --rate
		}
		f, err := Crawl(ctx, o, *crawlHosts, *crawlPages, 10, maxRate, 2, *crawlAdapt)
		figs["crawl"] = f
		save()
		if err != nil {
			t.Errorf("crawl: %v", err)
		}
		n := fmt.Sprintf("%d URLs / %d hosts, %d workers × --workers %d", f.URLs, f.Hosts, f.Workers, f.InFlight)
		row("crawl: size", n, "issue: 100,000 URLs / 1,000 hosts, 8 workers")
		row("crawl: enqueue (2 processes, overlapping 2/3s)", fmt.Sprintf("%d + %d new = %d in %v", f.EnqueueNew[0], f.EnqueueNew[1], f.EnqueueNew[0]+f.EnqueueNew[1], f.EnqueueWall.Round(time.Millisecond)), fmt.Sprintf("want %d", f.URLs))
		row("crawl: wall, URLs/s", fmt.Sprintf("%v, %.0f", f.Wall.Round(time.Millisecond), f.URLsPerSec), "")
		row("crawl: flags", strings.Join(f.Flags[6:], " "), "")
		row("crawl: each host's first to last request, median / longest", fmt.Sprintf("%v / %v", f.HostSpanP50.Round(time.Millisecond), f.HostSpanMax.Round(time.Millisecond)), "")
		row("crawl: last request to last worker's exit", f.Tail.Round(time.Millisecond).String(), "")
		row("crawl: committed / missing / twice / strangers", fmt.Sprintf("%d / %d / %d / %d", f.Committed, f.Missing, f.Twice, f.Strangers), fmt.Sprintf("want %d / 0 / 0 / 0", f.URLs))
		row("crawl: outcomes", fmt.Sprint(f.Outcomes), "")
		row("crawl: requests (pages, robots), statuses", fmt.Sprintf("%d (%d, %d) %v", f.Requests, f.Pages, f.Robots, f.Status), "")
		row("crawl: pages answered 2xx twice (extra)", fmt.Sprintf("%d (%d)", f.Fetched2xx, f.FetchedExtra), "want 0")
		row("crawl: busiest 1-s window, all / pages", fmt.Sprintf("%d / %d (%s)", f.WorstWindow, f.WorstPages, f.WorstHost), fmt.Sprintf("ceiling --max-rate + --burst = %d", f.Ceiling))
		row("crawl: hosts over the ceiling in a 1-s window", fmt.Sprint(f.HostsOver), "want 0")
		row("crawl: slack needed to fit the bucket (worst host)", fmt.Sprintf("%v (%s)", f.WorstSlack.Round(time.Microsecond), f.SlackHost), "≤ 0: fits; a few ms: scheduling")
		row("crawl: CPU redis / workers / sites", fmt.Sprintf("%v / %v / %v", f.RedisCPU.Round(time.Millisecond), f.WorkersCPU.Round(time.Millisecond), f.SitesCPU.Round(time.Millisecond)), "")
	}
	if want["throughput"] {
		row("load average before throughput", loadAvg(), "")
		var tp [2]ThroughputFigures
		for i, mode := range []string{"frontier", "own-list"} {
			f, err := Throughput(ctx, o, mode, *tpHosts, *tpPages)
			tp[i] = f
			figs["throughput-"+mode] = f
			save()
			if err != nil {
				t.Errorf("throughput %s: %v", mode, err)
			}
			row("throughput "+mode+": URLs, wall, URLs/s", fmt.Sprintf("%d, %v, %.0f", f.URLs, f.Wall.Round(time.Millisecond), f.URLsPerSec), map[string]string{"frontier": "goal ≥ 20,000 URLs/s", "own-list": "floor: same URLs, no frontier"}[mode])
			if mode == "frontier" {
				row("throughput frontier: committed / missing / twice", fmt.Sprintf("%d / %d / %d (enqueue %v)", f.Once.Committed, f.Once.Missing, f.Once.Twice, f.EnqueueWall.Round(time.Millisecond)), "")
			}
			row("throughput "+mode+": pages served (2xx twice)", fmt.Sprintf("%d (%d)", f.Served.Pages, f.Served.Fetched2xx), "")
			row("throughput "+mode+": redis CPU µs/URL, scripts' commandstats µs/URL", fmt.Sprintf("%.1f, %.1f", f.RedisCPUPerURL, f.ScriptUsecPerURL), "")
			row("throughput "+mode+": scripts/URL, commands/URL", fmt.Sprintf("%.2f, %.2f", f.ScriptsPerURL, f.CommandsPerURL), "")
			row("throughput "+mode+": CPU redis / workers / sites", fmt.Sprintf("%v / %v / %v", f.RedisCPU.Round(time.Millisecond), f.WorkersCPU.Round(time.Millisecond), f.SitesCPU.Round(time.Millisecond)), "")
		}
		if tp[1].URLsPerSec > 0 {
			row("throughput: frontier / own-list", fmt.Sprintf("%.2f", tp[0].URLsPerSec/tp[1].URLsPerSec), "")
			row("throughput: frontier's redis CPU µs/URL beyond own-list", fmt.Sprintf("%.1f (scripts' commandstats %.1f)", tp[0].RedisCPUPerURL-tp[1].RedisCPUPerURL, tp[0].ScriptUsecPerURL-tp[1].ScriptUsecPerURL), "")
		}
	}
	if want["enqueue"] {
		row("load average before enqueue", loadAvg(), "")
		f, err := Enqueue(ctx, o, *enqHosts, *enqPages, true)
		figs["enqueue"] = f
		save()
		if err != nil {
			t.Errorf("enqueue: %v", err)
		}
		row("enqueue: URLs / hosts, new", fmt.Sprintf("%d / %d, %d", f.URLs, f.Hosts, f.New), "issue: 10,000,000 / 100,000")
		row("enqueue: wall, URLs/s", fmt.Sprintf("%v, %.0f", f.Wall.Round(time.Millisecond), f.URLsPerSec), "goal ≥ 100,000 URLs/s")
		row("enqueue: used_memory grown, bytes/URL", fmt.Sprintf("%d, %.1f", f.Memory, f.BytesPerURL), "goal ≤ 200 bytes/URL, dedupe included")
		row("enqueue: CPU redis / enqueuer", fmt.Sprintf("%v / %v", f.RedisCPU.Round(time.Millisecond), f.EnqueueCPU.Round(time.Millisecond)), "")
		row("enqueue again (same list): new, wall, URLs/s, memory grown", fmt.Sprintf("%d, %v, %.0f, %d", f.AgainNew, f.AgainWall.Round(time.Millisecond), f.AgainPerSec, f.AgainMemory), "want 0 new")
	}
}

func cpus() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return strings.Count(string(b), "processor\t:")
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
