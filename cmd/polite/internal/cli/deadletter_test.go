package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/polite-go/polite/crawl"
	"github.com/polite-go/polite/testbed"
)

// politeCmd runs the command in-process with an empty stdin and returns
// its exit status, stdout and stderr.
func politeCmd(t *testing.T, argv ...string) (int, string, string) {
	t.Helper()
	return politeIn(t, "", argv...)
}

// politeIn runs the command in-process with stdin.
func politeIn(t *testing.T, stdin string, argv ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := Main(ctx, argv, strings.NewReader(stdin), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// Dead letters could be neither inspected nor retried (issue 18, item 3):
// `polite status` lists them with their reasons and each host's state,
// `polite retry` re-queues them durably, and the next fetch on the same
// --out fetches them again, results.jsonl keeping one line per URL.
func TestStatusAndRetry(t *testing.T) {
	var healthy atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/robots.txt":
			http.NotFound(w, r)
		case r.URL.Path == "/gone":
			http.NotFound(w, r)
		case healthy.Load() || r.URL.Path == "/fine":
			w.Write([]byte("ok"))
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	out := t.TempDir()
	list := urls(srv.URL, "/fine", "/gone", "/busy")
	flags := []string{"--retries", "0", "--rate", "100", "--concurrency", "1"}
	code, res, stderr := runHostile(t, out, list, flags...)
	if code != ExitFailures || res[srv.URL+"/busy"].Outcome != crawl.Throttled {
		t.Fatalf("first run: exit %d, /busy %q; stderr: %s", code, res[srv.URL+"/busy"].Outcome, stderr)
	}

	code, stdout, stderr := politeCmd(t, "status", out)
	if code != ExitOK {
		t.Fatalf("status: exit %d; stderr: %s", code, stderr)
	}
	for _, want := range []string{"3 URLs, 3 finished, 0 pending", "throttled", "http_error", "dead letters (2)",
		srv.URL + "/busy", "503 Service Unavailable", "404 Not Found", strings.TrimPrefix(srv.URL, "http://")} {
		if !strings.Contains(stdout, want) {
			t.Errorf("status does not say %q:\n%s", want, stdout)
		}
	}

	code, stdout, stderr = politeCmd(t, "retry", out, "--outcome", "throttled")
	if code != ExitOK || !strings.Contains(stdout, "1 URLs re-queued") {
		t.Fatalf("retry: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, stdout, _ = politeCmd(t, "status", out); !strings.Contains(stdout, "1 pending") || !strings.Contains(stdout, "re-queued (was throttled)") {
		t.Errorf("status after retry: exit %d:\n%s", code, stdout)
	}
	healthy.Store(true)
	code, res, stderr = runHostile(t, out, list, flags...)
	if code != ExitFailures { // /gone is still 404
		t.Errorf("second run: exit %d, want %d; stderr: %s", code, ExitFailures, stderr)
	}
	if r := res[srv.URL+"/busy"]; r.Outcome != crawl.OK || r.Attempts != 1 {
		t.Errorf("/busy after retry: outcome %q after %d attempts, want ok after 1", r.Outcome, r.Attempts)
	}
	data, err := os.ReadFile(filepath.Join(out, crawl.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n != 3 {
		t.Errorf("results.jsonl has %d lines, want 3 (one per URL):\n%s", n, data)
	}
}

func TestRetryUsage(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		code int
		want string
	}{
		{[]string{"retry", t.TempDir(), "--outcome", "throttled,bogus"}, ExitUsage, `"bogus"`},
		{[]string{"retry", t.TempDir(), "--outcome", "ok"}, ExitUsage, `"ok"`},
		// The user's to fix, naming DIR (issue 33, item 12): exit 2.
		{[]string{"retry", filepath.Join(t.TempDir(), "nojob")}, ExitUsage, "DIR "},
		{[]string{"status", filepath.Join(t.TempDir(), "nojob")}, ExitUsage, "no job here"},
	} {
		code, _, stderr := politeCmd(t, tc.argv...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("polite %v: exit %d, stderr %q; want %d naming %s", tc.argv, code, stderr, tc.code, tc.want)
		}
	}
}

// A different URL list on an existing --out was merged into the job
// silently (issue 18, item 3): now it is said out loud.
func TestOtherListOnSameOutSaysSo(t *testing.T) {
	h := &testbed.Hostile{}
	srv := httptest.NewServer(h)
	defer srv.Close()
	out := t.TempDir()
	if code, _, stderr := runHostile(t, out, urls(srv.URL, "/a", "/b"), "--rate", "100"); code != ExitOK || stderr != "" {
		t.Fatalf("first run: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := runHostile(t, out, urls(srv.URL, "/a", "/b"), "--rate", "100"); code != ExitOK || stderr != "" {
		t.Errorf("same list again: exit %d, stderr %q, want 0 and silence", code, stderr)
	}
	code, res, stderr := runHostile(t, out, urls(srv.URL, "/c"), "--rate", "100")
	if code != ExitOK || !strings.Contains(stderr, "already holds a job of 2 URLs; this list adds 1 new") {
		t.Errorf("other list: exit %d, stderr %q", code, stderr)
	}
	if len(res) != 3 {
		t.Errorf("results.jsonl has %d URLs, want 3", len(res))
	}
}

// The pause a host named beyond --max-retry-after is kept in state.db;
// `polite status` says until when and why.
func TestStatusShowsHostPause(t *testing.T) {
	h := &testbed.Hostile{Status: 429, Header: http.Header{"Retry-After": {"3600"}}}
	srv := httptest.NewServer(h)
	defer srv.Close()
	out := t.TempDir()
	if code, _, stderr := runHostile(t, out, urls(srv.URL, "/a", "/b"), "--rate", "100", "--max-retry-after", "1m"); code != ExitFailures {
		t.Fatalf("exit %d; stderr %s", code, stderr)
	}
	code, stdout, stderr := politeCmd(t, "status", out)
	if code != ExitOK || !strings.Contains(stdout, "(retry-after)") || !strings.Contains(stdout, "dead letters (2)") {
		t.Errorf("status: exit %d, stderr %q; want the host's pause and its reason:\n%s", code, stderr, stdout)
	}
	// Re-queued, its URLs would end throttled again at once: retry says so.
	code, stdout, stderr = politeCmd(t, "retry", out)
	if code != ExitOK || !strings.Contains(stdout, "2 URLs re-queued") || !strings.Contains(stdout, "asked for a pause until") {
		t.Errorf("retry: exit %d, stderr %q; want a note on the pause:\n%s", code, stderr, stdout)
	}
}

// status lists the hosts that matter first and not all of them: 3,008
// lines in lexical order for 3,000 hosts hid the troubled few (issue 33,
// item 7); --json gives programs every host, in the same order.
func TestStatusMostTroubledFirst(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.Host, "zz-bad") && r.URL.Path != "/robots.txt" {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
	var list strings.Builder
	for i := range 25 {
		fmt.Fprintf(&list, "http://a%02d.test:%s/p\n", i, port)
	}
	fmt.Fprintf(&list, "http://zz-bad.test:%s/p\n", port)
	out := t.TempDir()
	code, _, stderr := runHostile(t, out, list.String(), "--retries", "0", "--rate", "100", "--connect-to", "::127.0.0.1:"+port)
	if code != ExitFailures {
		t.Fatalf("fetch: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := politeCmd(t, "status", out)
	if code != ExitOK {
		t.Fatalf("status: exit %d: %s", code, stderr)
	}
	hosts := stdout[strings.Index(stdout, "hosts ("):]
	lines := strings.Split(strings.TrimSpace(hosts), "\n")
	if !strings.HasPrefix(lines[0], "hosts (20 of 26") || !strings.Contains(lines[2], "zz-bad.test") || !strings.Contains(hosts, "... and 6 more hosts") {
		t.Errorf("status's hosts:\n%s\nwant 20 of 26, zz-bad.test first, 6 more", hosts)
	}
	code, stdout, stderr = politeCmd(t, "status", "--json", out)
	var st statusJSON
	if err := json.Unmarshal([]byte(stdout), &st); code != ExitOK || err != nil {
		t.Fatalf("status --json: exit %d, %v: %s%s", code, err, stdout, stderr)
	}
	if len(st.Hosts) != 26 || !strings.HasPrefix(st.Hosts[0].Host, "zz-bad.test") || st.Total != 26 || st.Outcomes["throttled"] != 1 {
		t.Errorf("status --json: %d hosts, first %+v, total %d, outcomes %v", len(st.Hosts), st.Hosts[0], st.Total, st.Outcomes)
	}
	if code, _, stderr := politeCmd(t, "status", "--hosts", "-1", out); code != ExitUsage || !strings.Contains(stderr, "--hosts -1") {
		t.Errorf("--hosts -1: exit %d: %s", code, stderr)
	}
}
