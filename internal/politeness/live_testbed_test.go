package politeness

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/polite-go/polite/testbed"
)

// TestUnloadedLatency measures two hosts of a real `polite testbed`
// process: one that answers in 20 ms, and one with no latency, which is
// not measured. What it reads is the testbed's own record, so it can be no
// less than the configured latency.
func TestUnloadedLatency(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "polite")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/polite").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	hosts := []testbed.HostConfig{
		{Name: "slow.test", NoThrottle: true, Latency: 20 * time.Millisecond},
		{Name: "fast.test", NoThrottle: true},
	}
	got, err := unloadedLatency(t.Context(), bin, filepath.Join(dir, "unloaded"), hosts)
	if err != nil {
		t.Fatal(err)
	}
	// Exactly 20 ms would be the configuration read back, not a measure.
	if len(got) != 2 || got[0] <= 20*time.Millisecond || got[0] > 500*time.Millisecond || got[1] != 0 {
		t.Errorf("unloadedLatency = %v, want [20 ms or a little more, 0]", got)
	}
}
