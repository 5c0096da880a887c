package cli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dunglas/httpsfv"

	"github.com/polite-go/polite/guard"
)

// parseGuard runs argv through the command tree with guard's run step
// replaced, and returns the options it would have run with.
func parseGuard(t *testing.T, argv ...string) (*guardOptions, int, string) {
	t.Helper()
	var got *guardOptions
	r := runners{"guard": func(_ context.Context, o any) error { got = o.(*guardOptions); return nil }}
	var out, errb bytes.Buffer
	root := newRoot(&env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb}, r)
	root.SetArgs(argv)
	code := exitStatus(root.ExecuteContext(context.Background()), &errb)
	return got, code, errb.String()
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "guard.toml")
	if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

func TestGuardFlags(t *testing.T) {
	o, code, stderr := parseGuard(t, "guard", "--listen", "127.0.0.1:8080", "--upstream", "http://127.0.0.1:9000/api", "--rate", "5", "--burst", "9", "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if o.Listen != "127.0.0.1:8080" || o.Upstream.String() != "http://127.0.0.1:9000/api" || o.Outage != "local" ||
		o.Config.Identity != (guard.Limit{Rate: 5, Burst: 9}) || !o.Config.DryRun {
		t.Errorf("options = %+v", o)
	}
	// --rate alone: burst ceil(rate), the file's burst not kept.
	cfg := writeFile(t, "[identity]\nrate = 100\nburst = 300\n[[cost]]\npattern = \"POST /upload\"\ncost = 7\n")
	o, code, stderr = parseGuard(t, "guard", "--listen", ":8080", "--upstream", "http://app", "--config", cfg, "--rate", "2.5")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if o.Config.Identity != (guard.Limit{Rate: 2.5}) || o.Config.Costs["POST /upload"] != 7 {
		t.Errorf("config = %+v", o.Config)
	}
	// The abuse bounds (issue 29): defaults, then set.
	if o.IdleTimeout != 30*time.Second || o.BodyTimeout != time.Minute || o.UpstreamTimeout != time.Minute ||
		o.MaxConnsPerIP != 64 || !o.Config.CloseRefused {
		t.Errorf("defaults: idle %v body %v upstream %v conns %d close %v; want 30s 1m 1m 64 true",
			o.IdleTimeout, o.BodyTimeout, o.UpstreamTimeout, o.MaxConnsPerIP, o.Config.CloseRefused)
	}
	o, code, stderr = parseGuard(t, "guard", "--listen", ":8080", "--upstream", "http://app", "--idle-timeout", "5s",
		"--body-timeout", "0", "--upstream-timeout", "2m", "--max-conns-per-ip", "8", "--close-refused=false")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if o.IdleTimeout != 5*time.Second || o.BodyTimeout != 0 || o.UpstreamTimeout != 2*time.Minute ||
		o.MaxConnsPerIP != 8 || o.Config.CloseRefused {
		t.Errorf("set: idle %v body %v upstream %v conns %d close %v", o.IdleTimeout, o.BodyTimeout, o.UpstreamTimeout, o.MaxConnsPerIP, o.Config.CloseRefused)
	}
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"guard", "--upstream", "http://a"}, "--listen ADDR is required"},
		{[]string{"guard", "--listen", ":1"}, "--upstream URL is required"},
		{[]string{"guard", "--listen", "8080", "--upstream", "http://a"}, `--listen "8080"`},
		{[]string{"guard", "--listen", ":1", "--upstream", "ftp://a"}, `--upstream "ftp://a"`},
		{[]string{"guard", "--listen", ":1", "--upstream", "http://a", "--rate", "-1"}, "--rate -1"},
		{[]string{"guard", "--listen", ":1", "--upstream", "http://a", "--burst", "0"}, "--burst 0"},
		{[]string{"guard", "--listen", ":1", "--upstream", "http://a", "--outage", "maybe"}, `--outage "maybe"`},
		{[]string{"guard", "--listen", ":1", "--upstream", "http://a", "--config", "/nonexistent.toml"}, "--config"},
		{[]string{"guard", "--listen", ":1", "--upstream", "http://a", "--idle-timeout", "-1s"}, "--idle-timeout -1s"},
		{[]string{"guard", "--listen", ":1", "--upstream", "http://a", "--body-timeout", "-1s"}, "--body-timeout -1s"},
		{[]string{"guard", "--listen", ":1", "--upstream", "http://a", "--upstream-timeout", "-1s"}, "--upstream-timeout -1s"},
		{[]string{"guard", "--listen", ":1", "--upstream", "http://a", "--max-conns-per-ip", "-1"}, "--max-conns-per-ip -1"},
	} {
		_, code, stderr := parseGuard(t, tc.argv...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, %q; want 2 and %q", tc.argv, code, stderr, tc.want)
		}
	}
}

func TestGuardConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want string
	}{
		{"trusted_proxies = [\"10.0.0.0/8\"]\n\n[identity]\nrate = \"fast\"\n", "guard.toml:4:"},
		{"[identity]\nrate = 5\nbrust = 3\n", `guard.toml:3: unknown key "identity.brust"`},
		{"dry_run = true\ntrusted_proxies = [\"0.0.0.0/0\"]\n", "guard.toml:2: TrustedProxies \"0.0.0.0/0\": trusts every address"},
		{"proxy_header = \"X-Forwarded-For\"\n", "guard.toml:1: ProxyHeader"},
		{"[identity]\nrate = 5\n[tenant]\nrate = 1\nburst = -3\n", "guard.toml:5: tenant burst -3"},
		{"[tenant]\nrate = 1\nname = \"identity\"\n", "guard.toml:3: levels identity and tenant share"},
		{"[[cost]]\npattern = \"/a\"\ncost = 1\n\n[[cost]]\npattern = \"GET bad\"\ncost = 2\n", "guard.toml:6: Costs pattern \"GET bad\""},
		{"[[cost]]\ncost = 1\n", "guard.toml:1: [[cost]] 1 has no pattern"},
		{"[[cost]]\npattern = \"/a\"\n", "guard.toml:1: [[cost]] \"/a\" has no cost"},
		{"outage = \"sometimes\"\n", "guard.toml:1: outage \"sometimes\""},
		{"ipv6_prefix = 200\n", "guard.toml:1: IPv6Prefix 200"},
		{"[identity\nrate = 1\n", "to end table name"},
	} {
		var c guard.Config
		_, err := parseGuardConfig("guard.toml", []byte(tc.src), &c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseGuardConfig(%q) = %v, want %q", tc.src, err, tc.want)
		}
	}
}

// proxied returns a guard in front of upstream, both on loopback.
func proxied(t *testing.T, c guard.Config, upstream http.Handler) (front, back *httptest.Server) {
	t.Helper()
	back = httptest.NewServer(upstream)
	t.Cleanup(back.Close)
	u, _ := url.Parse(back.URL)
	g, err := guard.New(c)
	if err != nil {
		t.Fatal(err)
	}
	front = httptest.NewServer(g.Handler(newProxy(u, 0, discard())))
	t.Cleanup(front.Close)
	return front, back
}

func TestGuardProxy(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	front, _ := proxied(t, guard.Config{Identity: guard.Limit{Rate: 0.01, Burst: 2}}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("X-Forwarded-For"))
		mu.Unlock()
		io.WriteString(w, "hello")
	}))
	var codes []int
	for range 3 {
		req, _ := http.NewRequest("GET", front.URL+"/x", nil)
		req.Header.Add("X-Forwarded-For", "203.0.113.9")
		req.Header.Add("X-Forwarded-For", "198.51.100.7")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
		if resp.Header.Get("RateLimit") == "" || resp.Header.Get("RateLimit-Policy") == "" {
			t.Errorf("answer %d without RateLimit fields: %v", resp.StatusCode, resp.Header)
		}
		checkStructured(t, resp.Header)
	}
	if codes[0] != 200 || codes[1] != 200 || codes[2] != 429 {
		t.Errorf("statuses %v, want 200 200 429", codes)
	}
	// The client's chain kept, lines merged, the peer appended.
	if len(seen) != 2 || seen[0] != "203.0.113.9, 198.51.100.7, 127.0.0.1" {
		t.Errorf("upstream saw X-Forwarded-For %q", seen)
	}
}

// checkStructured parses the RateLimit fields with an RFC 9651 parser
// (github.com/dunglas/httpsfv) and checks the draft-10 parameters.
func checkStructured(t *testing.T, h http.Header) {
	t.Helper()
	pol, err := httpsfv.UnmarshalList(h.Values("RateLimit-Policy"))
	if err != nil {
		t.Fatalf("RateLimit-Policy %q: %v", h.Values("RateLimit-Policy"), err)
	}
	for _, m := range pol {
		it, ok := m.(httpsfv.Item)
		if _, isStr := it.Value.(string); !ok || !isStr {
			t.Fatalf("policy member %#v: want a String item", m)
		}
		q, qok := it.Params.Get("q")
		w, wok := it.Params.Get("w")
		if qi, _ := q.(int64); !qok || qi < 0 {
			t.Errorf("q = %#v", q)
		}
		if wi, _ := w.(int64); !wok || wi <= 0 {
			t.Errorf("w = %#v: must be a non-zero integer", w)
		}
	}
	rl, err := httpsfv.UnmarshalList(h.Values("RateLimit"))
	if err != nil {
		t.Fatalf("RateLimit %q: %v", h.Values("RateLimit"), err)
	}
	for _, m := range rl {
		it := m.(httpsfv.Item)
		r, rok := it.Params.Get("r")
		if ri, _ := r.(int64); !rok || ri < 0 {
			t.Errorf("r = %#v", r)
		}
		if tv, ok := it.Params.Get("t"); ok {
			if ti, _ := tv.(int64); ti < 0 {
				t.Errorf("t = %#v", tv)
			}
		}
		pk, ok := it.Params.Get("pk")
		if b, isBytes := pk.([]byte); !ok || !isBytes || len(b) == 0 {
			t.Errorf("pk = %#v: want a Byte Sequence", pk)
		} else if bytes.Contains(b, []byte("127.0.0.1")) || bytes.Contains(b, []byte("203.0.113")) {
			t.Errorf("pk %q carries the identity", b)
		}
	}
}

// A response streams through the guard as the upstream writes it, and
// large bodies pass whole both ways.
func TestGuardProxyStreams(t *testing.T) {
	release := make(chan struct{})
	front, _ := proxied(t, guard.Config{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/stream":
			io.WriteString(w, "first\n")
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-time.After(10 * time.Second):
			}
			io.WriteString(w, "second\n")
		case "/echo":
			io.Copy(w, r.Body)
		}
	}))
	resp, err := http.Get(front.URL + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || line != "first\n" {
		t.Fatalf("first line %q, %v: want it before the upstream finishes", line, err)
	}
	close(release)
	rest, _ := io.ReadAll(br)
	resp.Body.Close()
	if string(rest) != "second\n" {
		t.Errorf("rest %q", rest)
	}

	big := bytes.Repeat([]byte("0123456789abcdef"), 2<<20) // 32 MiB
	resp, err = http.Post(front.URL+"/echo", "application/octet-stream", bytes.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, _ := io.Copy(h, resp.Body)
	resp.Body.Close()
	if want := sha256.Sum256(big); n != int64(len(big)) || !bytes.Equal(h.Sum(nil), want[:]) {
		t.Errorf("echoed %d bytes, digest differs: %v", n, !bytes.Equal(h.Sum(nil), want[:]))
	}
}

func TestGuardUpstreamDown(t *testing.T) {
	front, back := proxied(t, guard.Config{}, http.NotFoundHandler())
	back.Close()
	resp, err := http.Get(front.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("upstream down: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// --idle-timeout 0 means never: net/http would read a zero IdleTimeout
// as ReadTimeout's (--body-timeout).
func TestGuardIdleTimeoutZero(t *testing.T) {
	for _, tc := range []struct{ in, want time.Duration }{{0, -1}, {time.Second, time.Second}} {
		if got := idleTimeout(tc.in); got != tc.want {
			t.Errorf("idleTimeout(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestGuardMetricsAndRefusalLog: polite guard --metrics serves its counts
// and the process's, and its refusals are logged, rate-limited (issue 33,
// item 8: it had no --metrics and refused in silence).
func TestGuardMetricsAndRefusalLog(t *testing.T) {
	maddr := freeAddr(t)
	var stderr syncBuffer
	addr := startGuardTo(t, &stderr, okUpstream(t), "--rate", "0.01", "--burst", "1", "--metrics", maddr)
	var codes []int
	for range 4 {
		resp, err := http.Get("http://" + addr + "/x")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
	}
	if fmt.Sprint(codes) != "[200 429 429 429]" {
		t.Fatalf("statuses %v, want one 200 and three 429", codes)
	}
	resp, err := http.Get("http://" + maddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	scraped := string(b)
	for _, want := range []string{"polite_guard_forwarded_total 1\n", `polite_guard_refused_total{level="identity"} 3` + "\n",
		`polite_guard_refused_total{level="tenant"} 0` + "\n", "polite_guard_too_costly_total 0\n", "polite_guard_dry_run_refusals_total 0\n",
		"polite_guard_store_errors_total 0\n", "polite_guard_connections_closed_total 0\n", `service_name="polite"`, "go_goroutines ", "process_cpu_seconds_total "} {
		if !strings.Contains(scraped, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, scraped)
		}
	}
	logged := stderr.String()
	if n := strings.Count(logged, "guard refuse"); n != 1 || !strings.Contains(logged, "level=INFO") || !strings.Contains(logged, "status=429") {
		t.Errorf("stderr logs %d refusals of 3 within 10 s, want 1 at INFO with its status:\n%s", n, logged)
	}
	if !strings.Contains(logged, "metrics on http://"+maddr+"/metrics") {
		t.Errorf("stderr does not say where the metrics are:\n%s", logged)
	}
}

// An upstream that is down is counted in polite guard's metrics, by kind,
// as well as logged (it answered 502 with only a log line).
func TestGuardMetricsCountUpstreamErrors(t *testing.T) {
	maddr := freeAddr(t)
	var stderr syncBuffer
	addr := startGuardTo(t, &stderr, "http://"+freeAddr(t), "--metrics", maddr)
	for range 2 {
		resp, err := http.Get("http://" + addr + "/x")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadGateway {
			t.Fatalf("upstream down: %d, want 502", resp.StatusCode)
		}
	}
	resp, err := http.Get("http://" + maddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`polite_guard_upstream_errors_total{kind="failed"} 2`, `polite_guard_upstream_errors_total{kind="timeout"} 0`,
		`polite_guard_upstream_errors_total{kind="unsent"} 0`} {
		if !strings.Contains(string(b), want+"\n") {
			t.Errorf("/metrics lacks %q:\n%s", want, b)
		}
	}
}
