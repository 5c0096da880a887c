package testbed_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/polite-go/polite/testbed"
)

// crawler is an independent breadth-first crawler, written from the rules
// documented on Crawl rather than from the generator: it fetches over
// HTTP and parses pages with golang.org/x/net/html.
type crawler struct {
	t      *testing.T
	c      *http.Client
	crawl  testbed.Crawl
	scope  map[string]bool
	robots map[string][][2]string // host → (allow|disallow, prefix) of User-agent *
	depth  map[string]int
	levels [][]string
}

func (cr *crawler) inScope(host string) bool {
	if cr.crawl.Scope == "domain" {
		i := strings.Index(host, ".")
		return i >= 0 && cr.scope[host[i+1:]]
	}
	return cr.scope[host]
}

func (cr *crawler) get(u string) (*http.Response, []byte) {
	cr.t.Helper()
	resp, err := cr.c.Get(u)
	if err != nil {
		cr.t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// allowed reads the host's robots.txt once, then matches path by the
// longest rule.
func (cr *crawler) allowed(host, path string) bool {
	rules, ok := cr.robots[host]
	if !ok {
		_, b := cr.get("http://" + host + "/robots.txt")
		star := false
		for line := range strings.Lines(string(b)) {
			k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
			k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
			switch k {
			case "user-agent":
				star = v == "*"
			case "allow", "disallow":
				if star {
					rules = append(rules, [2]string{k, v})
				}
			}
		}
		cr.robots[host] = rules
	}
	best, allow := -1, true
	for _, r := range rules {
		if strings.HasPrefix(path, r[1]) && len(r[1]) > best {
			best, allow = len(r[1]), r[0] == "allow"
		}
	}
	return allow
}

func (cr *crawler) push(u *url.URL, d int) {
	u.Fragment, u.RawFragment = "", ""
	if u.Scheme != "http" {
		return
	}
	if u.Path == "" {
		u.Path = "/"
	}
	s := u.String()
	if _, ok := cr.depth[s]; ok || !cr.inScope(u.Hostname()) || !cr.allowed(u.Hostname(), u.RequestURI()) {
		return
	}
	cr.depth[s] = d
	for len(cr.levels) <= d {
		cr.levels = append(cr.levels, nil)
	}
	cr.levels[d] = append(cr.levels[d], s)
}

// sitemaps pushes the URLs of the host's sitemaps at depth 1.
func (cr *crawler) sitemaps(host string) {
	_, robots := cr.get("http://" + host + "/robots.txt")
	loc := regexp.MustCompile(`<loc>([^<]+)</loc>`)
	for _, m := range regexp.MustCompile(`(?m)^Sitemap: (\S+)$`).FindAllStringSubmatch(string(robots), -1) {
		_, index := cr.get(m[1])
		for _, part := range loc.FindAllStringSubmatch(string(index), -1) {
			_, gz := cr.get(part[1])
			zr, err := gzip.NewReader(bytes.NewReader(gz))
			if err != nil {
				cr.t.Fatalf("%s: %v", part[1], err)
			}
			xml, _ := io.ReadAll(zr)
			for _, u := range loc.FindAllStringSubmatch(string(xml), -1) {
				p, _ := url.Parse(u[1])
				cr.push(p, 1)
			}
		}
	}
}

func (cr *crawler) run() {
	for _, s := range cr.crawl.Seeds {
		u, _ := url.Parse(s)
		if cr.crawl.Scope == "domain" {
			cr.scope[u.Hostname()[strings.Index(u.Hostname(), ".")+1:]] = true
		} else {
			cr.scope[u.Hostname()] = true
		}
	}
	for _, s := range cr.crawl.Seeds {
		u, _ := url.Parse(s)
		cr.push(u, 0)
	}
	if cr.crawl.Sitemaps {
		for _, s := range cr.crawl.Seeds {
			u, _ := url.Parse(s)
			cr.sitemaps(u.Hostname())
		}
	}
	for d := 0; d < len(cr.levels); d++ {
		for i := 0; i < len(cr.levels[d]); i++ {
			s := cr.levels[d][i]
			u, _ := url.Parse(s)
			resp, body := cr.get(s)
			if loc := resp.Header.Get("Location"); resp.StatusCode/100 == 3 {
				to, _ := u.Parse(loc)
				cr.push(to, d) // a redirect's target keeps its depth
				continue
			}
			if resp.StatusCode != 200 || cr.crawl.MaxDepth >= 0 && d >= cr.crawl.MaxDepth {
				continue
			}
			for _, l := range links(u, body) {
				cr.push(l, d+1)
			}
		}
	}
}

// links returns the links a crawler follows in an HTML page at base.
func links(base *url.URL, page []byte) []*url.URL {
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		return nil
	}
	attr := func(n *html.Node, key string) (string, bool) {
		for _, a := range n.Attr {
			if a.Key == key {
				return a.Val, true
			}
		}
		return "", false
	}
	hasToken := func(list, tok string) bool {
		return slices.Contains(strings.FieldsFunc(strings.ToLower(list), func(r rune) bool { return r == ' ' || r == ',' }), tok)
	}
	var hrefs []string
	nofollow, baseSet := false, false
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode {
			continue
		}
		switch n.Data {
		case "base":
			if h, ok := attr(n, "href"); ok && !baseSet {
				if b, err := base.Parse(h); err == nil {
					base, baseSet = b, true
				}
			}
		case "meta":
			if name, _ := attr(n, "name"); strings.EqualFold(name, "robots") {
				c, _ := attr(n, "content")
				nofollow = nofollow || hasToken(c, "nofollow")
			}
		case "a", "link":
			h, ok := attr(n, "href")
			rel, _ := attr(n, "rel")
			if !ok || hasToken(rel, "nofollow") || n.Data == "link" && !hasToken(rel, "next") {
				continue
			}
			hrefs = append(hrefs, h)
		}
	}
	if nofollow {
		return nil
	}
	var out []*url.URL
	for _, h := range hrefs {
		if u, err := base.Parse(strings.TrimSpace(h)); err == nil {
			out = append(out, u)
		}
	}
	return out
}

// Expected agrees with an independent crawl over HTTP, and the server's
// access log of that crawl passes Check.
func TestSiteExpectedMatchesCrawl(t *testing.T) {
	web := smallSite.MustGenerate()
	seeds := web.Seeds()
	for _, tc := range []struct {
		name  string
		crawl testbed.Crawl
	}{
		{"domain, every seed, depth 8, sitemaps", testbed.Crawl{Seeds: seeds, Scope: "domain", MaxDepth: 8, Sitemaps: true}},
		{"host h01, unbounded", testbed.Crawl{Seeds: seeds[1:2], MaxDepth: -1}},
		{"host h00, depth 4, sitemaps", testbed.Crawl{Seeds: seeds[:1], Scope: "host", MaxDepth: 4, Sitemaps: true}},
		{"domain from h02, depth 5", testbed.Crawl{Seeds: seeds[2:3], Scope: "domain", MaxDepth: 5}},
		{"seeds only", testbed.Crawl{Seeds: seeds, MaxDepth: 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := testbed.NewServer(web.HostConfigs()...)
			log := &testbed.AccessLog{Keep: true}
			srv.SetAccessLog(log)
			if err := srv.Start(); err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			c := srv.Client()
			c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			cr := &crawler{t: t, c: c, crawl: tc.crawl, scope: map[string]bool{}, robots: map[string][][2]string{}, depth: map[string]int{}}
			cr.run()

			e := web.Expected(tc.crawl)
			want := append(slices.Clone(e.Fetch), e.Trap...)
			slices.Sort(want)
			got := slices.Sorted(maps.Keys(cr.depth))
			if !slices.Equal(got, want) {
				t.Errorf("the crawl fetched %d URLs, Expected %d; only in the crawl: %q; only in Expected: %q",
					len(got), len(want), minus(got, want), minus(want, got))
			}
			for u, d := range cr.depth {
				if e.Depth[u] != d {
					t.Errorf("depth of %s = %d, Expected says %d", u, d, e.Depth[u])
				}
			}
			if err := e.Check(log.Requests()); err != nil {
				t.Errorf("Check(the server's log of the crawl): %v", err)
			}
			for u := range e.Never {
				if _, ok := cr.depth[u]; ok {
					t.Errorf("Never has %s, which the crawl fetched", u)
				}
			}
			reasons := map[string]int{}
			for _, r := range e.Never {
				reasons[r]++
			}
			t.Logf("%d to fetch, %d in the trap, %d sitemaps, never: %v", len(e.Fetch), len(e.Trap), len(e.Sitemaps), reasons)
		})
	}
}

// minus returns the elements of a not in b, both sorted.
func minus(a, b []string) []string {
	var out []string
	for _, s := range a {
		if _, ok := slices.BinarySearch(b, s); !ok {
			out = append(out, s)
		}
	}
	return out[:min(len(out), 10)]
}

// A crawl of the whole site to depth 20 with sitemaps meets every trap: the
// Never list holds each kind, the trap is bounded by depth.
func TestSiteExpectedTraps(t *testing.T) {
	web := testbed.Site{}.MustGenerate()
	e := web.Expected(testbed.Crawl{Seeds: web.Seeds(), Scope: "domain", MaxDepth: 20, Sitemaps: true})
	reasons := map[string]int{}
	for _, r := range e.Never {
		reasons[r]++
	}
	for _, r := range []string{"out of scope", "disallowed", "nofollow", "script", "comment"} {
		if reasons[r] == 0 {
			t.Errorf("Never has no URL for %q: %v", r, reasons)
		}
	}
	// 2026-01 at depth 1 from the root of h00, then one month a level.
	if len(e.Trap) != 2*19+1 || e.TrapPrefix != "http://h00.site.test/calendar/" {
		t.Errorf("Trap has %d months under %q, want 39 under http://h00.site.test/calendar/", len(e.Trap), e.TrapPrefix)
	}
	// Private, nofollow and hidden pages (1% each) are never fetched.
	if len(e.Fetch) < 9700 || len(e.Robots) != 20 || len(e.Sitemaps) != 80 {
		t.Errorf("Fetch, Robots, Sitemaps: %d, %d, %d URLs; want ≥ 9700, 20, 80", len(e.Fetch), len(e.Robots), len(e.Sitemaps))
	}
	if d := e.Depth["http://h00.site.test/calendar/2026-01.html"]; d != 1 {
		t.Errorf("depth of the calendar's first month = %d, want 1", d)
	}
	// Unbounded, the trap is open and Check accepts any month once.
	open := web.Expected(testbed.Crawl{Seeds: web.Seeds()[:1], MaxDepth: -1})
	if len(open.Trap) != 1 || open.TrapPrefix == "" {
		t.Errorf("unbounded: Trap = %q, TrapPrefix = %q", open.Trap, open.TrapPrefix)
	}
	var reqs []testbed.Request
	for _, u := range append(append(open.Fetch, open.Robots...), "http://h00.site.test/calendar/2040-05.html") {
		host, path, _ := strings.Cut(strings.TrimPrefix(u, "http://"), "/")
		reqs = append(reqs, testbed.Request{Host: host, URI: "/" + path, Status: 200})
	}
	if err := open.Check(reqs); err != nil {
		t.Errorf("Check(an unbounded crawl with a bounded trap): %v", err)
	}
}

// Check names what a crawl did wrong.
func TestSiteCheck(t *testing.T) {
	web := smallSite.MustGenerate()
	e := web.Expected(testbed.Crawl{Seeds: web.Seeds()[:1], MaxDepth: 3})
	req := func(u string, status int) testbed.Request {
		host, path, _ := strings.Cut(strings.TrimPrefix(u, "http://"), "/")
		return testbed.Request{Host: host, URI: "/" + path, Status: status}
	}
	var good []testbed.Request
	for _, u := range append(append(e.Fetch, e.Trap...), e.Robots...) {
		good = append(good, req(u, 200))
	}
	if err := e.Check(good); err != nil {
		t.Fatalf("Check(the expected requests) = %v", err)
	}
	// A 429 and its retry are one answer.
	retried := append(slices.Clone(good), req(e.Fetch[0], 429))
	if err := e.Check(retried); err != nil {
		t.Errorf("Check with a 429 before the answer = %v", err)
	}
	var never string
	for u := range e.Never {
		never = u
		break
	}
	for name, tc := range map[string]struct {
		reqs []testbed.Request
		want string
	}{
		"missing":    {good[1:], "never answered"},
		"repeated":   {append(slices.Clone(good), good[0]), "more than once"},
		"never":      {append(slices.Clone(good), req(never, 404)), e.Never[never]},
		"unexpected": {append(slices.Clone(good), req("http://h00.site.test/nowhere", 404)), "no correct crawl"},
	} {
		if err := e.Check(tc.reqs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Check = %v, want an error saying %q", name, err, tc.want)
		}
	}
}
