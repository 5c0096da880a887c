package main_test

import (
	"bufio"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startProxy runs `polite proxy` with args on a free loopback port and
// returns its address once it listens; SIGINT stops it when t ends.
func startProxy(t *testing.T, args ...string) string {
	t.Helper()
	addr, _ := startProxyMetrics(t, args...)
	return addr
}

// startProxyMetrics is startProxy that also returns the --metrics
// address the proxy printed ("" without --metrics).
func startProxyMetrics(t *testing.T, args ...string) (addr, metrics string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"proxy", "--listen", "127.0.0.1:0"}, args...)...)
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(errPipe)
	var line string
	for !strings.Contains(line, "listening on") {
		if line, err = br.ReadString('\n'); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("polite proxy said nothing: %v", err)
		}
		// "polite proxy: metrics on http://ADDR/metrics"
		if m, ok := strings.CutPrefix(line, "polite proxy: metrics on "); ok {
			metrics = strings.TrimSpace(m)
		}
	}
	var rest strings.Builder
	copied := make(chan struct{})
	go func() { io.Copy(&rest, br); close(copied) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGINT)
		// Its stderr is read to its end before Wait, which closes the
		// pipe: a Wait first could lose the last words (a CI run read
		// none under load).
		select {
		case <-copied:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Errorf("polite proxy did not stop on SIGINT")
		}
		err := cmd.Wait()
		<-copied // closed by now, or by Wait's closing the pipe after a kill
		if err != nil {
			t.Errorf("polite proxy exited: %v\n%s", err, rest.String())
		}
		if !strings.Contains(rest.String(), "polite proxy: stopped;") {
			t.Errorf("polite proxy's last words: %q", rest.String())
		}
	})
	// "polite proxy: listening on http://127.0.0.1:PORT (…)"
	f := strings.Fields(line)
	if len(f) < 5 || !strings.HasPrefix(f[4], "http://") {
		t.Fatalf("polite proxy's first line %q", line)
	}
	return f[4], metrics
}

// origin counts the requests each path gets, and whether they came
// through polite (Via).
type origin struct {
	mu   sync.Mutex
	hits map[string]int
	via  int
}

func (o *origin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	if o.hits == nil {
		o.hits = map[string]int{}
	}
	o.hits[r.URL.Path]++
	if strings.Contains(r.Header.Get("Via"), "polite") {
		o.via++
	}
	o.mu.Unlock()
	fmt.Fprintf(w, "page %s\n", r.URL.Path)
}

// check fails t unless each of n paths /p/0… was asked for once, through
// polite when via.
func (o *origin) check(t *testing.T, n int, via bool) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range n {
		if c := o.hits[fmt.Sprintf("/p/%d", i)]; c != 1 {
			t.Errorf("/p/%d asked for %d times, want once", i, c)
		}
	}
	if len(o.hits) != n {
		t.Errorf("origin saw %d paths, want %d", len(o.hits), n)
	}
	if via && o.via != n {
		t.Errorf("%d of %d requests came with Via: polite", o.via, n)
	}
}

// need returns the path of a client program the test runs; under CI
// a missing one fails (make deps installs it).
func need(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not installed (make deps installs it)", name)
		}
		t.Skipf("%s not installed", name)
	}
	return p
}

// pythonRequests returns a python3 that imports requests.
func pythonRequests(t *testing.T) string {
	t.Helper()
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		if p, err := exec.LookPath(py); err == nil && exec.Command(p, "-c", "import requests").Run() == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no python3 with requests (make deps installs python3-requests)")
	}
	t.Skip("no python3 with requests")
	return ""
}

// curl, a client no one here wrote, fetches a list over plain HTTP
// through polite proxy: every URL answered, each asked of the origin once,
// through polite.
func TestProxyCurl(t *testing.T) {
	curl := need(t, "curl")
	o := &origin{}
	srv := httptest.NewServer(o)
	defer srv.Close()
	proxy, metrics := startProxyMetrics(t, "--allow-private", "--robots=false", "--rate", "200", "--burst", "20", "--metrics", "127.0.0.1:0")
	const n = 40
	args := []string{"-s", "--fail-with-body", "-x", proxy, "-w", "%{http_code}\\n", "-o", "/dev/null"}
	for i := range n {
		args = append(args, fmt.Sprintf("%s/p/%d", srv.URL, i))
	}
	out, err := exec.Command(curl, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("curl: %v\n%s", err, out)
	}
	if got := strings.Count(string(out), "200\n"); got != n {
		t.Errorf("curl got %d answers 200 of %d:\n%s", got, n, out)
	}
	o.check(t, n, true)
	resp, err := http.Get(metrics)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"polite_proxy_requests_total 40\n", `polite_proxy_tunnels_total{mode="tunnel"} 0`, "http_client_request_duration_seconds_count"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// Python requests fetches over HTTPS through polite proxy with the host
// intercepted: it trusts polite's CA (exported by `polite proxy ca
// export`), polite trusts the origin's, and each request reaches the
// origin through polite (Via), once.
func TestProxyPythonIntercepted(t *testing.T) {
	py := pythonRequests(t)
	o := &origin{}
	srv := httptest.NewTLSServer(o)
	defer srv.Close()
	dir := t.TempDir()
	originCA := filepath.Join(dir, "origin.pem")
	if err := os.WriteFile(originCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	caDir := filepath.Join(dir, "ca")
	if out, err := exec.Command(bin, "proxy", "ca", "init", "--ca-dir", caDir).CombinedOutput(); err != nil {
		t.Fatalf("polite proxy ca init: %v\n%s", err, out)
	}
	caPEM, err := exec.Command(bin, "proxy", "ca", "export", "--ca-dir", caDir).Output()
	if err != nil || !strings.Contains(string(caPEM), "BEGIN CERTIFICATE") {
		t.Fatalf("polite proxy ca export: %v %q", err, caPEM)
	}
	clientCA := filepath.Join(dir, "polite-ca.pem")
	os.WriteFile(clientCA, caPEM, 0o644)
	proxy := startProxy(t, "--allow-private", "--robots=false", "--rate", "200", "--burst", "20",
		"--intercept", "127.0.0.1", "--ca-dir", caDir, "--upstream-ca", originCA)
	const n = 30
	script := `
import sys, requests
proxy, base, ca, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
s = requests.Session()
s.proxies = {"http": proxy, "https": proxy}
ok = 0
for i in range(n):
    # verify on each request: a Session's is overridden by
    # REQUESTS_CA_BUNDLE in the environment (psf/requests#3829).
    r = s.get("%s/p/%d" % (base, i), timeout=30, verify=ca)
    if r.status_code == 200 and r.text == "page /p/%d\n" % i:
        ok += 1
    else:
        print("p/%d: %d %r %r" % (i, r.status_code, r.headers.get("Proxy-Status"), r.text[:200]))
print("ok", ok)
`
	out, err := exec.Command(py, "-c", script, proxy, srv.URL, clientCA, fmt.Sprint(n)).CombinedOutput()
	if err != nil {
		t.Fatalf("python requests: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), fmt.Sprintf("ok %d\n", n)) {
		t.Errorf("python requests:\n%s", out)
	}
	o.check(t, n, true)
}

// curl through a CONNECT tunnel (not intercepted): TLS end to end with
// the origin, so no Via reaches it, and each URL is asked once.
func TestProxyCurlTunnel(t *testing.T) {
	curl := need(t, "curl")
	o := &origin{}
	srv := httptest.NewTLSServer(o)
	defer srv.Close()
	originCA := filepath.Join(t.TempDir(), "origin.pem")
	os.WriteFile(originCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644)
	proxy := startProxy(t, "--allow-private", "--robots=false", "--rate", "50", "--burst", "5")
	const n = 10
	args := []string{"-s", "--fail-with-body", "-x", proxy, "--cacert", originCA, "-w", "%{http_code}\\n", "-o", "/dev/null"}
	for i := range n {
		args = append(args, fmt.Sprintf("%s/p/%d", srv.URL, i))
	}
	out, err := exec.Command(curl, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("curl: %v\n%s", err, out)
	}
	if got := strings.Count(string(out), "200\n"); got != n {
		t.Errorf("curl got %d answers 200 of %d:\n%s", got, n, out)
	}
	o.check(t, n, false)
}

// Without --allow-private the proxy reaches no loopback origin, and says
// why; listening beyond loopback without --proxy-auth is refused.
func TestProxyRefusals(t *testing.T) {
	curl := need(t, "curl")
	o := &origin{}
	srv := httptest.NewServer(o)
	defer srv.Close()
	proxy := startProxy(t, "--robots=false")
	out, _ := exec.Command(curl, "-s", "-i", "-x", proxy, srv.URL+"/p/0").CombinedOutput()
	if !strings.Contains(string(out), " 403 ") || !strings.Contains(string(out), "destination_ip_prohibited") {
		t.Errorf("a loopback origin without --allow-private:\n%s", out)
	}
	o.mu.Lock()
	if len(o.hits) != 0 {
		t.Errorf("the origin was reached: %v", o.hits)
	}
	o.mu.Unlock()
	out, err := exec.Command(bin, "proxy", "--listen", "0.0.0.0:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--proxy-auth") {
		t.Errorf("listening on 0.0.0.0 without --proxy-auth: %v\n%s", err, out)
	}
}
