package testbed_test

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/polite-go/polite/testbed"
)

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
