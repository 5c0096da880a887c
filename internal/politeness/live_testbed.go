package politeness

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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
	unloaded time.Duration // measured unloaded (unloadedLatency); 0: the configured one stands
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

// unloadedFor bounds how long a host's unloaded latency is measured, and
// unloadedAsks how many requests it is asked at most.
const (
	unloadedFor  = 3 * time.Second
	unloadedAsks = 25
)

// unloadedLatency measures each host's unloaded latency as the testbed
// serves it on this machine: in a testbed process of its own (so that its
// requests stay out of the run's records), each host is asked one request
// at a time, with a rest between (at most half the host's rate: no queue,
// no wait for a token), for at most unloadedFor; the latency is the host's
// median in the testbed's own records, 0 for a host without a latency. A
// host's configured latency can be below what the machine's timers give:
// a "0.5 ms" host answers in about 1.1 ms here, so a run's p95 is judged
// against what the server does unloaded, not against its configuration
// (issue 34).
func unloadedLatency(ctx context.Context, polite, dir string, hosts []testbed.HostConfig) ([]time.Duration, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	tb, err := startTestbed(ctx, polite, dir, hosts)
	if err != nil {
		return nil, err
	}
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	var wg sync.WaitGroup
	errs := make([]error, len(hosts))
	for i, h := range hosts {
		if h.Latency <= 0 {
			continue
		}
		rest := 10 * time.Millisecond
		if h.Rate > 0 {
			rest = max(rest, time.Duration(2*float64(time.Second)/h.Rate))
		}
		wg.Go(func() { errs[i] = askUnloaded(ctx, client, tb.urls[i]+"/page/0", rest) })
	}
	wg.Wait()
	recs, err := tb.stop()
	if err != nil {
		return nil, err
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("unloaded latency: %w", err)
	}
	out := make([]time.Duration, len(hosts))
	for i, r := range recs {
		if hosts[i].Latency > 0 {
			out[i] = r.stats.P50
		}
	}
	return out, nil
}

// askUnloaded asks url one request at a time, resting rest between, up to
// unloadedAsks requests or unloadedFor.
func askUnloaded(ctx context.Context, client *http.Client, url string, rest time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, unloadedFor)
	defer cancel()
	for range unloadedAsks {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil // the time is up: what was asked is measured
			}
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s, unloaded", url, resp.Status)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(rest):
		}
	}
	return nil
}
