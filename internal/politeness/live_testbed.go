package politeness

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/polite-go/polite/testbed"
)

// testbedProc is `polite testbed` serving a scenario's hosts in a process
// of its own, each host on its own 127.0.0.x address: the hosts a user
// rehearses against, measured from their own records (its --stats file).
type testbedProc struct {
	cmd   *exec.Cmd
	hosts []testbed.HostConfig
	urls  []string // each host's base URL, in hosts order
	stats string   // the --stats file
}

// hostRecord is what the testbed recorded of one host.
type hostRecord struct {
	cfg      testbed.HostConfig
	started  time.Time
	stats    testbed.Stats
	timeline []testbed.Second
}

// statsFile is the JSON the testbed writes with --stats.
type statsFile map[string]struct {
	testbed.Stats
	Started  time.Time        `json:"started"`
	Timeline []testbed.Second `json:"timeline"`
}

// startTestbed starts the CLI's testbed for hosts, with its files in dir,
// and returns once it serves.
func startTestbed(ctx context.Context, polite, dir string, hosts []testbed.HostConfig) (*testbedProc, error) {
	cfg, err := json.Marshal(hosts)
	if err != nil {
		return nil, err
	}
	p := &testbedProc{hosts: hosts, stats: filepath.Join(dir, "testbed-stats.json")}
	cfgFile, bases := filepath.Join(dir, "testbed.json"), filepath.Join(dir, "testbed-urls.txt")
	if err := os.WriteFile(cfgFile, cfg, 0o644); err != nil {
		return nil, err
	}
	p.cmd = exec.CommandContext(ctx, polite, "testbed", "--config", cfgFile, "--stats", p.stats,
		"--urls", bases, "--pages", "1")
	p.cmd.WaitDelay = 5 * time.Second
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	p.cmd.Stderr = &stderr
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	sc := bufio.NewScanner(out)
	serving := false
	for !serving && sc.Scan() {
		serving = strings.HasPrefix(sc.Text(), "serving")
	}
	go io.Copy(io.Discard, out) // the stop table, read from the stats file instead
	if !serving {
		p.cmd.Process.Kill()
		p.cmd.Wait()
		return nil, fmt.Errorf("testbed did not start: %s", lastLine(stderr.String()))
	}
	b, err := os.ReadFile(bases)
	if err != nil {
		p.stop()
		return nil, err
	}
	for line := range strings.Lines(string(b)) {
		p.urls = append(p.urls, strings.TrimSuffix(strings.TrimSpace(line), "/page/0"))
	}
	if len(p.urls) != len(hosts) {
		p.stop()
		return nil, fmt.Errorf("testbed wrote %d URLs for %d hosts", len(p.urls), len(hosts))
	}
	return p, nil
}

// stop ends the testbed (as Ctrl-C does) and reads what it recorded.
func (p *testbedProc) stop() ([]hostRecord, error) {
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		return nil, err
	}
	if err := p.cmd.Wait(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			return nil, err
		}
	}
	b, err := os.ReadFile(p.stats)
	if err != nil {
		return nil, fmt.Errorf("testbed stats: %w", err)
	}
	var f statsFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("testbed stats: %w", err)
	}
	recs := make([]hostRecord, 0, len(p.hosts))
	for _, h := range p.hosts {
		s, ok := f[h.Name]
		if !ok {
			return nil, fmt.Errorf("testbed stats: no host %q", h.Name)
		}
		recs = append(recs, hostRecord{cfg: h, started: s.Started, stats: s.Stats, timeline: s.Timeline})
	}
	return recs, nil
}
