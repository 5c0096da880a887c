package testbed_test

import (
	"compress/gzip"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

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
