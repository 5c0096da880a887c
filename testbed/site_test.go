package testbed_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/polite-go/polite/testbed"
)

// smallSite is a site small enough to crawl in a test, with every feature
// (and sitemaps of several parts).
var smallSite = testbed.Site{Hosts: 4, Pages: 400, Seed: 7, SitemapSize: 30}

// The same Site gives the same bytes, file for file; another seed gives
// other bytes.
func TestSiteDeterministic(t *testing.T) {
	write := func(s testbed.Site) map[string]string {
		dir := t.TempDir()
		if err := s.MustGenerate().WriteFiles(dir); err != nil {
			t.Fatal(err)
		}
		files := map[string]string{}
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			rel, _ := filepath.Rel(dir, path)
			files[rel] = string(b)
			return err
		})
		return files
	}
	a, b := write(smallSite), write(smallSite)
	if !maps.Equal(a, b) {
		t.Errorf("two generations of the same site differ")
	}
	other := smallSite
	other.Seed++
	c := write(other)
	same := 0
	for name, body := range c {
		if a[name] == body && strings.HasSuffix(name, ".html") {
			same++
		}
	}
	if same > len(c)/2 {
		t.Errorf("seeds %d and %d: %d of %d files the same", smallSite.Seed, other.Seed, same, len(c))
	}
}

// The site has every feature it asks for.
func TestSiteFeatures(t *testing.T) {
	web := testbed.Site{}.MustGenerate()
	c := web.Counts()
	t.Logf("%+v", c)
	if c.Hosts != 20 || c.Pages != 10000 {
		t.Errorf("Hosts, Pages = %d, %d, want 20, 10000", c.Hosts, c.Pages)
	}
	if mean := float64(c.Links) / float64(c.Pages); mean < 14 || mean > 19 {
		t.Errorf("links per page = %.1f, want about 15 plus the link home", mean)
	}
	for name, n := range map[string]int{
		"CrossHost": c.CrossHost, "OffSite": c.OffSite, "Nofollow": c.Nofollow, "Script": c.Script,
		"Comment": c.Comment, "Next": c.Next, "Private": c.Private, "Redirect": c.Redirect, "Gone": c.Gone,
		"ToRoot": c.ToRoot, "MetaNofollow": c.MetaNofollow, "Base": c.Base, "SitemapOnly": c.SitemapOnly,
	} {
		if n < 20 { // at least one a host
			t.Errorf("Counts().%s = %d, want ≥ 20", name, n)
		}
	}
	if c.Sitemaps < 2*20 || c.Calendar != 1 || c.ChainLen != 12 {
		t.Errorf("Sitemaps, Calendar, ChainLen = %d, %d, %d; want ≥ 40, 1, 12", c.Sitemaps, c.Calendar, c.ChainLen)
	}
	if hosts := web.Hosts(); hosts[0] != "h00.site.test" || hosts[19] != "h19.site.test" {
		t.Errorf("Hosts() = %q … %q", hosts[0], hosts[19])
	}

	// The sitemaps: robots.txt names the index, the index names gzipped
	// parts, the parts list the pages, sitemap-only ones included.
	h := web.Handler()
	get := func(u string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", u, nil))
		return rec.Code, rec.Body.String()
	}
	_, robots := get("http://h03.site.test/robots.txt")
	if !strings.Contains(robots, "Sitemap: http://h03.site.test/sitemap_index.xml\n") || !strings.Contains(robots, "Disallow: /private/\n") {
		t.Errorf("robots.txt:\n%s", robots)
	}
	_, index := get("http://h03.site.test/sitemap_index.xml")
	parts := regexp.MustCompile(`<loc>(http://h03\.site\.test/sitemap-\d+\.xml\.gz)</loc>`).FindAllStringSubmatch(index, -1)
	if len(parts) < 2 {
		t.Fatalf("sitemap index names %d parts:\n%s", len(parts), index)
	}
	listed := 0
	for _, p := range parts {
		code, gz := get(p[1])
		zr, err := gzip.NewReader(strings.NewReader(gz))
		if code != 200 || err != nil {
			t.Fatalf("%s: %d, %v", p[1], code, err)
		}
		xml, _ := io.ReadAll(zr)
		listed += strings.Count(string(xml), "<loc>")
	}
	if listed < 450 {
		t.Errorf("the sitemaps of h03 list %d URLs, want about 480", listed)
	}
	if code, body := get("http://h00.site.test/calendar/9999-12.html"); code != 200 || !strings.Contains(body, "2026") && !strings.Contains(body, "previous month") {
		t.Errorf("the calendar's last month: %d", code)
	}
	for _, u := range []string{"http://h01.site.test/calendar/2026-01.html", "http://h00.site.test/calendar/2026-13.html", "http://h00.site.test/nothing"} {
		if code, _ := get(u); code != 404 {
			t.Errorf("GET %s: %d, want 404", u, code)
		}
	}
}

func TestSiteValidate(t *testing.T) {
	for name, s := range map[string]testbed.Site{
		"few pages":   {Hosts: 10, Pages: 100},
		"fraction":    {CrossHost: 1.5},
		"cross + off": {CrossHost: 0.7, OffSite: 0.5},
		"domain":      {Domain: "Site Test"},
		"version":     {Version: -1},
		"host":        {Host: testbed.HostConfig{Rate: -1}},
	} {
		if _, err := s.Generate(); err == nil {
			t.Errorf("%s: Generate(%+v) = nil error", name, s)
		}
	}
	if _, err := (testbed.Site{Hosts: 2, Pages: 100, NoCalendar: true, NoSitemaps: true, ChainLen: -1, Nofollow: -1}).Generate(); err != nil {
		t.Errorf("a minimal site: %v", err)
	}
}

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

// Pages send a strong ETag and Last-Modified; a conditional request that
// still matches gets 304 with no body, and takes a token like any request.
// A later Version changes about Changed of the pages.
func TestSiteConditional(t *testing.T) {
	site := smallSite
	site.Host = testbed.HostConfig{Rate: 1e-3, Burst: 3} // three requests, then 429 for 1,000 s
	web := site.MustGenerate()
	srv := testbed.NewServer(web.HostConfigs()...)
	log := &testbed.AccessLog{Keep: true}
	srv.SetAccessLog(log)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := srv.Client()
	do := func(hdr ...string) (*http.Response, string) {
		req, _ := http.NewRequest("GET", "http://h01.site.test/", nil)
		for i := 0; i < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, _ := do()
	tag, mod := resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
	if resp.StatusCode != 200 || !regexp.MustCompile(`^"[0-9a-f]{16}"$`).MatchString(tag) || mod == "" {
		t.Fatalf("GET /: %d, ETag %q, Last-Modified %q", resp.StatusCode, tag, mod)
	}
	if resp, body := do("If-None-Match", tag); resp.StatusCode != 304 || body != "" {
		t.Errorf("If-None-Match: %d with %d bytes, want 304 and none", resp.StatusCode, len(body))
	}
	if resp, _ := do("If-Modified-Since", mod); resp.StatusCode != 304 {
		t.Errorf("If-Modified-Since: %d, want 304", resp.StatusCode)
	}
	if resp, _ := do("If-None-Match", tag); resp.StatusCode != 429 {
		t.Errorf("a fourth request: %d, want 429: a 304 takes a token", resp.StatusCode)
	}
	var statuses []int
	for _, r := range log.Requests() {
		statuses = append(statuses, r.Status)
	}
	if st := srv.Host("h01.site.test").Stats(); st.Admitted != 3 || st.Rejected != 1 || !slices.Equal(statuses, []int{200, 304, 304, 429}) {
		t.Errorf("admitted %d, rejected %d, log %v; want 3, 1, [200 304 304 429]", st.Admitted, st.Rejected, statuses)
	}

	// Version 1 against version 0: a re-crawl sees about 1% changed.
	v1 := smallSite
	v1.Version = 1
	h0, h1 := smallSite.MustGenerate().Handler(), v1.MustGenerate().Handler()
	e := web.Expected(testbed.Crawl{Seeds: web.Seeds(), Scope: "domain", MaxDepth: -1})
	changed, pages := 0, 0
	for _, u := range e.Fetch {
		rec := httptest.NewRecorder()
		h0.ServeHTTP(rec, httptest.NewRequest("GET", u, nil))
		if rec.Code != 200 {
			continue
		}
		pages++
		req := httptest.NewRequest("GET", u, nil)
		req.Header.Set("If-None-Match", rec.Header().Get("ETag"))
		req.Header.Set("If-Modified-Since", rec.Header().Get("Last-Modified"))
		again := httptest.NewRecorder()
		h1.ServeHTTP(again, req)
		switch again.Code {
		case 200:
			changed++
			if again.Header().Get("ETag") == rec.Header().Get("ETag") {
				t.Errorf("%s changed but kept its ETag", u)
			}
		case 304:
		default:
			t.Errorf("%s: %d on re-crawl", u, again.Code)
		}
	}
	if f := float64(changed) / float64(pages); f == 0 || f > 0.04 {
		t.Errorf("version 1: %d of %d pages changed (%.1f%%), want about 1%%", changed, pages, 100*f)
	}
}

// The access log writes a line per request, unknown hosts included, that
// ParseRequest reads back; under concurrency no line is torn.
func TestAccessLog(t *testing.T) {
	web := smallSite.MustGenerate()
	srv := testbed.NewServer(web.HostConfigs()...)
	var buf lockedBuffer
	log := &testbed.AccessLog{Out: &buf, Keep: true}
	srv.SetAccessLog(log)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	start := time.Now()
	urls := []string{"http://h00.site.test/", "http://h01.site.test/gone/1.html", "http://h02.site.test/robots.txt", "http://elsewhere1.test/p3.html"}
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			// Through the shared listener, so that a host outside the
			// site reaches the server too.
			u, _ := url.Parse(urls[i%len(urls)])
			req, _ := http.NewRequest("GET", "http://"+srv.Addr()+u.Path, nil)
			req.Host = u.Host
			resp, err := c.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 40 || len(log.Requests()) != 40 {
		t.Fatalf("%d lines, %d requests kept; want 40", len(lines), len(log.Requests()))
	}
	seen := map[string]testbed.Request{}
	for _, line := range lines {
		r, err := testbed.ParseRequest(line)
		if err != nil {
			t.Fatal(err)
		}
		if r.String() != line {
			t.Errorf("ParseRequest(%q).String() = %q", line, r.String())
		}
		if r.Time.Before(start.Add(-time.Second)) || r.Method != "GET" || r.Conditional {
			t.Errorf("line %q", line)
		}
		seen[r.Host+" "+r.URI] = r
	}
	for key, want := range map[string]int{
		"h00.site.test /": 200, "h01.site.test /gone/1.html": 404, "h02.site.test /robots.txt": 200, "elsewhere1.test /p3.html": 404,
	} {
		if r, ok := seen[key]; !ok || r.Status != want || r.Status == 200 && r.Bytes == 0 {
			t.Errorf("%s: logged %+v, want status %d", key, r, want)
		}
	}
	if _, err := testbed.ParseRequest("2026-01-01T00:00:00Z h GET / 200"); err == nil {
		t.Error("ParseRequest of a short line: no error")
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A static copy served by a file server answers as the Website does: the
// same bodies for every file, a redirect from /m/<I> to /m/<I>/, 404 for
// what is not there.
func TestSiteWriteFiles(t *testing.T) {
	web := smallSite.MustGenerate()
	dir := t.TempDir()
	if err := web.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	live := web.Handler()
	files := 0
	for _, host := range web.Hosts() {
		static := http.FileServer(http.Dir(filepath.Join(dir, host)))
		serve := func(h http.Handler, path string) *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "http://"+host+path, nil))
			return rec
		}
		filepath.WalkDir(filepath.Join(dir, host), func(file string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(filepath.Join(dir, host), file)
			path := "/" + filepath.ToSlash(rel)
			if p, ok := strings.CutSuffix(path, "index.html"); ok {
				path = p // FileServer redirects …/index.html to …/
			}
			files++
			s, l := serve(static, path), serve(live, path)
			if s.Code != 200 || l.Code != 200 || s.Body.String() != l.Body.String() {
				t.Errorf("%s%s: static %d, live %d, bodies equal %v", host, path, s.Code, l.Code, s.Body.String() == l.Body.String())
			}
			if s.Header().Get("Last-Modified") != l.Header().Get("Last-Modified") {
				t.Errorf("%s%s: Last-Modified static %q, live %q", host, path, s.Header().Get("Last-Modified"), l.Header().Get("Last-Modified"))
			}
			return nil
		})
		for _, path := range []string{"/gone/1.html", "/nothing.html"} {
			if s, l := serve(static, path), serve(live, path); s.Code != 404 || l.Code != 404 {
				t.Errorf("%s%s: static %d, live %d, want 404", host, path, s.Code, l.Code)
			}
		}
	}
	// The redirects: each /m/<I> link, followed, reaches the same page.
	e := web.Expected(testbed.Crawl{Seeds: web.Seeds(), Scope: "domain", MaxDepth: -1})
	redirects := 0
	for _, u := range e.Fetch {
		pu, _ := url.Parse(u)
		if !regexp.MustCompile(`^/m/\d+$`).MatchString(pu.Path) {
			continue
		}
		redirects++
		static := http.FileServer(http.Dir(filepath.Join(dir, pu.Host)))
		for name, h := range map[string]http.Handler{"static": static, "live": live} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", u, nil))
			to, _ := pu.Parse(rec.Header().Get("Location"))
			if rec.Code != 301 || to.Path != pu.Path+"/" {
				t.Errorf("%s %s: %d to %q, want 301 to %s/", name, u, rec.Code, rec.Header().Get("Location"), pu.Path)
			}
		}
	}
	if files < 400 || redirects == 0 {
		t.Errorf("%d files, %d redirects compared", files, redirects)
	}
}

// A re-crawl of the site at the next Version, sending the
// validators of the first crawl, is answered 304 for at least 95% of its
// requests (issue 35's --since must-show needs that of the server).
func TestSiteRecrawl(t *testing.T) {
	if testing.Short() {
		t.Skip("renders 20,000 pages")
	}
	web := testbed.Site{}.MustGenerate()
	first, second := web.Handler(), testbed.Site{Version: 1}.MustGenerate().Handler()
	e := web.Expected(testbed.Crawl{Seeds: web.Seeds(), Scope: "domain", MaxDepth: 20, Sitemaps: true})
	var urls []string
	for _, list := range [][]string{e.Robots, e.Sitemaps, e.Fetch, e.Trap} {
		urls = append(urls, list...)
	}
	statuses := map[int]int{}
	for _, u := range urls {
		rec := httptest.NewRecorder()
		first.ServeHTTP(rec, httptest.NewRequest("GET", u, nil))
		req := httptest.NewRequest("GET", u, nil)
		if tag := rec.Header().Get("ETag"); tag != "" {
			req.Header.Set("If-None-Match", tag)
		}
		again := httptest.NewRecorder()
		second.ServeHTTP(again, req)
		statuses[again.Code]++
	}
	if f := float64(statuses[304]) / float64(len(urls)); f < 0.95 {
		t.Errorf("re-crawl: %v of %d requests; 304s are %.1f%%, want ≥ 95%%", statuses, len(urls), 100*f)
	} else {
		t.Logf("re-crawl: %v of %d requests, %.1f%% 304", statuses, len(urls), 100*f)
	}
}
