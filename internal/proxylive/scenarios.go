package proxylive

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Harness runs the scenarios. Every server, proxy and client listens on
// or talks to 127.0.0.1 (and localhost, for TLS names) only.
type Harness struct {
	Polite  string // the built CLI; empty: only the rows without it run
	Dir     string // every run's files: logs, lists, configs
	Testdat string // this package's testdata (client scripts)
	Logf    func(format string, args ...any)
	// ScrapyURLs is scenario 1's list length: 1,500 (75 s at 20 r/s),
	// as make politeness-live's nginx-nodelay, so the figures compare.
	// Scenario 2 fetches 300 (30 s at 10 r/s), as its nginx-delay.
	ScrapyURLs int
	// Runs is how many times the Scrapy rows through polite proxy run;
	// the median run is judged, the worst reported.
	Runs int
	// ClientURLs is each client's list length in scenarios 3 and 4.
	ClientURLs int
	// LoadCount is each path's request count in the overhead run.
	LoadCount int
}

// Scenarios are the scenario names, in the order they run.
var Scenarios = []string{"scrapy", "delay", "clients", "connect", "overhead"}

// Run runs one scenario by name.
func (h *Harness) Run(ctx context.Context, name string) []Row {
	switch name {
	case "scrapy":
		return h.scrapy(ctx, "1 nodelay", Site{Rate: 20, Burst: 5, NoDelay: true, Status: 429}, h.ScrapyURLs)
	case "delay":
		return h.scrapy(ctx, "2 delay queue", Site{Rate: 10, Burst: 20, Status: 503}, 300)
	case "clients":
		return h.clients(ctx)
	case "connect":
		return h.connect(ctx)
	case "overhead":
		return h.overhead(ctx)
	}
	return []Row{{Scenario: name, Err: "no such scenario"}}
}

// scrapyProxyArgs are issue 32's flags for the Scrapy rows.
var scrapyProxyArgs = []string{"--allow-private", "--rate", "5", "--max-rate", "200", "--concurrency", "8", "--retries", "8", "--timeout", "5s"}

// scrapy runs Scrapy through polite proxy, then directly, then directly
// with AutoThrottle, each against a fresh nginx with site's limits.
func (h *Harness) scrapy(ctx context.Context, scenario string, site Site, urls int) []Row {
	if err := ensure(ctx, "python3:scrapy", "python3-scrapy"); err != nil {
		return []Row{{Scenario: scenario, Name: "Scrapy", Err: err.Error()}}
	}
	rows := []struct {
		name, sub   string
		proxied, at bool
	}{
		{"Scrapy → polite proxy", "proxy", true, false},
		{"Scrapy direct", "direct", false, false},
		{"Scrapy AutoThrottle direct", "autothrottle", false, true},
	}
	var out []Row
	for _, r := range rows {
		row := Row{Scenario: scenario, Name: r.name}
		if r.proxied && h.Polite == "" {
			row.Err = "no -polite binary"
			out = append(out, row)
			continue
		}
		// Capacity over the span: rate × span, plus the burst nodelay lets
		// through at once (a delay queue's burst only queues).
		burst := 0
		if site.NoDelay {
			burst = site.Burst
		}
		runs := 1
		if r.proxied {
			runs = max(h.Runs, 1)
		}
		var all []scrapyResult
		for i := range runs {
			dir := filepath.Join(h.Dir, strings.Fields(scenario)[0]+"-"+r.sub)
			if runs > 1 {
				dir += fmt.Sprintf("-%d", i+1)
			}
			var res scrapyResult
			res.fig, res.ok, res.secs, res.err = h.scrapyRun(ctx, dir, site, urls, r.proxied, r.at)
			res.capacity = res.fig.CapacityShare(site.Rate, burst)
			res.pass = res.err == nil && res.ok == urls && res.capacity >= 0.95 && res.fig.RefusedShare() <= 0.01
			res.key = res.fig.RefusedShare()
			if !site.NoDelay {
				res.pass = res.err == nil && res.ok == urls && res.fig.P95 <= 100*time.Millisecond && res.fig.Goodput() >= 8 && res.fig.Refused == 0
				res.key = res.fig.P95.Seconds()
			}
			h.Logf("%s / %s run %d: %s", scenario, r.name, i+1, res.line(urls, site.Rate, burst))
			all = append(all, res)
		}
		// The median run by the goal's own figure; the worst beside it.
		slices.SortStableFunc(all, func(a, b scrapyResult) int { return cmp.Compare(a.key, b.key) })
		med, worst := all[len(all)/2], all[len(all)-1]
		row.Measured = med.line(urls, site.Rate, burst)
		if runs > 1 {
			row.Measured = fmt.Sprintf("median of %d runs: %s; worst run: %.1f %% refused, %.0f %% of capacity, p95 %s",
				runs, row.Measured, 100*worst.fig.RefusedShare(), 100*worst.capacity, ms(worst.fig.P95))
		}
		if med.err != nil {
			row.Err = med.err.Error()
		}
		if r.proxied {
			row.Goal = "≥ 95 % of capacity, ≤ 1 % refused, every URL 200"
			if !site.NoDelay {
				row.Goal = "p95 ≤ 100 ms at ≥ 8 ok/s, no 503, every URL 200"
			}
			row.Pass = med.pass
		}
		out = append(out, row)
	}
	return out
}

// scrapyResult is one Scrapy run's figures.
type scrapyResult struct {
	fig      SiteFigures
	ok       int
	secs     float64
	err      error
	capacity float64
	pass     bool
	key      float64 // the goal's figure, to order runs by
}

func (r scrapyResult) line(urls, rate, burst int) string {
	f := r.fig
	return fmt.Sprintf("%d/%d ok at client in %.0f s; nginx: %d requests, %d×200, %d refused (%.1f %%), %.1f ok/s over %.1f s = %.0f %% of capacity (%d r/s × span + %d), p95 %s",
		r.ok, urls, r.secs, f.Requests, f.OK, f.Refused, 100*f.RefusedShare(), f.Goodput(), f.Span.Seconds(), 100*r.capacity, rate, burst, ms(f.P95))
}

// scrapyRun is one Scrapy crawl of urls paths against a fresh nginx:
// nginx's figures, the URLs Scrapy finished with 200, and its wall time.
func (h *Harness) scrapyRun(ctx context.Context, dir string, site Site, urls int, proxied, autothrottle bool) (SiteFigures, int, float64, error) {
	var fig SiteFigures
	n, err := startNginx(ctx, filepath.Join(dir, "nginx"), site)
	if err != nil {
		return fig, 0, 0, err
	}
	defer n.stop()
	list := make([]string, urls)
	for i := range list {
		list[i] = fmt.Sprintf("%s/s/%d", n.URL, i)
	}
	listPath := filepath.Join(dir, "urls.txt")
	if err := os.WriteFile(listPath, []byte(strings.Join(list, "\n")+"\n"), 0o644); err != nil {
		return fig, 0, 0, err
	}
	args := []string{filepath.Join(h.Testdat, "spider.py"), "--list", listPath, "--out", filepath.Join(dir, "scrapy.json"),
		"--log", filepath.Join(dir, "scrapy.log"), "--timeout", "300"}
	if autothrottle {
		args = append(args, "--autothrottle")
	}
	var p *proxy
	if proxied {
		// The audit log (attempts, waits, rate changes) explains a refusal.
		pargs := append(slices.Clone(scrapyProxyArgs), "--audit", filepath.Join(dir, "audit.jsonl"))
		if p, err = startPolite(h.Polite, dir, "polite", pargs...); err != nil {
			return fig, 0, 0, err
		}
		defer p.stop()
		args = append(args, "--proxy", p.URL)
	}
	t0 := time.Now()
	_, runErr := run(ctx, 6*time.Minute, nil, filepath.Join(dir, "scrapy.stderr"), python, args...)
	secs := time.Since(t0).Seconds()
	if p != nil {
		if !p.alive() {
			runErr = errors.Join(runErr, fmt.Errorf("polite proxy exited during the run: %s", tail(p.log, 2)))
		}
		p.stop()
		h.Logf("%s", p.summary())
	}
	hits, err := n.hits()
	if err != nil {
		return fig, 0, secs, err
	}
	fig = measureSite(hits, "/s/")
	var res struct {
		Statuses map[string]int `json:"statuses"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "scrapy.json"))
	if err == nil {
		err = json.Unmarshal(b, &res)
	}
	if runErr != nil {
		err = errors.Join(fmt.Errorf("scrapy: %v: %s", runErr, tail(filepath.Join(dir, "scrapy.stderr"), 2)), err)
	}
	return fig, countOK(res.Statuses, list), secs, err
}

// clientsProxyArgs are the proxy's flags for the four clients: the
// Scrapy flags, a higher starting rate (nginx has no limit here; the
// scenario checks that each request arrives once), and interception of
// localhost with nginx's CA trusted upstream.
func clientsProxyArgs(caDir, upstreamCA string) []string {
	return []string{"--allow-private", "--rate", "20", "--max-rate", "200", "--concurrency", "8", "--retries", "8", "--timeout", "5s",
		"--intercept", "localhost", "--ca-dir", caDir, "--upstream-ca", upstreamCA}
}

// clients has curl, wget, Python requests and Node undici each fetch a
// list through polite proxy, over plain HTTP (127.0.0.1) and intercepted
// HTTPS (localhost), against one nginx; nginx's log must show each path
// once.
func (h *Harness) clients(ctx context.Context) []Row {
	const scenario = "3 clients"
	if h.Polite == "" {
		return []Row{{Scenario: scenario, Err: "no -polite binary"}}
	}
	for _, t := range [][2]string{{"curl", "curl"}, {"wget", "wget"}, {"python3:requests", "python3-requests"}} {
		if err := ensure(ctx, t[0], t[1]); err != nil {
			return []Row{{Scenario: scenario, Err: err.Error()}}
		}
	}
	dir := filepath.Join(h.Dir, "3-clients")
	certs, err := makeUpstreamCerts(dir)
	if err != nil {
		return []Row{{Scenario: scenario, Err: err.Error()}}
	}
	caDir := filepath.Join(dir, "polite-ca")
	politeCA, err := h.politeCA(ctx, caDir)
	if err != nil {
		return []Row{{Scenario: scenario, Name: "polite proxy ca", Err: err.Error()}}
	}
	nodeDir := filepath.Join(h.Dir, "node")
	nodeErr := installUndici(ctx, nodeDir)
	if nodeErr == nil {
		nodeErr = copyFile(filepath.Join(h.Testdat, "undici_client.mjs"), filepath.Join(nodeDir, "undici_client.mjs"))
	}
	n, err := startNginx(ctx, filepath.Join(dir, "nginx"), Site{Cert: certs.Cert, Key: certs.Key})
	if err != nil {
		return []Row{{Scenario: scenario, Err: err.Error()}}
	}
	defer n.stop()
	p, err := startPolite(h.Polite, dir, "polite", clientsProxyArgs(caDir, certs.CA)...)
	if err != nil {
		return []Row{{Scenario: scenario, Err: err.Error()}}
	}
	defer p.stop()

	type clientRun struct {
		row    Row
		prefix string
		paths  []string
		ok     int
	}
	var runs []*clientRun
	for _, mode := range []string{"http", "https"} {
		origin, ca := n.URL, ""
		if mode == "https" {
			origin, ca = n.TLSURL("localhost"), politeCA
		}
		for _, client := range []string{"curl", "wget", "requests", "undici", "undici-tunnel"} {
			if client == "undici-tunnel" && mode == "https" {
				continue // https always tunnels
			}
			name := client + " " + mode
			if client == "undici-tunnel" {
				name = "undici http, default proxyTunnel (CONNECT)"
			}
			cr := &clientRun{row: Row{Scenario: scenario, Name: name}, prefix: fmt.Sprintf("/c/%s-%s/", client, mode)}
			runs = append(runs, cr)
			urls := make([]string, h.ClientURLs)
			for i := range urls {
				cr.paths = append(cr.paths, fmt.Sprintf("%s%d", cr.prefix, i))
				urls[i] = origin + cr.paths[i]
			}
			if strings.HasPrefix(client, "undici") && nodeErr != nil {
				cr.row.Err = nodeErr.Error()
				continue
			}
			t0 := time.Now()
			st, err := h.client(ctx, filepath.Join(dir, client+"-"+mode), client, p.URL, ca, urls)
			cr.ok = countOK(st, urls)
			cr.row.Measured = fmt.Sprintf("%d/%d 200 at client in %.1f s", cr.ok, len(urls), time.Since(t0).Seconds())
			if err != nil {
				cr.row.Err = err.Error()
			}
			h.Logf("%s / %s: %s %s", scenario, name, cr.row.Measured, cr.row.Err)
		}
	}
	alive := p.alive()
	p.stop()
	h.Logf("%s", p.summary())
	hits, err := n.hits()
	for _, cr := range runs {
		if cr.row.Err != "" && cr.row.Measured == "" {
			continue
		}
		if err != nil {
			cr.row.Err = err.Error()
			continue
		}
		once, missing, dup, extra := exactlyOnce(pathCounts(hits, cr.prefix), cr.paths)
		cr.row.Measured += fmt.Sprintf("; nginx: %d paths once, %d missing, %d more than once, %d unasked", once, missing, dup, extra)
		cr.row.Goal = "every URL 200 at the client, each path once in nginx's log"
		cr.row.Pass = cr.ok == len(cr.paths) && once == len(cr.paths) && extra == 0
		if !alive {
			cr.row.Err = strings.TrimSpace(cr.row.Err + " polite proxy exited during the scenario")
		}
	}
	var rows []Row
	for _, cr := range runs {
		rows = append(rows, cr.row)
	}
	return rows
}

// politeCA creates polite's CA in caDir and exports its certificate.
func (h *Harness) politeCA(ctx context.Context, caDir string) (string, error) {
	if _, err := run(ctx, time.Minute, nil, caDir+"-init.stderr", h.Polite, "proxy", "ca", "init", "--ca-dir", caDir); err != nil {
		return "", fmt.Errorf("polite proxy ca init: %v: %s", err, tail(caDir+"-init.stderr", 2))
	}
	pem, err := run(ctx, time.Minute, nil, caDir+"-export.stderr", h.Polite, "proxy", "ca", "export", "--ca-dir", caDir)
	if err != nil {
		return "", fmt.Errorf("polite proxy ca export: %v: %s", err, tail(caDir+"-export.stderr", 2))
	}
	if !strings.Contains(string(pem), "BEGIN CERTIFICATE") {
		return "", fmt.Errorf("polite proxy ca export printed no PEM certificate (%d bytes)", len(pem))
	}
	path := caDir + "-export.pem"
	return path, os.WriteFile(path, pem, 0o644)
}

// wgetOK matches a line of wget -nv for a URL fetched successfully.
var wgetOK = regexp.MustCompile(`URL:(\S+) \[`)

// client runs one client over urls through proxyURL, trusting ca (a PEM
// file; empty: the system's) for TLS, and returns each URL's status.
func (h *Harness) client(ctx context.Context, dir, client, proxyURL, ca string, urls []string) (map[string]int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	list := filepath.Join(dir, "urls.txt")
	if err := os.WriteFile(list, []byte(strings.Join(urls, "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	errPath := filepath.Join(dir, "stderr.txt")
	const limit = 4 * time.Minute
	switch client {
	case "curl":
		var cfg strings.Builder
		for _, u := range urls {
			fmt.Fprintf(&cfg, "url = %q\noutput = \"/dev/null\"\n", u)
		}
		cfgPath := filepath.Join(dir, "curl.cfg")
		if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o644); err != nil {
			return nil, err
		}
		args := []string{"-sS", "-x", proxyURL, "--max-time", "120", "-w", `%{http_code} %{url_effective}\n`, "-K", cfgPath}
		if ca != "" {
			args = append(args, "--cacert", ca)
		}
		out, err := run(ctx, limit, nil, errPath, "curl", args...)
		return clientResult(out, err, errPath)
	case "wget":
		args := []string{"--no-config", "-nv", "-O", "/dev/null", "--tries=1", "--timeout=120",
			"-e", "use_proxy=on", "-e", "http_proxy=" + proxyURL, "-e", "https_proxy=" + proxyURL, "-i", list}
		if ca != "" {
			args = append(args, "--ca-certificate="+ca)
		}
		_, err := run(ctx, limit, nil, errPath, "wget", args...)
		b, _ := os.ReadFile(errPath)
		st := map[string]int{}
		for _, m := range wgetOK.FindAllStringSubmatch(string(b), -1) {
			st[m[1]] = 200 // wget -nv names only URLs it fetched with a 2xx
		}
		return st, wrapClient(err, errPath)
	case "requests":
		var env []string
		if ca != "" {
			env = append(env, "REQUESTS_CA_BUNDLE="+ca)
		}
		out, err := run(ctx, limit, env, errPath, python, filepath.Join(h.Testdat, "requests_client.py"), "--list", list, "--proxy", proxyURL)
		return clientResult(out, err, errPath)
	case "undici", "undici-tunnel":
		mode := "notunnel"
		if client == "undici-tunnel" {
			mode = "tunnel"
		}
		out, err := run(ctx, limit, nil, errPath, "node", filepath.Join(h.Dir, "node", "undici_client.mjs"), proxyURL, list, ca, mode)
		return clientResult(out, err, errPath)
	}
	return nil, fmt.Errorf("no client %q", client)
}

// clientResult reads a client's "STATUS URL" lines, and its error with
// the last of its stderr and its first line that is not a 200.
func clientResult(out []byte, err error, errPath string) (map[string]int, error) {
	bad := firstBad(out)
	switch {
	case err != nil && bad != "":
		err = fmt.Errorf("%v: %s; first not 200: %s", err, tail(errPath, 2), bad)
	case err != nil:
		err = fmt.Errorf("%v: %s", err, tail(errPath, 2))
	case bad != "":
		err = fmt.Errorf("first not 200: %s", bad)
	}
	return clientStatuses(out), err
}

func wrapClient(err error, errPath string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%v: %s", err, tail(errPath, 2))
}

// connectProxyArgs are the CONNECT scenario's flags: no interception, so
// https is tunnelled and only tunnel opens can be paced.
var connectProxyArgs = []string{"--allow-private", "--rate", "5", "--burst", "1"}

// connect has clients open many separate tunnels to nginx's HTTPS port
// through polite proxy (not intercepting): nginx's log gives each
// connection's first request, and those must come at most rate + burst
// in any second.
func (h *Harness) connect(ctx context.Context) []Row {
	const scenario = "4 CONNECT"
	if h.Polite == "" {
		return []Row{{Scenario: scenario, Err: "no -polite binary"}}
	}
	if err := ensure(ctx, "python3:requests", "python3-requests"); err != nil {
		return []Row{{Scenario: scenario, Err: err.Error()}}
	}
	dir := filepath.Join(h.Dir, "4-connect")
	certs, err := makeUpstreamCerts(dir)
	if err != nil {
		return []Row{{Scenario: scenario, Err: err.Error()}}
	}
	n, err := startNginx(ctx, filepath.Join(dir, "nginx"), Site{Cert: certs.Cert, Key: certs.Key})
	if err != nil {
		return []Row{{Scenario: scenario, Err: err.Error()}}
	}
	defer n.stop()
	const rate, burst = 5, 1
	count := max(h.ClientURLs/4, 10)
	clients := []struct{ name, prefix string }{
		{"Python requests, a Session per URL, 8 threads", "/t/requests/"},
		{"curl --parallel-max 8, Connection: close", "/t/curl/"},
	}
	var rows []Row
	for _, c := range clients {
		row := Row{Scenario: scenario, Name: c.name}
		rows = append(rows, row)
		r := &rows[len(rows)-1]
		sub := filepath.Join(dir, strings.Trim(strings.ReplaceAll(c.prefix, "/", "-"), "-"))
		// A fresh proxy per client: each starts with a full bucket.
		p, err := startPolite(h.Polite, sub, "polite", connectProxyArgs...)
		if err != nil {
			r.Err = err.Error()
			continue
		}
		urls := make([]string, count)
		for i := range urls {
			urls[i] = fmt.Sprintf("%s%s%d", n.TLSURL("localhost"), c.prefix, i)
		}
		t0 := time.Now()
		st, err := h.connectClient(ctx, sub, c.prefix, p.URL, certs.CA, urls)
		ok := countOK(st, urls)
		r.Measured = fmt.Sprintf("%d/%d 200 at client in %.1f s", ok, count, time.Since(t0).Seconds())
		if err != nil {
			r.Err = err.Error()
		}
		if !p.alive() {
			r.Err = strings.TrimSpace(r.Err + " polite proxy exited during the run")
		}
		p.stop()
		h.Logf("%s", p.summary())
		h.Logf("%s / %s: %s %s", scenario, c.name, r.Measured, r.Err)
	}
	hits, err := n.hits()
	for i, c := range clients {
		r := &rows[i]
		if err != nil {
			r.Err = err.Error()
			continue
		}
		opens := connOpens(hits, c.prefix)
		most := maxInWindow(opens, 1)
		mean := meanRate(opens)
		r.Measured += fmt.Sprintf("; nginx: %d requests on %d connections, opened at %.2f/s, at most %d in any 1 s",
			len(pathCounts(hits, c.prefix)), len(opens), mean, most)
		r.Goal = fmt.Sprintf("tunnel opens ≤ %d/s (+burst %d): ≤ %d in any 1 s; every URL 200", rate, burst, rate+burst)
		r.Pass = most <= rate+burst && mean <= rate*1.05 && strings.HasPrefix(r.Measured, fmt.Sprintf("%d/%d ", count, count)) && len(opens) > 1
	}
	return rows
}

// connectClient fetches urls with a new connection (so a new tunnel) for
// each, trusting nginx's own CA (the tunnel is not intercepted).
func (h *Harness) connectClient(ctx context.Context, dir, prefix, proxyURL, ca string, urls []string) (map[string]int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	list := filepath.Join(dir, "urls.txt")
	if err := os.WriteFile(list, []byte(strings.Join(urls, "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	errPath := filepath.Join(dir, "stderr.txt")
	if strings.Contains(prefix, "requests") {
		out, err := run(ctx, 4*time.Minute, []string{"REQUESTS_CA_BUNDLE=" + ca}, errPath, python,
			filepath.Join(h.Testdat, "requests_client.py"), "--list", list, "--proxy", proxyURL, "--session-per-request", "--threads", "8")
		return clientResult(out, err, errPath)
	}
	var cfg strings.Builder
	for _, u := range urls {
		fmt.Fprintf(&cfg, "url = %q\noutput = \"/dev/null\"\n", u)
	}
	cfgPath := filepath.Join(dir, "curl.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o644); err != nil {
		return nil, err
	}
	// Connection: close reaches nginx inside the tunnel; nginx closes the
	// TLS connection after each response, so each URL needs a new tunnel.
	out, err := run(ctx, 4*time.Minute, nil, errPath, "curl", "-sS", "-p", "-x", proxyURL, "--cacert", ca,
		"--parallel", "--parallel-max", "8", "-H", "Connection: close", "--max-time", "120",
		"-w", `%{http_code} %{url_effective}\n`, "-K", cfgPath)
	return clientResult(out, err, errPath)
}

// overheadProxyArgs take every limit out of polite proxy's way, so what
// remains is its cost per request.
var overheadProxyArgs = []string{"--rate", "inf", "--adaptive=false", "--robots=false", "--concurrency", "64", "--workers", "256", "--allow-private"}

// overhead measures the client-side latency of requests direct to nginx
// (no limits), via tinyproxy and via polite proxy, in alternating rounds
// at concurrency 8 over keep-alive, then each path's ceiling at
// concurrency 32.
func (h *Harness) overhead(ctx context.Context) []Row {
	const scenario = "5 overhead"
	if err := ensure(ctx, "tinyproxy", "tinyproxy"); err != nil {
		return []Row{{Scenario: scenario, Err: err.Error()}}
	}
	dir := filepath.Join(h.Dir, "5-overhead")
	n, err := startNginx(ctx, filepath.Join(dir, "nginx"), Site{})
	if err != nil {
		return []Row{{Scenario: scenario, Err: err.Error()}}
	}
	defer n.stop()
	tp, err := startTinyproxy("tinyproxy", filepath.Join(dir, "tinyproxy"))
	if err != nil {
		return []Row{{Scenario: scenario, Err: err.Error()}}
	}
	defer tp.stop()
	paths := []struct{ name, proxy string }{{"direct", ""}, {"tinyproxy", tp.URL}}
	var pp *proxy
	politeErr := ""
	if h.Polite == "" {
		politeErr = "no -polite binary"
	} else if pp, err = startPolite(h.Polite, dir, "polite", overheadProxyArgs...); err != nil {
		politeErr = err.Error()
	} else {
		defer pp.stop()
		paths = append(paths, struct{ name, proxy string }{"polite proxy", pp.URL})
	}
	const rounds, conc, ceilConc = 4, 8, 32
	lat := make([]LoadResult, len(paths))
	ceil := make([]LoadResult, len(paths))
	for _, p := range paths { // warm-up: connections, the proxy's host state
		Load{Proxy: p.proxy, Origin: n.URL, Paths: 100, Count: 500, Concurrency: conc, Limit: 30 * time.Second}.Run(ctx)
	}
	for r := range rounds {
		for k := range paths {
			i := (k + r) % len(paths) // each path leads a round in turn
			res := Load{Proxy: paths[i].proxy, Origin: n.URL, Paths: 100, Count: h.LoadCount / rounds, Concurrency: conc, Limit: time.Minute}.Run(ctx)
			lat[i].OK += res.OK
			lat[i].Errors += res.Errors
			lat[i].Elapsed += res.Elapsed
			lat[i].NewConns += res.NewConns
			lat[i].Latency = append(lat[i].Latency, res.Latency...)
			if lat[i].FirstErr == "" {
				lat[i].FirstErr = res.FirstErr
			}
		}
	}
	for i, p := range paths {
		ceil[i] = Load{Proxy: p.proxy, Origin: n.URL, Paths: 100, Count: 5 * h.LoadCount, Concurrency: ceilConc, Limit: 10 * time.Second}.Run(ctx)
	}
	h.Logf("%s: %d CPUs, load average %s", scenario, runtime.NumCPU(), loadAvg())
	p50 := func(i int) time.Duration { return percentile(lat[i].Latency, 0.50) }
	p99 := func(i int) time.Duration { return percentile(lat[i].Latency, 0.99) }
	var rows []Row
	for i, p := range paths {
		row := Row{Scenario: scenario, Name: p.name}
		row.Measured = fmt.Sprintf("c=%d: %d ok, %d errors, p50 %s, p99 %s, %d new conns", conc, lat[i].OK, lat[i].Errors, ms(p50(i)), ms(p99(i)), lat[i].NewConns)
		if i > 0 {
			row.Measured += fmt.Sprintf("; added p50 %s, p99 %s", ms(p50(i)-p50(0)), ms(p99(i)-p99(0)))
		}
		row.Measured += fmt.Sprintf("; ceiling c=%d: %.0f req/s (%d errors)", ceilConc, ceil[i].Rate(), ceil[i].Errors)
		if lat[i].FirstErr != "" || ceil[i].FirstErr != "" {
			row.Measured += "; first error: " + lat[i].FirstErr + ceil[i].FirstErr
		}
		if p.name == "polite proxy" {
			a50, a99 := p50(2)-p50(0), p99(2)-p99(0)
			t50, t99 := p50(1)-p50(0), p99(1)-p99(0)
			r50, r99 := ratio(a50, t50), ratio(a99, t99)
			row.Measured += fmt.Sprintf("; added ÷ tinyproxy's: p50 %.2f×, p99 %.2f×", r50, r99)
			row.Goal = "added p50 and p99 ≤ 1.2× tinyproxy's, no errors"
			row.Pass = r50 <= 1.2 && r99 <= 1.2 && lat[i].Errors == 0 && ceil[i].Errors == 0
			if !pp.alive() {
				row.Err = "polite proxy exited during the run"
			}
		}
		rows = append(rows, row)
	}
	if politeErr != "" {
		rows = append(rows, Row{Scenario: scenario, Name: "polite proxy", Err: politeErr})
	}
	return rows
}

// ratio is a/b, with an added latency at or below zero counted as none.
func ratio(a, b time.Duration) float64 {
	if a <= 0 {
		return 0
	}
	if b <= 0 {
		return float64(a) / float64(time.Microsecond) // against nothing: large unless a is tiny
	}
	return float64(a) / float64(b)
}

// loadAvg is /proc/loadavg's first three figures.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}
