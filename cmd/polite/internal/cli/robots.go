package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/cmd/polite/internal/term"
	"github.com/polite-go/polite/crawl"
	"github.com/polite-go/polite/robots"
)

// robotsOptions are the settings of `polite robots`.
type robotsOptions struct {
	URL          *url.URL
	UserAgent    string
	Timeout      time.Duration
	AllowPrivate bool
}

func newRobotsCmd(e *env, runF func(context.Context, any) error) *cobra.Command {
	o := &robotsOptions{}
	c := &cobra.Command{
		Use:   "robots [flags] URL",
		Short: "Say what robots.txt allows for a URL, and its crawl-delay",
		Long: `Fetch the robots.txt of URL's origin (RFC 9309) and say whether --user-agent
may fetch URL, by which rule (and its line), the crawl-delay polite would keep
between requests to the host, and the sitemaps the file lists.

A robots.txt answered with 4xx means everything is allowed; 5xx, 429 or no
answer means everything is disallowed, as RFC 9309 says.

As fetch does, it connects only to public addresses (and URL's own loopback
port): a robots.txt that redirects to a private or link-local address is
unreachable, unless --allow-private.

Exit status: 0 when URL is allowed, 4 when it is disallowed, 2 for bad usage,
1 when robots.txt could not be asked for.`,
		Example: `  polite robots https://example.com/private/page
  polite robots --user-agent mybot https://example.com/`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			// The same check as fetch's URL lists (HTTPS:// included).
			if _, problem := crawl.CheckURL(a[0], 0); problem != "" {
				return usageErr("robots: %q: %s", a[0], problem)
			}
			o.URL, _ = url.Parse(a[0])
			if o.Timeout <= 0 {
				return usageErr("--timeout %v: must be positive", o.Timeout)
			}
			if runF != nil {
				return runF(c.Context(), o)
			}
			return runRobots(c.Context(), e, o)
		},
	}
	c.Flags().StringVar(&o.UserAgent, "user-agent", defaultUserAgent(), "the crawler asking: its product token (before the first '/') picks the robots.txt group")
	c.Flags().DurationVar(&o.Timeout, "timeout", 30*time.Second, "time limit of the robots.txt fetch")
	c.Flags().BoolVar(&o.AllowPrivate, "allow-private", false, "connect to non-public addresses too (private, link-local, loopback); by default only URL's own loopback port is")
	return c
}

func runRobots(ctx context.Context, e *env, o *robotsOptions) error {
	// The same dial-time check as fetch's (issue 29, item 7): a redirect
	// must not reach 169.254.169.254 or the private network.
	base := crawl.NewBase(1)
	if !o.AllowPrivate {
		loop := &loopbackPorts{}
		loop.line([]byte(o.URL.String()))
		publicOnly(base, loop, func(netip.AddrPort) bool { return false })
	}
	defer base.CloseIdleConnections()
	cache := &robots.Cache{Client: &http.Client{Transport: base}, UserAgent: o.UserAgent, Timeout: o.Timeout}
	r, err := cache.Get(ctx, o.URL)
	if err != nil {
		return &exitError{code: ExitFatal, err: err}
	}
	origin, _ := robots.Origin(o.URL)
	w := e.stdout
	fmt.Fprintf(w, "robots.txt  %s/robots.txt", origin)
	switch r.Source() {
	case robots.Parsed:
		fmt.Fprintf(w, " (%d: rules read)\n", r.StatusCode())
	case robots.Unavailable:
		fmt.Fprintf(w, " (%d: none, so everything is allowed)\n", r.StatusCode())
	case robots.Unreachable:
		why := "no answer"
		if r.StatusCode() != 0 {
			why = fmt.Sprint(r.StatusCode())
		}
		if r.Err() != nil {
			why += ": " + term.Quote(r.Err().Error())
			if errors.Is(r.Err(), polite.ErrNotPublic) {
				why += " (--allow-private lifts this)"
			}
		}
		fmt.Fprintf(w, " (unreachable, %s: everything is disallowed for now)\n", why)
	}
	g := r.Group(o.UserAgent)
	switch {
	case g == nil:
		fmt.Fprintf(w, "group       none applies to %q\n", o.UserAgent)
	case g.Line() > 0:
		fmt.Fprintf(w, "group       User-agent: %s (line %d)\n", term.Quote(g.Agent()), g.Line())
	default:
		fmt.Fprintf(w, "group       User-agent: %s\n", term.Quote(g.Agent()))
	}
	target := o.URL.RequestURI()
	v := r.Test(o.UserAgent, target)
	verdict := "allowed"
	if !v.Allowed {
		verdict = "disallowed"
	}
	fmt.Fprintf(w, "%-11s %s", verdict, target)
	switch {
	case v.Rule.Line > 0:
		fmt.Fprintf(w, " by %q (line %d)\n", v.Rule.String(), v.Rule.Line)
	case v.Rule != (robots.Rule{}):
		fmt.Fprintf(w, " by %q\n", v.Rule.String())
	default:
		fmt.Fprintln(w, " (no rule matches)")
	}
	delay := robots.DelayPolicy{}.Delay(g)
	fmt.Fprintf(w, "crawl-delay %s", delay)
	var parts []string
	if d, ok := g.CrawlDelay(); ok {
		parts = append(parts, fmt.Sprintf("Crawl-delay: %g", d.Seconds()))
	}
	if n, per, ok := g.RequestRate(); ok {
		parts = append(parts, fmt.Sprintf("Request-rate: %d/%s", n, per))
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, " (from %s; capped at %s)", strings.Join(parts, ", "), robots.DefaultMaxDelay)
	} else {
		fmt.Fprint(w, " (none asked for)")
	}
	fmt.Fprintln(w)
	for _, s := range r.Sitemaps() {
		fmt.Fprintf(w, "sitemap     %s\n", term.Quote(s))
	}
	if !v.Allowed {
		return &exitError{code: ExitFailures}
	}
	return nil
}
