package followlive

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Parts are the parts of the measurement, in the order they run.
var Parts = []string{"site", "kill", "since", "wget", "memory"}

var (
	flagLive    = flag.Bool("live", false, "run the live crawl measurement (make follow-live)")
	flagPolite  = flag.String("polite", "", "with -live: the built CLI")
	flagParts   = flag.String("parts", "", "with -live: comma-separated, from "+strings.Join(Parts, ",")+" (default: all)")
	flagDir     = flag.String("dir", "", "with -live: run dir (default a new one under /tmp)")
	flagSeed    = flag.Uint64("seed", 0, "with -live: seed of the kill instants (0: from the clock)")
	flagKills   = flag.Int("kills", 20, "with -live: SIGKILLs in the kill part")
	flagTimeout = flag.Duration("part-timeout", 30*time.Minute, "with -live: bound of each part")
	flagMemory  = flag.String("memory-sizes", "100000/100,1000000/1000", "with -live: the memory part's sites, PAGES/HOSTS each")
	flagWorkers = flag.Int("memory-workers", 256, "with -live: the memory crawls' --workers")
	flagConc    = flag.Int("memory-concurrency", 8, "with -live: the memory crawls' --concurrency")
)

// TestLive runs the parts with the built CLI as separate processes, prints
// the table and writes figures.json into the run dir. It does nothing
// without -live.
func TestLive(t *testing.T) {
	if !*flagLive {
		t.Skip("run with -live -polite BIN (make follow-live)")
	}
	if *flagPolite == "" {
		t.Fatal("-polite names the built CLI")
	}
	polite, err := filepath.Abs(*flagPolite)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	if *flagParts == "" {
		for _, p := range Parts {
			want[p] = true
		}
	}
	for p := range strings.SplitSeq(*flagParts, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if !slices.Contains(Parts, p) {
			t.Fatalf("-parts: no part %q (have %s)", p, strings.Join(Parts, ","))
		}
		want[p] = true
	}
	sizes, err := parseSizes(*flagMemory)
	if err != nil {
		t.Fatal(err)
	}
	dir := *flagDir
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "follow-live-"+time.Now().UTC().Format("20060102-150405"))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("run dir %s", dir)
	seed := *flagSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	h := &Harness{Polite: polite, Dir: dir, Logf: t.Logf, Seed: seed, Kills: *flagKills, Timeout: *flagTimeout}
	if err := h.Setup(); err != nil {
		t.Fatal(err)
	}
	figs := map[string]any{"started": time.Now().UTC(), "cpus": cpus(), "polite": polite, "depth": h.Depth}
	var rows []Row
	save := func() {
		figs["rows"] = rows
		b, _ := json.MarshalIndent(figs, "", "  ")
		if err := os.WriteFile(filepath.Join(dir, "figures.json"), b, 0o644); err != nil {
			t.Error(err)
		}
	}
	defer func() {
		save()
		var b strings.Builder
		WriteTable(&b, rows)
		t.Log("polite fetch --follow, live (issue 35), figures from the servers' logs unless named otherwise:\n" + b.String())
		for _, r := range rows {
			if r.Bad {
				t.Errorf("%s: %s: %s (goal %s)", r.Part, r.Figure, cut(r.Measured), r.Goal)
			}
		}
	}()
	ctx := t.Context()
	part := func(name string) (context.Context, context.CancelFunc) {
		t.Logf("part %s, load average %s", name, loadAvg())
		return context.WithTimeout(ctx, *flagTimeout)
	}

	// kill and since need the first crawl: its wall and results, its job.
	var first *crawl
	if want["site"] || want["kill"] || want["since"] {
		pctx, cancel := part("site")
		c, f, rs, err := h.SitePart(pctx)
		cancel()
		first = c
		figs["site"] = f
		rows = append(rows, rs...)
		save()
		if err != nil {
			t.Fatalf("site: %v", err)
		}
	}
	if want["kill"] {
		pctx, cancel := part("kill")
		f, rs, err := h.KillPart(pctx, first)
		cancel()
		figs["kill"] = f
		rows = append(rows, rs...)
		save()
		if err != nil {
			t.Errorf("kill: %v", err)
		}
	}
	if want["since"] {
		pctx, cancel := part("since")
		f, rs, err := h.SincePart(pctx, first)
		cancel()
		figs["since"] = f
		rows = append(rows, rs...)
		save()
		if err != nil {
			t.Errorf("since: %v", err)
		}
	}
	if want["wget"] {
		pctx, cancel := part("wget")
		f, rs, err := h.WgetPart(pctx)
		cancel()
		figs["wget"] = f
		rows = append(rows, rs...)
		save()
		if err != nil {
			t.Errorf("wget: %v", err)
		}
	}
	if want["memory"] {
		pctx, cancel := part("memory")
		f, rs, err := h.MemoryPart(pctx, sizes, *flagWorkers, *flagConc)
		cancel()
		figs["memory"] = f
		rows = append(rows, rs...)
		save()
		if err != nil {
			t.Errorf("memory: %v", err)
		}
	}
	rows = append(rows, Row{Part: "machine", Figure: "load average at the end", Measured: loadAvg(), From: "/proc/loadavg"})
}

func cpus() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return strings.Count(string(b), "processor\t:")
}
