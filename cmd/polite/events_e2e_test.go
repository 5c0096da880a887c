package main_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/polite-go/polite/audit"
	"github.com/polite-go/polite/testbed"
)

// TestEventsSurviveKill: the audit log of a job killed with SIGKILL
// mid-run is whole JSON lines, up to a last line cut short that audit
// reads past and says it did; the rerun appends to it on a line of its
// own; and `polite report` builds from the finished job with counts that
// match results.jsonl.
func TestEventsSurviveKill(t *testing.T) {
	t.Parallel()
	fast := startSite(t, testbed.HostConfig{Name: "fast", Latency: 2 * time.Millisecond})
	tight := startSite(t, testbed.HostConfig{Name: "tight", Rate: 20, Burst: 2, RetryAfter: testbed.RetryAfterSeconds,
		Latency: 2 * time.Millisecond})
	const perSite = 150
	list := urls(t, "", perSite, fast, tight)
	out := t.TempDir()
	args := []string{"fetch", "--out", out, "--rate", "200", "--concurrency", "4", "--robots=false", "--progress", "none", list}
	events := filepath.Join(out, "events.jsonl")

	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill once some results are in and the log has been flushed at least
	// once (every second), well before the job's end.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && (lines(t, filepath.Join(out, "results.jsonl")) < 50 || size(events) == 0) {
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Kill() // SIGKILL
	cmd.Wait()
	killedAt := lines(t, filepath.Join(out, "results.jsonl"))
	if killedAt < 50 || killedAt >= 2*perSite {
		t.Fatalf("%d of %d URLs finished at the kill, want some and not all", killedAt, 2*perSite)
	}
	raw, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	whole := raw[:bytes.LastIndexByte(raw, '\n')+1]
	for i, line := range bytes.Split(bytes.TrimSuffix(whole, []byte("\n")), []byte("\n")) {
		if !json.Valid(line) {
			t.Fatalf("events.jsonl line %d after SIGKILL is not JSON: %q", i+1, line)
		}
	}
	n, partial := readLog(t, raw)
	if partial != len(raw)-len(whole) {
		t.Errorf("audit.ReadTail reports a partial last line of %d bytes, the file has %d", partial, len(raw)-len(whole))
	}
	t.Logf("after SIGKILL: %d results, %d events, a partial last line of %d bytes", killedAt, n, partial)

	// A kill can also land in the middle of a write: cut the last line in
	// two, as a torn write would leave it. The reader skips it and says
	// so; the rerun cuts it off and appends on a line of its own.
	torn := len(whole) - 7
	if err := os.Truncate(events, int64(torn)); err != nil {
		t.Fatal(err)
	}
	raw, _ = os.ReadFile(events)
	if _, partial := readLog(t, raw); partial != torn-(bytes.LastIndexByte(raw, '\n')+1) || partial == 0 {
		t.Errorf("a torn last line: ReadTail reports %d bytes, want the %d of the torn line", partial, torn-(bytes.LastIndexByte(raw, '\n')+1))
	}

	if r := polite(t, args...); r.code != 0 {
		t.Fatalf("rerun: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	raw, _ = os.ReadFile(events)
	total, partial := readLog(t, raw)
	if partial != 0 || total <= n {
		t.Errorf("after the rerun: %d events (%d before), a partial line of %d bytes; want more, and none", total, n, partial)
	}
	res := results(t, out, false)
	if len(res) != 2*perSite {
		t.Fatalf("%d results, want %d", len(res), 2*perSite)
	}

	r := polite(t, "report", out)
	page := filepath.Join(out, "report.html")
	if r.code != 0 || strings.TrimSpace(r.stdout) != page {
		t.Fatalf("polite report: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	failed, retried := 0, 0
	for _, x := range res {
		if x.Outcome != "ok" {
			failed++
		}
		if x.Attempts > 1 {
			retried++
		}
	}
	for id, want := range map[string]int{"urls": len(res), "failed": failed} {
		if got := dataN(t, string(html), `id="`+id+`" data-n="`); got != want {
			t.Errorf("report's %s = %d, results.jsonl says %d", id, got, want)
		}
	}
	retries := 0
	for _, m := range regexp.MustCompile(`data-series="retries" data-n="(\d+)"`).FindAllStringSubmatch(string(html), -1) {
		n, _ := strconv.Atoi(m[1])
		retries += n
	}
	if retries != len(res) {
		t.Errorf("report's retries-per-URL histogram holds %d URLs, results.jsonl %d", retries, len(res))
	}
	if requests := dataN(t, string(html), `id="requests" data-n="`); requests < len(res)+retried-killedAt {
		t.Errorf("report counts %d requests: fewer than the %d URLs' first attempts and %d retries less the kill's losses (%d)",
			requests, len(res), retried, killedAt)
	}
	f, err := os.Open(filepath.Join(out, "hosts.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	urlsCSV := 0
	for _, row := range rows[1:] {
		n, _ := strconv.Atoi(row[6])
		urlsCSV += n
	}
	if len(rows) != 3 || urlsCSV != len(res) {
		t.Errorf("hosts.csv: %d rows holding %d URLs, want a header and 2 hosts holding %d", len(rows), urlsCSV, len(res))
	}
	t.Logf("report: %d URLs (%d failed, %d retried), %d events", len(res), failed, retried, total)
}

// readLog reads an audit log with audit.ReadTail: its records and the
// length of a partial last line.
func readLog(t *testing.T, raw []byte) (records, partial int) {
	t.Helper()
	partial, err := audit.ReadTail(bytes.NewReader(raw), func(*audit.Record) error { records++; return nil })
	if err != nil {
		t.Fatalf("audit.ReadTail: %v", err)
	}
	return records, partial
}

func lines(t *testing.T, path string) int {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

func size(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// dataN returns the number after prefix in page (a data-n attribute).
func dataN(t *testing.T, page, prefix string) int {
	t.Helper()
	m := regexp.MustCompile(regexp.QuoteMeta(prefix) + `(\d+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("report has no %s", prefix)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}
