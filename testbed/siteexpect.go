package testbed

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
)

// Crawl describes a crawl of a Website, for Expected.
//
// # Depth
//
// A seed has depth 0. A link followed from a page of depth d has depth
// d+1, and a URL's depth is the least over every way the crawl reaches it
// (the shortest path, as a breadth-first crawl finds it). A redirect's
// target keeps the depth of the redirecting URL. URLs listed in a sitemap
// have depth SitemapDepth, whatever the depth of the host's robots.txt or
// pages. A page of depth MaxDepth is fetched but its links are not
// followed.
//
// # Following
//
// A crawl follows the href of <a> and <link rel="next"> elements, resolved
// against the page's URL or its <base href>, fragments dropped. It follows
// no link with rel="nofollow" (a token of rel, in any case) and no link of a
// page with <meta name="robots"> whose content has the token nofollow; it
// finds no links in <script> elements nor in HTML comments, and treats <img
// src> and <link rel="stylesheet"> as assets, not pages. It requests no URL
// out of Scope and none that robots.txt disallows (Disallow: /private/,
// Allow: /private/public.html, for User-agent *), sitemap URLs included. A
// redirect is followed within the host; a 404 is an answer like any other.
type Crawl struct {
	// Seeds are the URLs the crawl starts from, such as Website.Seeds.
	// Required.
	Seeds []string
	// Scope is "host" (URLs on a seed's host) or "domain" (URLs whose host
	// has the registrable domain of a seed's: the site's Domain for all its
	// hosts). Zero means "host".
	Scope string
	// MaxDepth is the greatest depth fetched. Zero means the seeds only;
	// negative means no bound, which the calendar trap makes endless: see
	// Expectation.Trap.
	MaxDepth int
	// Sitemaps makes the crawl read the sitemaps named in the robots.txt of
	// every host it requests anything from, and fetch the URLs they list.
	Sitemaps bool
	// SitemapDepth is the depth of URLs found in sitemaps. Zero means 1 (a
	// link from the host's root); negative means 0 (as seeds).
	SitemapDepth int
}

// Expectation is what a correct crawl of a Website requests, URL by URL, as
// "http://host/path": Expected computes it and Check judges a server's
// access log by it.
type Expectation struct {
	// Crawl is the crawl expected.
	Crawl Crawl
	// Fetch lists, sorted, every URL a correct crawl requests exactly once:
	// pages, URLs answering 301 (their targets are listed too) and linked
	// URLs answering 404, in scope, allowed and within MaxDepth. Calendar
	// months are in Trap instead.
	Fetch []string
	// Depth is the depth of each URL of Fetch and Trap.
	Depth map[string]int
	// Trap lists, sorted, the calendar months within MaxDepth. A crawl
	// bounded only by depth requests each once; one that detects the trap
	// stops sooner and requests only some, each at most once. With
	// MaxDepth negative it holds the first month only, and TrapPrefix bounds
	// the rest.
	Trap []string
	// TrapPrefix is the calendar's URL prefix when the crawl reaches it, as
	// "http://h00.site.test/calendar/"; else "".
	TrapPrefix string
	// Robots lists the robots.txt of every host in Fetch or Trap: each is
	// requested at least once (more is allowed, as a cache expires).
	Robots []string
	// Sitemaps lists, with Crawl.Sitemaps, the sitemap index and parts of
	// those hosts: each is requested exactly once.
	Sitemaps []string
	// Assets lists the assets of those hosts: a page crawl need not request
	// them, and requests each at most once if it does.
	Assets []string
	// Never maps URLs found in the pages fetched (or the sitemaps read) that
	// a correct crawl must never request to why: "out of scope",
	// "disallowed", "nofollow", "script" or "comment". A URL out of reach by
	// depth alone is not in it.
	Never map[string]string
}

// Expected returns what a correct crawl c of the site requests. It panics
// if c has no seeds or an unknown Scope.
func (w *Website) Expected(c Crawl) Expectation {
	if len(c.Seeds) == 0 {
		panic("testbed: Expected: no seeds")
	}
	switch c.Scope {
	case "", "host", "domain":
	default:
		panic(fmt.Sprintf("testbed: Expected: Scope %q, want \"host\" or \"domain\"", c.Scope))
	}
	e := Expectation{Crawl: c, Never: map[string]string{}}
	scope := map[string]bool{}
	var seeds []string
	for _, s := range c.Seeds {
		host, path, ok := splitURL(s)
		if !ok {
			continue
		}
		seeds = append(seeds, "http://"+host+path)
		if c.Scope == "domain" {
			scope[w.domainOf(host)] = true
		} else {
			scope[host] = true
		}
	}
	inScope := func(host string) bool {
		if c.Scope == "domain" {
			return scope[w.domainOf(host)]
		}
		return scope[host]
	}
	// Reading sitemaps depends on the hosts reached, which depends on the
	// sitemaps read: iterate to the fixed point (hosts only ever add).
	var depth map[string]int
	read := map[string]bool{}
	for {
		depth = w.crawl(c, seeds, read, inScope, e.Never)
		if !c.Sitemaps {
			break
		}
		more := false
		for u := range depth {
			host, _, _ := splitURL(u)
			if h := w.byName[host]; h != nil && h.index != nil && !read[host] {
				read[host] = true
				more = true
			}
		}
		if !more {
			break
		}
	}
	e.Depth = depth
	hosts := map[string]bool{}
	for u := range depth {
		host, path, _ := splitURL(u)
		hosts[host] = true
		if h := w.byName[host]; h != nil && h.calendar && strings.HasPrefix(path, "/calendar/") {
			if _, ok := parseMonth(path); ok {
				e.Trap = append(e.Trap, u)
				e.TrapPrefix = "http://" + host + "/calendar/"
				continue
			}
		}
		e.Fetch = append(e.Fetch, u)
	}
	for _, host := range slices.Sorted(maps.Keys(hosts)) {
		e.Robots = append(e.Robots, "http://"+host+"/robots.txt")
		h := w.byName[host]
		if h == nil {
			continue
		}
		for _, a := range assetPaths() {
			e.Assets = append(e.Assets, "http://"+host+a)
		}
		if read[host] {
			e.Sitemaps = append(e.Sitemaps, "http://"+host+"/sitemap_index.xml")
			for n := range h.parts {
				e.Sitemaps = append(e.Sitemaps, "http://"+host+partPath(n+1))
			}
		}
	}
	// Links of the pages fetched that no correct crawl follows, whatever
	// the depth.
	for u := range depth {
		host, path, _ := splitURL(u)
		h := w.byName[host]
		if h == nil {
			continue
		}
		p := h.byPath[path]
		if p == nil {
			continue
		}
		for _, l := range p.links {
			t := l.url()
			if _, ok := depth[t]; ok {
				continue
			}
			switch {
			case l.place == placeScript:
				e.Never[t] = "script"
			case l.place == placeComment:
				e.Never[t] = "comment"
			case !inScope(l.host):
				e.Never[t] = "out of scope"
			case w.byName[l.host] != nil && disallowed(l.path):
				e.Never[t] = "disallowed"
			case l.nofollow || p.metaNofollow:
				e.Never[t] = "nofollow"
			}
		}
	}
	for u := range depth {
		delete(e.Never, u)
	}
	slices.Sort(e.Fetch)
	slices.Sort(e.Trap)
	return e
}

// crawl runs the breadth-first crawl from seeds, with the sitemaps of the
// hosts in read, and returns the depth of every URL requested. It records
// the URLs it refuses (out of scope, disallowed) in never.
func (w *Website) crawl(c Crawl, seeds []string, read map[string]bool, inScope func(string) bool, never map[string]string) map[string]int {
	depth := map[string]int{}
	var levels [][]string
	var push func(u string, d int)
	push = func(u string, d int) {
		if _, ok := depth[u]; ok {
			return
		}
		host, path, _ := splitURL(u)
		h := w.byName[host]
		switch {
		case !inScope(host):
			never[u] = "out of scope"
			return
		case h != nil && disallowed(path):
			never[u] = "disallowed"
			return
		}
		depth[u] = d
		for len(levels) <= d {
			levels = append(levels, nil)
		}
		levels[d] = append(levels[d], u)
		if h != nil {
			if to, ok := h.redirects[path]; ok {
				push("http://"+host+to, d)
			}
		}
	}
	for _, s := range seeds {
		push(s, 0)
	}
	sd := c.SitemapDepth
	switch {
	case sd == 0:
		sd = 1
	case sd < 0:
		sd = 0
	}
	for _, host := range slices.Sorted(maps.Keys(read)) {
		for _, path := range w.byName[host].sitemap {
			push("http://"+host+path, sd)
		}
	}
	for d := 0; d < len(levels); d++ {
		if c.MaxDepth >= 0 && d >= c.MaxDepth {
			break
		}
		for i := 0; i < len(levels[d]); i++ {
			u := levels[d][i]
			for _, t := range w.follows(u, c.MaxDepth >= 0) {
				push(t, d+1)
			}
		}
	}
	return depth
}

// follows returns the URLs a crawler follows from the page at u. Calendar
// months lead on to their neighbours only when bounded.
func (w *Website) follows(u string, bounded bool) []string {
	host, path, _ := splitURL(u)
	h := w.byName[host]
	if h == nil {
		return nil
	}
	if p := h.byPath[path]; p != nil {
		if p.metaNofollow {
			return nil
		}
		var out []string
		for _, l := range p.links {
			if (l.place == placeA || l.place == placeNext) && !l.nofollow {
				out = append(out, l.url())
			}
		}
		return out
	}
	if m, ok := parseMonth(path); ok && h.calendar {
		out := []string{"http://" + host + "/"}
		if bounded && m > firstMonth {
			out = append(out, "http://"+host+monthPath(m-1))
		}
		if bounded && m < lastMonth {
			out = append(out, "http://"+host+monthPath(m+1))
		}
		return out
	}
	return nil
}

// domainOf returns host's registrable domain, as far as the site knows: its
// Domain for its own hosts (and names under it), else the host itself.
func (w *Website) domainOf(host string) string {
	d := w.site.Domain
	if host == d || strings.HasSuffix(host, "."+d) {
		return d
	}
	return host
}

// splitURL returns the lower-case host (no port) and the path and query of
// an http URL, without its fragment.
func splitURL(s string) (host, pathQuery string, ok bool) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "", "", false
	}
	host = strings.ToLower(u.Hostname())
	pathQuery = u.EscapedPath()
	if pathQuery == "" {
		pathQuery = "/"
	}
	if u.RawQuery != "" {
		pathQuery += "?" + u.RawQuery
	}
	return host, pathQuery, true
}

// Check judges the requests a server received (Server.Requests, or an
// access log read with ParseRequest) by e: every URL of Fetch and Sitemaps
// answered exactly once, every robots.txt at least once, Trap and Assets at
// most once each, no URL of Never requested and nothing else either. Answers
// of 429, 503 and 504 (over capacity, shed, client gone) do not count as
// answers, so a polite retry is no repeat. It returns every problem, joined,
// or nil.
func (e Expectation) Check(reqs []Request) error {
	answered := map[string]int{}
	asked := map[string]int{}
	for _, r := range reqs {
		u := "http://" + strings.ToLower(r.Host) + r.URI
		asked[u]++
		if r.Status != 429 && r.Status != 503 && r.Status != 504 {
			answered[u]++
		}
	}
	var missing, repeated, never, unexpected []string
	once := func(list []string) {
		for _, u := range list {
			switch n := answered[u]; {
			case n == 0:
				missing = append(missing, u)
			case n > 1:
				repeated = append(repeated, fmt.Sprintf("%s (%d times)", u, n))
			}
		}
	}
	once(e.Fetch)
	once(e.Sitemaps)
	for _, u := range e.Robots {
		if answered[u] == 0 {
			missing = append(missing, u)
		}
	}
	allowed := map[string]bool{}
	for _, list := range [][]string{e.Fetch, e.Sitemaps, e.Robots} {
		for _, u := range list {
			allowed[u] = true
		}
	}
	atMostOnce := map[string]bool{}
	for _, list := range [][]string{e.Trap, e.Assets} {
		for _, u := range list {
			allowed[u] = true
			atMostOnce[u] = true
		}
	}
	for _, u := range slices.Sorted(maps.Keys(asked)) {
		if e.Crawl.MaxDepth < 0 && e.TrapPrefix != "" && strings.HasPrefix(u, e.TrapPrefix) {
			if _, ok := parseMonth("/calendar/" + strings.TrimPrefix(u, e.TrapPrefix)); ok {
				allowed[u] = true
				atMostOnce[u] = true
			}
		}
		switch {
		case e.Never[u] != "":
			never = append(never, fmt.Sprintf("%s (%s, %d times)", u, e.Never[u], asked[u]))
		case !allowed[u]:
			unexpected = append(unexpected, fmt.Sprintf("%s (%d times)", u, asked[u]))
		case atMostOnce[u] && answered[u] > 1:
			repeated = append(repeated, fmt.Sprintf("%s (%d times)", u, answered[u]))
		}
	}
	var errs []error
	report := func(what string, list []string) {
		if len(list) == 0 {
			return
		}
		const show = 10
		msg := fmt.Sprintf("testbed: %d URLs %s: %s", len(list), what, strings.Join(list[:min(show, len(list))], ", "))
		if len(list) > show {
			msg += ", …"
		}
		errs = append(errs, errors.New(msg))
	}
	report("expected, never answered", missing)
	report("answered more than once", repeated)
	report("requested that must never be", never)
	report("requested that no correct crawl requests", unexpected)
	return errors.Join(errs...)
}
