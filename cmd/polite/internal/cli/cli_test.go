package cli

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/adaptive"
	"github.com/polite-go/polite/bucket"
	"github.com/polite-go/polite/crawl"
	"github.com/polite-go/polite/internal/politeness"
	"github.com/polite-go/polite/testbed"
)

// parse runs argv through the command tree with every run step replaced,
// and returns the options the named command would have run with.
func parse(t *testing.T, argv ...string) (opts any, code int, stderr string) {
	t.Helper()
	var got any
	capture := func(_ context.Context, o any) error { got = o; return nil }
	r := runners{"fetch": capture, "demo": capture, "testbed": capture, "robots": capture, "bench": capture}
	var out, errb bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb}
	root := newRoot(e, r)
	root.SetArgs(argv)
	code = exitStatus(root.ExecuteContext(context.Background()), &errb)
	return got, code, errb.String()
}

func TestFetchDefaults(t *testing.T) {
	got, code, stderr := parse(t, "fetch", "urls.txt")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	o := got.(*fetchOptions)
	want := fetchOptions{
		List: "urls.txt", Out: "polite-out", Rate: polite.DefaultRate, MaxRate: DefaultMaxRate, Burst: polite.DefaultBurst,
		Concurrency: polite.DefaultConcurrency, Workers: crawl.DefaultWorkers, Adaptive: true, Robots: true,
		Retries: 5, MaxDelay: 60 * time.Second, MaxRetryAfter: 10 * time.Minute, Timeout: 30 * time.Second,
		Grace: 10 * time.Second, HostGiveUp: crawl.DefaultHostGiveUp, BlockRecheck: crawl.DefaultBlockRecheck, UserAgent: defaultUserAgent(), Key: polite.KeyHost, Bodies: crawl.BodiesWARC,
		MaxBody: 10 << 20, WARCGzip: true, WARCMaxSize: 1 << 30, MaxURLLen: 8 << 10, Progress: "auto", Fleet: "default", Outage: "local", Lane: "normal", LeaseTTL: 30 * time.Second, JoinWait: time.Minute,
		OutageLocalFor: 5 * time.Minute, OutageClosedFor: 10 * time.Minute,
		MetricsHost:   defaultMetricsHosts,
		followOptions: followOptions{Scope: "host", MaxDepth: DefaultMaxDepth, MaxPerHost: DefaultMaxPerHost},
	}
	if !reflect.DeepEqual(*o, want) {
		t.Errorf("fetch urls.txt =\n%+v, want\n%+v", *o, want)
	}
}

func TestFetchFlags(t *testing.T) {
	got, code, stderr := parse(t, "fetch", "--out", "d", "--rate", "0.5", "--max-rate", "20", "--burst", "3",
		"--concurrency", "1", "--workers", "9", "--adaptive=false", "--retries", "2", "--max-delay", "5s",
		"--timeout", "3s", "--robots=false", "--user-agent", "bot/1", "--key", "domain", "--bodies", "files",
		"--max-body", "1MiB", "--max-url-len", "100", "--smooth", "--block-recheck", "0", "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	o := got.(*fetchOptions)
	if o.List != "-" || o.Out != "d" || o.Rate != 0.5 || o.MaxRate != 20 || o.Burst != 3 || o.Concurrency != 1 ||
		o.Workers != 9 || o.Adaptive || o.Retries != 2 || o.MaxDelay != 5*time.Second || o.Timeout != 3*time.Second ||
		o.Robots || o.UserAgent != "bot/1" || o.Key != polite.KeyDomain || o.Bodies != crawl.BodiesFiles ||
		o.MaxBody != 1<<20 || o.MaxURLLen != 100 || !o.Smooth || o.BlockRecheck != 0 {
		t.Errorf("options = %+v", *o)
	}
	got, _, _ = parse(t, "fetch", "--rate", "inf", "x")
	if r := got.(*fetchOptions).Rate; r != bucket.Inf {
		t.Errorf("--rate inf = %v", r)
	}
}

func TestFetchUsageErrors(t *testing.T) {
	for _, argv := range [][]string{
		{"fetch"},
		{"fetch", "a", "b"},
		{"fetch", "--rate", "-1", "x"},
		{"fetch", "--rate", "fast", "x"},
		{"fetch", "--key", "path", "x"},
		{"fetch", "--bodies", "zip", "x"},
		{"fetch", "--max-body", "10XB", "x"},
		{"fetch", "--workers", "0", "x"},
		{"fetch", "--nope", "x"},
		{"fetch", "--timeout", "soon", "x"},
		{"fetch", "--block-recheck", "-1s", "x"},
		{"fetch", "--progress", "fancy", "x"},
		{"fetch", "--config", "/nonexistent/rules.toml", "x"},
		{"fetch", "--redis", "redis://127.0.0.1:1/0", "--outage", "maybe", "x"},
		{"fetch", "--redis", "redis://127.0.0.1:1/0", "--outage-closed-for", "0s", "x"},
		{"fetch", "--redis", "redis://127.0.0.1:1/0", "--outage-local-for", "-1s", "x"},
		{"nope"},
		{"robots", "not a url"},
		{"testbed", "--hosts", "-1"},
	} {
		_, code, stderr := parse(t, argv...)
		if code != ExitUsage {
			t.Errorf("%q: exit %d, want %d (%s)", argv, code, ExitUsage, stderr)
		}
	}
}

func TestConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.toml")
	os.WriteFile(good, []byte(`# rules
[[rule]]
hosts = "*.example.com"
rate = 5.0
burst = 2

[[rule]]
hosts = "api.example.com"
concurrency = 1
smooth = true
retries = 0

[[rule]]
hosts = "*"
rate = inf
retries = 9
`), 0o644)
	got, code, stderr := parse(t, "fetch", "--config", good, "x")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	c := got.(*fetchOptions).Rules
	rules := c.politeRules()
	if len(rules) != 3 || rules[0].Pattern != "*.example.com" || rules[0].Rate != 5 || rules[0].Burst != 2 ||
		rules[1].Concurrency != 1 || !rules[1].Smooth || rules[2].Rate != bucket.Inf {
		t.Errorf("rules = %+v", rules)
	}
	// www.example.com's rule is *.example.com, which leaves retries to the
	// flag (0 here), though "*" sets 9; a port does not change the rule.
	for key, want := range map[string]int{"api.example.com": -1, "api.example.com:8443": -1, "www.example.com": 0, "other.org": 9} {
		if got := c.retriesFor(key); got != want {
			t.Errorf("retriesFor(%q) = %d, want %d", key, got, want)
		}
	}

	for name, tc := range map[string]struct{ src, want string }{
		"syntax":  {"[[rule]]\nhosts = \"a\"\nrate = = 3\n", ":3:"},
		"typo":    {"[[rule]]\nhosts = \"a\"\n\nrat = 3\n", `:4: unknown key "rule.rat"`},
		"type":    {"[[rule]]\nhosts = \"a\"\nburst = \"two\"\n", ":3:"},
		"no host": {"# x\n[[rule]]\nrate = 1\n", ":2: rule 1 has no hosts"},
		"glob":    {"[[rule]]\nhosts = \"a\"\n[[rule]]\nhosts = \"[a\"\n", ":4: hosts"},
		"rate":    {"[[rule]]\nhosts = \"a\"\n[[rule]]\nhosts = \"b\"\n\nrate = -2\n", ":6: rate -2"},
		"retries": {"[[rule]]\nhosts = \"a\"\nretries = -3\n", ":3: retries"},
	} {
		path := filepath.Join(dir, name+".toml")
		os.WriteFile(path, []byte(tc.src), 0o644)
		_, code, stderr := parse(t, "fetch", "--config", path, "x")
		if code != ExitUsage || !strings.Contains(stderr, path+tc.want) {
			t.Errorf("%s: exit %d, stderr %q, want it to contain %q", name, code, stderr, path+tc.want)
		}
	}
}

func TestDemoTestbedRobotsParse(t *testing.T) {
	got, code, _ := parse(t, "demo", "--rate", "3", "--out", "x")
	if code != 0 {
		t.Fatalf("demo: exit %d", code)
	}
	if d := got.(*demoOptions); d.fetch.Rate != 3 || d.fetch.Out != "x" || d.fetch.Concurrency != 4 || !d.fetch.Adaptive ||
		d.fetch.BlockRecheck != crawl.DefaultBlockRecheck {
		t.Errorf("demo options = %+v", d.fetch)
	}
	got, code, _ = parse(t, "testbed", "--hosts", "3", "--urls", "u.txt", "--pages", "7")
	if code != 0 {
		t.Fatalf("testbed: exit %d", code)
	}
	if o := got.(*testbedOptions); len(o.Hosts) != 3 || o.Hosts[2].Name != "h2.test" || o.URLs != "u.txt" || o.Pages != 7 {
		t.Errorf("testbed options = %+v", o)
	}
	got, code, _ = parse(t, "robots", "--user-agent", "bot", "https://example.com/a?b")
	if code != 0 {
		t.Fatalf("robots: exit %d", code)
	}
	if o := got.(*robotsOptions); o.URL.String() != "https://example.com/a?b" || o.UserAgent != "bot" {
		t.Errorf("robots options = %+v", o)
	}
}

func TestBenchParse(t *testing.T) {
	got, code, stderr := parse(t, "bench", "--scenario", "steady", "--scenario", "step-down", "--duration", "5s", "--json", "b.json")
	if code != 0 {
		t.Fatalf("bench: exit %d: %s", code, stderr)
	}
	o := got.(*benchOptions)
	if len(o.Opts.Scenarios) != 2 || o.Opts.Scenarios[1].Name != "step-down" || o.Opts.Duration != 5*time.Second || o.JSON != "b.json" {
		t.Errorf("bench options = %+v", o)
	}
	got, code, stderr = parse(t, "bench", "--live", "--scenario", "nginx-delay", "--runs", "1")
	if lo := got.(*benchOptions); code != 0 || !lo.Live || lo.LiveOpts.Runs != 1 || len(lo.LiveOpts.Scenarios) != 1 || lo.LiveOpts.Scenarios[0].Name != "nginx-delay" {
		t.Errorf("bench --live: exit %d %s, options %+v", code, stderr, got)
	}
	if _, code, _ := parse(t, "bench", "--live", "--scenario", "steady-nope"); code != ExitUsage {
		t.Errorf("bench --live --scenario steady-nope: exit %d, want 2", code)
	}
	if _, code, _ := parse(t, "bench", "--scenario", "nope"); code != ExitUsage {
		t.Errorf("bench --scenario nope: exit %d, want 2", code)
	}
}

func TestHelpExplainsEveryFlag(t *testing.T) {
	for _, cmd := range []string{"fetch", "demo", "testbed", "robots", "version", "bench", "status", "retry"} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), []string{cmd, "--help"}, strings.NewReader(""), &out, &errb)
		if code != 0 {
			t.Errorf("%s --help: exit %d", cmd, code)
		}
		if cmd == "fetch" {
			for _, f := range []string{"--out", "--rate", "--max-rate", "--burst", "--concurrency", "--workers", "--adaptive",
				"--retries", "--max-delay", "--timeout", "--robots", "--user-agent", "--key", "--config", "--redis", "--metrics",
				"--bodies", "--max-body", "(default \"polite-out\")", "--outage-local-for", "--outage-closed-for", "waiting for Redis (closed since", "[[rule]]", "--header", "-H", "--max-time", "--max-urls", "--retry-on",
				"timeout ", "redirect_loop", "robots_unreachable", "not sent"} {
				if !strings.Contains(out.String(), f) {
					t.Errorf("fetch --help lacks %s", f)
				}
			}
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"10MiB": 10 << 20, "512KiB": 512 << 10, "1000": 1000, "2MB": 2e6, "1 GiB": 1 << 30} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v, want %d", in, got, err, want)
		}
	}
}

func TestFetchBadRedis(t *testing.T) {
	for _, c := range []struct {
		flag string
		code int
		want string
	}{
		{"--redis=http://127.0.0.1:6379", ExitUsage, "want redis://HOST:PORT/DB"},
		{"--redis=redis://:secret@127.0.0.1:1/0", ExitFatal, "--redis redis://:xxxxx@127.0.0.1:1/0"},
	} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), []string{"fetch", c.flag, "--out", t.TempDir(), "-"}, strings.NewReader(""), &out, &errb)
		if code != c.code || !strings.Contains(errb.String(), c.want) || strings.Contains(errb.String(), "secret") {
			t.Errorf("%s: exit %d, stderr %q; want exit %d naming %q, no password", c.flag, code, errb.String(), c.code, c.want)
		}
	}
}

// A rule's rate is its hosts' ceiling under --adaptive unless max_rate
// raises it; a bad max_rate names its line.
func TestRuleRateIsACeiling(t *testing.T) {
	c, err := parseConfig("r.toml", []byte("[[rule]]\nhosts = \"a.test\"\nrate = 1\n[[rule]]\nhosts = \"b.test\"\nrate = 1\nmax_rate = 20\n"))
	if err != nil {
		t.Fatal(err)
	}
	rules := c.politeRules()
	if rules[0].MaxRate != 1 || rules[1].MaxRate != 20 {
		t.Errorf("MaxRate = %v, %v; want 1 (the rate) and 20 (max_rate)", rules[0].MaxRate, rules[1].MaxRate)
	}
	if _, err := parseConfig("r.toml", []byte("[[rule]]\nhosts = \"a\"\n\nmax_rate = -2\n")); err == nil || !strings.Contains(err.Error(), "r.toml:4: max_rate") {
		t.Errorf("max_rate = -2: error %v, want it to name r.toml:4", err)
	}
}

// A rule's adaptive key turns the adaptive rate off for its hosts under
// --adaptive, or on without it; other hosts follow the flag. With --redis
// the key is refused: the fleet's rate control is one for all hosts.
func TestRuleAdaptiveKey(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "rules.toml")
	src := "[[rule]]\nhosts = \"fixed.test\"\nrate = 5\nadaptive = false\n\n[[rule]]\nhosts = \"tuned.test\"\nadaptive = true\n"
	if err := os.WriteFile(cfg, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	l := polite.Limits{Rate: 2}
	for _, tc := range []struct {
		adaptive           string
		fixed, tuned, rest bool // whether each gets a controller
	}{
		{"true", false, true, true},
		{"false", false, true, false},
	} {
		got, code, stderr := parse(t, "fetch", "--adaptive="+tc.adaptive, "--config", cfg, "urls.txt")
		if code != ExitOK {
			t.Fatalf("--adaptive=%s: exit %d: %s", tc.adaptive, code, stderr)
		}
		tr := got.(*fetchOptions).transport(&loopbackPorts{})
		if tr.NewRater == nil {
			t.Fatalf("--adaptive=%s with adaptive rules: no NewRater", tc.adaptive)
		}
		for host, want := range map[string]bool{"fixed.test": tc.fixed, "tuned.test": tc.tuned, "other.test": tc.rest} {
			if r := tr.NewRater(host, l); (r != nil) != want {
				t.Errorf("--adaptive=%s: %s has a controller: %v, want %v", tc.adaptive, host, r != nil, want)
			}
		}
	}
	if _, code, stderr := parse(t, "fetch", "--redis", "redis://127.0.0.1:1", "--config", cfg, "urls.txt"); code != ExitUsage || !strings.Contains(stderr, "adaptive") {
		t.Errorf("--redis with a rule's adaptive key: exit %d, %q; want a usage error naming it", code, stderr)
	}
}

// The example files in the repository parse: a rules file and a testbed
// config a user can start from.
func TestExampleFiles(t *testing.T) {
	c, err := loadConfig("../../../../examples/rules.toml")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rules) == 0 {
		t.Error("examples/rules.toml has no rules")
	}
	hosts, err := loadTestbedConfig("../../../../examples/testbed.toml")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range c.Rules {
		if !strings.Contains(r.Hosts, "*") && !slices.ContainsFunc(hosts, func(h testbed.HostConfig) bool { return h.Name == r.Hosts }) {
			t.Errorf("rule for %q has no testbed host to rehearse it on", r.Hosts)
		}
	}
}

// polite bench takes the user's own flags as one more policy, "yours",
// rules included, and prints a legend of the columns and the policies
// (issue 18, item 5).
func TestBenchYourPolicy(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "rules.toml")
	if err := os.WriteFile(cfg, []byte("[[rule]]\nhosts = \"slow.test\"\nrate = 0.5\nadaptive = false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, code, stderr := parse(t, "bench", "--rate", "5", "--config", cfg)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	o := got.(*benchOptions)
	if n := len(o.Opts.Policies); n != len(politeness.Peers())+1 || o.Opts.Policies[n-1].Name != "yours" {
		t.Fatalf("policies %d, want the peers and yours last", n)
	}
	yours := o.Opts.Policies[len(o.Opts.Policies)-1]
	now := time.Now()
	if r := yours.NewRater("slow.test", now); r.Observe(now, adaptive.Signal{}) != 0.5 {
		t.Errorf("slow.test: rate %v, want the rule's fixed 0.5", r.Observe(now, adaptive.Signal{}))
	}
	if r, ok := yours.NewRater("other.test", now).(*adaptive.Controller); !ok || r.Rate() != 5 {
		t.Errorf("other.test: %T, want an adaptive controller at --rate 5", yours.NewRater("other.test", now))
	}
	if _, code, _ := parse(t, "bench", "--live", "--rate", "5"); code != ExitUsage {
		t.Errorf("--live --rate 5: exit %d, want a usage error", code)
	}

	code, stdout, stderr := politeCmd(t, "bench", "--scenario", "steady", "--policy", "static-10", "--rate", "3",
		"--adaptive=false", "--duration", "1s")
	if code != ExitOK {
		t.Fatalf("bench: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"yours", "goodput  ", "peak/cap  ", "your flags: --rate 3 --max-rate 3 --adaptive=false"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("bench output lacks %q:\n%s", want, stdout)
		}
	}
}

// A build from a checkout says which commit it is (issue 33, item 16):
// "(devel)" alone told a user nothing.
func TestVersionOf(t *testing.T) {
	for _, c := range []struct {
		main     string
		settings map[string]string
		want     string
	}{
		{"v1.2.3", map[string]string{"vcs.revision": "abc"}, "v1.2.3"},
		{"(devel)", nil, "(devel)"},
		{"(devel)", map[string]string{"vcs.revision": "3c8f50c1a2b4d5e6f708", "vcs.time": "2026-11-26T19:20:00Z", "vcs.modified": "false"}, "(devel) 3c8f50c1a2b4 2026-11-26"},
		{"", map[string]string{"vcs.revision": "3c8f50c1a2b4d5e6f708", "vcs.modified": "true"}, "(devel) 3c8f50c1a2b4+dirty"},
	} {
		bi := &debug.BuildInfo{Main: debug.Module{Version: c.main}}
		for k, v := range c.settings {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: k, Value: v})
		}
		if got := versionOf(bi); got != c.want {
			t.Errorf("%q %v: %q, want %q", c.main, c.settings, got, c.want)
		}
	}
}

// A duration in a testbed file given as a bare number would be
// nanoseconds: refused, naming the key and the line (issue 33, item 17).
func TestTestbedDurationWantsUnit(t *testing.T) {
	for _, src := range []string{
		"[[host]]\nName = \"a.test\"\nLatency = 50\n",
		"[[host]]\nName = \"a.test\"\nRate = 5\nSchedule = [{At = 30, Rate = 2}]\n",
	} {
		_, err := parseTestbedConfig("hosts.toml", []byte(src))
		if err == nil || !strings.Contains(err.Error(), "wants a unit") || !strings.Contains(err.Error(), "hosts.toml:") {
			t.Errorf("%q: %v, want an error asking for a unit", src, err)
		}
	}
	hosts, err := parseTestbedConfig("hosts.toml", []byte("[[host]]\nName = \"a.test\"\nLatency = \"50ms\"\nRate = 5\nSchedule = [{At = \"30s\", Rate = 2}]\n"))
	if err != nil || hosts[0].Latency != 50*time.Millisecond || hosts[0].Schedule[0].At != 30*time.Second {
		t.Errorf("with units: %+v, %v", hosts, err)
	}
}

// Flag values that mean nothing are refused, each naming the flag in its
// own terms (issue 33, item 12): a success status to retry, a ceiling
// under the starting rate or of zero, and pflag's parser jargon.
func TestNonsenseFlagsRefused(t *testing.T) {
	for _, c := range []struct {
		argv []string
		says string
	}{
		{[]string{"fetch", "--retry-on", "200", "x"}, `--retry-on "200": 200 is not an error status`},
		{[]string{"fetch", "--retry-on", "503,301", "x"}, "301 is not an error status"},
		{[]string{"fetch", "--retry-on", "abc", "x"}, `--retry-on "abc": "abc" is not an HTTP status`},
		{[]string{"fetch", "--max-rate", "1", "--rate", "5", "x"}, "--max-rate 1 is below --rate 5"},
		{[]string{"fetch", "--max-rate", "0", "x"}, "--max-rate 0: a ceiling of nothing"},
		{[]string{"fetch", "--workers", "many", "x"}, `--workers "many": not a number`},
		{[]string{"fetch", "--timeout", "5", "x"}, `--timeout "5": want a duration`},
		{[]string{"fetch", "--robots=maybe", "x"}, `--robots "maybe": want true or false`},
		{[]string{"proxy", "--max-rate", "2", "--rate", "3"}, "--max-rate 2 is below --rate 3"},
	} {
		_, code, stderr := parse(t, c.argv...)
		if code != ExitUsage || !strings.Contains(stderr, c.says) || strings.Contains(stderr, "invalid argument") {
			t.Errorf("%q: exit %d, %q; want %d saying %q", c.argv, code, stderr, ExitUsage, c.says)
		}
	}
	if _, code, stderr := parse(t, "fetch", "--retry-on", "429,500", "--max-rate", "5", "--rate", "5", "x"); code != 0 {
		t.Errorf("sound flags: exit %d: %s", code, stderr)
	}
}

// A rules file says what is wrong in its own terms (issue 33, item 11):
// rate = "inf" as --rate writes it is taken; a type error names the key
// and what it wants, on its line, once; every unknown key is reported,
// with the keys a rule takes, max_rate and adaptive among them.
func TestRulesFileMessages(t *testing.T) {
	_, err := parseConfig("rules.toml", []byte("[[rule]]\nhosts = \"a.test\"\nrate = \"inf\"\n[[rule]]\nhosts = \"b.test\"\nrate = 2\nmax_rate = \"8\"\n"))
	if err == nil || !strings.Contains(err.Error(), "rules.toml:7:") {
		t.Errorf("max_rate = \"8\": %v, want an error on line 7", err)
	}
	c, err := parseConfig("rules.toml", []byte("[[rule]]\nhosts = \"a.test\"\nrate = \"inf\"\n"))
	if err != nil || !math.IsInf(float64(*c.Rules[0].Rate), 1) {
		t.Errorf("rate = \"inf\": %+v, %v; want an unlimited rate", c, err)
	}
	for src, want := range map[string][]string{
		"[[rule]]\nhosts = \"a.test\"\nburst = \"5\"\n":      {"rules.toml:3: burst: want a whole number, not a string"},
		"[[rule]]\nhosts = \"a.test\"\nsmooth = 1\n":         {"rules.toml:3: smooth: want true or false, not a whole number"},
		"[[rule]]\nhosts = \"a.test\"\nrate = \"fast\"\n":    {"rules.toml:3:", `not "fast"`},
		"[[rule]]\nhosts = \"a.test\"\nrat = 5\nburts = 2\n": {`rules.toml:3: unknown key "rule.rat"`, `rules.toml:4: unknown key "rule.burts"`, "max_rate", "adaptive"},
	} {
		_, err := parseConfig("rules.toml", []byte(src))
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%q: %v, want it to say %q", src, err, w)
			}
		}
		if err != nil && (strings.Contains(err.Error(), "incompatible types") || strings.Count(err.Error(), "line 3") > 0) {
			t.Errorf("%q: the decoder's jargon: %v", src, err)
		}
	}
}

// TestDemoShowsEveryMechanism: each demo host has URLs left when its
// mechanism comes into play at the demo's ceiling, so the demo shows it
// (issue 33, item 16: drop.test finished before its capacity drop), and
// the line the demo prints about it names the same instant.
func TestDemoShowsEveryMechanism(t *testing.T) {
	got, code, _ := parse(t, "demo")
	if code != 0 {
		t.Fatalf("demo: exit %d", code)
	}
	ceiling := got.(*demoOptions).fetch.MaxRate
	for _, h := range testbed.DemoHosts() {
		for _, s := range h.Schedule {
			// Left at the step, at the ceiling from the start.
			left := float64(demoPages[h.Name]) - ceiling*s.At.Seconds()
			if left < 3*s.Rate {
				t.Errorf("%s: %d URLs at up to %v/s leave %.0f at its step at %v; want at least 3 s of them at %v/s",
					h.Name, demoPages[h.Name], ceiling, left, s.At, s.Rate)
			}
			if at := fmt.Sprintf("after %d s", int(s.At.Seconds())); !strings.Contains(demoAbout[h.Name], at) {
				t.Errorf("%s is described as %q, want %q", h.Name, demoAbout[h.Name], at)
			}
		}
		if h.SoftBlock.After > 0 && demoPages[h.Name] <= h.SoftBlock.After {
			t.Errorf("%s blocks after %d pages and the demo asks %d", h.Name, h.SoftBlock.After, demoPages[h.Name])
		}
	}
}

// TestIdleRules: a rule no host of the job picks is named with its file
// and line, and why: it matches none, or its hosts pick other rules
// (issue 33, item 11: a typo'd rule was accepted silently).
func TestIdleRules(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.toml")
	os.WriteFile(path, []byte(`[[rule]]
hosts = "*.shop.test"
rate = 1

[[rule]]
hosts = "fragil.test"
rate = 0.5

[[rule]]
hosts = "*.test"
rate = 2

[[rule]]
hosts = "fragile.test"
rate = 0.5
`), 0o644)
	c, err := loadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	hosts := []string{"a.shop.test", "b.shop.test", "fragile.test"}
	each := func(fn func(string) bool) error {
		for _, h := range hosts {
			if !fn(h) {
				break
			}
		}
		return nil
	}
	warns, err := c.idle(each, func(h string) string { return h })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		path + `:5: rule 2 (hosts = "fragil.test") applies to no host the list names: it matches none of the job's 3 hosts`,
		path + `:9: rule 3 (hosts = "*.test") applies to no host the list names: the hosts it matches pick rule 1 (hosts = "*.shop.test") first, as a.shop.test does`,
	}
	if !slices.Equal(warns, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(warns, "\n"), strings.Join(want, "\n"))
	}
	hosts = append(hosts, "fragil.test")
	if warns, _ := c.idle(each, func(h string) string { return h }); len(warns) != 1 || !strings.Contains(warns[0], "rule 3") {
		t.Errorf("with fragil.test listed: %q, want only rule 3's", warns)
	}
	hosts = append(hosts, "a.test")
	if warns, _ := c.idle(each, func(h string) string { return h }); len(warns) != 0 {
		t.Errorf("with every rule picked: %q, want none", warns)
	}
}
