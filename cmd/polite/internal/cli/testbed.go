package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/polite-go/polite/testbed"
)

// testbedOptions are the settings of `polite testbed`.
type testbedOptions struct {
	Hosts    []testbed.HostConfig
	Addr     string        // one shared listener; "" gives each host its own 127.0.0.x address
	URLs     string        // write a URL list here
	Pages    int           // pages per host in that list
	Duration time.Duration // serve this long; 0 until a signal
	Stats    string        // write the hosts' server-side stats here (JSON) at the end

	Site      *testbed.Site // --site: serve a generated site instead of Hosts
	WriteSite string        // write the site's static copy here and exit
	AccessLog string        // write one line per request here
}

// testbedFile is a --config file for the testbed.
type testbedFile struct {
	Host []testbed.HostConfig `toml:"host"`
}

// testbedSiteFile is a --site file: one [site] table.
type testbedSiteFile struct {
	Site testbed.Site `toml:"site"`
}

const testbedLong = `Serve simulated hosts on loopback, to rehearse a crawl policy before
pointing it at the real web. Each host has a hidden capacity (a server-side
token bucket), answers beyond it with 429 or 503 (with or without Retry-After),
and may queue, time out, soft-block or change capacity mid-run.

By default the hosts are polite demo's; --hosts N serves N hosts with no limits
instead, and --config FILE reads hosts from TOML, one [[host]] table each, keys
named as testbed.HostConfig's fields (or, from a program, FILE.json: a JSON
array of testbed.HostConfig, durations in nanoseconds):

  [[host]]
  Name = "shop.test"
  Rate = 10                 # requests per second; 0 = unlimited
  Burst = 5
  Status = 429              # or 503
  RetryAfter = "seconds"    # "", "seconds" or "date"
  Latency = "50ms"
  Servers = 4               # served at once; more queue
  Robots = "User-agent: *\nDisallow: /private/\n"
  Schedule = [{At = "30s", Rate = 2, Burst = 1}]
  SoftBlock = {After = 100}   # or {Paths = ["/search"]}, {Always = true, Status = 200}

Each host gets its own address on 127.0.0.0/8 (Linux), printed with its name,
so any client reaches it; --addr serves all of them on one address instead,
routed by the Host header. The server runs until Ctrl-C (or --duration) and
then prints what each host received.

--site FILE serves a generated website instead (issue 35: link discovery):
hosts h00.site.test … h19.site.test with 10,000 pages between them, a link
graph with cycles, relative links, <base>, rel=nofollow and meta robots
nofollow, links in <script> and comments, robots.txt Disallow: /private/, a
sitemap index with gzipped parts (some pages only there), redirects, 404s,
deep chains, an endless calendar on h00 (/calendar/YYYY-MM.html) and links to
hosts outside the site (elsewhere0.test …). FILE is TOML with one [site]
table, keys named as testbed.Site's fields, every one optional (an empty
file is the site above), and [site.Host] for what every host gets, keys as
[[host]]'s (or FILE.json: a testbed.Site object):

  [site]
  Hosts = 20
  Pages = 10000
  Seed = 1
  Version = 0               # 1, 2 …: the same site with 1% of pages changed each
  [site.Host]
  Rate = 20
  Burst = 10
  Latency = "20ms"

The site is served on one loopback address (--addr, 127.0.0.1:0 by default)
routed by the Host header, as pages link to hosts by name: crawl it with
polite fetch --connect-to ::ADDR. Pages send ETag and Last-Modified and answer
conditional requests with 304. --urls writes each host's root (the seeds),
--site-version serves another Version of the same file, --write-site DIR
writes the site as static files, DIR/<host>/<path> (index.html for paths
ending in /), for nginx, and exits. --access-log FILE writes a line per
request, with any testbed: arrival time (RFC 3339, UTC), host, method, path
and query, status, body bytes, and "cond" for a conditional request or "-".`

func newTestbedCmd(e *env, runF func(context.Context, any) error) *cobra.Command {
	o := &testbedOptions{}
	var cfg, site string
	var hosts, siteVersion int
	c := &cobra.Command{
		Use:   "testbed [flags]",
		Short: "Serve simulated hosts on loopback",
		Long:  testbedLong,
		Example: `  polite testbed
  polite testbed --hosts 1000 --urls urls.txt --pages 100
  polite testbed --config hosts.toml --duration 2m --stats stats.json
  polite testbed --site site.toml --addr 127.0.0.1:8080 --urls seeds.txt --access-log access.log
  polite testbed --site site.toml --write-site www`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.parse(c, cfg, hosts, site, siteVersion); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), o)
			}
			return runTestbed(c.Context(), e, o)
		},
	}
	f := c.Flags()
	f.StringVar(&cfg, "config", "", "TOML `FILE` of [[host]] tables (see above)")
	f.IntVar(&hosts, "hosts", 0, "serve `N` hosts with no limits, h0.test … (instead of the demo's)")
	f.StringVar(&o.Addr, "addr", "", "serve every host on this loopback `ADDR` (such as 127.0.0.1:8080), routed by Host header")
	f.StringVar(&o.URLs, "urls", "", "write a URL list to `FILE`: --pages pages of every host, interleaved")
	f.IntVar(&o.Pages, "pages", 100, "pages per host in the --urls list")
	f.DurationVar(&o.Duration, "duration", 0, "stop after this long (0: at Ctrl-C)")
	f.StringVar(&o.Stats, "stats", "", "write each host's server-side stats, start time and 1-second timeline to `FILE` (JSON) when stopping")
	f.StringVar(&site, "site", "", "serve the generated website of `FILE` ([site] table, see above) on one address")
	f.IntVar(&siteVersion, "site-version", 0, "serve Version `N` of the --site: each version changes 1% of its pages")
	f.StringVar(&o.WriteSite, "write-site", "", "write the --site as static files under `DIR`, one directory per host, and exit")
	f.StringVar(&o.AccessLog, "access-log", "", "write a line per request to `FILE`: time host method path status bytes cond|-")
	return c
}

func (o *testbedOptions) parse(c *cobra.Command, cfg string, hosts int, site string, siteVersion int) error {
	switch {
	case site != "" && (cfg != "" || hosts > 0):
		return usageErr("testbed: --site and --config or --hosts: give one or the other")
	case site == "" && (o.WriteSite != "" || c.Flags().Changed("site-version")):
		return usageErr("testbed: --write-site and --site-version go with --site")
	case site != "" && c.Flags().Changed("pages"):
		return usageErr("testbed: --pages: not with --site, whose URL list is each host's root")
	case siteVersion < 0:
		return usageErr("--site-version %d: must not be negative", siteVersion)
	case site != "":
		s, err := loadTestbedSite(site)
		if err != nil {
			return &exitError{code: ExitUsage, err: err}
		}
		if c.Flags().Changed("site-version") {
			s.Version = siteVersion
		}
		o.Site = &s
		if o.Addr == "" {
			o.Addr = "127.0.0.1:0"
		}
		return nil
	case cfg != "" && hosts > 0:
		return usageErr("testbed: --config and --hosts: give one or the other")
	case hosts < 0 || hosts > 60000:
		return usageErr("--hosts %d: want 1 to 60000", hosts)
	case o.Pages < 1:
		return usageErr("--pages %d: must be at least 1", o.Pages)
	case o.Duration < 0:
		return usageErr("--duration %v: must not be negative", o.Duration)
	case cfg != "":
		var err error
		if o.Hosts, err = loadTestbedConfig(cfg); err != nil {
			return &exitError{code: ExitUsage, err: err}
		}
	case hosts > 0:
		o.Hosts = make([]testbed.HostConfig, hosts)
		for i := range o.Hosts {
			o.Hosts[i] = testbed.HostConfig{Name: fmt.Sprintf("h%d.test", i)}
		}
	default:
		o.Hosts = testbed.DemoHosts()
	}
	return nil
}

func loadTestbedConfig(name string) ([]testbed.HostConfig, error) {
	src, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	if strings.EqualFold(filepath.Ext(name), ".json") {
		return parseTestbedJSON(name, src)
	}
	return parseTestbedConfig(name, src)
}

// loadTestbedSite reads a --site file: TOML with a [site] table, or JSON
// (FILE.json) holding a testbed.Site.
func loadTestbedSite(name string) (testbed.Site, error) {
	src, err := os.ReadFile(name)
	if err != nil {
		return testbed.Site{}, fmt.Errorf("--site: %w", err)
	}
	var s testbed.Site
	if strings.EqualFold(filepath.Ext(name), ".json") {
		dec := json.NewDecoder(bytes.NewReader(src))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			return s, fmt.Errorf("%s: %w", name, err)
		}
	} else {
		var f testbedSiteFile
		md, err := decodeTOML(name, src, &f)
		if err != nil {
			return s, err
		}
		if und := md.Undecoded(); len(und) > 0 {
			k := und[0]
			return s, fmt.Errorf("%s:%d: unknown key %q", name, lineOfKeyIn(src, "site", k[len(k)-1]), k.String())
		}
		for _, k := range md.Keys() {
			if last := k[len(k)-1]; (last == "Latency" || last == "At") && md.Type(k...) == "Integer" {
				return s, fmt.Errorf("%s: %s: a duration wants a unit, as a string such as \"50ms\" or \"30s\"", name, k.String())
			}
		}
		s = f.Site
	}
	if err := s.Validate(); err != nil {
		return s, fmt.Errorf("%s: %v", name, err)
	}
	return s, nil
}

// parseTestbedJSON reads a testbed config written by a program: a JSON
// array of testbed.HostConfig (durations in nanoseconds).
func parseTestbedJSON(name string, src []byte) ([]testbed.HostConfig, error) {
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.DisallowUnknownFields()
	var hosts []testbed.HostConfig
	if err := dec.Decode(&hosts); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("%s: no hosts", name)
	}
	seen := map[string]bool{}
	for i, h := range hosts {
		if h.Name == "" {
			return nil, fmt.Errorf("%s: host %d has no Name", name, i+1)
		}
		if seen[strings.ToLower(h.Name)] {
			return nil, fmt.Errorf("%s: two hosts named %q", name, h.Name)
		}
		seen[strings.ToLower(h.Name)] = true
		if err := h.Validate(); err != nil {
			return nil, fmt.Errorf("%s: host %q: %v", name, h.Name, err)
		}
	}
	return hosts, nil
}

// HostReport is one host's entry in the --stats file: its Stats (at the
// top level, as before), when it started, and its 1-second windows.
type HostReport struct {
	testbed.Stats
	Started  time.Time        `json:"started"`
	Timeline []testbed.Second `json:"timeline"`
}

// parseTestbedConfig reads a testbed config file's contents; errors name the
// file and line.
func parseTestbedConfig(name string, src []byte) ([]testbed.HostConfig, error) {
	var f testbedFile
	md, err := decodeTOML(name, src, &f)
	if err != nil {
		return nil, err
	}
	if und := md.Undecoded(); len(und) > 0 {
		k := und[0]
		return nil, fmt.Errorf("%s:%d: unknown key %q", name, lineOfKeyIn(src, "host", k[len(k)-1]), k.String())
	}
	for _, k := range md.Keys() {
		// A duration given as a bare number decodes as nanoseconds:
		// Latency = 50 would be 50 ns, silently (issue 33, item 17).
		if last := k[len(k)-1]; (last == "Latency" || last == "At") && md.Type(k...) == "Integer" {
			return nil, fmt.Errorf("%s:%d: %s: a duration wants a unit, as a string such as \"50ms\" or \"30s\"", name, lineOfKeyIn(src, "host", last), k.String())
		}
	}
	if len(f.Host) == 0 {
		return nil, fmt.Errorf("%s: no [[host]] tables", name)
	}
	seen := map[string]bool{}
	for i, h := range f.Host {
		line := lineOfNthTable(src, "host", i)
		if h.Name == "" {
			return nil, fmt.Errorf("%s:%d: host %d has no Name", name, line, i+1)
		}
		if seen[strings.ToLower(h.Name)] {
			return nil, fmt.Errorf("%s:%d: two hosts named %q", name, line, h.Name)
		}
		seen[strings.ToLower(h.Name)] = true
		if err := h.Validate(); err != nil {
			return nil, fmt.Errorf("%s:%d: host %q: %v", name, line, h.Name, err)
		}
	}
	return f.Host, nil
}

func runTestbed(ctx context.Context, e *env, o *testbedOptions) error {
	hosts := o.Hosts
	var web *testbed.Website
	if o.Site != nil {
		var err error
		if web, err = o.Site.Generate(); err != nil {
			return &exitError{code: ExitUsage, err: err}
		}
		if o.WriteSite != "" {
			if err := web.WriteFiles(o.WriteSite); err != nil {
				return &exitError{code: ExitFatal, err: err}
			}
			c := web.Counts()
			fmt.Fprintf(e.stdout, "wrote %d hosts, %d pages (and robots.txt, sitemaps, assets, %d calendar months either side of 2026-01) under %s\n",
				c.Hosts, c.Pages, testbed.StaticMonths, o.WriteSite)
			return nil
		}
		hosts = web.HostConfigs()
	}
	srv := testbed.NewServer(hosts...)
	if o.AccessLog != "" {
		f, err := os.Create(o.AccessLog)
		if err != nil {
			return &exitError{code: ExitFatal, err: err}
		}
		defer f.Close()
		access := &testbed.AccessLog{Out: f}
		srv.SetAccessLog(access)
		defer func() {
			if err := access.Err(); err != nil {
				fmt.Fprintf(e.stderr, "polite testbed: --access-log: %v\n", err)
			}
		}()
	}
	var err error
	if o.Addr != "" {
		err = srv.StartAt(o.Addr)
	} else {
		err = srv.StartPerHostIP()
	}
	if err != nil {
		return &exitError{code: ExitFatal, err: err}
	}
	defer srv.Close()
	url := func(h *testbed.Host) string {
		if o.Addr != "" {
			return "http://" + h.Name()
		}
		return srv.URL(h.Name())
	}
	var nURLs int
	if o.URLs != "" && web != nil {
		seeds := web.Seeds()
		nURLs = len(seeds)
		if err := os.WriteFile(o.URLs, []byte(strings.Join(seeds, "\n")+"\n"), 0o644); err != nil {
			return &exitError{code: ExitFatal, err: err}
		}
	} else if o.URLs != "" {
		nURLs = o.Pages * len(hosts)
		var b strings.Builder
		for p := range o.Pages {
			for _, h := range srv.Hosts() {
				fmt.Fprintf(&b, "%s/page/%d\n", url(h), p)
			}
		}
		if err := os.WriteFile(o.URLs, []byte(b.String()), 0o644); err != nil {
			return &exitError{code: ExitFatal, err: err}
		}
	}
	if len(hosts) <= 50 {
		tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		for _, h := range srv.Hosts() {
			fmt.Fprintf(tw, "%s\t%s\n", h.Name(), url(h))
		}
		tw.Flush()
	} else {
		fmt.Fprintf(e.stdout, "%d hosts, %s … %s\n", len(hosts), url(srv.Hosts()[0]), url(srv.Hosts()[len(hosts)-1]))
	}
	if o.Addr != "" {
		fmt.Fprintf(e.stdout, "listening on %s, routed by Host header: polite fetch --connect-to ::%s URLFILE (curl --connect-to ::%s http://%s/)\n",
			srv.Addr(), srv.Addr(), srv.Addr(), hosts[0].Name)
	}
	if web != nil {
		c := web.Counts()
		fmt.Fprintf(e.stdout, "site: %d pages over %d hosts, version %d\n", c.Pages, c.Hosts, web.Site().Version)
	}
	if o.URLs != "" {
		fmt.Fprintf(e.stdout, "wrote %d URLs to %s\n", nURLs, o.URLs)
	}
	fmt.Fprintln(e.stdout, "serving; Ctrl-C to stop")

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Duration)
		defer cancel()
	}
	<-ctx.Done()

	stats := map[string]HostReport{}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "host\tarrivals\tadmitted\trejected\tshed\tblocked\ttimed out\tmax in flight\tp95\tpeak 1s\tcapacity\t")
	for i, h := range srv.Hosts() {
		s := h.Stats()
		stats[h.Name()] = HostReport{Stats: s, Started: h.Started(), Timeline: h.Timeline()}
		if i < 50 {
			peak, capacity := peakSecond(h.Timeline())
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%s\t\n", h.Name(), s.Arrivals, s.Admitted, s.Rejected, s.Shed,
				s.Blocked, s.TimedOut, s.MaxInFlight, fmtDur(s.P95), peak, capacity)
		}
	}
	tw.Flush()
	fmt.Fprintln(e.stdout, "peak 1s: the most requests admitted in one second; capacity: what the host could admit in that second (- unlimited)")
	if o.Stats != "" {
		b, _ := json.MarshalIndent(stats, "", "  ")
		if err := os.WriteFile(o.Stats, b, 0o644); err != nil {
			return &exitError{code: ExitFatal, err: err}
		}
	}
	return nil
}

// peakSecond returns the most requests a host admitted in one of its
// 1-second windows, and the capacity it had in that window ("-" when
// unlimited): how close a client came to the host's limit at its busiest.
func peakSecond(win []testbed.Second) (int, string) {
	best := -1
	for i, w := range win {
		if best < 0 || w.Admitted > win[best].Admitted {
			best = i
		}
	}
	if best < 0 {
		return 0, "-"
	}
	if c := win[best].Capacity; c > 0 {
		return win[best].Admitted, strconv.FormatFloat(math.Round(c*10)/10, 'f', -1, 64)
	}
	return win[best].Admitted, "-"
}
