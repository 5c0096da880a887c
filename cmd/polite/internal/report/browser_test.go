package report

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// chromium returns the path of Debian's chromium, installing it with apt
// when it is missing and the test runs as root. Outside CI a chromium that
// cannot be had skips the test; under CI=true it fails it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	var why string
	if os.Geteuid() != 0 {
		why = "not root, so it cannot be installed"
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "apt-get", "install", "-y", "-qq", "chromium")
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		out, err := cmd.CombinedOutput()
		if err != nil {
			upd := exec.CommandContext(ctx, "apt-get", "update", "-qq")
			if uerr := upd.Run(); uerr == nil {
				cmd = exec.CommandContext(ctx, "apt-get", "install", "-y", "-qq", "chromium")
				cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
				out, err = cmd.CombinedOutput()
			}
		}
		if p, lerr := exec.LookPath("chromium"); lerr == nil {
			return p
		}
		why = fmt.Sprintf("apt-get install chromium: %v: %s", err, lastLines(string(out), 3))
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("no chromium (%s): under CI=true the browser check must run", why)
	}
	t.Skipf("no chromium (%s): skipping the browser check", why)
	return ""
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], " | ")
}

// TestInBrowser opens a report in headless chromium: the page loads with
// no console error (a CSP violation is one) and makes no network request
// (its net log holds no http, https or ws URL); the screenshot is kept in
// $POLITE_SCREENSHOT when set, to look at.
func TestInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	bin := chromium(t)
	dir := t.TempDir()
	res, ev := synth(5000, 40, func(i int) string { return fmt.Sprintf("host-%02d.example", i) })
	page := filepath.Join(dir, "report.html")
	if err := os.WriteFile(page, []byte(build(t, res, ev)), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "report.png")
	if p := os.Getenv("POLITE_SCREENSHOT"); p != "" {
		shot = p
	}
	console, urls := browse(t, bin, page, shot)
	for _, line := range console {
		t.Errorf("browser console: %s", line)
	}
	st, err := os.Stat(shot)
	if err != nil || st.Size() < 10000 {
		t.Errorf("screenshot %s: %v (%d bytes), want a picture of the page", shot, err, sizeOf(st))
	}
	if len(urls) > 0 {
		t.Errorf("the page made network requests: %v", urls)
	}

	// The checks can fail: a page that loads an image (from loopback) is
	// caught, and so is the CSP refusing one.
	img := `<img src="http://127.0.0.1:9/x.png">`
	bad := filepath.Join(dir, "bad.html")
	os.WriteFile(bad, []byte("<!DOCTYPE html><html><body>"+img+"</body></html>"), 0o644)
	if _, urls := browse(t, bin, bad, filepath.Join(dir, "bad.png")); len(urls) == 0 {
		t.Error("a page loading an image: no request seen in the net log")
	}
	refused := filepath.Join(dir, "refused.html")
	os.WriteFile(refused, []byte(`<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="default-src 'none'"></head><body>`+
		img+"</body></html>"), 0o644)
	if console, _ := browse(t, bin, refused, filepath.Join(dir, "refused.png")); len(console) == 0 {
		t.Error("a CSP refusing an image: nothing seen on the console")
	}
}

// browse loads page in headless chromium, screenshots it to shot, and
// returns the console's complaints and the requests the page made.
func browse(t *testing.T, bin, page, shot string) (console, urls []string) {
	t.Helper()
	dir := t.TempDir()
	netlog := filepath.Join(dir, "net.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-default-apps", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--enable-logging=stderr", "--v=0", "--log-net-log="+netlog, "--net-log-capture-mode=Everything",
		// The browser's own calls home never leave the machine: no name
		// resolves (tests talk only to loopback).
		"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost",
		"--window-size=1150,5200", "--screenshot="+shot, "file://"+page)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "CONSOLE") || strings.Contains(line, "Refused to") ||
			strings.Contains(line, "Content Security Policy") || strings.Contains(line, "Uncaught") {
			console = append(console, line)
		}
	}
	return console, pageRequests(t, netlog)
}

// pageRequests returns the URLs of the requests in a chromium net log that
// a page started (those with an initiator; the browser's own calls home
// have "not an origin"), other than the file the page is.
func pageRequests(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("net log: %v", err)
	}
	var log struct {
		Constants struct {
			LogEventTypes map[string]int `json:"logEventTypes"`
		} `json:"constants"`
		Events []struct {
			Type   int `json:"type"`
			Params struct {
				URL       string `json:"url"`
				Initiator string `json:"initiator"`
			} `json:"params"`
		} `json:"events"`
	}
	if err := json.Unmarshal(raw, &log); err != nil {
		t.Fatalf("net log: %v", err)
	}
	start, ok := log.Constants.LogEventTypes["URL_REQUEST_START_JOB"]
	if !ok {
		t.Fatal("net log: no URL_REQUEST_START_JOB event type")
	}
	var urls []string
	seen := 0
	for _, e := range log.Events {
		if e.Type != start {
			continue
		}
		seen++
		if e.Params.URL != "" && e.Params.Initiator != "not an origin" && !strings.HasPrefix(e.Params.URL, "file://") {
			urls = append(urls, e.Params.URL)
		}
	}
	t.Logf("net log: %d requests started, %d by the page", seen, len(urls))
	return urls
}

func sizeOf(st os.FileInfo) int64 {
	if st == nil {
		return 0
	}
	return st.Size()
}
