package report

import (
	"strings"
	"testing"
)

// A crawl's report shows its shape: URLs by depth, those found in
// sitemaps, the 304s, and the links skipped by reason with their hosts.
func TestCrawlShape(t *testing.T) {
	results := strings.Join([]string{
		`{"url":"http://a.test/","host":"a.test","outcome":"ok","status":200,"attempts":1,"bytes":100,"error":""}`,
		`{"url":"http://a.test/sitemap.xml","host":"a.test","outcome":"ok","status":200,"attempts":1,"bytes":50,"error":"","kind":"sitemap"}`,
		`{"url":"http://a.test/1","host":"a.test","outcome":"ok","status":200,"attempts":1,"bytes":10,"error":"","depth":1,"found_on":"http://a.test/"}`,
		`{"url":"http://a.test/2","host":"a.test","outcome":"not_modified","status":304,"attempts":1,"bytes":0,"error":"","depth":1,"found_on":"http://a.test/sitemap.xml"}`,
		`{"url":"http://a.test/3","host":"a.test","outcome":"http_error","status":404,"attempts":1,"bytes":5,"error":"404 Not Found","depth":2,"found_on":"http://a.test/1"}`,
	}, "\n") + "\n"
	job := Job{Total: 5, Skips: []Skip{
		{Reason: "off_scope", Host: "a.test", Links: 7, Example: "http://elsewhere.test/"},
		{Reason: "max_depth", Host: "a.test", Links: 3, Example: "http://a.test/cal/2027-01"},
		{Reason: "off_scope", Host: "b.test", Links: 2, Example: "http://x.test/"},
	}}
	d, err := Read(strings.NewReader(results), nil, job)
	if err != nil {
		t.Fatal(err)
	}
	if d.Found != 3 || d.FromSitemap != 1 || d.Sitemaps != 1 || d.NotModified != 1 || d.Bytes != 165 {
		t.Errorf("found %d, from sitemaps %d, sitemaps %d, 304s %d, bytes %d", d.Found, d.FromSitemap, d.Sitemaps, d.NotModified, d.Bytes)
	}
	if len(d.Depths) != 3 || d.Depths[0] != (Depth{2, 2}) || d.Depths[1] != (Depth{2, 2}) || d.Depths[2] != (Depth{1, 0}) {
		t.Errorf("depths %v", d.Depths)
	}
	if d.Failed != 1 {
		t.Errorf("%d failed: a 304 is no failure", d.Failed)
	}
	var b strings.Builder
	if err := Write(&b, d); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"<h2>Crawl</h2>", `id="depths"`, `<td>off_scope</td><td data-series="skips" data-n="9">`,
		"a.test 7, b.test 2", "http://a.test/cal/2027-01", "1 answered 304 Not Modified", "165 B"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// A job that only fetched a list has no Crawl section.
	d, _ = Read(strings.NewReader(`{"url":"http://a.test/","host":"a.test","outcome":"ok","status":200,"attempts":1,"error":""}`+"\n"), nil, Job{Total: 1})
	b.Reset()
	Write(&b, d)
	if strings.Contains(b.String(), "<h2>Crawl</h2>") {
		t.Error("a list's report has a Crawl section")
	}
}
