package proxylive

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var (
	flagLive      = flag.Bool("live", false, "run the live proxy measurement (make proxy-live)")
	flagPolite    = flag.String("polite", "", "with -live: the built CLI (empty: only the rows without polite proxy)")
	flagScenarios = flag.String("scenarios", "", "with -live: comma-separated, from "+strings.Join(Scenarios, ",")+" (default: all)")
	flagDir       = flag.String("dir", "", "with -live: keep every run's files here (default: a temporary directory, removed)")
	flagURLs      = flag.Int("urls", 1500, "with -live: scenario 1's Scrapy list length (75 s at 20 r/s, as make politeness-live's nginx-nodelay)")
	flagRuns      = flag.Int("runs", 3, "with -live: runs of each Scrapy row through polite proxy (the median judged, the worst shown)")
	flagClient    = flag.Int("client-urls", 200, "with -live: each client's list length")
	flagLoad      = flag.Int("load-count", 20000, "with -live: requests per path in the overhead run")
)

// TestLive runs the scenarios and prints the results table. It does
// nothing without -live.
func TestLive(t *testing.T) {
	if !*flagLive {
		t.Skip("run with -live -polite BIN (make proxy-live)")
	}
	names := Scenarios
	if *flagScenarios != "" {
		names = nil
		for s := range strings.SplitSeq(*flagScenarios, ",") {
			s = strings.TrimSpace(s)
			if !slices.Contains(Scenarios, s) {
				t.Fatalf("-scenarios: no scenario %q (have %s)", s, strings.Join(Scenarios, ","))
			}
			names = append(names, s)
		}
	}
	dir := *flagDir
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	testdata, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	polite := *flagPolite
	if polite != "" {
		if polite, err = filepath.Abs(polite); err != nil {
			t.Fatal(err)
		}
	}
	h := &Harness{
		Polite: polite, Dir: dir, Testdat: testdata, Logf: t.Logf,
		ScrapyURLs: *flagURLs, Runs: *flagRuns, ClientURLs: *flagClient, LoadCount: *flagLoad,
	}
	ctx, cancel := context.WithTimeout(t.Context(), 38*time.Minute)
	defer cancel()
	var rows []Row
	for _, name := range names {
		t0 := time.Now()
		rows = append(rows, h.Run(ctx, name)...)
		t.Logf("scenario %s done in %.0f s", name, time.Since(t0).Seconds())
	}
	var b strings.Builder
	WriteTable(&b, rows)
	t.Log("polite proxy, live (figures from nginx's access log unless marked client):\n" + b.String())
	if *flagDir != "" {
		if err := os.WriteFile(filepath.Join(dir, "results.md"), []byte(b.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
	for _, r := range rows {
		if v := r.Verdict(); v == "FAIL" || v == "ERROR" {
			t.Errorf("%s / %s: %s", r.Scenario, r.Name, v)
		}
	}
}
