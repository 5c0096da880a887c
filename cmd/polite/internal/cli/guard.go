package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/polite-go/polite/guard"
	"github.com/polite-go/polite/redisstore"
)

// guardOptions are the settings of `polite guard`.
type guardOptions struct {
	Listen   string
	Upstream *url.URL
	Redis    string
	Outage   string
	// RedisTimeout bounds one call to Redis before the outage mode takes
	// over.
	RedisTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle this long;
	// BodyTimeout bounds reading one request, headers and body;
	// UpstreamTimeout bounds the wait for the upstream's response header.
	// Zero: no bound.
	IdleTimeout, BodyTimeout, UpstreamTimeout time.Duration
	// MaxConnsPerIP is the most connections one client address (IPv6 /64)
	// holds open, trusted proxies not counted; zero: no cap.
	MaxConnsPerIP int
	// Metrics is the address --metrics serves Prometheus metrics on; ""
	// for none.
	Metrics string
	Config  guard.Config // from --config and the flags; Store is set by run
}

// Defaults of the abuse bounds (issue 29). Go's net/http sets none; these
// are nginx's and Traefik's order of magnitude: nginx keeps idle
// connections 75 s and waits 60 s for a body read and for an upstream
// read, Traefik reads a request for 60 s at most.
const (
	guardIdleTimeout     = 30 * time.Second
	guardBodyTimeout     = 60 * time.Second
	guardUpstreamTimeout = 60 * time.Second
	guardMaxConnsPerIP   = 64
	guardHeaderTimeout   = 10 * time.Second
)

const guardLong = `Put a rate limit in front of any HTTP server: a reverse proxy that gives each
client (its address, IPv6 grouped by /64; or a user named by a trusted auth
proxy) a token bucket, and answers beyond it with 429, an exact Retry-After,
the IETF RateLimit and RateLimit-Policy fields, X-RateLimit-* and a
problem+json body. Requests within budget go to --upstream with the same
fields, their bodies streamed both ways, X-Forwarded-For appended.

--rate and --burst alone give every client address that budget. --redis
shares the buckets with every guard pointed at the same Redis (one script
per request, Redis's clock), so N guards admit what one would.

` + guardConfigHelp

func newGuardCmd(e *env, runF func(context.Context, any) error) *cobra.Command {
	o := &guardOptions{}
	var cfg, upstream string
	var rate float64
	var burst int
	var dryRun bool
	closeRefused := true
	c := &cobra.Command{
		Use:   "guard --listen ADDR --upstream URL [flags]",
		Short: "Rate-limit any HTTP server: a reverse proxy with honest 429s",
		Long:  guardLong,
		Example: `  polite guard --listen :8080 --upstream http://127.0.0.1:9000 --rate 5 --burst 10
  polite guard --listen :8080 --upstream http://app:9000 --config guard.toml --redis redis://r:6379/0`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			f := c.Flags()
			if err := o.parse(cfg, upstream, rate, burst, f.Changed("rate"), f.Changed("burst"), dryRun); err != nil {
				return err
			}
			o.Config.CloseRefused = closeRefused
			if runF != nil {
				return runF(c.Context(), o)
			}
			return runGuard(c.Context(), e, o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Listen, "listen", "", "serve on `ADDR` (such as :8080 or 127.0.0.1:8080)")
	f.StringVar(&upstream, "upstream", "", "forward admitted requests to `URL` (http:// or https://)")
	f.StringVar(&cfg, "config", "", "TOML `FILE` of levels, costs and trusted proxies (see above)")
	f.StringVar(&o.Redis, "redis", "", "share the buckets through Redis at `URL` (redis://HOST:PORT/DB)")
	f.StringVar(&o.Outage, "outage", "", "while Redis is down: local (default), closed (503) or open")
	f.DurationVar(&o.RedisTimeout, "redis-timeout", redisTimeout, "a Redis call slower than this counts as Redis down")
	f.Float64Var(&rate, "rate", 0, "tokens per second per client (default 10; overrides the file's [identity] rate)")
	f.IntVar(&burst, "burst", 0, "bucket size per client (default 20, or ceil(--rate) with --rate)")
	f.BoolVar(&dryRun, "dry-run", false, "count and log refusals, but refuse nothing")
	f.DurationVar(&o.IdleTimeout, "idle-timeout", guardIdleTimeout, "close a keep-alive client connection idle this long (0: never)")
	f.DurationVar(&o.BodyTimeout, "body-timeout", guardBodyTimeout,
		"the longest a client may take to send one request, headers and body; a slower one is cut and\nfrees its upstream connection (0: no bound; raise it for slow large uploads)")
	f.DurationVar(&o.UpstreamTimeout, "upstream-timeout", guardUpstreamTimeout,
		"answer 504 when the upstream sends no response header this long after the request (0: wait as\nlong as the client does)")
	f.IntVar(&o.MaxConnsPerIP, "max-conns-per-ip", guardMaxConnsPerIP,
		"connections one client address (IPv6: its /64) may hold open; more are closed when accepted.\nTrusted proxies are not counted (0: no cap)")
	f.StringVar(&o.Metrics, "metrics", "", "serve Prometheus metrics on `ADDR`'s /metrics: requests forwarded, refused by level, too costly\nto ever pass, dry-run refusals, store errors, connections closed, and the process's")
	f.BoolVar(&closeRefused, "close-refused", true, "answer refusals (429, 503) with Connection: close, so a client over its budget keeps\nno idle connection (--close-refused=false keeps them)")
	return c
}

func (o *guardOptions) parse(cfg, upstream string, rate float64, burst int, rateSet, burstSet, dryRun bool) error {
	switch {
	case o.Listen == "":
		return usageErr("guard: --listen ADDR is required")
	case upstream == "":
		return usageErr("guard: --upstream URL is required")
	}
	if _, _, err := net.SplitHostPort(o.Listen); err != nil {
		return usageErr("--listen %q: want HOST:PORT or :PORT", o.Listen)
	}
	u, err := url.Parse(upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageErr("--upstream %q: want http://HOST[:PORT][/PATH] or https://…", upstream)
	}
	o.Upstream = u
	if cfg != "" {
		outage, err := loadGuardConfig(cfg, &o.Config)
		if err != nil {
			return &exitError{code: ExitUsage, err: err}
		}
		if o.Outage == "" {
			o.Outage = outage
		}
	}
	if rateSet {
		if rate <= 0 {
			return usageErr("--rate %v: must be positive", rate)
		}
		o.Config.Identity.Rate = rate
		if !burstSet {
			o.Config.Identity.Burst = 0 // ceil(rate), not the file's
		}
	}
	if burstSet {
		if burst < 1 {
			return usageErr("--burst %d: must be at least 1", burst)
		}
		o.Config.Identity.Burst = burst
	}
	o.Config.DryRun = o.Config.DryRun || dryRun
	if o.Outage == "" {
		o.Outage = "local"
	}
	if o.RedisTimeout <= 0 {
		return usageErr("--redis-timeout %v: must be positive", o.RedisTimeout)
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--idle-timeout", o.IdleTimeout}, {"--body-timeout", o.BodyTimeout}, {"--upstream-timeout", o.UpstreamTimeout}} {
		if d.v < 0 {
			return usageErr("%s %v: must be positive (0 for no bound)", d.flag, d.v)
		}
	}
	if o.MaxConnsPerIP < 0 {
		return usageErr("--max-conns-per-ip %d: must be positive (0 for no cap)", o.MaxConnsPerIP)
	}
	if _, ok := redisstore.ParseOutage(o.Outage); !ok {
		return usageErr("--outage %q: want local, closed or open", o.Outage)
	}
	if _, err := guard.New(o.Config); err != nil {
		return usageErr("%v", err)
	}
	return nil
}

// newProxy returns the reverse proxy to u: the inbound X-Forwarded-For
// kept and the client's address appended (so the upstream can find the
// rightmost untrusted hop, with this guard trusted), responses flushed as
// they come (streaming). An upstream that sends no response header within
// timeout (0: no bound) is answered 504, one that fails 502, both with a
// problem body; a client whose request body outlives the server's read
// deadline gets a 408, and the upstream connection it held is closed.
func newProxy(u *url.URL, timeout time.Duration, log *slog.Logger) *httputil.ReverseProxy {
	return newCountingProxy(u, timeout, log, &upstreamErrors{})
}

// upstreamErrors counts the requests the upstream did not answer, by how:
// it timed out (504), it failed (502), or the request ended before it was
// sent (408: the client went away or was too slow with its body).
type upstreamErrors struct {
	timedOut, failed, unsent atomic.Int64
}

// newCountingProxy is newProxy counting into errs.
func newCountingProxy(u *url.URL, timeout time.Duration, log *slog.Logger, errs *upstreamErrors) *httputil.ReverseProxy {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 256
	tr.ResponseHeaderTimeout = timeout
	var timedOut, failed warnLimit
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host // the upstream sees the name the client asked for
			pr.Out.Header["X-Forwarded-For"] = pr.In.Header["X-Forwarded-For"]
			pr.SetXForwarded()
		},
		Transport:     tr,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			var ne net.Error
			switch {
			case errors.Is(err, context.Canceled), errors.Is(err, os.ErrDeadlineExceeded):
				// The client went away, or its connection passed its read
				// deadline (--body-timeout) while its body was forwarded,
				// which cancels the request too. A client gone reads
				// nothing; a slow one reads 408 rather than net/http's
				// empty 200.
				errs.unsent.Add(1)
				log.Debug("polite guard: request ended before it was sent", slog.String("error", err.Error()))
				w.Header().Set("Connection", "close")
				writeGatewayProblem(w, http.StatusRequestTimeout, "the request was not sent within the time allowed")
			case errors.As(err, &ne) && ne.Timeout():
				errs.timedOut.Add(1)
				timedOut.warn(log, "polite guard: upstream timed out", err)
				writeGatewayProblem(w, http.StatusGatewayTimeout, "the upstream did not answer in time")
			default:
				errs.failed.Add(1)
				failed.warn(log, "polite guard: upstream failed", err)
				writeGatewayProblem(w, http.StatusBadGateway, "the upstream did not answer")
			}
		},
	}
}

// warnLimit writes one Warn line of a kind about the upstream per 10 s and
// counts the others, the next line written saying how many
// (suppressed=N): while the upstream is down or hangs every request
// fails, and a flood would otherwise write a line for each (as the
// guard's own store failures, issue 29). It is safe for concurrent use.
type warnLimit struct{ t guard.LogThrottle }

func (l *warnLimit) warn(log *slog.Logger, msg string, err error) {
	ok, n := l.t.Allow(time.Now())
	if !ok {
		return
	}
	attrs := []slog.Attr{slog.String("error", err.Error())}
	if n > 0 {
		attrs = append(attrs, slog.Int64("suppressed", n))
	}
	log.LogAttrs(context.Background(), slog.LevelWarn, msg, attrs...)
}

// writeGatewayProblem answers status with a problem body of type
// about:blank.
func writeGatewayProblem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"type":"about:blank","title":%q,"status":%d,"detail":%q}`+"\n", http.StatusText(status), status, detail)
}

// guardServer returns the server of polite guard: g in front of the proxy
// to the upstream, with o's timeouts. forwarded, if not nil, counts the
// requests passed to the upstream, and upErrs the upstream's errors.
func guardServer(o *guardOptions, g *guard.Guard, log *slog.Logger, forwarded *atomic.Int64, upErrs *upstreamErrors) *http.Server {
	if upErrs == nil {
		upErrs = &upstreamErrors{}
	}
	var up http.Handler = newCountingProxy(o.Upstream, o.UpstreamTimeout, log, upErrs)
	if forwarded != nil {
		next := up
		up = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			forwarded.Add(1)
			next.ServeHTTP(w, r)
		})
	}
	return &http.Server{Handler: g.Handler(up),
		ReadHeaderTimeout: guardHeaderTimeout, ReadTimeout: o.BodyTimeout, IdleTimeout: idleTimeout(o.IdleTimeout),
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
}

// guardListener caps ln's connections per client address as o says, the
// guard's trusted proxies not counted; ln itself with no cap.
func guardListener(o *guardOptions, g *guard.Guard, ln net.Listener) net.Listener {
	if o.MaxConnsPerIP == 0 {
		return ln
	}
	v4, v6 := o.Config.IPv4Prefix, o.Config.IPv6Prefix
	if v4 == 0 {
		v4 = 32
	}
	if v6 == 0 {
		v6 = 64
	}
	return newAddrCap(ln, o.MaxConnsPerIP, v4, v6, g.Trusted)
}

func runGuard(ctx context.Context, e *env, o *guardOptions) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg := o.Config
	cfg.Logger = log
	if o.Redis != "" {
		outage, _ := redisstore.ParseOutage(o.Outage)
		rc, err := redisClient(o.Redis)
		if err != nil {
			return usageErr("%v", err)
		}
		defer rc.Close()
		// redisClient sets the fleet's socket timeouts; the guard's own
		// bound replaces them before the client's first use (the options
		// are read per command and per new node).
		switch c := rc.(type) {
		case *redis.Client:
			c.Options().ReadTimeout, c.Options().WriteTimeout = o.RedisTimeout, o.RedisTimeout
		case *redis.ClusterClient:
			c.Options().ReadTimeout, c.Options().WriteTimeout = o.RedisTimeout, o.RedisTimeout
		}
		ping, cancel := context.WithTimeout(ctx, 2*time.Second)
		err = rc.Ping(ping).Err()
		cancel()
		if err != nil {
			return &exitError{code: ExitFatal, err: fmt.Errorf("--redis %s: %v", redact(o.Redis), err)}
		}
		s, err := redisstore.NewGuard(rc, redisstore.GuardOptions{Timeout: o.RedisTimeout, Outage: outage, Logger: log})
		if err != nil {
			return &exitError{code: ExitFatal, err: err}
		}
		defer s.Close()
		cfg.Store = s
	}
	g, err := guard.New(cfg)
	if err != nil {
		return usageErr("%v", err)
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return &exitError{code: ExitFatal, err: fmt.Errorf("--listen: %v", err)}
	}
	ln = guardListener(o, g, ln)
	var forwarded *atomic.Int64
	upErrs := &upstreamErrors{}
	if o.Metrics != "" {
		forwarded = new(atomic.Int64)
		addr, stopMetrics, err := serveMetrics(o.Metrics, nil, 0, guardMetrics(g, ln, forwarded, upErrs)...)
		if err != nil {
			ln.Close()
			return err
		}
		defer stopMetrics()
		fmt.Fprintf(e.stderr, "polite guard: metrics on http://%s/metrics\n", addr)
	}
	srv := guardServer(o, g, log, forwarded, upErrs)
	rate, burst := effective(cfg.Identity)
	fmt.Fprintf(e.stdout, "polite guard: http://%s -> %s (identity %v/s, burst %d)\n", ln.Addr(), o.Upstream.Redacted(), rate, burst)
	if err := serveUntil(ctx, srv, ln); err != nil {
		return err
	}
	s := g.Stats()
	fmt.Fprintf(e.stdout, "polite guard: stopped; refused %d, dry-run refusals %d, store errors %d", s.Refused, s.Shadowed, s.StoreErrors)
	if c, ok := ln.(*addrCap); ok {
		fmt.Fprintf(e.stdout, ", connections over --max-conns-per-ip closed %d", c.refused.Load())
	}
	fmt.Fprintln(e.stdout)
	return nil
}

// guardMetrics are the guard's counters for --metrics: requests forwarded
// to the upstream, refusals by the level that refused, and the rest of
// its Stats; the upstream's errors by kind; with --max-conns-per-ip, the
// connections closed over it.
func guardMetrics(g *guard.Guard, ln net.Listener, forwarded *atomic.Int64, up *upstreamErrors) []prometheus.Collector {
	counter := func(name, help string, labels prometheus.Labels, v func(guard.Stats) int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels},
			func() float64 { return float64(v(g.Stats())) })
	}
	cs := []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "polite_guard_forwarded_total",
			Help: "Requests passed to the upstream: within budget, of a route that costs nothing, or refused in a dry run."},
			func() float64 { return float64(forwarded.Load()) }),
		counter("polite_guard_too_costly_total", "Requests refused because they cost more than a level's burst: they can never pass.", nil,
			func(s guard.Stats) int64 { return s.TooCostly }),
		counter("polite_guard_dry_run_refusals_total", "Requests over budget let through by --dry-run.", nil,
			func(s guard.Stats) int64 { return s.Shadowed }),
		counter("polite_guard_store_errors_total", "Decisions the store failed (Redis down): answered 503, or let through by --dry-run.", nil,
			func(s guard.Stats) int64 { return s.StoreErrors }),
	}
	for l := range guard.Level(guard.NumLevels) {
		cs = append(cs, counter("polite_guard_refused_total",
			"Requests over budget, by the level that refused them: answered 429 (or let through by --dry-run).",
			prometheus.Labels{"level": l.String()}, func(s guard.Stats) int64 { return s.RefusedBy[l] }))
	}
	for kind, n := range map[string]*atomic.Int64{"timeout": &up.timedOut, "failed": &up.failed, "unsent": &up.unsent} {
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "polite_guard_upstream_errors_total",
			Help:        "Forwarded requests the upstream did not answer: timeout (answered 504), failed (502), unsent (the request ended before it was sent: 408).",
			ConstLabels: prometheus.Labels{"kind": kind}},
			func() float64 { return float64(n.Load()) }))
	}
	if c, ok := ln.(*addrCap); ok {
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "polite_guard_connections_closed_total",
			Help: "Connections closed as they were accepted, over --max-conns-per-ip."},
			func() float64 { return float64(c.refused.Load()) }))
	}
	return cs
}

// serveUntil serves srv on ln until ctx ends (a signal), then shuts it
// down, giving requests in flight 5 s; a server that stops on its own is
// a fatal error. The guard and the proxy run so.
func serveUntil(ctx context.Context, srv *http.Server, ln net.Listener) error {
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return &exitError{code: ExitFatal, err: err}
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return &exitError{code: ExitFatal, err: fmt.Errorf("shutting down: %w", err)}
	}
	return nil
}

// effective returns the rate and burst guard.New gives l.
func effective(l guard.Limit) (float64, int) {
	switch {
	case l.Rate == 0 && l.Burst == 0:
		return guard.DefaultRate, guard.DefaultBurst
	case l.Rate == 0:
		return guard.DefaultRate, l.Burst
	case l.Burst == 0:
		return l.Rate, max(1, int(math.Ceil(l.Rate)))
	}
	return l.Rate, l.Burst
}

// idleTimeout is http.Server's IdleTimeout for --idle-timeout d: 0 means
// never, where net/http reads 0 as "ReadTimeout's" (--body-timeout).
func idleTimeout(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
