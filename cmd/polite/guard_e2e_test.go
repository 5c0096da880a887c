package main_test

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/polite-go/polite/internal/redistest"
)

// startGuard runs `polite guard` with args on a free loopback port and
// returns its address once it serves; SIGINT stops it when t ends.
func startGuard(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"guard", "--listen", "127.0.0.1:0"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGINT)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("polite guard exited: %v\n%s", err, errb.String())
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Errorf("polite guard did not stop on SIGINT")
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("polite guard said nothing: %v\n%s", err, errb.String())
	}
	go io.Copy(io.Discard, out)
	// "polite guard: http://127.0.0.1:PORT -> …"
	f := strings.Fields(line)
	if len(f) < 3 || !strings.HasPrefix(f[2], "http://") {
		t.Fatalf("polite guard's first line %q", line)
	}
	return f[2]
}

// Four `polite guard` processes sharing one Redis admit, per client, no
// more than one guard would: burst + rate*t over all of them.
func TestGuardProcessesShareRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four processes and loads them for 3 s")
	}
	addr := redistest.Start(t)
	var served atomic.Int64
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		io.WriteString(w, "ok")
	}))
	defer upstream.Close()
	const (
		guards     = 4
		identities = 40
		perGuard   = 16
		rate       = 20.0
		burst      = 10
		span       = 3 * time.Second
	)
	cfg := filepath.Join(t.TempDir(), "guard.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("trusted_proxies = [\"127.0.0.1\"]\nsecret = \"fleet\"\n[identity]\nrate = %v\nburst = %d\n", rate, burst)), 0o644)
	urls := make([]string, guards)
	for i := range urls {
		urls[i] = startGuard(t, "--upstream", upstream.URL, "--config", cfg, "--redis", "redis://"+addr+"/0",
			"--outage", "closed", "--redis-timeout", "5s") // exactness of the shared path: no guard decides alone
	}
	admitted := make([]atomic.Int64, identities)
	var refused, failed atomic.Int64
	tr := &http.Transport{MaxIdleConnsPerHost: perGuard}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	start := time.Now()
	var wg sync.WaitGroup
	for gi := range guards {
		for j := range perGuard {
			wg.Go(func() {
				for k := 0; time.Since(start) < span; k++ {
					id := (j*3 + k + gi*11) % identities
					req, _ := http.NewRequest("GET", urls[gi]+"/x", nil)
					req.Header.Set("X-Forwarded-For", "198.51.100."+strconv.Itoa(id))
					resp, err := c.Do(req)
					if err != nil {
						failed.Add(1)
						continue
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					switch resp.StatusCode {
					case http.StatusOK:
						admitted[id].Add(1)
					case http.StatusTooManyRequests:
						refused.Add(1)
					default:
						failed.Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	bound := math.Floor(burst + rate*el)
	worst, least, total := math.Inf(-1), math.Inf(1), int64(0)
	for i := range admitted {
		n := float64(admitted[i].Load())
		total += int64(n)
		worst = max(worst, n-bound)
		least = min(least, n/bound)
	}
	t.Logf("%d guard processes, one Redis, %d clients, %.2f s: %d admitted, %d refused, %d failed; bound per client %.0f, largest excess %v, least admitted/bound %.3f",
		guards, identities, el, total, refused.Load(), failed.Load(), bound, worst, least)
	if worst > 0 || failed.Load() > 0 {
		t.Errorf("largest excess %v (want <= 0), %d failed", worst, failed.Load())
	}
	if served.Load() != total {
		t.Errorf("upstream served %d, clients saw %d admitted", served.Load(), total)
	}
}
