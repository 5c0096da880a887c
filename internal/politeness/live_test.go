package politeness

import (
	"encoding/json"
	"flag"
	"os"
	"slices"
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
)

// TestLive runs the live benchmark: the built CLI, in a process of its own,
// against `polite testbed` processes and nginx on loopback, in real time. The simulated
// twins run in fake time with the same flags and duration.
func TestLive(t *testing.T) {
	if !*flagLive {
		t.Skip("run with -live -polite BIN (make politeness-live)")
	}
	scs := pick(LiveScenarios(), *flagLiveScs, func(s LiveScenario) string { return s.Name })
	sims := map[string]Result{}
	for _, sc := range scs {
		if sc.Twin == "" {
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
		Dir: *flagLiveDir, Progress: testWriter{t},
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
	t.Log("live (median (min-max) of runs; figures from the servers' side), sim twin with the same flags:\n" + b.String())
}

// testWriter logs each line written as it comes.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
