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
	"syscall"
	"time"

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
	Config       guard.Config // from --config and the flags; Store is set by run
}

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
// they come (streaming), and an upstream failure answered 502 with a
// problem body.
func newProxy(u *url.URL, log *slog.Logger) *httputil.ReverseProxy {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 256
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
			if errors.Is(err, context.Canceled) {
				return // the client went away
			}
			log.Warn("polite guard: upstream failed", slog.String("error", err.Error()))
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprintf(w, `{"type":"about:blank","title":"Bad Gateway","status":502,"detail":"the upstream did not answer"}`+"\n")
		},
	}
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
	srv := &http.Server{Handler: g.Handler(newProxy(o.Upstream, log)), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	rate, burst := effective(cfg.Identity)
	fmt.Fprintf(e.stdout, "polite guard: http://%s -> %s (identity %v/s, burst %d)\n", ln.Addr(), o.Upstream.Redacted(), rate, burst)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return &exitError{code: ExitFatal, err: err}
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(shut)
	s := g.Stats()
	fmt.Fprintf(e.stdout, "polite guard: stopped; refused %d, dry-run refusals %d, store errors %d\n", s.Refused, s.Shadowed, s.StoreErrors)
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
