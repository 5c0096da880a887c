package cli

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// freeAddr returns a loopback address no one listens on, for a --metrics
// to take.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestFetchMetrics: --metrics serves the Transport's metrics for
// Prometheus while the job runs (scraped here by the job's own server
// mid-run), a bad address is a usage error, and fetch ends by writing the
// report and printing its path.
func TestFetchMetrics(t *testing.T) {
	addr := freeAddr(t)
	var mu sync.Mutex
	var scraped string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			http.NotFound(w, r)
		case "/scrape":
			resp, err := http.Get("http://" + addr + "/metrics")
			if err != nil {
				t.Errorf("scraping: %v", err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			mu.Lock()
			scraped = string(b)
			mu.Unlock()
		default:
			w.Write([]byte("x"))
		}
	}))
	defer srv.Close()
	out := t.TempDir()
	code, stdout, stderr := politeIn(t, urls(srv.URL, "/a", "/b", "/scrape"), "fetch", "--progress", "none", "--out", out,
		"--rate", "100", "--workers", "1", "--metrics", addr, "-")
	if code != ExitOK {
		t.Fatalf("exit %d; stderr %s", code, stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	for _, want := range []string{"http_client_request_duration_seconds_bucket", "http_client_active_requests",
		"polite_request_duration_seconds_bucket",
		// The job's one host by name (issue 33, item 6: quiet hosts were
		// all _other), its port apart.
		`server_address="` + host + `",server_port="` + port + `"`,
		// The process, named.
		`service_name="polite"`, "go_goroutines ", "go_memstats_heap_alloc_bytes ", "process_cpu_seconds_total ",
		// The job: its URLs, queue and bytes.
		"polite_crawl_urls 3\n", "polite_crawl_urls_pending ", `polite_crawl_queue_urls{state="in_flight"} 1` + "\n",
		`polite_crawl_queue_urls{state="delayed"} `, "polite_crawl_urls_done_total ", "polite_crawl_body_bytes_total "} {
		if !strings.Contains(scraped, want) {
			t.Errorf("/metrics mid-run lacks %s:\n%s", want, scraped)
		}
	}
	for _, bad := range []string{"unknown_service", `server_address="` + host + ":"} {
		if strings.Contains(scraped, bad) {
			t.Errorf("/metrics mid-run has %s:\n%s", bad, scraped)
		}
	}
	report := filepath.Join(out, ReportFile)
	if !strings.Contains(stdout, "report: "+report) {
		t.Errorf("stdout does not give the report's path %s:\n%s", report, stdout)
	}
	if b, err := os.ReadFile(report); err != nil || !strings.Contains(string(b), "Content-Security-Policy") {
		t.Errorf("report %s: %v", report, err)
	}
	os.Remove(report)
	if code, stdout, stderr := politeCmd(t, "report", out); code != ExitOK || strings.TrimSpace(stdout) != report {
		t.Errorf("polite report %s: exit %d, stdout %q, stderr %q; want the path", out, code, stdout, stderr)
	}
	if _, err := os.Stat(report); err != nil {
		t.Errorf("polite report wrote no page: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(out, "hosts.csv")); err != nil || !strings.HasPrefix(string(b), "host,requests,") {
		t.Errorf("polite report wrote no hosts.csv beside the page: %v %q", err, b)
	}
	if code, _, stderr := politeCmd(t, "report", t.TempDir()); code != ExitUsage || !strings.Contains(stderr, "no job here") || !strings.Contains(stderr, "DIR ") {
		t.Errorf("polite report of an empty folder: exit %d, stderr %q; want %d naming DIR, no job here", code, stderr, ExitUsage)
	}
	if code, _, stderr := politeCmd(t, "fetch", "--metrics", "nohost:-1", "--out", t.TempDir(), "-"); code != ExitUsage || !strings.Contains(stderr, "--metrics") {
		t.Errorf("--metrics nohost:-1: exit %d, stderr %q; want a usage error naming --metrics", code, stderr)
	}
}

// TestMetricsHostsFlag: fetch and proxy take --metrics-hosts (default 20,
// so a job of ten hosts names each); 0 names none.
func TestMetricsHostsFlag(t *testing.T) {
	got, code, stderr := parse(t, "fetch", "x")
	if code != 0 || got.(*fetchOptions).MetricsHost != 20 {
		t.Errorf("fetch: exit %d (%s), --metrics-hosts %d; want 20 by default", code, stderr, got.(*fetchOptions).MetricsHost)
	}
	got, _, _ = parse(t, "fetch", "--metrics-hosts", "5", "x")
	if n := got.(*fetchOptions).MetricsHost; n != 5 {
		t.Errorf("fetch --metrics-hosts 5: %d", n)
	}
	p, code, stderr := parseProxyArgs(t, "proxy", "--metrics-hosts", "0")
	if code != 0 || p.MetricsHost != 0 {
		t.Fatalf("proxy --metrics-hosts 0: exit %d (%s), %d", code, stderr, p.MetricsHost)
	}
	for n, want := range map[int]int{0: -1, -3: -1, 1: 1, 20: 20} {
		if got := metricsHosts(n); got != want {
			t.Errorf("metricsHosts(%d) = %d, want %d", n, got, want)
		}
	}
}
