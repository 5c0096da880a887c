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

// TestFetchMetrics: --metrics serves the Transport's metrics for
// Prometheus while the job runs (scraped here by the job's own server
// mid-run), a bad address is a usage error, and fetch ends by writing the
// report and printing its path.
func TestFetchMetrics(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
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
	for _, want := range []string{"http_client_request_duration_seconds_bucket", "http_client_active_requests",
		`server_address="_other"`, "polite_request_duration_seconds_bucket"} {
		if !strings.Contains(scraped, want) {
			t.Errorf("/metrics mid-run lacks %s:\n%s", want, scraped)
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
