package main_test

// End-to-end tests: the real polite binary against testbed hosts served by
// the test on loopback, each on its own 127.0.0.1 port. The hosts' own
// records are the truth the tests check the client against.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/polite-go/polite/internal/redistest"
	"github.com/polite-go/polite/testbed"
)

var bin string // the polite binary, built once by TestMain

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "polite-e2e-")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "polite")
	if b := os.Getenv("POLITE_E2E_BIN"); b != "" {
		bin = b // another build (an older one, to see a test fail without a fix)
	} else if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	watchStalls()
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// hit is one request a site received.
type hit struct {
	at     time.Time
	path   string
	status int
}

// site is a testbed host on its own loopback port, recording every request.
type site struct {
	host *testbed.Host
	url  string

	mu   sync.Mutex // guards hits
	hits []hit
}

func startSite(t *testing.T, cfg testbed.HostConfig) *site {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &site{host: testbed.NewHost(cfg), url: "http://" + ln.Addr().String()}
	srv := &http.Server{Handler: s}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(c int) {
	if w.status == 0 {
		w.status = c
	}
	w.ResponseWriter.WriteHeader(c)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = 200
	}
	return w.ResponseWriter.Write(p)
}

func (s *site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	s.host.ServeHTTP(sw, r)
	s.mu.Lock()
	s.hits = append(s.hits, hit{at: at, path: r.URL.Path, status: sw.status})
	s.mu.Unlock()
}

func (s *site) log() []hit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]hit(nil), s.hits...)
}

// counts returns how many times each path was requested.
func (s *site) counts() map[string]int {
	m := map[string]int{}
	for _, h := range s.log() {
		m[h.path]++
	}
	return m
}

// urls writes a list of n pages of each site, interleaved, and returns its
// path.
func urls(t *testing.T, extra string, n int, sites ...*site) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(extra)
	for i := range n {
		for _, s := range sites {
			fmt.Fprintf(&b, "%s/page/%d\n", s.url, i)
		}
	}
	path := filepath.Join(t.TempDir(), "urls.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

type run struct {
	code           int
	stdout, stderr string
}

// polite runs the binary to its end (at most two minutes).
func polite(t *testing.T, args ...string) run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := run{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("polite %q: %v", args, err)
	}
	return r
}

type result struct {
	URL      string `json:"url"`
	Host     string `json:"host"`
	Outcome  string `json:"outcome"`
	Status   int    `json:"status"`
	Attempts int    `json:"attempts"`
	Bytes    int64  `json:"bytes"`
	SHA256   string `json:"sha256"`
	Error    string `json:"error"`
	Started  string `json:"started"`
	Finished string `json:"finished"`
}

// results reads DIR/results.jsonl; a last line cut short (by a kill) is
// skipped when partial is set.
func results(t *testing.T, dir string, partial bool) []result {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []result
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			if partial {
				continue
			}
			t.Fatalf("results.jsonl line %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

// TestLimitsHold: the hosts never see more requests in flight than
// --concurrency, nor more in any span T than --burst + --rate × T.
func TestLimitsHold(t *testing.T) {
	t.Parallel()
	const rate, burst, conc = 20.0, 2, 3
	a := startSite(t, testbed.HostConfig{Name: "a", Latency: 60 * time.Millisecond})
	b := startSite(t, testbed.HostConfig{Name: "b", Latency: 30 * time.Millisecond, Jitter: 0.5})
	list := urls(t, "", 60, a, b)
	out := t.TempDir()
	r := polite(t, "fetch", "--out", out, "--rate", fmt.Sprint(rate), "--burst", fmt.Sprint(burst),
		"--concurrency", fmt.Sprint(conc), "--adaptive=false", "--progress", "none", list)
	if r.code != 0 {
		t.Fatalf("exit %d, want 0\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, s := range []*site{a, b} {
		st := s.host.Stats()
		if st.MaxInFlight > conc {
			t.Errorf("%s: %d in flight at once, want at most %d", s.url, st.MaxInFlight, conc)
		}
		if st.Admitted != 61 { // 60 pages and robots.txt
			t.Errorf("%s: admitted %d requests, want 61", s.url, st.Admitted)
		}
		checkRate(t, s.url, s.log(), rate, burst)
	}
	if n := len(results(t, out, false)); n != 120 {
		t.Errorf("%d results, want 120", n)
	}
}

// sendSlack is how much closer than their grants a host's arrivals may
// come: a grant's send is late by a varying delay (a timer, a goroutine
// waiting for a CPU, a dial), so arrivals within a span can have been
// granted within a span this much longer. 25 ms, and twice the worst stall
// the test binary saw meanwhile (stall_test.go). It sorts hits by arrival.
func sendSlack(hits []hit) time.Duration {
	sort.Slice(hits, func(i, j int) bool { return hits[i].at.Before(hits[j].at) })
	return 25*time.Millisecond + 2*worstStall(hits[0].at.Add(-time.Second), hits[len(hits)-1].at)
}

// checkRate fails if some span of the arrivals holds more than burst +
// rate × span requests, with 25 ms of slack for scheduling, plus twice the
// worst scheduling delay the machine showed meanwhile (the sender's and the
// receiver's; see watchStalls).
func checkRate(t *testing.T, name string, hits []hit, rate float64, burst int) {
	t.Helper()
	if len(hits) == 0 {
		return
	}
	slack := sendSlack(hits) // and hits sorted
	t.Logf("%s: %v of slack for scheduling delays", name, slack)
	for i := range hits {
		for j := i + burst; j < len(hits); j++ {
			span := hits[j].at.Sub(hits[i].at) + slack
			if allowed := float64(burst) + rate*span.Seconds(); float64(j-i+1) > allowed {
				t.Errorf("%s: %d requests within %v (%v of it slack for scheduling delays), want at most %.1f",
					name, j-i+1, span, slack, allowed)
				return
			}
		}
	}
}

// TestRetryAfterPausesOneHost: a 429 with Retry-After stops requests to
// that host for the time it names, while another host goes on.
func TestRetryAfterPausesOneHost(t *testing.T) {
	t.Parallel()
	slow := startSite(t, testbed.HostConfig{Name: "slow", Rate: 4, Burst: 1, RetryAfter: testbed.RetryAfterSeconds})
	fast := startSite(t, testbed.HostConfig{Name: "fast", Latency: 10 * time.Millisecond})
	var b strings.Builder
	for i := range 150 {
		fmt.Fprintf(&b, "%s/page/%d\n", fast.url, i)
		if i < 16 {
			fmt.Fprintf(&b, "%s/page/%d\n", slow.url, i)
		}
	}
	list := filepath.Join(t.TempDir(), "urls.txt")
	os.WriteFile(list, []byte(b.String()), 0o644)
	out := t.TempDir()
	r := polite(t, "fetch", "--out", out, "--rate", "30", "--burst", "3", "--concurrency", "2",
		"--adaptive=false", "--robots=false", "--retries", "10", "--progress", "none", list)
	if r.code != 0 {
		t.Fatalf("exit %d, want 0\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	hits := slow.log()
	var pauses [][2]time.Time
	for _, h := range hits {
		if h.status == http.StatusTooManyRequests {
			// The testbed's Retry-After is honest and at least 1 s.
			pauses = append(pauses, [2]time.Time{h.at.Add(20 * time.Millisecond), h.at.Add(time.Second - 20*time.Millisecond)})
		}
	}
	if len(pauses) == 0 {
		t.Fatal("the slow host never answered 429: the test proves nothing")
	}
	fastDuring := 0
	for _, p := range pauses {
		for _, h := range hits {
			if h.at.After(p[0]) && h.at.Before(p[1]) {
				t.Errorf("request to the paused host at +%v after its 429 asked for 1 s", h.at.Sub(p[0]))
			}
		}
		for _, h := range fast.log() {
			if h.at.After(p[0]) && h.at.Before(p[1]) {
				fastDuring++
			}
		}
	}
	if fastDuring == 0 {
		t.Error("the other host got no request while the slow one was paused")
	}
	if st := fast.host.Stats(); st.Rejected != 0 {
		t.Errorf("fast host rejected %d requests", st.Rejected)
	}
	for _, res := range results(t, out, false) {
		if res.Outcome != "ok" {
			t.Errorf("%s: %s %s", res.URL, res.Outcome, res.Error)
		}
	}
}

// TestKillAndResume: SIGKILL at random moments, then a run to the end:
// results.jsonl holds every URL once, and no URL recorded as finished
// before a kill is fetched again.
func TestKillAndResume(t *testing.T) {
	t.Parallel()
	var sites []*site
	for i := range 4 {
		sites = append(sites, startSite(t, testbed.HostConfig{Name: fmt.Sprint(i), Latency: 5 * time.Millisecond, Jitter: 0.5}))
	}
	const perSite = 800
	list := urls(t, "", perSite, sites...)
	out := t.TempDir()
	// Small WARC files, so that kills land around rotations too.
	args := []string{"fetch", "--out", out, "--rate", "100", "--burst", "5", "--concurrency", "4",
		"--adaptive=false", "--robots=false", "--warc-max-size", "64KB", "--progress", "none", list}
	// URLs in results.jsonl after some kill, with how often the host had
	// served them by then: they must never be fetched again.
	finished := map[string]int{}
	served := func() map[string]int {
		m := map[string]int{}
		for _, s := range sites {
			for p, n := range s.counts() {
				m[s.url+p] = n
			}
		}
		return m
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for kill := range 4 {
		cmd := exec.Command(bin, args...)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(300+rng.IntN(600)) * time.Millisecond)
		cmd.Process.Kill() // SIGKILL
		cmd.Wait()
		now := served()
		for _, r := range results(t, out, true) {
			if _, ok := finished[r.URL]; !ok {
				finished[r.URL] = now[r.URL]
			}
		}
		t.Logf("kill %d: %d URLs finished so far", kill+1, len(finished))
	}
	if len(finished) == 0 || len(finished) == perSite*len(sites) {
		t.Fatalf("%d of %d URLs finished at the kills: pick other delays", len(finished), perSite*len(sites))
	}
	r := polite(t, args...)
	if r.code != 0 {
		t.Fatalf("exit %d, want 0\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	res := results(t, out, false)
	seen := map[string]int{}
	for _, x := range res {
		seen[x.URL]++
	}
	if len(res) != perSite*len(sites) || len(seen) != len(res) {
		t.Errorf("%d lines for %d distinct URLs, want %d of each", len(res), len(seen), perSite*len(sites))
	}
	refetched := 0
	counts := served()
	for _, s := range sites {
		for i := range perSite {
			u := fmt.Sprintf("%s/page/%d", s.url, i)
			n := counts[u]
			before, wasFinished := finished[u]
			switch {
			case seen[u] != 1:
				t.Errorf("%s: %d lines", u, seen[u])
			case n == 0:
				t.Errorf("%s: never fetched", u)
			case wasFinished && n != before:
				t.Errorf("%s: finished before a kill, then fetched again (%d times in all, %d then)", u, n, before)
			case n > 1:
				refetched++ // in flight (or not yet committed) at a kill
			}
		}
	}
	t.Logf("%d URLs fetched again: in flight at a kill", refetched)
	// The WARC files, cut back at each resume and rotated meanwhile, hold
	// each URL's response exactly once, where results.jsonl says.
	inWARC := indexed(t, out)
	for u := range seen {
		if inWARC[u] != 1 {
			t.Errorf("%s: %d response records in the WARC files", u, inWARC[u])
		}
	}
	if len(inWARC) != len(seen) {
		t.Errorf("%d URLs in the WARC files, %d in results.jsonl", len(inWARC), len(seen))
	}
}

// TestInterruptAndExitCodes: SIGTERM stops the job (exit 1) and a rerun
// finishes it; bad lines become invalid_url; exit 4 when some URLs failed,
// 2 for bad usage.
func TestInterruptAndExitCodes(t *testing.T) {
	t.Parallel()
	s := startSite(t, testbed.HostConfig{Name: "s", Latency: 20 * time.Millisecond})
	long := "http://example.com/" + strings.Repeat("a", 9000)
	bad := "# comment\n\nnot a url\nftp://example.com/x\nhttp:///nohost\n" + long + "\n" + s.url + "/status/404\n"
	list := urls(t, bad, 100, s)
	out := t.TempDir()
	args := []string{"fetch", "--out", out, "--rate", "20", "--adaptive=false", "--progress", "log", list}

	cmd := exec.Command(bin, args...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(errb.String(), "interrupted") {
		t.Errorf("after SIGTERM: %v, stderr:\n%s", err, errb.String())
	}
	if n := len(results(t, out, false)); n == 0 || n >= 105 {
		t.Errorf("after SIGTERM: %d results, want some but not all", n)
	}

	r := polite(t, args...)
	if r.code != 4 {
		t.Errorf("rerun: exit %d, want 4\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	res := results(t, out, false)
	if len(res) != 105 {
		t.Errorf("%d results, want 105", len(res))
	}
	want := map[string]string{
		"not a url":           "invalid_url",
		"ftp://example.com/x": "invalid_url",
		"http:///nohost":      "invalid_url",
		s.url + "/status/404": "http_error",
		s.url + "/page/0":     "ok",
		s.url + "/page/99":    "ok",
	}
	for _, x := range res {
		if strings.HasPrefix(x.URL, "http://example.com/aaa") {
			x.URL = "long"
			if x.Outcome != "invalid_url" || !strings.Contains(x.Error, "longer than") {
				t.Errorf("long line: %s %q", x.Outcome, x.Error)
			}
		}
		if w, ok := want[x.URL]; ok {
			if x.Outcome != w {
				t.Errorf("%s: %s (%s), want %s", x.URL, x.Outcome, x.Error, w)
			}
			delete(want, x.URL)
		}
		if x.Outcome == "invalid_url" && (x.Error == "" || x.Attempts != 0) {
			t.Errorf("%s: invalid_url with error %q after %d attempts", x.URL, x.Error, x.Attempts)
		}
		if x.Outcome == "ok" && (x.Status != 200 || x.Bytes == 0 || len(x.SHA256) != 64 || x.Error != "" || x.Started == "" || x.Finished == "") {
			t.Errorf("ok result %+v", x)
		}
	}
	for u := range want {
		t.Errorf("no result for %s", u)
	}
	if c := s.counts(); c["/status/404"] != 1 {
		t.Errorf("404 page fetched %d times, want 1 (no retry)", c["/status/404"])
	}

	for _, argv := range [][]string{{"fetch"}, {"fetch", "--rate", "x", list}, {"fetch", "--redis", "http://127.0.0.1:1", list}} {
		if r := polite(t, argv...); r.code != 2 {
			t.Errorf("%q: exit %d, want 2 (%s)", argv, r.code, r.stderr)
		}
	}
	if r := polite(t, "fetch", "--out", t.TempDir(), "--redis", "redis://127.0.0.1:1/0", list); r.code != 1 || strings.Contains(r.stderr, "pool.go") {
		t.Errorf("unreachable --redis: exit %d, want 1 and polite's own message (%s)", r.code, r.stderr)
	}
	if r := polite(t, "fetch", "--out", "/proc/polite-cannot-be-here", list); r.code != 1 {
		t.Errorf("unwritable --out: exit %d, want 1 (%s)", r.code, r.stderr)
	}
}

// fleet runs workers polite fetch processes with args, each with its own
// list of each pages of every site in ss and its own job folder, waits for them all (after
// meanwhile, run as they go) and checks each exited 0, and that the workers
// together have one result per URL.
func fleet(t *testing.T, ss []*site, workers, each int, meanwhile func(), args ...string) []run {
	t.Helper()
	var wg sync.WaitGroup
	outs := make([]string, workers)
	runs := make([]run, workers)
	for w := range workers {
		var b strings.Builder
		for i := range each {
			for _, s := range ss {
				fmt.Fprintf(&b, "%s/w%d/%d\n", s.url, w, i)
			}
		}
		list := filepath.Join(t.TempDir(), "urls.txt")
		if err := os.WriteFile(list, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		outs[w] = t.TempDir()
		argv := append([]string{"fetch", "--out", outs[w], "--progress", "none"}, args...)
		wg.Go(func() { runs[w] = polite(t, append(argv, list)...) })
	}
	if meanwhile != nil {
		meanwhile()
	}
	wg.Wait()
	// The lists go into the fleet's frontier, and any worker may fetch any
	// URL: over the workers, one result per URL.
	seen := map[string]int{}
	for w, r := range runs {
		if r.code != 0 {
			t.Fatalf("worker %d: exit %d\n%s", w, r.code, r.stderr)
		}
		for _, res := range results(t, outs[w], false) {
			seen[res.URL]++
		}
	}
	if len(seen) != workers*each*len(ss) {
		t.Errorf("%d URLs have results, want %d", len(seen), workers*each*len(ss))
	}
	for u, n := range seen {
		if n != 1 {
			t.Errorf("%s: %d results over the workers, want 1", u, n)
		}
	}
	return runs
}

// TestFleetSharesRate: eight workers, each its own process with its own URL
// list and job folder, share one Redis: the host sees one rate and one cap
// on requests in flight, not eight.
func TestFleetSharesRate(t *testing.T) {
	t.Parallel()
	addr := redistest.Start(t)
	// Two hosts: at 5 ms a request the rate binds on one; at 60 ms, where
	// 40 req/s would keep 2.4 in flight, the cap of 2 binds on the other.
	const rate, burst, conc, workers, each = 40.0, 2, 2, 8, 20
	fast := startSite(t, testbed.HostConfig{Name: "fleet-rate", Latency: 5 * time.Millisecond})
	slow := startSite(t, testbed.HostConfig{Name: "fleet-cap", Latency: 60 * time.Millisecond})
	start := time.Now()
	fleet(t, []*site{fast, slow}, workers, each, nil, "--rate", fmt.Sprint(rate), "--burst", fmt.Sprint(burst),
		"--concurrency", fmt.Sprint(conc), "--adaptive=false", "--redis", "redis://"+addr+"/0", "--fleet", "e2e")
	for _, s := range []*site{fast, slow} {
		hits := s.log()
		robots := 0
		for _, h := range hits {
			if h.path == "/robots.txt" {
				robots++
			}
		}
		// Each page once; robots.txt once per worker that had the host's URLs.
		if pages := len(hits) - robots; pages != workers*each || robots > workers {
			t.Errorf("%s saw %d page requests and %d of robots.txt, want %d and at most %d", s.url, pages, robots, workers*each, workers)
		}
		checkRate(t, s.url, hits, rate, burst)
		if st := s.host.Stats(); st.MaxInFlight > conc {
			t.Errorf("%s had %d requests in flight at once, want at most %d", s.url, st.MaxInFlight, conc)
		}
	}
	// The bucket's bound, rate × 1 s + burst (and a tenth of a token: a
	// late taker keeps its place), holds for grants; arrivals add the
	// spread of the sends' delays, as checkRate allows.
	hits := fast.log()
	most, slack := busiestSecond(hits), sendSlack(hits)
	if limit := rate*(time.Second+slack).Seconds() + burst + 0.1; float64(most) > limit {
		t.Errorf("%d requests in the rate-bound host's busiest second, want at most rate × (1 s + %v of slack) + burst = %.1f", most, slack, limit)
	}
	t.Logf("%d workers, two hosts at %v/s and %d in flight, in %v; busiest second of the rate-bound host: %d (rate + burst = %v)",
		workers, rate, conc, time.Since(start).Round(time.Millisecond), most, rate+burst)
}

// TestFleetRedisOutage: Redis is killed under two workers mid-run and
// started again. The workers say so, keep the host near its rate meanwhile
// (--outage local: each at half), and finish: every URL fetched once.
func TestFleetRedisOutage(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	const rate, workers, each = 20.0, 2, 40
	s := startSite(t, testbed.HostConfig{Name: "outage", Latency: 5 * time.Millisecond})
	runs := fleet(t, []*site{s}, workers, each, func() {
		time.Sleep(1500 * time.Millisecond)
		srv.Kill()
		time.Sleep(time.Second)
		srv.Restart(t)
	}, "--rate", fmt.Sprint(rate), "--burst", "1", "--adaptive=false", "--redis", "redis://"+srv.Addr+"/0", "--fleet", "outage",
		"--own-list") // a Redis without persistence: the budgets come back empty, a frontier would not come back at all
	for w, r := range runs {
		if !strings.Contains(r.stderr, "degraded") || !strings.Contains(r.stderr, "mode=local") || !strings.Contains(r.stderr, "answers again") {
			t.Errorf("worker %d did not say Redis went away and came back:\n%s", w, r.stderr)
		}
	}
	for p, n := range s.counts() {
		if n != 1 && p != "/robots.txt" {
			t.Errorf("%s requested %d times, want once", p, n)
		}
	}
	// Each worker alone at its part of the rate with a burst of its own
	// while Redis is away: over spans shorter than a second the host may
	// see a burst of one per worker, but never more than rate + burst in
	// a second (issue 29, item 4).
	checkRate(t, s.url, s.log(), rate, workers)
	if most := busiestSecond(s.log()); most > rate+1 {
		t.Errorf("%d requests in the host's busiest second, want at most rate + burst = %v", most, rate+1)
	}
}

// TestFleetAdaptive: eight workers with --adaptive against a host whose
// hidden capacity is 20 req/s (429 beyond it, no Retry-After), starting at
// 5 req/s: the fleet finds the capacity together, cuts once per wave, and
// keeps the 429s few. Judged on the host's own log.
func TestFleetAdaptive(t *testing.T) {
	t.Parallel()
	addr := redistest.Start(t)
	const capacity, workers, each = 20.0, 8, 25
	s := startSite(t, testbed.HostConfig{Name: "adaptive", Rate: capacity, Burst: 5, Latency: 10 * time.Millisecond})
	start := time.Now()
	fleet(t, []*site{s}, workers, each, nil, "--rate", "5", "--max-rate", "100", "--adaptive", "--retries", "8",
		"--redis", "redis://"+addr+"/0", "--fleet", "adaptive")
	wall := time.Since(start)
	hits := s.log()
	var served, throttled int
	for _, h := range hits {
		switch h.status {
		case 200:
			served++
		case 429:
			throttled++
		}
	}
	t.Logf("%d served, %d throttled (%.1f %%) in %v: %.1f req/s served of %v", served, throttled,
		100*float64(throttled)/float64(len(hits)), wall.Round(time.Millisecond), float64(served)/wall.Seconds(), capacity)
	if frac := float64(throttled) / float64(len(hits)); frac > 0.10 {
		t.Errorf("%.1f %% of the fleet's requests were throttled, want at most 10 %%", 100*frac)
	}
}

// TestFleetKilledWorker: a worker killed with SIGKILL while its request
// holds the fleet's only in-flight slot to a host gives it back when its
// lease runs out (--timeout + 2 s); another worker then gets it, and the
// host never sees two requests at once.
func TestFleetKilledWorker(t *testing.T) {
	t.Parallel()
	addr := redistest.Start(t)
	s := startSite(t, testbed.HostConfig{Name: "kill", Latency: 1500 * time.Millisecond})
	list := func(name string, n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "%s/%s/%d\n", s.url, name, i)
		}
		p := filepath.Join(t.TempDir(), "urls.txt")
		os.WriteFile(p, []byte(b.String()), 0o644)
		return p
	}
	args := []string{"--progress", "none", "--rate", "inf", "--concurrency", "1", "--adaptive=false", "--robots=false",
		"--timeout", "2s", "--redis", "redis://" + addr + "/0", "--fleet", "kill",
		"--own-list"} // the store's in-flight lease, not the frontier's: each worker its own list
	a := exec.Command(bin, append(append([]string{"fetch", "--out", t.TempDir()}, args...), list("a", 5))...)
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it once its first request is at the host.
	deadline := time.Now().Add(10 * time.Second)
	for len(s.log()) == 0 && s.host.Stats().InFlight == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	killed := time.Now()
	a.Process.Kill()
	a.Wait()
	r := polite(t, append(append([]string{"fetch", "--out", t.TempDir()}, args...), list("b", 2))...)
	if r.code != 0 {
		t.Fatalf("second worker: exit %d\n%s", r.code, r.stderr)
	}
	var first time.Time
	for _, h := range s.log() {
		if strings.HasPrefix(h.path, "/b/") && (first.IsZero() || h.at.Before(first)) {
			first = h.at
		}
	}
	wait := first.Sub(killed)
	t.Logf("the killed worker's slot came back %v after the kill (lease: --timeout 2s + 2s)", wait.Round(time.Millisecond))
	if wait > 4500*time.Millisecond {
		t.Errorf("the second worker's first request came %v after the kill, want within the lease (4 s)", wait)
	}
	if st := s.host.Stats(); st.MaxInFlight > 1 {
		t.Errorf("the host had %d requests in flight at once, want 1", st.MaxInFlight)
	}
}

// busiestSecond returns the most requests of hits within any one second.
func busiestSecond(hits []hit) int {
	sort.Slice(hits, func(i, j int) bool { return hits[i].at.Before(hits[j].at) })
	most, j := 0, 0
	for i := range hits {
		for j < len(hits) && hits[j].at.Sub(hits[i].at) < time.Second {
			j++
		}
		most = max(most, j-i)
	}
	return most
}

// TestExplicitRateIsACeiling: with --adaptive on (the default), a --rate
// the user sets is never exceeded, however much the host would bear
// (issue 18, item 1: --rate 1 once produced 4-9 req/s).
func TestExplicitRateIsACeiling(t *testing.T) {
	t.Parallel()
	const rate = 5.0
	s := startSite(t, testbed.HostConfig{Name: "ceiling", Latency: 5 * time.Millisecond})
	list := urls(t, "", 30, s)
	r := polite(t, "fetch", "--out", t.TempDir(), "--rate", fmt.Sprint(rate), "--progress", "none", list)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	checkRate(t, s.url, s.log(), rate, 1)
	if want := "rates: each host started at 5.0 req/s and could rise to 5.0"; !strings.Contains(r.stdout, want) {
		t.Errorf("the summary does not say %q:\n%s", want, r.stdout)
	}
}

// TestRehearsal is the rehearsal a user runs before a real crawl (issue 18,
// item 5): `polite testbed` serving the example hosts on one address, and
// `polite fetch --connect-to` reaching them by name with the example rules.
// Judged by the testbed's own stop table: no host's busiest second went
// over what its rule allows.
func TestRehearsal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	list := filepath.Join(dir, "urls.txt")
	tb := exec.Command(bin, "testbed", "--config", "../../examples/testbed.toml", "--addr", "127.0.0.1:0",
		"--urls", list, "--pages", "4", "--duration", "90s")
	stdout, err := tb.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.Start(); err != nil {
		t.Fatal(err)
	}
	defer tb.Process.Kill()
	sc := bufio.NewScanner(stdout)
	addr := ""
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "listening on "); ok {
			addr, _, _ = strings.Cut(rest, ",")
		}
		if strings.HasPrefix(line, "serving") {
			break
		}
	}
	if addr == "" {
		t.Fatal("the testbed did not say where it listens")
	}

	r := polite(t, "fetch", "--out", filepath.Join(dir, "out"), "--progress", "none",
		"--connect-to", "::"+addr, "--config", "../../examples/rules.toml", list)
	if r.code != 0 {
		t.Fatalf("fetch: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	tb.Process.Signal(os.Interrupt)
	peak := map[string]int{}
	var table []string
	for sc.Scan() {
		line := sc.Text()
		table = append(table, line)
		f := strings.Fields(line)
		if len(f) == 11 && strings.HasSuffix(f[0], ".test") {
			n, err := strconv.Atoi(f[9])
			if err != nil {
				t.Fatalf("peak 1s %q in %q", f[9], line)
			}
			peak[f[0]] = n
		}
	}
	tb.Wait()
	// fragile.test: rate 0.5, burst 1 (one a second at the most, in any
	// second); api.test: 10 a second, evenly spaced (a window may catch
	// an eleventh at its edge when the network bunches two).
	for host, most := range map[string]int{"fragile.test": 1, "api.test": 11} {
		got, ok := peak[host]
		if !ok {
			t.Fatalf("no %s row in the testbed's table:\n%s", host, strings.Join(table, "\n"))
		}
		if got > most || got == 0 {
			t.Errorf("%s: busiest second admitted %d, want 1 to %d\n%s", host, got, most, strings.Join(table, "\n"))
		}
	}
}

// A list with nothing in it, or a directory given as one, is a usage
// error naming URLFILE, with no summary and no report (issue 33, item 12:
// an empty list exited 0 with a summary of nothing).
func TestNothingToFetch(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.txt")
	os.WriteFile(empty, []byte("\n\n"), 0o644)
	for _, list := range []string{empty, dir} {
		out := filepath.Join(t.TempDir(), "out")
		r := polite(t, "fetch", "--progress", "none", "--out", out, list)
		if r.code != 2 || !strings.Contains(r.stderr, "URLFILE "+list) || strings.Contains(r.stderr, "rates:") {
			t.Errorf("%s: exit %d, stderr %q; want 2 naming URLFILE, no summary", list, r.code, r.stderr)
		}
		if _, err := os.Stat(filepath.Join(out, "report.html")); err == nil {
			t.Errorf("%s: a report was written", list)
		}
	}
}

// A run refused for its request (-X POST on a GET job) says so and exits
// 2 before it loads the list, writes a summary or rewrites the report; the
// closing rates line names the hosts a --config rule held (issue 33, item
// 1: "each host started at 2.0 … could rise to 20.0" beside a rule at
// 0.5/s, and "0 URLs in DIR" with a fresh report before the refusal).
func TestRefusedRunSaysNothingElse(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	dir := t.TempDir()
	list := filepath.Join(dir, "urls.txt")
	os.WriteFile(list, []byte(srv.URL+"/a\n"), 0o644)
	rules := filepath.Join(dir, "rules.toml")
	os.WriteFile(rules, []byte("[[rule]]\nhosts = \"127.0.0.1*\"\nrate = 0.5\n"), 0o644)
	out := filepath.Join(dir, "out")
	r := polite(t, "fetch", "--progress", "none", "--robots=false", "--config", rules, "--out", out, list)
	if r.code != 0 || !strings.Contains(r.stdout, "hosts matching 127.0.0.1* followed their rule in "+rules) {
		t.Fatalf("first run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	report := filepath.Join(out, "report.html")
	fi, err := os.Stat(report)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "more.txt"), []byte(srv.URL+"/b\n"), 0o644)
	r = polite(t, "fetch", "--progress", "none", "--robots=false", "-X", "POST", "--out", out, filepath.Join(dir, "more.txt"))
	if r.code != 2 || !strings.Contains(r.stderr, "another method or body") || r.stdout != "" {
		t.Errorf("-X POST on the GET job: exit %d, stdout %q, stderr %q; want 2, the refusal alone", r.code, r.stdout, r.stderr)
	}
	if fi2, err := os.Stat(report); err != nil || !fi2.ModTime().Equal(fi.ModTime()) {
		t.Errorf("the refused run rewrote the report (%v)", err)
	}
	st := polite(t, "status", "--json", out)
	if !strings.Contains(st.stdout, `"total": 1,`) {
		t.Errorf("the refused run loaded its list (want 1 URL in the job):\n%s", st.stdout)
	}
}

// An --out that is a file is the user's to fix: exit 2 naming --out, not
// "crawl: mkdir …: not a directory" and exit 1 (issue 33, item 12).
func TestOutIsAFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "out")
	os.WriteFile(file, []byte("x"), 0o644)
	list := filepath.Join(dir, "urls.txt")
	os.WriteFile(list, []byte("http://example.test/\n"), 0o644)
	r := polite(t, "fetch", "--progress", "none", "--out", file, list)
	if r.code != 2 || !strings.Contains(r.stderr, "--out "+file+" is a file") {
		t.Errorf("exit %d, stderr %q; want 2 naming --out", r.code, r.stderr)
	}
}

// A --config rule that applies to none of the job's hosts is named on
// stderr with its file and line before the run (issue 33, item 11).
func TestIdleRuleWarned(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	dir := t.TempDir()
	list := filepath.Join(dir, "urls.txt")
	os.WriteFile(list, []byte(srv.URL+"/a\n"), 0o644)
	rules := filepath.Join(dir, "rules.toml")
	os.WriteFile(rules, []byte("[[rule]]\nhosts = \"127.0.0.1*\"\nrate = 5\n\n[[rule]]\nhosts = \"fragil.test\"\nrate = 0.5\n"), 0o644)
	r := polite(t, "fetch", "--progress", "none", "--robots=false", "--config", rules, "--out", filepath.Join(dir, "out"), list)
	want := rules + `:5: rule 2 (hosts = "fragil.test") applies to no host the list names: it does not match the job's one host`
	if r.code != 0 || !strings.Contains(r.stderr, "polite: warning: "+want) || strings.Count(r.stderr, "warning") != 1 {
		t.Errorf("exit %d, stderr %q; want 0 and the one warning %q", r.code, r.stderr, want)
	}
}

// Ctrl-C while the list loads from a standard input with nothing more
// coming stops the loading at once, says so, and keeps the URLs read
// (issue 33, item 9: a blocked read was not interrupted, and the notice
// spoke of requests in flight).
func TestInterruptWhileLoadingStdin(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	cmd := exec.Command(bin, "fetch", "--out", out, "--progress", "log", "--robots=false", "-")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	var errb lockedBuffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		fmt.Fprintf(stdin, "http://127.0.0.1:9/%d\n", i)
	}
	// The list stays open: the job waits for more lines.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(errb.String(), "loading") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("still loading 10 s after Ctrl-C; stderr:\n%s", errb.String())
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("exit %v, want 1", err)
	}
	for _, want := range []string{"stopping the list's loading", "interrupted while loading (standard input)"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, errb.String())
		}
	}
}

// lockedBuffer is a bytes.Buffer a process writes to while a test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
