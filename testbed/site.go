package testbed

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Site describes a generated multi-host website to crawl, for link discovery
// (issue 35): a link graph with cycles, relative links, <base>, nofollow,
// robots.txt Disallow, sitemap indexes with gzipped parts, redirects, 404s,
// deep chains, an infinite calendar trap and links to hosts outside the site.
// Site.Generate builds it; the result is a deterministic function of the
// Site, so the same Seed gives the same bytes on every run.
//
// The zero value is the site: 10,000 pages over 20 hosts,
// h00.site.test … h19.site.test, every feature on. Each field documents its
// zero value; a fraction's negative value means none. Site is plain data, so
// it decodes from TOML or JSON like HostConfig.
//
// # URL layout
//
// Every host of the site serves, at http://hNN.<Domain>:
//
//	/                      the root page
//	/d<J>/p<I>.html        content pages (J = I mod 8); some are linked from
//	                       nowhere and listed only in the sitemap
//	/m/<I>/                content pages at directory URLs; /m/<I> (no
//	                       slash) answers 301 to /m/<I>/
//	/chain/<K>.html        a deep chain: /chain/1.html is linked from the
//	                       root, each next one only by <link rel="next">
//	/private/<K>.html      disallowed by robots.txt, linked from pages
//	/private/public.html   allowed (Allow beats the shorter Disallow)
//	/nf/<K>.html           linked only by rel=nofollow links
//	/hidden/<K>.html       linked only from <script> and HTML comments
//	/gone/<K>.html         linked, never served: 404
//	/calendar/YYYY-MM.html the trap, on the first host: each month links to
//	                       the one before and after, years 0001 to 9999;
//	                       the root links to 2026-01
//	/static/…              a stylesheet and images (assets, not pages)
//	/robots.txt            Disallow: /private/, Sitemap: /sitemap_index.xml
//	/sitemap_index.xml     a sitemap index naming the parts
//	/sitemap-<N>.xml.gz    gzipped sitemaps of SitemapSize URLs each
//
// Any other path answers 404, and so does a host outside the site. Links to
// hosts outside the site name elsewhere<N>.test, not<Domain> and
// <Domain>.elsewhere.test, which no site serves.
type Site struct {
	// Domain is the registrable domain the hosts live under, so that one
	// domain scope covers them all: hosts are h00.<Domain>, h01.<Domain>, ….
	// Zero means "site.test".
	Domain string
	// Hosts is the number of hosts. Zero means 20.
	Hosts int
	// Pages is the number of pages over all hosts, every kind but calendar
	// months, spread evenly (the first hosts take the remainder). Zero means
	// 10,000; a host needs at least 50.
	Pages int
	// Links is the mean number of links in a page's body besides its link
	// home. Zero means 15.
	Links int
	// Seed seeds the generator; zero is a seed like any other.
	Seed uint64

	// CrossHost is the fraction of a page's links that go to other hosts of
	// the site. Zero means 0.1.
	CrossHost float64
	// OffSite is the fraction of a page's links that go to hosts outside
	// the site. Zero means 0.02.
	OffSite float64
	// Relative is the fraction of same-host links written as relative
	// references ("../d3/p7.html", "p12.html"); the rest are path-absolute
	// or absolute URLs. Zero means 0.4.
	Relative float64
	// Base is the fraction of pages with a <base href> pointing to another
	// directory, against which their relative links resolve. Zero means 0.05.
	Base float64
	// Nofollow is the fraction of a page's links with rel=nofollow (on top
	// of the links to /nf/ pages). Zero means 0.03.
	Nofollow float64
	// MetaNofollow is the fraction of pages with <meta name="robots"
	// content="nofollow">: none of their links is followed. Zero means 0.02.
	MetaNofollow float64
	// SitemapOnly is the fraction of pages linked from nowhere and listed in
	// their host's sitemap. Zero means 0.02.
	SitemapOnly float64
	// Changed is the fraction of pages whose content changes at each
	// Version: a re-crawl of Version n+1 after one of Version n sees that
	// many pages changed (new ETag, later Last-Modified) and the rest the
	// same. Links never change. Zero means 0.01, which leaves a re-crawl of
	// the default site about 97% 304s.
	Changed float64
	// Version is the generation of the content, 0 first. Zero means 0.
	Version int

	// ChainLen is the number of pages of each host's deep chain, at most a
	// fifth of its pages. Zero means 12 (or that fifth); negative means no
	// chain.
	ChainLen int
	// SitemapSize is the number of URLs per sitemap part. Zero means 200.
	SitemapSize int
	// NoCalendar leaves the calendar trap out.
	NoCalendar bool
	// NoSitemaps leaves sitemaps out: no Sitemap line, no sitemap files, no
	// pages reachable only from a sitemap.
	NoSitemaps bool

	// Host is the configuration every host of the site gets (capacity,
	// latency, faults); its Name, Robots and Content are the site's. The
	// zero value is a host with no limits.
	Host HostConfig
}

// The defaults of Site's zero fields.
const (
	defaultSiteDomain = "site.test"
	defaultSiteHosts  = 20
	defaultSitePages  = 10000
	defaultSiteLinks  = 15
	defaultChainLen   = 12
	defaultSitemap    = 200
	minHostPages      = 50
)

// calendarStart is the month the first host's root links to.
const calendarStart = 2026*12 + 0 // January 2026, as year×12 + month-1

// siteEpoch is the Last-Modified of version 0 of the content.
var siteEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Validate reports every problem with s, joined, each naming its field.
func (s Site) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("testbed: site: "+format, args...))
	}
	if s.Domain != "" {
		for _, r := range s.Domain {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '-') {
				bad("Domain %q: want lower-case letters, digits, dots and hyphens", s.Domain)
				break
			}
		}
	}
	if s.Hosts < 0 || s.Hosts > 1000 {
		bad("Hosts %d: want 0 to 1000", s.Hosts)
	}
	if s.Pages < 0 {
		bad("Pages %d: want ≥ 0", s.Pages)
	}
	if s.Links < 0 || s.Links > 1000 {
		bad("Links %d: want 0 to 1000", s.Links)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"CrossHost", s.CrossHost}, {"OffSite", s.OffSite}, {"Relative", s.Relative}, {"Base", s.Base},
		{"Nofollow", s.Nofollow}, {"MetaNofollow", s.MetaNofollow}, {"SitemapOnly", s.SitemapOnly}, {"Changed", s.Changed},
	} {
		if math.IsNaN(f.v) || f.v > 1 {
			bad("%s %v: want at most 1 (negative: none)", f.name, f.v)
		}
	}
	if s.Version < 0 {
		bad("Version %d: want ≥ 0", s.Version)
	}
	if s.SitemapSize < 0 || s.SitemapSize > 50000 {
		bad("SitemapSize %d: want 0 to 50000", s.SitemapSize)
	}
	if len(errs) == 0 {
		d := s.withDefaults()
		if d.CrossHost+d.OffSite > 1 {
			bad("CrossHost + OffSite = %v: want at most 1", d.CrossHost+d.OffSite)
		}
		if d.Pages/d.Hosts < minHostPages {
			bad("Pages %d over %d hosts: want at least %d a host", d.Pages, d.Hosts, minHostPages)
		}
		if d.ChainLen > d.Pages/d.Hosts/5 {
			bad("ChainLen %d: want at most a fifth of a host's %d pages", d.ChainLen, d.Pages/d.Hosts)
		}
	}
	if err := s.Host.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// withDefaults returns s with its zero values replaced by the defaults and
// negative fractions by 0.
func (s Site) withDefaults() Site {
	if s.Domain == "" {
		s.Domain = defaultSiteDomain
	}
	if s.Hosts == 0 {
		s.Hosts = defaultSiteHosts
	}
	if s.Pages == 0 {
		s.Pages = defaultSitePages
	}
	if s.Links == 0 {
		s.Links = defaultSiteLinks
	}
	frac := func(v *float64, def float64) {
		switch {
		case *v == 0:
			*v = def
		case *v < 0:
			*v = 0
		}
	}
	frac(&s.CrossHost, 0.1)
	frac(&s.OffSite, 0.02)
	frac(&s.Relative, 0.4)
	frac(&s.Base, 0.05)
	frac(&s.Nofollow, 0.03)
	frac(&s.MetaNofollow, 0.02)
	frac(&s.SitemapOnly, 0.02)
	frac(&s.Changed, 0.01)
	if s.NoSitemaps {
		s.SitemapOnly = 0
	}
	switch {
	case s.ChainLen == 0:
		s.ChainLen = min(defaultChainLen, s.Pages/s.Hosts/5)
	case s.ChainLen < 0:
		s.ChainLen = 0
	}
	if s.SitemapSize == 0 {
		s.SitemapSize = defaultSitemap
	}
	return s
}

// HostName returns the name of host i of the site: "h00.site.test" and so
// on, numbered with at least two digits.
func (s Site) HostName(i int) string {
	s = s.withDefaults()
	w := max(len(strconv.Itoa(s.Hosts-1)), 2)
	return fmt.Sprintf("h%0*d.%s", w, i, s.Domain)
}

// Website is a generated Site: its hosts, their pages and the links between
// them. It serves them (Handler, HostConfigs), writes them as files
// (WriteFiles) and knows what a correct crawl of them requests (Expected).
// A Website is read-only and safe for concurrent use.
type Website struct {
	site   Site // defaults applied
	hosts  []*siteHost
	byName map[string]*siteHost
	off    []string // the hosts outside the site that pages link to
}

// siteHost is one host of a Website.
type siteHost struct {
	web       *Website
	i         int
	name      string
	pages     []*sitePage          // by index; pages[0] is the root
	byPath    map[string]*sitePage // every page's path, plus "…/index.html" forms
	redirects map[string]string    // "/m/<I>" → "/m/<I>/"
	gone      map[string]bool      // linked paths that answer 404
	calendar  bool
	targets   []*sitePage // pages other pages link to at random: root, content
	robots    []byte
	index     []byte   // the sitemap index; nil without sitemaps
	parts     [][]byte // gzipped sitemap parts, parts[n-1] is sitemap-n.xml.gz
	sitemap   []string // the paths listed in the parts, in order
}

// pageKind is what a page is for.
type pageKind uint8

const (
	kindRoot     pageKind = iota
	kindContent           // /d<J>/p<I>.html
	kindMoved             // /m/<I>/
	kindOnly              // listed only in the sitemap
	kindChain             // /chain/<K>.html
	kindPublic            // /private/public.html
	kindPrivate           // /private/<K>.html
	kindNofollow          // /nf/<K>.html
	kindHidden            // /hidden/<K>.html
)

var kindNames = [...]string{"root", "content", "moved", "sitemap-only", "chain", "public", "private", "nofollow", "hidden"}

func (k pageKind) String() string { return kindNames[k] }

// sitePage is one page of a host.
type sitePage struct {
	host         *siteHost
	idx          int
	path         string
	kind         pageKind
	metaNofollow bool
	base         string // the <base href> directory's path, "" for none
	links        []siteLink
}

// linkPlace is where a link sits in a page, which decides whether a crawler
// follows it.
type linkPlace uint8

const (
	placeA       linkPlace = iota // <a href>: followed
	placeNext                     // <link rel="next" href> in the head: followed
	placeScript                   // inside <script>: never followed
	placeComment                  // inside an HTML comment: never followed
)

// siteLink is one link of a page.
type siteLink struct {
	host, path string // the target: a host of the site or outside it
	place      linkPlace
	nofollow   bool // rel="nofollow"
}

func (l siteLink) url() string { return "http://" + l.host + l.path }

// Generate builds the site s describes. It returns Validate's error for an
// invalid s.
func (s Site) Generate() (*Website, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	s = s.withDefaults()
	w := &Website{site: s, byName: make(map[string]*siteHost, s.Hosts)}
	for i := range 10 {
		w.off = append(w.off, fmt.Sprintf("elsewhere%d.test", i))
	}
	w.off = append(w.off, "not"+s.Domain, s.Domain+".elsewhere.test")
	rng := rand.New(rand.NewPCG(s.Seed, 0x35_5eed))
	for i := range s.Hosts {
		n := s.Pages / s.Hosts
		if i < s.Pages%s.Hosts {
			n++
		}
		h := w.layout(i, n, rng)
		w.hosts = append(w.hosts, h)
		w.byName[h.name] = h
	}
	for _, h := range w.hosts {
		w.link(h, rng)
	}
	for _, h := range w.hosts {
		h.robots = h.robotsTxt()
		if !s.NoSitemaps {
			h.buildSitemaps()
		}
	}
	return w, nil
}

// MustGenerate is Generate for sites known to be valid; it panics on an
// invalid s.
func (s Site) MustGenerate() *Website {
	w, err := s.Generate()
	if err != nil {
		panic(err)
	}
	return w
}

// layout creates host i's n pages: their kinds, paths and flags.
func (w *Website) layout(i, n int, rng *rand.Rand) *siteHost {
	s := w.site
	h := &siteHost{
		web: w, i: i, name: s.HostName(i),
		byPath:    map[string]*sitePage{},
		redirects: map[string]string{},
		gone:      map[string]bool{},
		calendar:  i == 0 && !s.NoCalendar,
	}
	few := max(1, n/100)
	nOnly := 0
	if s.SitemapOnly > 0 {
		nOnly = max(1, int(math.Round(s.SitemapOnly*float64(n))))
	}
	nContent := n - 1 - nOnly - s.ChainLen - 1 - 3*few
	add := func(kind pageKind, path string) *sitePage {
		p := &sitePage{host: h, idx: len(h.pages), path: path, kind: kind}
		h.pages = append(h.pages, p)
		h.byPath[path] = p
		if strings.HasSuffix(path, "/") {
			h.byPath[path+"index.html"] = p
		}
		return p
	}
	add(kindRoot, "/")
	// A content page's index among pages is its number I; 1% of them live
	// at directory URLs.
	moved := map[int]bool{}
	for _, k := range rng.Perm(nContent)[:max(1, nContent/100)] {
		moved[1+k] = true
	}
	for range nContent {
		idx := len(h.pages)
		if moved[idx] {
			add(kindMoved, "/m/"+strconv.Itoa(idx)+"/")
			h.redirects["/m/"+strconv.Itoa(idx)] = "/m/" + strconv.Itoa(idx) + "/"
			continue
		}
		add(kindContent, contentPath(idx))
	}
	for range nOnly {
		add(kindOnly, contentPath(len(h.pages)))
	}
	for k := range s.ChainLen {
		add(kindChain, "/chain/"+strconv.Itoa(k+1)+".html")
	}
	add(kindPublic, "/private/public.html")
	for k := range few {
		add(kindPrivate, "/private/"+strconv.Itoa(k+1)+".html")
	}
	for k := range few {
		add(kindNofollow, "/nf/"+strconv.Itoa(k+1)+".html")
	}
	for k := range few {
		add(kindHidden, "/hidden/"+strconv.Itoa(k+1)+".html")
	}
	content := h.pages[1 : 1+nContent]
	for _, k := range rng.Perm(nContent)[:max(1, int(math.Round(s.MetaNofollow*float64(nContent))))] {
		content[k].metaNofollow = true
	}
	pageful := h.pages[:1+nContent]
	for _, k := range rng.Perm(len(pageful))[:max(1, int(math.Round(s.Base*float64(n))))] {
		p := pageful[k]
		// Another directory than the page's own, so that resolving against
		// the page instead of the base gives another URL.
		for p.base == "" || p.base == dir(p.path) {
			p.base = "/d" + strconv.Itoa(rng.IntN(8)) + "/"
		}
	}
	h.targets = pageful
	return h
}

func contentPath(i int) string {
	return "/d" + strconv.Itoa(i%8) + "/p" + strconv.Itoa(i) + ".html"
}

// dir returns the directory of a path: "/d3/" for "/d3/p7.html", "/m/5/" for
// "/m/5/".
func dir(path string) string { return path[:strings.LastIndexByte(path, '/')+1] }

// link creates the links of host h's pages.
func (w *Website) link(h *siteHost, rng *rand.Rand) {
	s := w.site
	// A spanning tree first: every content page gets a followable link from
	// an earlier page that a crawler follows, so that all are reachable from
	// the root within the host.
	parents := []*sitePage{h.pages[0]}
	for _, p := range h.targets[1:] {
		parent := parents[rng.IntN(len(parents))]
		parent.links = append(parent.links, siteLink{host: h.name, path: p.path})
		if !p.metaNofollow {
			parents = append(parents, p)
		}
	}
	on := func() *sitePage { return parents[rng.IntN(len(parents))] }
	for _, p := range h.pages {
		// Every page links home: cycles back to the root.
		p.links = append(p.links, siteLink{host: h.name, path: "/"})
		switch p.kind {
		case kindChain:
			k, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(p.path, "/chain/"), ".html"))
			if k > 1 {
				p.links = append(p.links, siteLink{host: h.name, path: "/chain/" + strconv.Itoa(k-1) + ".html"})
			}
			if k < s.ChainLen {
				p.links = append(p.links, siteLink{host: h.name, path: "/chain/" + strconv.Itoa(k+1) + ".html", place: placeNext})
			}
			continue
		case kindPublic:
			on().links = append(on().links, siteLink{host: h.name, path: p.path})
		case kindPrivate:
			for range 2 {
				on().links = append(on().links, siteLink{host: h.name, path: p.path})
			}
		case kindNofollow:
			for range 2 {
				on().links = append(on().links, siteLink{host: h.name, path: p.path, nofollow: true})
			}
		case kindHidden:
			on().links = append(on().links, siteLink{host: h.name, path: p.path, place: placeScript})
			on().links = append(on().links, siteLink{host: h.name, path: p.path, place: placeComment})
		case kindMoved:
			on().links = append(on().links, siteLink{host: h.name, path: strings.TrimSuffix(p.path, "/")})
		}
		for range s.Links/2 + rng.IntN(s.Links+1) {
			var l siteLink
			switch r := rng.Float64(); {
			case r < s.CrossHost && len(w.hosts) > 1:
				o := w.hosts[rng.IntN(len(w.hosts)-1)]
				if o == h {
					o = w.hosts[len(w.hosts)-1]
				}
				l = siteLink{host: o.name, path: o.targets[rng.IntN(len(o.targets))].path}
			case r < s.CrossHost+s.OffSite:
				l = siteLink{host: w.off[rng.IntN(len(w.off))], path: "/p" + strconv.Itoa(rng.IntN(100)) + ".html"}
			default:
				l = siteLink{host: h.name, path: h.targets[rng.IntN(len(h.targets))].path}
			}
			l.nofollow = rng.Float64() < s.Nofollow
			p.links = append(p.links, l)
		}
	}
	if s.ChainLen > 0 {
		h.pages[0].links = append(h.pages[0].links, siteLink{host: h.name, path: "/chain/1.html"})
	}
	for k := range max(1, len(h.pages)/250) {
		path := "/gone/" + strconv.Itoa(k+1) + ".html"
		h.gone[path] = true
		on().links = append(on().links, siteLink{host: h.name, path: path})
	}
	if h.calendar {
		h.pages[0].links = append(h.pages[0].links, siteLink{host: h.name, path: monthPath(calendarStart)})
	}
	// Shuffle each page's links so that the special ones do not all come
	// last, keeping the <link rel="next"> of chains in place (it goes in the
	// head anyway).
	for _, p := range h.pages {
		rng.Shuffle(len(p.links), func(i, j int) { p.links[i], p.links[j] = p.links[j], p.links[i] })
	}
}

// Site returns the Site generated, with defaults applied.
func (w *Website) Site() Site { return w.site }

// Hosts returns the names of the site's hosts, in order.
func (w *Website) Hosts() []string {
	out := make([]string, len(w.hosts))
	for i, h := range w.hosts {
		out[i] = h.name
	}
	return out
}

// Seeds returns every host's root URL, "http://h00.site.test/" …: the seeds
// of a crawl of the whole site.
func (w *Website) Seeds() []string {
	out := make([]string, len(w.hosts))
	for i, h := range w.hosts {
		out[i] = "http://" + h.name + "/"
	}
	return out
}

// HostConfigs returns a HostConfig for each host of the site, in order: the
// Site's Host template with the host's Name, its robots.txt as Robots and the
// site's pages as Content. Pass them to NewServer:
//
//	srv := testbed.NewServer(web.HostConfigs()...)
func (w *Website) HostConfigs() []HostConfig {
	out := make([]HostConfig, len(w.hosts))
	for i, h := range w.hosts {
		c := w.site.Host
		c.Name = h.name
		c.Robots = string(h.robots)
		c.Content = h
		c.Schedule = slices.Clone(c.Schedule)
		c.SoftBlock.Paths = slices.Clone(c.SoftBlock.Paths)
		out[i] = c
	}
	return out
}

// Handler returns a handler serving every host of the site by the Host
// header, with no capacity limits nor logs: the content alone. Unknown hosts
// answer 404.
func (w *Website) Handler() http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if h, ok := w.byName[strings.ToLower(hostname(r.Host))]; ok {
			h.ServeHTTP(rw, r)
			return
		}
		writeText(rw, http.StatusNotFound, "testbed: no host "+r.Host+"\n")
	})
}

// Counts is what a Website holds, for tests that check every feature is
// there.
type Counts struct {
	Hosts int
	Pages int // every page but calendar months
	// Links counts links in pages, every place; the other link counts are
	// parts of it.
	Links        int
	CrossHost    int // to another host of the site
	OffSite      int // to a host outside the site
	Nofollow     int // rel=nofollow
	Script       int // inside <script>
	Comment      int // inside HTML comments
	Next         int // <link rel="next">
	Private      int // to a path robots.txt disallows
	Redirect     int // to a URL answering 301
	Gone         int // to a URL answering 404
	ToRoot       int // to a host's root from another page of it: cycles
	MetaNofollow int // pages with <meta name="robots" content="nofollow">
	Base         int // pages with <base href>
	SitemapOnly  int // pages listed in a sitemap, linked from nowhere
	ChainLen     int // length of each host's chain
	Sitemaps     int // sitemap parts (.xml.gz), over all hosts
	Calendar     int // hosts with the calendar trap
}

// Counts counts what the site holds.
func (w *Website) Counts() Counts {
	c := Counts{Hosts: len(w.hosts), ChainLen: w.site.ChainLen}
	for _, h := range w.hosts {
		c.Pages += len(h.pages)
		c.Sitemaps += len(h.parts)
		if h.calendar {
			c.Calendar++
		}
		for _, p := range h.pages {
			if p.metaNofollow {
				c.MetaNofollow++
			}
			if p.base != "" {
				c.Base++
			}
			if p.kind == kindOnly {
				c.SitemapOnly++
			}
			for _, l := range p.links {
				c.Links++
				_, site := w.byName[l.host]
				switch {
				case !site:
					c.OffSite++
				case l.host != h.name:
					c.CrossHost++
				case l.path == "/" && p.kind != kindRoot:
					c.ToRoot++
				case disallowed(l.path):
					c.Private++
				case h.redirects[l.path] != "":
					c.Redirect++
				case h.gone[l.path]:
					c.Gone++
				}
				if l.nofollow {
					c.Nofollow++
				}
				switch l.place {
				case placeScript:
					c.Script++
				case placeComment:
					c.Comment++
				case placeNext:
					c.Next++
				}
			}
		}
	}
	return c
}
