package followlive

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/polite-go/polite/internal/politeness"
	"github.com/polite-go/polite/testbed"
)

// wgetWait is wget's --wait: seconds between its requests.
const wgetWait = "0.1"

// staticSite is nginx serving the site's static copy (testbed
// --write-site) by Host header, `root WWW/$host; absolute_redirect off;`,
// as the README says, with an access log in nginxFormat. A request in
// forward-proxy form (GET http://h00.site.test/ …, wget's with
// http_proxy) names its host in the request line, which nginx takes as
// $host: so wget, which has no --connect-to, reaches the site by name on
// loopback with no DNS.
func staticSite(ctx context.Context, prefix, www string) (*politeness.NginxProc, string, error) {
	addr, err := politeness.FreeLoopbackAddr()
	if err != nil {
		return nil, "", err
	}
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;" // workers read the run dir, private to root
	}
	conf := fmt.Sprintf(`%s
worker_processes 1;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log warn;
events { worker_connections 1024; }
http {
  log_format site '%[3]s';
  access_log off;
  client_body_temp_path %[2]s/tmp/body;
  proxy_temp_path %[2]s/tmp/proxy;
  types { text/html html; text/plain txt; application/xml xml; application/gzip gz; text/css css; image/png png; }
  server {
    listen %[4]s;
    root %[5]s/$host;
    absolute_redirect off;
    access_log %[2]s/access.log site;
  }
}
`, user, prefix, nginxFormat, addr, www)
	p, err := politeness.RunNginx(ctx, prefix, conf, addr)
	if err != nil {
		return nil, "", fmt.Errorf("followlive: %w", err)
	}
	return p, addr, nil
}

// Crawler is one crawler's figures against the static copy, from nginx's
// access log.
type Crawler struct {
	Name     string
	Command  string
	Wall     time.Duration
	Err      string
	Requests int
	Status   map[int]int
	// Pages is the distinct URLs requested that are pages (neither
	// robots.txt, sitemaps nor assets); Covered those of Expected's
	// Fetch; Months the calendar months; Assets the assets.
	Pages, Covered, Months, Assets int
	// Repeats is the URLs answered more than once.
	Repeats []string
	// Never is the requests for URLs no correct crawl requests, by why
	// (nofollow, script, comment, disallowed, out of scope).
	Never   map[string]int
	ExNever string
	// Windows: each host's busiest 1-second window against the rate
	// asked; All the same over every host together.
	Windows  Windows
	AllPeak  int
	Problems Problems
	pages    map[string]bool
}

// WgetFigures are part 5's.
type WgetFigures struct {
	Load                 string
	Wget, Polite         Crawler
	OnlyWget, OnlyPolite int
	ExOnlyWget, ExPolite string
}

// WgetPart is part 5: the site's static copy served by nginx, crawled by
// Debian's wget and by polite, each against an nginx of its own.
func (h *Harness) WgetPart(ctx context.Context) (WgetFigures, []Row, error) {
	ctx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()
	f := WgetFigures{Load: loadAvg()}
	dir := filepath.Join(h.Dir, "wget")
	www := filepath.Join(dir, "www")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return f, nil, err
	}
	if _, err := run(ctx, h.Polite, dir, "write-site", "testbed", "--site", h.site, "--write-site", www); err != nil {
		return f, nil, err
	}
	wget, err := exec.LookPath("wget")
	if err != nil {
		return f, nil, fmt.Errorf("followlive: wget not found (apt-get install wget)")
	}
	var rows []Row
	row := func(fig, val, goal, src string, bad bool) {
		rows = append(rows, Row{Part: "wget", Figure: fig, Measured: val, Goal: goal, From: src, Bad: bad})
	}
	seeds := h.seeds
	seedFile := filepath.Join(dir, "seeds.txt")
	if err := os.WriteFile(seedFile, []byte(strings.Join(seeds, "\n")+"\n"), 0o644); err != nil {
		return f, nil, err
	}
	crawlers := []struct {
		c    *Crawler
		args func(addr string) (string, []string)
	}{
		{&f.Wget, func(addr string) (string, []string) {
			return wget, append([]string{"-r", "-l", strconv.Itoa(h.Depth), "--wait", wgetWait, "-e", "robots=on", "-H", "-D", h.web.Site().Domain,
				"-e", "use_proxy=yes", "-e", "http_proxy=" + addr, "-P", filepath.Join(dir, "wget-files"), "-nv"}, seeds...)
		}},
		{&f.Polite, func(addr string) (string, []string) {
			return h.Polite, h.fetchArgs(addr, filepath.Join(dir, "polite-out"), seedFile)
		}},
	}
	for i, cr := range crawlers {
		name := []string{"wget", "polite"}[i]
		cr.c.Name = name
		ng, addr, err := staticSite(ctx, filepath.Join(dir, "nginx-"+name), www)
		if err != nil {
			return f, rows, err
		}
		bin, args := cr.args(addr)
		cr.c.Command = filepath.Base(bin) + " " + joinArgs(args)
		p, err := run(ctx, bin, dir, name, args...)
		if p != nil {
			cr.c.Wall = p.Wall
		}
		if err != nil {
			// wget exits 8 when a server answered an error (the site's
			// 404s), 3 when it could not write a file (/m/N's file where
			// /m/N/index.html made a directory): nginx's log still tells
			// what it requested.
			cr.c.Err = err.Error()
		}
		ng.Stop()
		reqs, rerr := readNginxLog(filepath.Join(ng.Prefix, "access.log"))
		if rerr != nil {
			return f, rows, rerr
		}
		rate := float64(crawlRate)
		burst := crawlBurst
		if name == "wget" {
			rate, burst = 10, 1 // --wait 0.1: 10 a second over every host, give or take one
		}
		h.judge(cr.c, reqs, rate, burst)
	}
	f.OnlyWget, f.OnlyPolite, f.ExOnlyWget, f.ExPolite = diff(boolSet(f.Wget.pages), boolSet(f.Polite.pages))

	const from = "nginx access log"
	for _, c := range []*Crawler{&f.Wget, &f.Polite} {
		n := c.Name
		// Goals are polite's: wget's figures are the comparison.
		isPolite := n == "polite"
		row := func(fig, val, goal, src string, bad bool) { row(fig, val, goal, src, bad && isPolite) }
		row(n+": command", c.Command, "", "", false)
		if c.Err != "" {
			row(n+": exit", c.Err, "", "", true)
		}
		row(n+": wall", c.Wall.Round(time.Millisecond).String(), "", n+" process", false)
		row(n+": requests, by status", fmt.Sprintf("%d: %s", c.Requests, fmtCounts(c.Status)), "", from, false)
		row(n+": page URLs requested (of Expected's fetch), calendar months, assets", fmt.Sprintf("%d (%d of %d), %d, %d", c.Pages, c.Covered, len(h.expect.Fetch), c.Months, c.Assets), "", from, false)
		row(n+": URLs answered more than once", fmt.Sprintf("%d %s", len(c.Repeats), first(c.Repeats, 3)), "0", from, len(c.Repeats) > 0)
		row(n+": requests that must never be, by why", fmt.Sprintf("%s %s", orNone(fmtCounts(c.Never)), c.ExNever), "none", from+" vs Expected.Never", len(c.Never) > 0)
		goal := fmt.Sprintf("asked --rate %d --burst %d a host: ≤ %d", crawlRate, crawlBurst, crawlRate+crawlBurst)
		if n == "wget" {
			goal = "asked --wait " + wgetWait + ": ≤ 10 a second over all hosts (+1)"
		}
		row(n+": busiest 1-s window: a host / all hosts", fmt.Sprintf("%d (%s) / %d", c.Windows.Worst, c.Windows.WorstHost, c.AllPeak), goal, from, false)
		row(n+": Expectation.Check", c.Problems.Short(), "", from, false)
	}
	row("page URLs: only wget / only polite", fmt.Sprintf("%d / %d (e.g. %s / %s)", f.OnlyWget, f.OnlyPolite, orNone(f.ExOnlyWget), orNone(f.ExPolite)), "", from, false)
	return f, rows, nil
}

// judge reads a crawler's requests against the site's expectation.
func (h *Harness) judge(c *Crawler, reqs []testbed.Request, rate float64, burst int) {
	e := h.expect
	fetch := setOf(e.Fetch)
	assets := setOf(e.Assets)
	sitemaps := setOf(e.Sitemaps)
	c.Requests = len(reqs)
	c.Status = statuses(reqs)
	c.pages = map[string]bool{}
	c.Never = map[string]int{}
	var all []time.Time
	months, as := map[string]bool{}, map[string]bool{}
	for _, r := range reqs {
		all = append(all, r.Time)
		u := urlOf(r)
		switch {
		case r.URI == "/robots.txt" || sitemaps[u]:
		case assets[u]:
			as[u] = true
		default:
			c.pages[u] = true
			if strings.HasPrefix(r.URI, "/calendar/") {
				months[u] = true
			}
		}
		if why := e.Never[u]; why != "" {
			if len(c.Never) == 0 {
				c.ExNever = u
			}
			c.Never[why]++
		}
	}
	c.Pages, c.Months, c.Assets = len(c.pages), len(months), len(as)
	for u := range c.pages {
		if fetch[u] {
			c.Covered++
		}
	}
	c.Repeats = repeats(reqs)
	c.Windows = windows(reqs, rate, burst)
	for i := range all {
		all[i] = all[i].UTC()
	}
	c.AllPeak = peak(all)
	c.Problems = problems(e.Check(reqs))
}

// peak is the most arrivals within any closed 1-second window.
func peak(ts []time.Time) int {
	ts = slices.Clone(ts)
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	best, j := 0, 0
	for i := range ts {
		for j < len(ts) && ts[j].Sub(ts[i]) <= time.Second {
			j++
		}
		best = max(best, j-i)
	}
	return best
}

func setOf(list []string) map[string]bool {
	m := make(map[string]bool, len(list))
	for _, u := range list {
		m[u] = true
	}
	return m
}

func boolSet(m map[string]bool) map[string]int {
	out := make(map[string]int, len(m))
	for k := range maps.Keys(m) {
		out[k] = 1
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func joinArgs(args []string) string { return strings.Join(args, " ") }
