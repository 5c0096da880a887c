package testbed

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ServeHTTP serves the host's content: pages, robots.txt, sitemaps, assets,
// redirects and the calendar, 404 for anything else. Every 200 carries a
// strong ETag (a hash of the body) and Last-Modified, and a conditional
// request (If-None-Match, or If-Modified-Since without it) whose validator
// still matches answers 304 with no body, as net/http's ServeContent does
// (RFC 9110, section 13.2.2).
func (h *siteHost) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeText(w, http.StatusMethodNotAllowed, "testbed: method not allowed\n")
		return
	}
	path := r.URL.Path
	if to, ok := h.redirects[path]; ok {
		http.Redirect(w, r, to, http.StatusMovedPermanently)
		return
	}
	ctype, body, mod, ok := h.content(path)
	if !ok {
		notFound(w)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", ctype)
	hdr.Set("ETag", etag(body))
	http.ServeContent(w, r, "", mod, strings.NewReader(body))
}

// content returns what the host serves at path: its type, body and
// modification time, or false for a 404.
func (h *siteHost) content(path string) (ctype, body string, mod time.Time, ok bool) {
	if p, ok := h.byPath[path]; ok {
		rev := h.web.revision(p)
		return "text/html; charset=utf-8", h.web.render(p, rev), h.web.modified(p, rev), true
	}
	switch {
	case path == "/robots.txt":
		return "text/plain; charset=utf-8", string(h.robots), siteEpoch, true
	case path == "/sitemap_index.xml" && h.index != nil:
		return "application/xml", string(h.index), h.sitemapModified(), true
	case strings.HasPrefix(path, "/sitemap-") && strings.HasSuffix(path, ".xml.gz"):
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(path, "/sitemap-"), ".xml.gz"))
		if err == nil && n >= 1 && n <= len(h.parts) && path == partPath(n) {
			return "application/gzip", string(h.parts[n-1]), h.sitemapModified(), true
		}
	case strings.HasPrefix(path, "/static/"):
		if b, ok := asset(path); ok {
			return mimeOf(path), b, siteEpoch, true
		}
	case h.calendar && strings.HasPrefix(path, "/calendar/"):
		if m, ok := parseMonth(path); ok {
			return "text/html; charset=utf-8", h.renderMonth(m), siteEpoch, true
		}
	}
	return "", "", time.Time{}, false
}

const notFoundBody = "<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1></body></html>\n"

func notFound(w http.ResponseWriter) {
	hdr := w.Header()
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	hdr.Set("Content-Length", strconv.Itoa(len(notFoundBody)))
	w.WriteHeader(http.StatusNotFound)
	w.Write([]byte(notFoundBody))
}

// etag is a strong entity tag for body.
func etag(body string) string { return fmt.Sprintf(`"%016x"`, fnv64a(fnvOffset, body)) }

// unit maps a hash to [0, 1).
func unit(h uint64) float64 { return float64(h>>11) / (1 << 53) }

// revision returns the last version, up to the site's, at which page p
// changed; 0 if it never did.
func (w *Website) revision(p *sitePage) int {
	key := fnv64a(fnv64a(fnvOffset^w.site.Seed, p.host.name), p.path)
	for v := w.site.Version; v > 0; v-- {
		if unit(fnv64a(key, strconv.Itoa(v))) < w.site.Changed {
			return v
		}
	}
	return 0
}

// modified returns page p's Last-Modified at revision rev: a day per
// revision after the epoch, plus a fixed offset of the page's within the day.
func (w *Website) modified(p *sitePage, rev int) time.Time {
	off := fnv64a(fnv64a(fnvOffset, p.host.name), p.path) % 86400
	return siteEpoch.Add(time.Duration(rev)*24*time.Hour + time.Duration(off)*time.Second)
}

// sitemapModified is the Last-Modified of a host's sitemaps: that of the
// latest page they list.
func (h *siteHost) sitemapModified() time.Time {
	var t time.Time
	for _, path := range h.sitemap {
		p := h.byPath[path]
		if m := h.web.modified(p, h.web.revision(p)); m.After(t) {
			t = m
		}
	}
	return t
}

// pageRand is the source of a page's markup choices: a function of the site's
// seed, the host and the path, so a page renders the same whatever else the
// site holds.
func (w *Website) pageRand(host, path string) *rand.Rand {
	return rand.New(rand.NewPCG(fnv64a(fnv64a(fnvOffset, host), path), w.site.Seed))
}

// words returns n words of filler text chosen by rng.
func words(rng *rand.Rand, n int) string {
	blob := filler()
	off := rng.IntN(len(blob) - 400)
	s := string(blob[off : off+400])
	// Start at a word and keep n of them.
	if i := strings.IndexByte(s, ' '); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	return strings.Join(f[:min(n, len(f)-1)], " ")
}

// render writes page p's HTML at revision rev.
func (w *Website) render(p *sitePage, rev int) string {
	h := p.host
	rng := w.pageRand(h.name, p.path)
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	fmt.Fprintf(&b, "<title>%s %s</title>\n", h.name, p.path)
	resolveDir := dir(p.path)
	if p.base != "" {
		resolveDir = p.base
		if rng.IntN(2) == 0 {
			fmt.Fprintf(&b, "<base href=\"%s\">\n", p.base)
		} else {
			fmt.Fprintf(&b, "<base href=\"http://%s%s\">\n", h.name, p.base)
		}
	}
	switch {
	case p.metaNofollow:
		b.WriteString([]string{
			`<meta name="robots" content="nofollow">`,
			`<meta name="robots" content="noindex, nofollow">`,
			`<META NAME="ROBOTS" CONTENT="NOINDEX,NOFOLLOW">`,
		}[rng.IntN(3)] + "\n")
	case rng.IntN(10) == 0:
		// A decoy: noindex alone still lets links be followed.
		b.WriteString(`<meta name="robots" content="noindex">` + "\n")
	}
	b.WriteString(`<link rel="stylesheet" href="/static/site.css">` + "\n")
	for _, l := range p.links {
		if l.place == placeNext {
			fmt.Fprintf(&b, "<link rel=\"next\" href=\"%s\">\n", w.href(h, resolveDir, p.base != "", l, rng))
		}
	}
	b.WriteString("</head>\n<body>\n")
	fmt.Fprintf(&b, "<h1>%s</h1>\n", words(rng, 4))
	fmt.Fprintf(&b, "<img src=\"/static/img%d.png\" alt=\"\">\n", rng.IntN(assetImages))
	if rng.IntN(4) == 0 {
		// Links that lead nowhere to fetch. Not "#top" under a <base>,
		// against which it would resolve to the base's directory.
		top := `<a name="top"></a><a href="#top">top</a> `
		if p.base != "" {
			top = ""
		}
		fmt.Fprintf(&b, "<p>%s<a href=\"javascript:void(0)\">menu</a> <a href=\"mailto:info@%s\">mail</a></p>\n", top, h.name)
	}
	inList := false
	for i, l := range p.links {
		if i%5 == 0 {
			if inList {
				b.WriteString("</ul>\n")
				inList = false
			} else if i > 0 {
				b.WriteString("</p>\n")
			}
			if rng.IntN(3) == 0 {
				b.WriteString("<ul>\n")
				inList = true
			} else {
				b.WriteString("<p>")
			}
		}
		switch l.place {
		case placeNext:
			continue
		case placeScript:
			if rng.IntN(2) == 0 {
				fmt.Fprintf(&b, "<script>var next = \"%s\"; // <a href=\"%s\">next</a>\n</script>\n", l.path, l.path)
			} else {
				fmt.Fprintf(&b, "<script type=\"text/template\"><a href=\"%s\">%s</a></script>\n", l.path, words(rng, 1))
			}
			continue
		case placeComment:
			fmt.Fprintf(&b, "<!-- old menu: <a href=\"%s\">%s</a> -->\n", l.path, words(rng, 2))
			continue
		}
		if inList {
			b.WriteString("<li>")
		}
		b.WriteString(w.anchor(h, resolveDir, p.base != "", l, rng))
		if inList {
			b.WriteString("</li>\n")
		} else {
			b.WriteString(" " + words(rng, 1+rng.IntN(6)) + "\n")
		}
	}
	if inList {
		b.WriteString("</ul>\n")
	} else if len(p.links) > 0 {
		b.WriteString("</p>\n")
	}
	fmt.Fprintf(&b, "<p class=\"rev\">revision %d: %s</p>\n", rev, words(rand.New(rand.NewPCG(uint64(rev), rng.Uint64())), 12))
	b.WriteString("</body>\n</html>\n")
	return b.String()
}

// anchor writes an <a> element for l in one of several spellings.
func (w *Website) anchor(h *siteHost, resolveDir string, based bool, l siteLink, rng *rand.Rand) string {
	href := w.href(h, resolveDir, based, l, rng)
	if rng.IntN(10) == 0 {
		href += "#s" + strconv.Itoa(rng.IntN(9))
	}
	rel := ""
	if l.nofollow {
		rel = []string{` rel="nofollow"`, ` rel="noopener nofollow"`, ` rel="external nofollow ugc"`}[rng.IntN(3)]
	} else if rng.IntN(20) == 0 {
		rel = ` rel="noopener"`
	}
	text := words(rng, 1+rng.IntN(3))
	switch rng.IntN(6) {
	case 0:
		return `<a href='` + href + `'` + rel + `>` + text + `</a>`
	case 1:
		return `<A HREF="` + href + `"` + strings.ToUpper(rel) + `>` + text + `</A>`
	case 2:
		return `<a class="l"` + rel + ` href=` + href + `>` + text + `</a>`
	}
	return `<a href="` + href + `"` + rel + `>` + text + `</a>`
}

// href spells l's target as seen from a page whose links resolve against
// resolveDir (a <base> when based): absolute, scheme-relative, path-absolute
// or relative.
func (w *Website) href(h *siteHost, resolveDir string, based bool, l siteLink, rng *rand.Rand) string {
	if l.host != h.name {
		if rng.IntN(4) == 0 {
			return "//" + l.host + l.path
		}
		return "http://" + l.host + l.path
	}
	rel := w.site.Relative
	if based && rel > 0 {
		rel = max(rel, 0.8) // pages with <base> mostly test it
	}
	switch r := rng.Float64(); {
	case r < rel:
		s := relative(resolveDir, l.path)
		if !strings.HasPrefix(s, ".") && rng.IntN(4) == 0 {
			s = "./" + s
		}
		return s
	case r < rel+(1-rel)/5:
		return "http://" + l.host + l.path
	}
	return l.path
}

// relative returns a relative reference from directory from (ending in "/")
// to path: relative("/d3/", "/d5/p7.html") = "../d5/p7.html".
func relative(from, path string) string {
	fromSegs := strings.Split(strings.Trim(from, "/"), "/")
	if from == "/" {
		fromSegs = nil
	}
	d, file := dir(path), path[strings.LastIndexByte(path, '/')+1:]
	toSegs := strings.Split(strings.Trim(d, "/"), "/")
	if d == "/" {
		toSegs = nil
	}
	k := 0
	for k < len(fromSegs) && k < len(toSegs) && fromSegs[k] == toSegs[k] {
		k++
	}
	var b strings.Builder
	for range len(fromSegs) - k {
		b.WriteString("../")
	}
	for _, s := range toSegs[k:] {
		b.WriteString(s + "/")
	}
	b.WriteString(file)
	if b.Len() == 0 {
		return "./"
	}
	return b.String()
}

// monthPath returns the calendar path of month m (year×12 + month-1).
func monthPath(m int) string { return fmt.Sprintf("/calendar/%04d-%02d.html", m/12, m%12+1) }

// The calendar's months: January 0001 to December 9999.
const firstMonth, lastMonth = 1 * 12, 9999*12 + 11

// parseMonth parses a calendar path.
func parseMonth(path string) (int, bool) {
	s, ok := strings.CutPrefix(path, "/calendar/")
	if !ok || len(s) != 12 || s[4] != '-' || !strings.HasSuffix(s, ".html") {
		return 0, false
	}
	y, err1 := strconv.Atoi(s[:4])
	mo, err2 := strconv.Atoi(s[5:7])
	if err1 != nil || err2 != nil || y < 1 || mo < 1 || mo > 12 || s[0] == '+' || s[5] == '+' {
		return 0, false
	}
	m := y*12 + mo - 1
	return m, monthPath(m) == path
}

// renderMonth writes the calendar page of month m: links to the months
// before and after, forever.
func (h *siteHost) renderMonth(m int) string {
	var b strings.Builder
	name := time.Month(m%12 + 1).String()
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>%s %04d</title>\n</head>\n<body>\n", name, m/12)
	fmt.Fprintf(&b, "<h1>Events, %s %04d</h1>\n<p><a href=\"/\">home</a></p>\n<p>", name, m/12)
	if m > firstMonth {
		fmt.Fprintf(&b, "<a href=\"%s\">« previous month</a> ", strings.TrimPrefix(monthPath(m-1), "/calendar/"))
	}
	if m < lastMonth {
		fmt.Fprintf(&b, "<a href=\"%s\">next month »</a>", monthPath(m+1))
	}
	b.WriteString("</p>\n<table><tr><th>Mo</th><th>Tu</th><th>We</th><th>Th</th><th>Fr</th><th>Sa</th><th>Su</th></tr></table>\n</body>\n</html>\n")
	return b.String()
}

// robotsTxt writes the host's robots.txt.
func (h *siteHost) robotsTxt() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# robots.txt of %s, a polite testbed site\nUser-agent: badbot\nDisallow: /\n\n", h.name)
	b.WriteString("User-agent: *\nAllow: /private/public.html\nDisallow: /private/\n")
	if !h.web.site.NoSitemaps {
		fmt.Fprintf(&b, "\nSitemap: http://%s/sitemap_index.xml\n", h.name)
	}
	return []byte(b.String())
}

// disallowed reports whether robots.txt disallows path for every user agent
// but badbot: the longest matching rule wins (RFC 9309, section 2.2.2).
func disallowed(path string) bool {
	return strings.HasPrefix(path, "/private/") && !strings.HasPrefix(path, "/private/public.html")
}

func partPath(n int) string { return "/sitemap-" + strconv.Itoa(n) + ".xml.gz" }

// buildSitemaps lists the host's root, content, sitemap-only and public
// pages and one private page (a sitemap may list what robots.txt disallows)
// in gzipped parts, and the parts in an index. The chain, nofollow and hidden
// pages stay out.
func (h *siteHost) buildSitemaps() {
	for _, p := range h.pages {
		switch p.kind {
		case kindRoot, kindContent, kindMoved, kindOnly, kindPublic:
			h.sitemap = append(h.sitemap, p.path)
		case kindPrivate:
			if p.path == "/private/1.html" {
				h.sitemap = append(h.sitemap, p.path)
			}
		}
	}
	size := h.web.site.SitemapSize
	var idx strings.Builder
	idx.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n")
	for n := 1; (n-1)*size < len(h.sitemap); n++ {
		var b strings.Builder
		b.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n")
		for _, path := range h.sitemap[(n-1)*size : min(n*size, len(h.sitemap))] {
			p := h.byPath[path]
			mod := h.web.modified(p, h.web.revision(p))
			fmt.Fprintf(&b, "  <url><loc>http://%s%s</loc><lastmod>%s</lastmod></url>\n", h.name, path, mod.Format("2006-01-02"))
		}
		b.WriteString("</urlset>\n")
		var z bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression) // no name, no mtime: the same bytes every run
		zw.Write([]byte(b.String()))
		zw.Close()
		h.parts = append(h.parts, z.Bytes())
		fmt.Fprintf(&idx, "  <sitemap><loc>http://%s%s</loc></sitemap>\n", h.name, partPath(n))
	}
	idx.WriteString("</sitemapindex>\n")
	h.index = []byte(idx.String())
}

// assetImages is the number of images under /static/.
const assetImages = 5

// asset returns the bytes of a file under /static/.
func asset(path string) (string, bool) {
	if path == "/static/site.css" {
		return "body { font-family: sans-serif; max-width: 40em; margin: auto }\n", true
	}
	for k := range assetImages {
		if path == "/static/img"+strconv.Itoa(k)+".png" {
			// A PNG signature and deterministic bytes: not a valid image, but
			// typed like one.
			return "\x89PNG\r\n\x1a\n" + string(filler()[k*512:k*512+256]), true
		}
	}
	return "", false
}

func assetPaths() []string {
	out := []string{"/static/site.css"}
	for k := range assetImages {
		out = append(out, "/static/img"+strconv.Itoa(k)+".png")
	}
	return out
}

func mimeOf(path string) string {
	if strings.HasSuffix(path, ".css") {
		return "text/css; charset=utf-8"
	}
	return "image/png"
}
