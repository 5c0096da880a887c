package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/polite-go/polite/crawl"
	"github.com/polite-go/polite/testbed"
)

// hangGuard bounds a hostile job: one still running after it is cut short
// (and exits 1, interrupted), so a regression fails instead of hanging.
const hangGuard = 20 * time.Second

// runHostile runs `polite fetch argv... -` with the list on stdin, against
// the loopback server the list names, and returns the exit status, the
// results by URL and what stderr said.
func runHostile(t *testing.T, out, list string, argv ...string) (code int, res map[string]crawl.Result, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	var stdout, errb bytes.Buffer
	args := append([]string{"fetch", "--progress", "none", "--out", out}, append(argv, "-")...)
	code = Main(ctx, args, strings.NewReader(list), &stdout, &errb)
	res = map[string]crawl.Result{}
	f, err := os.Open(filepath.Join(out, crawl.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r crawl.Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		res[r.URL] = r
	}
	return code, res, errb.String()
}

// urls lists base+path for each path, one a line.
func urls(base string, paths ...string) string {
	var b strings.Builder
	for _, p := range paths {
		b.WriteString(base + p + "\n")
	}
	return b.String()
}

// A host that answers 503 forever kept a 3-URL job with --retries 3
// --max-delay 1s alive for minutes: the breaker's open delay doubled to 5
// minutes and the adaptive rate fell to one request every 10 s (issue 17,
// defect 1). Every wait polite chooses is now capped by --max-delay (here
// 50 ms, so the job ends in a fraction of a second; before, it was cut
// short by hangGuard).
func TestDeadHostJobEnds(t *testing.T) {
	h := &testbed.Hostile{Status: 503}
	srv := httptest.NewServer(h)
	defer srv.Close()
	code, res, stderr := runHostile(t, t.TempDir(), urls(srv.URL, "/a", "/b", "/c"), "--retries", "3", "--max-delay", "50ms", "--rate", "100")
	if code != ExitFailures {
		t.Errorf("exit %d, want %d; stderr: %s", code, ExitFailures, stderr)
	}
	for _, p := range []string{"/a", "/b", "/c"} {
		if n := h.Count(p); n != 4 {
			t.Errorf("%s was sent %d times, want 4", p, n)
		}
		r := res[srv.URL+p]
		if r.Outcome != crawl.Throttled || r.Attempts != 4 {
			t.Errorf("%s: outcome %q after %d attempts, want throttled after 4", p, r.Outcome, r.Attempts)
		}
	}
}

// A wait the host names beyond --max-retry-after finished the first URL
// only; the host's other URLs slept in the scheduler for the whole hour,
// and a rerun hit the host again (issue 17, defect 1). Now they end at once,
// throttled with the instant, and the pause is kept in state.db.
func TestLongServerPauseEndsHostsURLs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		header http.Header
	}{
		{"Retry-After 3600", 429, http.Header{"Retry-After": {"3600"}}},
		{"X-RateLimit reset 3600", 200, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"3600"}}},
		{"epoch reset against a Date ten years off", 200, http.Header{"X-Ratelimit-Remaining": {"0"},
			"X-Ratelimit-Reset": {strconv.FormatInt(time.Now().Unix(), 10)},
			"Date":              {time.Now().AddDate(-10, 0, 0).UTC().Format(http.TimeFormat)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &testbed.Hostile{Status: tc.status, Header: tc.header}
			srv := httptest.NewServer(h)
			defer srv.Close()
			out := t.TempDir()
			flags := []string{"--rate", "100", "--concurrency", "1", "--max-retry-after", "1m"}
			code, res, stderr := runHostile(t, out, urls(srv.URL, "/a", "/b", "/c"), flags...)
			if code != ExitFailures {
				t.Fatalf("exit %d, want %d; stderr: %s", code, ExitFailures, stderr)
			}
			if n := h.Count(""); n != 1 {
				t.Errorf("host got %d requests, want 1", n)
			}
			throttled := 0
			for u, r := range res {
				if r.Outcome == crawl.Throttled {
					throttled++
					if !strings.Contains(r.Error, "paused until 2") {
						t.Errorf("%s: error %q names no instant", u, r.Error)
					}
				}
			}
			if throttled < 2 {
				t.Errorf("%d URLs throttled, want the 2 or 3 not answered ok: %v", throttled, res)
			}
			// A rerun with a new URL of the host leaves the host alone.
			code, res, _ = runHostile(t, out, urls(srv.URL, "/a", "/b", "/c", "/d"), flags...)
			if n := h.Count(""); n != 1 {
				t.Errorf("after the rerun the host got %d requests, want 1", n)
			}
			if r := res[srv.URL+"/d"]; code != ExitFailures || r.Outcome != crawl.Throttled || r.Attempts != 0 {
				t.Errorf("rerun: exit %d, /d %q after %d attempts (%s); want 4, throttled unsent", code, r.Outcome, r.Attempts, r.Error)
			}
		})
	}
}

// A dead host with many URLs kept a job alive for days: each URL spent its
// own retries, one breaker probe at a time. A host whose breaker has not
// closed for --host-give-up now has its remaining URLs finished with the
// reason.
func TestHostGiveUp(t *testing.T) {
	h := &testbed.Hostile{Status: 503}
	srv := httptest.NewServer(h)
	defer srv.Close()
	var paths []string
	for i := range 20 {
		paths = append(paths, "/"+strconv.Itoa(i))
	}
	code, res, stderr := runHostile(t, t.TempDir(), urls(srv.URL, paths...),
		"--retries", "1000", "--max-delay", "50ms", "--rate", "100", "--host-give-up", "300ms")
	if code != ExitFailures {
		t.Fatalf("exit %d, want %d; stderr: %s", code, ExitFailures, stderr)
	}
	given := 0
	for _, r := range res {
		if r.Outcome != crawl.Throttled {
			t.Errorf("%s: outcome %q, want throttled", r.URL, r.Outcome)
		}
		if strings.Contains(r.Error, "host given up") && strings.Contains(r.Error, "503") {
			given++
		}
	}
	if len(res) != 20 || given == 0 {
		t.Errorf("%d results, %d given up with the reason; want 20, some", len(res), given)
	}
}

// A robots.txt that never answers held its fetch for the robots cache's
// own minute, not --timeout, and with it one of the --workers requests in
// flight: under --workers 1 a healthy host's robots.txt (a 404 at once)
// waited behind it until its URLs ended robots_unreachable, never sent
// (found by polite fetch --workers 1 --timeout 1s --retries 3: all three
// URLs of the healthy host lost in 16 s). A robots.txt is a request:
// --timeout bounds it.
func TestHangingRobotsDoesNotStarveOtherHosts(t *testing.T) {
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer hang.Close()
	fine := &testbed.Hostile{}
	srv := httptest.NewServer(fine)
	defer srv.Close()
	list := urls(hang.URL, "/a") + urls(srv.URL, "/b", "/c", "/d")
	code, res, stderr := runHostile(t, t.TempDir(), list,
		"--workers", "1", "--timeout", "1s", "--retries", "3", "--max-delay", "100ms", "--rate", "100")
	if code != ExitFailures {
		t.Errorf("exit %d, want %d; stderr: %s", code, ExitFailures, stderr)
	}
	for _, p := range []string{"/b", "/c", "/d"} {
		if r := res[srv.URL+p]; r.Outcome != crawl.OK {
			t.Errorf("%s: %s %q, want ok: its host's robots.txt is a 404", p, r.Outcome, r.Error)
		}
	}
	if r := res[hang.URL+"/a"]; r.Outcome != crawl.RobotsUnreachable {
		t.Errorf("/a: %s %q, want robots_unreachable", r.Outcome, r.Error)
	}
}

// A robots.txt (or anything else) redirecting to an internal address was
// followed (issue 17, defect 6). By default a fetch connects only to public
// addresses and to the loopback ports its list names; --allow-private lifts
// that.
func TestPrivateDestinationsRefused(t *testing.T) {
	inner := &testbed.Hostile{Body: "internal"}
	isrv := httptest.NewServer(inner)
	defer isrv.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.Redirect(w, r, isrv.URL+"/robots.txt", http.StatusMovedPermanently)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	list := urls(srv.URL, "/a")
	code, res, stderr := runHostile(t, t.TempDir(), list, "--rate", "100", "--max-delay", "20ms", "--retries", "1")
	if n := inner.Count("/robots.txt"); n != 0 {
		t.Errorf("the unlisted loopback port got %d requests", n)
	}
	if r := res[srv.URL+"/a"]; code != ExitFailures || r.Outcome != crawl.RobotsUnreachable {
		t.Errorf("exit %d, /a %q (%s), want 4 and robots_unreachable; stderr: %s", code, r.Outcome, r.Error, stderr)
	}
	runHostile(t, t.TempDir(), list, "--rate", "100", "--max-delay", "20ms", "--retries", "1", "--allow-private")
	if n := inner.Count("/robots.txt"); n != 1 {
		t.Errorf("with --allow-private the redirect target got %d requests, want 1", n)
	}
}

func TestLoopbackPortsTap(t *testing.T) {
	list := "http://127.0.0.1:8080/a\n" + strings.Repeat("x", maxTapLine+10) + "\nhttp://localhost/b\n" +
		"http://example.com:9090/\nhttps://[::1]\nhttp://10.0.0.1:7070/\nhttp://[::ffff:127.0.0.1]:6060/"
	var l loopbackPorts
	b, err := io.ReadAll(l.tap(iotest.OneByteReader(strings.NewReader(list))))
	if err != nil || string(b) != list {
		t.Fatalf("the tap changed the list (%v)", err)
	}
	for p, want := range map[uint16]bool{8080: true, 80: true, 443: true, 6060: true, 9090: false, 7070: false} {
		if l.has(p) != want {
			t.Errorf("port %d: %v, want %v", p, l.has(p), want)
		}
	}
}

// evilReason is a reason phrase that clears the screen, sets the title,
// writes the clipboard (OSC 52), starts a C1 control sequence and reverses
// the text after it, in a terminal that is given it raw.
const evilReason = "Unavailable \x1b[2J\x1b]0;pwned\a\x1b]52;c;cHduZWQ=\a\u009b31m\u202eevil"

// noControls fails t when out holds a control sequence of evilReason or
// of the list's invalid line.
func noControls(t *testing.T, what, out string) {
	t.Helper()
	for _, bad := range []string{"\x1b[2J", "\x1b]", "\a", "\u009b", "\u202e", "\x1b[31m"} {
		if strings.Contains(out, bad) {
			t.Errorf("%s writes %q raw:\n%s", what, bad, out)
		}
	}
}

// A server's reason phrase was printed raw by fetch's closing summary and
// by status, and status printed an invalid list line raw (issue 29, item
// 5): control characters are written as escapes, the rest as it came.
func TestServerTextQuoted(t *testing.T) {
	srv := httptest.NewServer(&testbed.Hostile{Status: 503, Reason: evilReason})
	defer srv.Close()
	base := srv.URL
	out := t.TempDir()
	list := base + "/a\nnot-a-url\x1b[31m\x1b]0;pwned\a\n"
	code, stdout, stderr := politeIn(t, list, "fetch", "--progress", "none", "--out", out,
		"--retries", "1", "--max-delay", "50ms", "--rate", "100", "-")
	if code != ExitFailures {
		t.Errorf("fetch: exit %d, want %d; stderr: %s", code, ExitFailures, stderr)
	}
	noControls(t, "fetch's stdout", stdout)
	noControls(t, "fetch's stderr", stderr)
	if want := `503 Unavailable \x1b[2J\x1b]0;pwned\a`; !strings.Contains(stdout, want) {
		t.Errorf("fetch's summary does not say %q:\n%s", want, stdout)
	}

	code, stdout, stderr = politeCmd(t, "status", out)
	if code != ExitOK {
		t.Fatalf("status: exit %d; stderr: %s", code, stderr)
	}
	noControls(t, "status", stdout)
	for _, want := range []string{`\x1b]52;c;cHduZWQ=\a\u009b31m\u202eevil`, `not-a-url\x1b[31m\x1b]0;pwned\a`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("status does not say %q:\n%s", want, stdout)
		}
	}
}

// A fetch whose report could not be written exited 0, saying so only in a
// line of stderr (issue 29, item 6): the summary says the report was not
// written and why, and the exit status is 1 (the job itself is whole, and
// `polite report DIR` writes the report once the cause is gone).
func TestReportFailureIsAnError(t *testing.T) {
	srv := httptest.NewServer(&testbed.Hostile{Body: "ok"})
	defer srv.Close()
	out := t.TempDir()
	// A directory where the page goes: the rename that writes it fails.
	if err := os.MkdirAll(filepath.Join(out, ReportFile, "in-the-way"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := politeIn(t, urls(srv.URL, "/a"), "fetch", "--progress", "none", "--out", out, "-")
	if code != ExitFatal {
		t.Errorf("exit %d, want %d; stdout:\n%s\nstderr: %s", code, ExitFatal, stdout, stderr)
	}
	if !strings.Contains(stdout, "report: not written:") {
		t.Errorf("the summary does not say the report was not written:\n%s", stdout)
	}
	if !strings.Contains(stderr, "polite report "+out) {
		t.Errorf("stderr does not say how to write the report:\n%s", stderr)
	}
	_, res, _ := runHostile(t, out, urls(srv.URL, "/a"))
	if r := res[srv.URL+"/a"]; r.Outcome != crawl.OK {
		t.Errorf("the job's result: %+v, want ok", r)
	}
}
