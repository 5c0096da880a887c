package cli

import (
	"regexp"
	"strings"

	"github.com/spf13/pflag"

	"github.com/polite-go/polite/crawl"
	"github.com/polite-go/polite/crawl/scope"
)

// followOptions are fetch's discovery flags (issue 35).
type followOptions struct {
	Follow      bool
	Scope       string
	Include     []string
	Exclude     []string
	MaxDepth    int
	MaxPerHost  int
	Assets      bool
	Sitemaps    bool
	StripParams []string
	Since       string
}

// DefaultMaxDepth is --max-depth's default: wget -r's.
const DefaultMaxDepth = 5

// DefaultMaxPerHost is --max-per-host's default: a bound on what a trap
// no rule names (an endless calendar, a session id in every link) can add.
const DefaultMaxPerHost = 100_000

func addFollowFlags(f *pflag.FlagSet, o *followOptions) {
	f.BoolVar(&o.Follow, "follow", false, "crawl: add the links of each page fetched (a[href], area, link, frames; a redirect's Location; with --sitemaps, sitemaps) that --scope takes, each URL once, normalised")
	f.StringVar(&o.Scope, "scope", "host", "with --follow, the links taken: host (the listed URLs' hosts), domain (their registrable domains), prefix (below each listed URL's directory, as wget --no-parent) or any")
	f.StringArrayVar(&o.Include, "include", nil, "with --follow, take only links matching this `REGEXP` (Go syntax, against the normalised URL; repeatable: any may match)")
	f.StringArrayVar(&o.Exclude, "exclude", nil, "with --follow, skip links matching this `REGEXP` (repeatable; wins over --include)")
	f.IntVar(&o.MaxDepth, "max-depth", DefaultMaxDepth, "with --follow, links followed from a listed URL at most (a sitemap's pages are at depth 1); 0 for no limit")
	f.IntVar(&o.MaxPerHost, "max-per-host", DefaultMaxPerHost, "with --follow, URLs found per host at most (bounds a trap, such as an endless calendar); 0 for no limit")
	f.BoolVar(&o.Assets, "assets", false, "with --follow, also follow img, script, stylesheet and media links")
	f.BoolVar(&o.Sitemaps, "sitemaps", false, "with --follow, read the sitemaps each host's robots.txt names (indexes and .xml.gz parts too) for more URLs")
	f.StringSliceVar(&o.StripParams, "strip-params", nil, "with --follow, remove these query `PARAMS` from links before deduplicating (comma-separated; NAME* is a prefix; \"tracking\" is utm_*, fbclid, gclid and the like)")
	f.StringVar(&o.Since, "since", "", "re-crawl: ask each URL an earlier job in `DIR` answered with an ETag or Last-Modified with If-None-Match/If-Modified-Since; a 304 ends it not_modified (with --follow, the crawl takes in every URL the earlier one had)")
}

// parse checks the discovery flags.
func (o *followOptions) parse(maxURLs int) (*crawl.Follow, error) {
	if !o.Follow {
		for name, set := range map[string]bool{"--include": len(o.Include) > 0, "--exclude": len(o.Exclude) > 0,
			"--assets": o.Assets, "--sitemaps": o.Sitemaps, "--strip-params": len(o.StripParams) > 0} {
			if set {
				return nil, usageErr("%s applies to a crawl: add --follow", name)
			}
		}
		return nil, nil
	}
	mode, err := scope.ParseMode(o.Scope)
	if err != nil {
		return nil, usageErr("--scope: %v", err)
	}
	if o.MaxDepth < 0 {
		return nil, usageErr("--max-depth %d: must not be negative", o.MaxDepth)
	}
	if o.MaxPerHost < 0 {
		return nil, usageErr("--max-per-host %d: must not be negative", o.MaxPerHost)
	}
	r := scope.Rules{Mode: mode, MaxDepth: o.MaxDepth}
	for _, p := range o.Include {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, usageErr("--include %q: %v", p, err)
		}
		r.Include = append(r.Include, re)
	}
	for _, p := range o.Exclude {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, usageErr("--exclude %q: %v", p, err)
		}
		r.Exclude = append(r.Exclude, re)
	}
	for _, p := range o.StripParams {
		p = strings.TrimSpace(p)
		switch {
		case p == "tracking":
			r.Norm.StripParams = append(r.Norm.StripParams, scope.DefaultStripParams...)
		case p == "" || p == "*" || strings.ContainsAny(p, "=&#"):
			return nil, usageErr("--strip-params %q: want a parameter name, NAME* for a prefix, or tracking", p)
		default:
			r.Norm.StripParams = append(r.Norm.StripParams, p)
		}
	}
	return &crawl.Follow{Rules: r, MaxPerHost: o.MaxPerHost, MaxURLs: maxURLs, Assets: o.Assets, Sitemaps: o.Sitemaps}, nil
}
