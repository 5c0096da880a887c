package politeness

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/polite-go/polite/adaptive"
	"github.com/polite-go/polite/testbed"
)

var (
	flagLive         = flag.Bool("live", false, "run the live politeness benchmark (make politeness-live)")
	flagPolite       = flag.String("polite", "", "with -live: the built CLI")
	flagLiveScs      = flag.String("live-scenarios", "", "with -live: comma-separated scenario names (default: all)")
	flagLiveRuns     = flag.Int("live-runs", 3, "with -live: runs of each scenario")
	flagLiveParallel = flag.Int("live-parallel", 3, "with -live: runs at once")
	flagLiveDir      = flag.String("live-dir", "", "with -live: keep each run's job and logs here")
	flagLiveJSON     = flag.String("live-json", "", "with -live: write every run as JSON here")
	flagLiveFleet    = flag.String("live-fleet", "0", "with -live: the rows of each scenario, comma-separated: 0 one process, N a fleet of N workers sharing one Redis (0,4: both)")
)

// TestLive runs the live benchmark: the built CLI, in a process of its own,
// against `polite testbed` processes and nginx on loopback, in real time. The simulated
// twins run in fake time with the same flags and duration.
func TestLive(t *testing.T) {
	if !*flagLive {
		t.Skip("run with -live -polite BIN (make politeness-live)")
	}
	scs := pick(LiveScenarios(), *flagLiveScs, func(s LiveScenario) string { return s.Name })
	fleets, err := parseFleets(*flagLiveFleet)
	if err != nil {
		t.Fatal(err)
	}
	redis := ""
	if slices.ContainsFunc(fleets, func(n int) bool { return n > 0 }) {
		if redis, err = RedisBinary(); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%v (CI=true)", err)
			}
			t.Skip(err)
		}
	}
	var sims map[string]Result // beside one-process rows only
	if slices.Contains(fleets, 0) {
		sims = map[string]Result{}
	}
	for _, sc := range scs {
		if sc.Twin == "" || sims == nil {
			continue
		}
		i := slices.IndexFunc(testbed.Scenarios(), func(s testbed.Scenario) bool { return s.Name == sc.Twin })
		tw := testbed.Scenarios()[i]
		tw.Duration = time.Duration(sc.Seconds * float64(time.Second))
		synctest.Test(t, func(t *testing.T) {
			res, err := RunOne(t.Context(), tw, Ours(adaptive.Config{Initial: 5, Max: 200}), Options{Concurrency: 8})
			if err != nil {
				t.Fatal(err)
			}
			sims[sc.Twin] = res
		})
	}
	runs, err := RunLive(t.Context(), LiveOptions{
		Polite: *flagPolite, Scenarios: scs, Runs: *flagLiveRuns, Parallel: *flagLiveParallel,
		Dir: *flagLiveDir, Progress: testWriter{t}, Fleets: fleets, RedisServer: redis,
	})
	if err != nil {
		t.Fatal(err)
	}
	if *flagLiveJSON != "" {
		b, _ := json.MarshalIndent(runs, "", "  ")
		if err := os.WriteFile(*flagLiveJSON, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var b strings.Builder
	WriteLiveTable(&b, Summarize(scs, runs), sims)
	head := "live (median (min-max) of runs; figures from the servers' side)"
	if sims != nil {
		head += ", sim twin with the same flags"
	}
	t.Log(head + ":\n" + b.String())
}

// parseFleets reads -live-fleet: comma-separated worker counts, 0 for one
// process.
func parseFleets(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("-live-fleet %q: want worker counts such as 0,4 (0: one process)", s)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// testWriter logs each line written as it comes.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func TestDealList(t *testing.T) {
	list := []byte("a/0\nb/0\na/1\nb/1\na/2\n")
	for _, tt := range []struct {
		name string
		n    int
		want []string
	}{
		{"one", 1, []string{"a/0\nb/0\na/1\nb/1\na/2\n"}},
		{"two", 2, []string{"a/0\na/1\na/2\n", "b/0\nb/1\n"}},
		{"three", 3, []string{"a/0\nb/1\n", "b/0\na/2\n", "a/1\n"}},
		{"more workers than lines", 6, []string{"a/0\n", "b/0\n", "a/1\n", "b/1\n", "a/2\n", ""}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := dealList(list, tt.n)
			var s []string
			for _, b := range got {
				s = append(s, string(b))
			}
			if !slices.Equal(s, tt.want) {
				t.Errorf("dealList(%d) = %q, want %q", tt.n, s, tt.want)
			}
		})
	}
}

func TestParseFleets(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []int
		err  bool
	}{
		{in: "0", want: []int{0}},
		{in: "4", want: []int{4}},
		{in: "0,4", want: []int{0, 4}},
		{in: " 0 , 4,4", want: []int{0, 4}},
		{in: "", err: true},
		{in: "-1", err: true},
		{in: "four", err: true},
	} {
		got, err := parseFleets(tt.in)
		if (err != nil) != tt.err || !slices.Equal(got, tt.want) {
			t.Errorf("parseFleets(%q) = %v, %v, want %v (error %v)", tt.in, got, err, tt.want, tt.err)
		}
	}
}

// A knee scenario's in-flight cap is part of its shape: its runs pass it
// as --concurrency in place of LiveFlags' own, and the rest unchanged.
func TestLiveScenarioFlags(t *testing.T) {
	i := slices.IndexFunc(LiveScenarios(), func(s LiveScenario) bool { return s.Name == "knee-wait20-20ms-c1" })
	if i < 0 {
		t.Fatal("no live scenario knee-wait20-20ms-c1")
	}
	for _, tt := range []struct {
		sc   LiveScenario
		want string
	}{
		{LiveScenarios()[i], "1"},
		{LiveScenario{Name: "plain"}, "8"},
	} {
		f := tt.sc.flags()
		j := slices.Index(f, "--concurrency")
		if j < 0 || f[j+1] != tt.want || len(f) != len(LiveFlags) {
			t.Errorf("%s: flags %q, want LiveFlags with --concurrency %s", tt.sc.Name, f, tt.want)
		}
	}
	if LiveFlags[slices.Index(LiveFlags, "--concurrency")+1] != "8" {
		t.Errorf("LiveFlags changed: %q", LiveFlags)
	}
}
