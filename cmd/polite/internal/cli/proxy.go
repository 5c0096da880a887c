package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/audit"
	"github.com/polite-go/polite/crawl"
	"github.com/polite-go/polite/proxy"
)

// proxyOptions are the settings of `polite proxy`: fetch's policy flags
// and the proxy's own.
type proxyOptions struct {
	fetchOptions
	Listen     string
	MaxWait    time.Duration
	ProxyAuth  string // ACCOUNT:PASSWORD; "": loopback clients only
	Intercept  []string
	CADir      string
	UpstreamCA []string
	TunnelCap  int
	Audit      string // audit log file
	Verbose    bool   // log each answer the proxy gives itself
}

const proxyLong = `Serve an HTTP forward proxy whose requests go through polite: point any
client's http_proxy at it (Scrapy, curl, wget, Python requests, Node) and
every host it talks to gets polite's rate, in-flight cap, pause on 429/503,
adaptive rate, robots.txt, breaker and retries, shared with --redis by a
fleet of proxies and workers.

Plain HTTP gets all of it. A request over its host's budget is held up to
--max-wait, then answered 429 (or 503 when the host paused us) with
Retry-After and a Proxy-Status field saying why. HTTPS goes through CONNECT
tunnels, which polite paces per host as connections only (a tunnel opens
when the host's rate allows one, at most --tunnel-cap at once): requests
inside a tunnel are the client's to pace. For hosts named by --intercept,
polite ends the client's TLS with a certificate from its own CA (make it
with 'polite proxy ca init' and give the client 'polite proxy ca export'),
verifies the origin's certificate itself, and paces every request.

Per request, a client may send Polite-Priority (interactive, normal,
bulk), Polite-Cost (tokens), Polite-No-Retry (1) and Polite-Max-Wait; or
put them in the proxy user name: http://priority=bulk,max-wait=10s:x@HOST:PORT.
They are never sent upstream.

The proxy serves loopback clients only. Listening on another address needs
--proxy-auth, and every client then sends those credentials.`

func newProxyCmd(e *env, runF func(context.Context, any) error) *cobra.Command {
	o := &proxyOptions{}
	var rate, key string
	c := &cobra.Command{
		Use:   "proxy [flags]",
		Short: "An HTTP forward proxy that gives any client polite's per-host limits",
		Long:  proxyLong + "\n" + configHelp,
		Example: `  polite proxy --rate 2 --concurrency 4
  http_proxy=http://127.0.0.1:8899 curl http://example.com/
  HTTP_PROXY=http://127.0.0.1:8899 scrapy crawl myspider
  polite proxy ca init && polite proxy --intercept '*.example.com'`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.parseProxy(rate, key); err != nil {
				return err
			}
			if c.Flags().Changed("rate") && !c.Flags().Changed("max-rate") && o.Rate < 1e308 {
				o.MaxRate = o.Rate
			}
			if err := o.checkRates(c.Flags().Changed("max-rate")); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), o)
			}
			return runProxy(c.Context(), e, o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Listen, "listen", "127.0.0.1:8899", "`ADDR` to listen on (loopback unless --proxy-auth; port 0 picks one, printed at start)")
	addPolicyFlags(f, &o.fetchOptions, &rate, &key)
	f.DurationVar(&o.MaxWait, "max-wait", proxy.DefaultMaxWait, "longest a request over its host's budget is held before it is answered 429 or 503 with Retry-After (a request's Polite-Max-Wait may ask for less); 0 holds none")
	f.IntVar(&o.Workers, "workers", 256, "upstream requests in flight over all hosts")
	f.IntVar(&o.Retries, "retries", crawl.DefaultRetries, "retries of an idempotent request inside the proxy (429/503, 408/504, 5xx, no response) before its last answer goes to the client")
	f.DurationVar(&o.MaxDelay, "max-delay", 30*time.Second, "cap of every wait polite chooses itself: backoff between retries, breaker open delay")
	f.DurationVar(&o.MaxRetryAfter, "max-retry-after", crawl.DefaultMaxRetryAfter, "longest Retry-After a request is retried after; a longer pause passes the origin's answer on and holds the host")
	f.DurationVar(&o.Timeout, "timeout", 30*time.Second, "time limit for an origin's response header, each attempt")
	f.BoolVar(&o.AllowPrivate, "allow-private", false, "connect to non-public addresses too (loopback, private, link-local); by default the proxy reaches public addresses only")
	f.StringVar(&o.Config, "config", "", "TOML `FILE` of per-host rules (see below)")
	f.StringVar(&o.Redis, "redis", "", "Redis `URL` through which proxies and workers share each host's rate, pause, breaker and retry budget")
	f.StringVar(&o.Fleet, "fleet", "default", "the fleet's `NAME` in Redis")
	f.StringVar(&o.Outage, "outage", "local", "while Redis does not answer: local, closed or open (as polite fetch)")
	f.DurationVar(&o.OutageLocalFor, "outage-local-for", 5*time.Minute, "how long --outage local lasts before it turns closed")
	f.StringVar(&o.Metrics, "metrics", "", "serve Prometheus metrics on `ADDR`'s /metrics")
	f.IntVar(&o.MetricsHost, "metrics-hosts", defaultMetricsHosts, metricsHostsHelp)
	f.StringVar(&o.Audit, "audit", "", "append polite's decisions (attempts, waits, pauses, rate changes) to `FILE` as JSON lines")
	f.StringVar(&o.ProxyAuth, "proxy-auth", "", "`ACCOUNT:PASSWORD` every client must send (Proxy-Authorization: Basic); needed to listen beyond loopback (or set POLITE_PROXY_AUTH, which ps does not show)")
	f.StringArrayVar(&o.Intercept, "intercept", nil, "end TLS for CONNECT hosts matching `PATTERN` (a glob such as '*.example.com'; repeatable) with polite's CA, so their requests are paced one by one")
	f.StringVar(&o.CADir, "ca-dir", defaultCADir(), "`DIR` of the CA --intercept signs with (polite proxy ca init makes it)")
	f.StringArrayVar(&o.UpstreamCA, "upstream-ca", nil, "PEM `FILE` of CA certificates trusted for origins, beside the system's (repeatable)")
	f.IntVar(&o.TunnelCap, "tunnel-cap", 0, "CONNECT tunnels open at once per host (default --concurrency)")
	f.BoolVarP(&o.Verbose, "verbose", "v", false, "log each answer the proxy gives itself (held, refused, failed upstream)")
	f.SortFlags = false
	c.AddCommand(newCACmd(e))
	return c
}

// defaultCADir is where the proxy's CA lives unless --ca-dir says.
func defaultCADir() string {
	d, err := os.UserConfigDir()
	if err != nil {
		return "polite-ca"
	}
	return filepath.Join(d, "polite", "proxy-ca")
}

// parseProxy checks the proxy's flags (and fetch's it shares).
func (o *proxyOptions) parseProxy(rate, key string) error {
	// fetch's options the proxy has no flag for take their defaults.
	o.Progress, o.Lane, o.OwnList = "none", "normal", o.Redis != ""
	o.MaxURLLen, o.Grace, o.HostGiveUp = crawl.DefaultMaxURLLen, crawl.DefaultGrace, crawl.DefaultHostGiveUp
	if o.OutageClosedFor == 0 {
		o.OutageClosedFor = 10 * time.Minute
	}
	if err := o.parse(rate, "10MiB", key, "none"); err != nil {
		return err
	}
	if o.MaxWait < 0 {
		return usageErr("--max-wait %v: must not be negative", o.MaxWait)
	}
	if o.TunnelCap < 0 {
		return usageErr("--tunnel-cap %d: must not be negative", o.TunnelCap)
	}
	if o.TunnelCap == 0 {
		o.TunnelCap = o.Concurrency
	}
	if o.ProxyAuth == "" {
		// From the environment, the credentials stay out of ps.
		o.ProxyAuth = os.Getenv("POLITE_PROXY_AUTH")
	}
	if o.ProxyAuth != "" {
		a, p, ok := strings.Cut(o.ProxyAuth, ":")
		if !ok || a == "" || p == "" || strings.Contains(a, ",") || strings.Contains(a, "=") {
			return usageErr("--proxy-auth: want ACCOUNT:PASSWORD, both non-empty, the account without ',' or '='")
		}
	}
	host, _, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return usageErr("--listen %q: want HOST:PORT (%v)", o.Listen, err)
	}
	if !loopbackHost(host) && o.ProxyAuth == "" {
		return usageErr("--listen %s: beyond loopback the proxy would be an open relay; give --proxy-auth ACCOUNT:PASSWORD too", o.Listen)
	}
	for _, p := range o.Intercept {
		if p == "" || !validGlob(strings.ToLower(p)) {
			return usageErr("--intercept %q: want a host glob such as '*.example.com' or 'api.example.com'", p)
		}
	}
	return nil
}

// loopbackHost reports whether a --listen host is a loopback one.
func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.IsLoopback()
}

// intercepts returns the matcher of the --intercept globs.
func intercepts(pats []string) func(string) bool {
	if len(pats) == 0 {
		return nil
	}
	lower := make([]string, len(pats))
	for i, p := range pats {
		lower[i] = strings.ToLower(p)
	}
	return func(host string) bool {
		host = strings.ToLower(strings.TrimSuffix(host, "."))
		for _, p := range lower {
			if ok, _ := path.Match(p, host); ok {
				return true
			}
		}
		return false
	}
}

// proxyBase is the proxy's upstream *http.Transport: fetch's, connecting
// to public addresses only unless --allow-private, trusting --upstream-ca
// too, and bounding each attempt's wait for a response header.
func (o *proxyOptions) proxyBase() (*http.Transport, error) {
	b := crawl.NewBase(o.Workers)
	// The proxy is the proxy: an http_proxy in its own environment (one
	// pointing at itself, say) must not send its requests elsewhere.
	b.Proxy = nil
	if !o.AllowPrivate {
		publicOnly(b, &loopbackPorts{}, o.Connect.allows)
	}
	o.Connect.wrap(b)
	crawl.LimitConns(b, o.Workers)
	b.ResponseHeaderTimeout = o.Timeout
	b.MaxIdleConnsPerHost = max(b.MaxIdleConnsPerHost, o.Concurrency)
	if len(o.UpstreamCA) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		for _, f := range o.UpstreamCA {
			pem, err := os.ReadFile(f)
			if err != nil {
				return nil, usageErr("--upstream-ca: %v", err)
			}
			if !pool.AppendCertsFromPEM(pem) {
				return nil, usageErr("--upstream-ca %s: no PEM certificate in it", f)
			}
		}
		b.TLSClientConfig = b.TLSClientConfig.Clone()
		if b.TLSClientConfig == nil {
			b.TLSClientConfig = new(tls.Config)
		}
		b.TLSClientConfig.RootCAs = pool
	}
	return b, nil
}

func runProxy(ctx context.Context, e *env, o *proxyOptions) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var ca *proxy.CA
	if len(o.Intercept) > 0 {
		var err error
		if ca, err = proxy.LoadCA(o.CADir); err != nil {
			return usageErr("--intercept needs a CA: %v", err)
		}
	}
	base, err := o.proxyBase()
	if err != nil {
		return err
	}
	o.base = base
	tr := o.transport(nil)
	// polite fetch retries through its job; the proxy through the
	// Transport itself.
	tr.Retries = o.Retries
	if o.Retries == 0 {
		tr.Retries = -1
	}
	if o.Rules != nil && o.Rules.anyRetries() {
		fmt.Fprintf(e.stderr, "polite proxy: --config %s: a rule's retries applies to polite fetch only; the proxy retries --retries (%d) times\n", o.Config, o.Retries)
	}
	maxWait := o.MaxWait
	if maxWait == 0 {
		maxWait = -1 // --max-wait 0: hold nothing
	}
	s := &proxy.Server{
		Transport: tr,
		MaxWait:   maxWait,
		Dial:      base.DialContext,
		TunnelCap: o.TunnelCap,
		Intercept: intercepts(o.Intercept),
		CA:        ca,
	}
	if o.Metrics != "" {
		addr, stopMetrics, err := serveMetrics(o.Metrics, tr, o.MetricsHost, proxyMetrics(s)...)
		if err != nil {
			return err
		}
		defer stopMetrics()
		fmt.Fprintf(e.stderr, "polite proxy: metrics on http://%s/metrics\n", addr)
	}
	if o.Audit != "" {
		l, err := audit.Open(o.Audit, audit.Options{})
		if err != nil {
			return usageErr("--audit: %v", err)
		}
		defer l.Close()
		if tr.Observer != nil {
			m := tr.Observer
			tr.Observer = polite.ObserverFunc(func(ev polite.Event) { m.Observe(ev); l.Observe(ev) })
		} else {
			tr.Observer = l
		}
	}
	if o.Redis != "" {
		say := func(s string) { fmt.Fprintln(e.stderr, s) }
		_, closeRedis, err := o.fleetStore(ctx, tr, say)
		if err != nil {
			return err
		}
		defer closeRedis()
	}
	var logger *slog.Logger
	if o.Verbose {
		logger = slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	} else {
		logger = slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	s.Logger = logger
	if s.Dial == nil {
		s.Dial = (&net.Dialer{Timeout: 30 * time.Second}).DialContext
	}
	if o.ProxyAuth != "" {
		a, p, _ := strings.Cut(o.ProxyAuth, ":")
		s.Auth = proxy.BasicAuth(a, p)
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return &exitError{code: ExitFatal, err: fmt.Errorf("--listen: %v", err)}
	}
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	https := "HTTPS: CONNECT tunnels paced per host (connections only)"
	if len(o.Intercept) > 0 {
		https += "; intercepted with the CA in " + o.CADir + ": " + strings.Join(o.Intercept, ", ")
	}
	fmt.Fprintf(e.stderr, "polite proxy: listening on http://%s (%s)\n", ln.Addr(), https)
	if err := serveUntil(ctx, srv, ln); err != nil {
		return err
	}
	st := s.Stats()
	fmt.Fprintf(e.stderr, "polite proxy: stopped; %d requests, %d held past --max-wait, %d refused, %d tunnels paced by the connection, %d intercepted\n",
		st.Requests.Load(), st.Held.Load(), st.Refused.Load(), st.Tunnels.Load(), st.Intercepted.Load())
	return nil
}

const tunnelsHelp = "CONNECT tunnels opened: mode tunnel paced by the connection only, mode mitm intercepted and paced request by request."

// proxyMetrics are the proxy's own counters for --metrics, beside the
// Transport's: what it answered itself, and how much HTTPS it could only
// pace by the connection (mode="tunnel") or saw request by request
// (mode="mitm").
func proxyMetrics(s *proxy.Server) []prometheus.Collector {
	st := s.Stats()
	counter := func(name, help string, v *atomic.Int64, labels prometheus.Labels) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels},
			func() float64 { return float64(v.Load()) })
	}
	return []prometheus.Collector{
		counter("polite_proxy_requests_total", "Requests proxied with request-level politeness (plain HTTP and intercepted HTTPS).", &st.Requests, nil),
		counter("polite_proxy_held_total", "Requests and tunnels answered 429 or 503 by the proxy after waiting their max wait for their host.", &st.Held, nil),
		counter("polite_proxy_refused_total", "Requests the proxy answered itself for another reason (bad request, robots.txt, blocked host, upstream failure).", &st.Refused, nil),
		counter("polite_proxy_tunnels_total", tunnelsHelp, &st.Tunnels, prometheus.Labels{"mode": "tunnel"}),
		counter("polite_proxy_tunnels_total", tunnelsHelp, &st.Intercepted, prometheus.Labels{"mode": "mitm"}),
	}
}

// newCACmd is `polite proxy ca`: the CA --intercept signs with.
func newCACmd(e *env) *cobra.Command {
	var dir string
	c := &cobra.Command{
		Use:   "ca",
		Short: "Make or show the CA the proxy intercepts HTTPS with",
		Args:  args(cobra.NoArgs),
	}
	c.PersistentFlags().StringVar(&dir, "ca-dir", defaultCADir(), "`DIR` of the CA")
	c.AddCommand(&cobra.Command{
		Use:   "init",
		Short: "Make a new CA (its key stays in --ca-dir, readable by you only)",
		Args:  args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			ca, err := proxy.NewCA(dir)
			if err != nil {
				if errors.Is(err, proxy.ErrCAExists) {
					return usageErr("%v (remove it first to make a new one; clients that trust it must then be given the new one)", err)
				}
				return &exitError{code: ExitFatal, err: err}
			}
			fmt.Fprintf(e.stderr, "polite proxy: made a CA in %s, valid until %s.\n", dir, ca.Certificate().NotAfter.Format(time.DateOnly))
			fmt.Fprintf(e.stderr, "Give clients its certificate only (polite proxy ca export > polite-ca.pem):\n"+
				"  curl --cacert polite-ca.pem; wget --ca-certificate=polite-ca.pem;\n"+
				"  Python requests: REQUESTS_CA_BUNDLE (a bundle with it); Node: NODE_EXTRA_CA_CERTS=polite-ca.pem\n")
			return nil
		},
	}, &cobra.Command{
		Use:   "export",
		Short: "Print the CA's certificate (PEM), for clients to trust",
		Args:  args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			ca, err := proxy.LoadCA(dir)
			if err != nil {
				return usageErr("%v", err)
			}
			_, err = e.stdout.Write(ca.CertPEM())
			return err
		},
	})
	return c
}
