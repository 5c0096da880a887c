package crawl

import (
	"bytes"
	"compress/gzip"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/polite-go/polite/crawl/links"
	"github.com/polite-go/polite/crawl/scope"
)

// Discovery (issue 35): with Options.Follow a job is a crawl, not only a
// fetch of its list. Each page it fetches is read for links (HTML, a
// redirect's Location, a sitemap's entries); those the scope takes are
// added to the job in the same transaction that records the page's
// result, so a job killed at any instant loses no link found and fetches
// no URL twice: a page whose result did not commit is fetched again and
// read again, and the links of one that did are in state.db. The set of
// URLs seen is the urls table itself (its url is unique), on disk; in
// memory the committer keeps a fixed cache of the latest ones and a count
// per host, so memory does not grow with the crawl.

// Kind says what a URL of the job is.
type Kind uint8

const (
	KindPage    Kind = 0 // a page (or any resource): listed, or found as a link
	KindSitemap Kind = 1 // a sitemap, read for its entries (Follow.Sitemaps)
)

// Follow configures discovery (Options.Follow).
type Follow struct {
	// Rules decide which links are taken (scope, include and exclude,
	// depth, traps, normalisation). The scope's roots are the listed
	// URLs' (Load), kept in state.db for the next runs.
	Rules scope.Rules
	// MaxPerHost, if positive, is how many URLs discovery adds to the job
	// per host at most (listed URLs do not count): past it a host's links
	// are skipped (max_per_host), which bounds a trap no rule names.
	MaxPerHost int
	// MaxURLs, if positive, is how many URLs the job holds at most, the
	// listed ones included: past it links are skipped (max_urls).
	MaxURLs int
	// Assets also follows img, script, stylesheet and media links.
	Assets bool
	// Sitemaps reads the sitemaps each host's robots.txt names (and the
	// sitemap indexes and gzipped parts they lead to) for more URLs: a
	// sitemap's entries are at depth 1, as links on the host's home page.
	Sitemaps bool
	// Agent is the product token <meta name=...> and X-Robots-Tag may name
	// (besides "robots"). If empty, "polite".
	Agent string
}

// found is what a finished URL's answer named that the scope took, on its
// way to the committer, and what it did not take.
type found struct {
	parent int64
	page   string // the URL of the page that named them
	host   string // its host key
	lane   Lane
	links  []foundLink
	skips  []skipped
}

type foundLink struct {
	url, host string
	delta     int // its depth less its page's: 1 for a link, 0 for a redirect's target or an index's sitemap
	// hops counts the links of delta 0 in a row that led to it (a chain
	// of redirects, refreshes or sitemap indexes): at most MaxRedirects,
	// so a chain that never ends is not followed for ever at one depth.
	hops int
	kind Kind
	// robots: named by the host's robots.txt (a sitemap), not by the
	// page: it has no parent, and found_on is left out.
	robots bool
}

// skipped counts the links of one answer not taken for one reason.
type skipped struct {
	why     scope.Reason
	n       int
	example string
}

// TooManyHops is the reason a link is skipped after MaxRedirects
// redirects (or refreshes, or sitemap indexes) in a row: each keeps the
// depth of what named it, so the depth bound alone would not end a chain.
const TooManyHops scope.Reason = "max_redirects"

// maxLinks bounds the links read from one page.
const maxLinks = links.DefaultMaxLinks

// discover reads the answer to it for links, when the job follows them:
// a redirect's Location, a sitemap's entries or an HTML page's links, and
// the sitemaps of the host's robots.txt, the first time one of its URLs is
// answered in a run. res is the URL's result, already made; its Location
// is set for a redirect.
func (j *Job) discover(it *item, resp *http.Response, body []byte, res *Result) *found {
	f := j.opts.Follow
	if f == nil || resp == nil {
		return nil
	}
	fd := &found{parent: it.id, page: it.url, host: it.host.key, lane: it.lane}
	seen := map[string]bool{}
	take := func(raw string, delta int, kind Kind, robots bool) {
		// The depth bound is the committer's to apply, from the page's
		// depth then (discoverer).
		norm, why := j.scope.Check(raw, -1)
		if why == scope.OK {
			host, problem := CheckURL(norm, j.opts.MaxURLLen)
			if problem != "" {
				why = scope.BadURL
			} else if !seen[norm] {
				seen[norm] = true
				fd.links = append(fd.links, foundLink{url: norm, host: host, delta: delta, kind: kind, robots: robots})
			}
			if why == scope.OK {
				return
			}
		}
		if norm == "" {
			norm = raw
		}
		fd.skip(why, norm)
	}
	if f.Sitemaps && j.sitemapsOnce(it.host) {
		if rb := j.tr.CachedRobots(resp.Request.URL); rb != nil {
			for _, sm := range rb.Sitemaps() {
				take(sm, 0, KindSitemap, true)
			}
		}
	}
	switch {
	case res.Outcome == NotModified:
		// No body: its links came with the earlier job's URLs (since.go).
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		if loc, err := resp.Location(); err == nil {
			res.Location = loc.String() // redacted and cut when committed
			take(res.Location, 0, it.kind, false)
		}
	case res.Outcome != OK || resp.StatusCode >= 300 || resp.StatusCode == http.StatusNoContent:
	case it.kind == KindSitemap || f.Sitemaps && !isHTML(resp.Header.Get("Content-Type"), body) && looksLikeSitemap(body):
		// A sitemap linked as a page (a footer's link), or listed by
		// robots.txt only after it was found so, is read as one.
		it.kind = KindSitemap
		j.readSitemap(it, body, func(u string, d int, k Kind) { take(u, d, k, false) })
	case isHTML(resp.Header.Get("Content-Type"), body):
		agent := f.Agent
		if agent == "" {
			agent = "polite"
		}
		buf := j.linkBufs.Get().(*[]links.Link)
		ls, page, err := links.HTML((*buf)[:0], bytes.NewReader(body), resp.Request.URL, agent, links.Options{Assets: f.Assets, MaxLinks: maxLinks})
		if err != nil {
			j.logDiscovery("reading a page's links", res.URL, err)
		}
		nofollow, _ := links.RobotsHeader(resp.Header, agent)
		nofollow = nofollow || page.NoFollow
		if page.Refresh != "" && !nofollow {
			take(page.Refresh, 0, KindPage, false) // a redirect, in the page
		}
		for _, l := range ls {
			if nofollow || l.NoFollow {
				fd.skip(scope.NoFollow, l.URL)
				continue
			}
			take(l.URL, 1, KindPage, false)
		}
		clear(ls)
		*buf = ls[:0]
		j.linkBufs.Put(buf)
	}
	if len(fd.links) == 0 && len(fd.skips) == 0 {
		return nil
	}
	return fd
}

// maxFoundBacklog bounds the bytes of links on their way to the committer:
// workers that find faster than it adds wait. A sitemap's 200 links take
// about 24 KB; a page's 10,000, at most, about 1.2 MB.
const maxFoundBacklog = 16 << 20

// size is about the bytes fd holds, for the job's foundBacklog (nil: 0).
func (fd *found) size() int64 {
	if fd == nil {
		return 0
	}
	n := int64(len(fd.page))
	for _, l := range fd.links {
		n += int64(len(l.url)+len(l.host)) + 64
	}
	for _, s := range fd.skips {
		n += int64(len(s.example)) + 48
	}
	return n
}

// skip counts a link not taken.
func (fd *found) skip(why scope.Reason, u string) {
	for i := range fd.skips {
		if fd.skips[i].why == why {
			fd.skips[i].n++
			return
		}
	}
	fd.skips = append(fd.skips, skipped{why: why, n: 1, example: cutTo(redact(u), maxNamed)})
}

// readSitemap takes a sitemap's entries: pages one link deeper than the
// sitemap, or, from a sitemap index, sitemaps at its own depth.
func (j *Job) readSitemap(it *item, body []byte, take func(u string, delta int, k Kind)) {
	var index bool
	var entries []string
	index, bad, err := links.Sitemap(bytes.NewReader(body), links.SitemapOptions{}, func(e links.Entry) error {
		entries = append(entries, e.Loc)
		return nil
	})
	if err != nil {
		j.logDiscovery("reading a sitemap", it.url, err)
	}
	for range bad {
		take("", 1, KindPage) // counted as bad_url
	}
	for _, e := range entries {
		if index {
			take(e, 0, KindSitemap)
		} else {
			take(e, 1, KindPage)
		}
	}
}

// sitemapsOnce reports whether h's robots.txt sitemaps are still to be
// taken this run (the first time, true; then false).
func (j *Job) sitemapsOnce(h *host) bool {
	return h != nil && h.sitemaps.CompareAndSwap(false, true)
}

// logDiscovery logs what went wrong reading an answer for links; the URL's
// result stands, with the links read before it.
func (j *Job) logDiscovery(what, u string, err error) {
	if j.opts.Logger != nil {
		u, _, _ = strings.Cut(redact(u), "?") // a query may carry a token
		j.opts.Logger.Warn("crawl: "+what, "url", u, "error", err)
	}
}

// looksLikeSitemap reports whether body, maybe gzipped, starts as a
// sitemap or a sitemap index does (its root element within the first
// KiB), whatever its Content-Type says.
func looksLikeSitemap(body []byte) bool {
	head := body[:min(len(body), 1024)]
	if len(body) > 2 && body[0] == 0x1f && body[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return false
		}
		var buf [1024]byte
		n, _ := io.ReadFull(zr, buf[:])
		head = buf[:n]
	}
	return bytes.Contains(head, []byte("<urlset")) || bytes.Contains(head, []byte("<sitemapindex"))
}

// isHTML reports whether an answer of this Content-Type is HTML to read
// for links; without one, whether its body looks like HTML.
func isHTML(ct string, body []byte) bool {
	if ct == "" {
		ct = http.DetectContentType(body)
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		mt = strings.ToLower(strings.TrimSpace(strings.Split(ct, ";")[0]))
	}
	return mt == "text/html" || mt == "application/xhtml+xml"
}

// discoverer is the committer's side of discovery: it adds the links
// found to the job, once each, within the bounds, in the transaction of
// the batch whose results found them.
//
// Depth is the shortest known: a link's depth is its page's depth in
// state.db when the page commits (not when it was handed out), and a link
// found again by a shorter path lowers the URL's depth and parent, and
// those of the URLs it added to the job, if need be. Links past
// Rules.MaxDepth are kept in the deep table with each page that named
// them: a shorter path to one of those pages later brings them in. What a
// fetched page passes on is only that: its links that were already in
// the job through another page keep their depth, so at the bound's edge a
// crawl that met pages out of breadth-first order may still leave out a
// page a breadth-first one takes. A page's result keeps the depth it was
// fetched at.
type discoverer struct {
	f     *Follow
	fleet bool           // the links go to the fleet's frontier (the outbox), not to the job
	total int            // URLs in the job
	hostN map[string]int // URLs found per host, as far as read (found_hosts)
	// seen caches URLs known to be in the job and their depths, a slot
	// per hash: a link seen again (a site's menu, on every page) no
	// shallower costs no statement. A slot holds the latest; the table
	// decides the rest.
	seen [1 << 16]seenURL
}

type seenURL struct {
	hash  uint64
	depth int
}

// foundCount is the new URLs per host and lane a batch added.
type foundCount map[string][numLanes]int

// addTx is one batch's additions: its statements and what it added.
type addTx struct {
	d                                     *discoverer
	tx                                    *sql.Tx
	ins, find, lower, depthOf, deep, kids *sql.Stmt
	out                                   *sql.Stmt
	added                                 foundCount
	hostAdded                             map[string]int
	skips                                 map[skipKey]*skipped
}

type skipKey struct {
	why  scope.Reason
	host string
}

func (a *addTx) skip(why scope.Reason, host string, n int, example string) {
	k := skipKey{why, host}
	if s := a.skips[k]; s != nil {
		s.n += n
		return
	}
	a.skips[k] = &skipped{why: why, n: n, example: example}
}

// add inserts the batch's links in tx and records its skips, and returns
// the URLs it added by host and lane.
func (d *discoverer) add(tx *sql.Tx, batch []*found) (foundCount, error) {
	a := &addTx{d: d, tx: tx, added: foundCount{}, hostAdded: map[string]int{}, skips: map[skipKey]*skipped{}}
	for _, q := range []struct {
		st  **sql.Stmt
		sql string
	}{
		{&a.ins, `INSERT OR IGNORE INTO urls(url, host, lane, depth, parent, kind, hops) VALUES (?, ?, ?, ?, ?, ?, ?)`},
		{&a.find, `SELECT id, depth, state FROM urls WHERE url = ?`},
		{&a.lower, `UPDATE urls SET depth = ?, parent = ? WHERE id = ? AND depth > ?`},
		{&a.depthOf, `SELECT depth, hops FROM urls WHERE id = ?`},
		{&a.deep, `INSERT INTO deep(url, host, lane, depth, parent, kind) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT(url, parent) DO UPDATE SET depth = excluded.depth WHERE excluded.depth < depth`},
		{&a.kids, `SELECT id, depth, state FROM urls WHERE parent = ?`},
		{&a.out, `INSERT OR IGNORE INTO outbox(url, host, lane, depth, found_on, kind, hops) VALUES (?, ?, ?, ?, ?, ?, ?)`},
	} {
		st, err := tx.Prepare(q.sql)
		if err != nil {
			return nil, err
		}
		defer st.Close()
		*q.st = st
	}
	for _, fd := range batch {
		var base, hops int
		if err := a.depthOf.QueryRow(fd.parent).Scan(&base, &hops); err != nil {
			return nil, fmt.Errorf("the depth of URL %d: %w", fd.parent, err)
		}
		for _, l := range fd.links {
			depth := base + l.delta
			var parent any = fd.parent
			if l.robots {
				depth, parent = 0, nil
			} else if l.delta == 0 {
				if l.hops = hops + 1; l.hops > MaxRedirects {
					a.skip(TooManyHops, fd.host, 1, l.url)
					continue
				}
			}
			var err error
			if d.fleet {
				err = a.send(l, depth, fd.lane, fd.host, fd.page)
			} else {
				err = a.link(l, depth, parent, fd.lane, fd.host)
			}
			if err != nil {
				return nil, err
			}
		}
		for _, s := range fd.skips {
			a.skip(s.why, fd.host, s.n, s.example)
		}
	}
	for host, n := range a.hostAdded {
		if _, err := tx.Exec(`INSERT INTO found_hosts(host, n) VALUES (?, ?) ON CONFLICT(host) DO UPDATE SET n = n + excluded.n`, host, n); err != nil {
			return nil, err
		}
	}
	for k, s := range a.skips {
		if _, err := tx.Exec(`INSERT INTO skips(reason, host, n, example) VALUES (?, ?, ?, ?)
			ON CONFLICT(reason, host) DO UPDATE SET n = n + excluded.n`, string(k.why), k.host, s.n, s.example); err != nil {
			return nil, err
		}
	}
	return a.added, nil
}

// link adds one link at depth, found on the page of parent (a host key
// from): a URL new to the job, or a shorter path to one it has.
func (a *addTx) link(l foundLink, depth int, parent any, lane Lane, from string) error {
	d := a.d
	h := hashURL(l.url)
	slot := &d.seen[h&(uint64(len(d.seen))-1)]
	if slot.hash == h && slot.depth <= depth {
		return nil // in the job, no deeper than this
	}
	var id int64
	var had int
	var state string
	err := a.find.QueryRow(l.url).Scan(&id, &had, &state)
	if max := d.f.Rules.MaxDepth; max > 0 && depth > max {
		switch {
		case err == nil:
			*slot = seenURL{h, had} // in the job already, within the bound
			return nil
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		// Kept with its page: a shorter path to the page brings it in.
		if _, err := a.deep.Exec(l.url, l.host, lane, depth, parent, l.kind); err != nil {
			return err
		}
		a.skip(scope.MaxDepth, from, 1, l.url)
		return nil
	}
	switch {
	case err == nil:
		*slot = seenURL{h, min(had, depth)}
		if had <= depth {
			return nil
		}
		return a.shorter(id, had, depth, parent, state)
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	if d.f.MaxURLs > 0 && d.total >= d.f.MaxURLs {
		a.skip(scope.MaxURLs, from, 1, l.url)
		return nil
	}
	n, err := d.hostCount(a.tx, l.host)
	if err != nil {
		return err
	}
	if d.f.MaxPerHost > 0 && n >= d.f.MaxPerHost {
		a.skip(scope.MaxPerHost, l.host, 1, l.url)
		return nil
	}
	if _, err := a.ins.Exec(l.url, l.host, lane, depth, parent, l.kind, l.hops); err != nil {
		return err
	}
	*slot = seenURL{h, depth}
	d.total++
	d.hostN[l.host]++
	a.hostAdded[l.host]++
	c := a.added[l.host]
	c[lane]++
	a.added[l.host] = c
	return nil
}

// send adds one link at depth to the outbox, for the fleet's frontier
// (fleet.go). The frontier keeps each URL once, at the depth it was first
// found at; --max-per-host and --max-urls count this worker's finds.
func (a *addTx) send(l foundLink, depth int, lane Lane, from, page string) error {
	d := a.d
	if max := d.f.Rules.MaxDepth; max > 0 && depth > max {
		a.skip(scope.MaxDepth, from, 1, l.url)
		return nil
	}
	h := hashURL(l.url)
	slot := &d.seen[h&(uint64(len(d.seen))-1)]
	if slot.hash == h && slot.depth <= depth {
		return nil
	}
	if d.f.MaxURLs > 0 && d.total >= d.f.MaxURLs {
		a.skip(scope.MaxURLs, from, 1, l.url)
		return nil
	}
	if d.f.MaxPerHost > 0 && d.hostN[l.host] >= d.f.MaxPerHost {
		a.skip(scope.MaxPerHost, l.host, 1, l.url)
		return nil
	}
	if l.robots {
		page = ""
	}
	r, err := a.out.Exec(l.url, l.host, lane, depth, page, l.kind, l.hops)
	if err != nil {
		return err
	}
	*slot = seenURL{h, depth}
	if n, _ := r.RowsAffected(); n == 1 {
		d.total++
		d.hostN[l.host]++
	}
	return nil
}

// shorter records a shorter path to the URL of id (at depth had, now
// depth, from parent). A URL already fetched passes it on: the URLs it led
// to move up as much, and its links that were too deep come in if they are
// no longer.
func (a *addTx) shorter(id int64, had, depth int, parent any, state string) error {
	if _, err := a.lower.Exec(depth, parent, id, depth); err != nil {
		return err
	}
	if state != "done" {
		return nil // its links, when it is fetched, go from its new depth
	}
	by := had - depth
	rows, err := a.kids.Query(id)
	if err != nil {
		return err
	}
	type kid struct {
		id    int64
		depth int
		state string
	}
	var kids []kid
	for rows.Next() {
		var k kid
		if err := rows.Scan(&k.id, &k.depth, &k.state); err != nil {
			rows.Close()
			return err
		}
		kids = append(kids, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, k := range kids {
		if err := a.shorter(k.id, k.depth, k.depth-by, id, k.state); err != nil {
			return err
		}
	}
	return a.undeep(id, by)
}

// undeep brings in the links of the page of id kept past the depth bound
// that a path shorter by by brings within it.
func (a *addTx) undeep(id int64, by int) error {
	max := a.d.f.Rules.MaxDepth
	rows, err := a.tx.Query(`DELETE FROM deep WHERE parent = ? AND depth - ? <= ? RETURNING url, host, lane, depth, kind`, id, by, max)
	if err != nil {
		return err
	}
	type deepLink struct {
		l     foundLink
		lane  Lane
		depth int
	}
	var ls []deepLink
	for rows.Next() {
		var x deepLink
		if err := rows.Scan(&x.l.url, &x.l.host, &x.lane, &x.depth, &x.l.kind); err != nil {
			rows.Close()
			return err
		}
		ls = append(ls, x)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, x := range ls {
		if err := a.link(x.l, x.depth-by, id, x.lane, x.l.host); err != nil {
			return err
		}
	}
	return nil
}

// hostCount returns how many URLs discovery has added for host so far.
func (d *discoverer) hostCount(tx *sql.Tx, host string) (int, error) {
	if n, ok := d.hostN[host]; ok {
		return n, nil
	}
	var n int
	err := tx.QueryRow(`SELECT n FROM found_hosts WHERE host = ?`, host).Scan(&n)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, err
	}
	d.hostN[host] = n
	return n, nil
}

// hashURL is a URL's 64-bit FNV-1a hash, never 0 (an empty slot).
func hashURL(u string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(u))
	return h.Sum64() | 1
}

// Skip is what discovery did not take: links skipped for one reason on the
// pages of one host, and the first of them.
type Skip struct {
	Reason  string `json:"reason"`
	Host    string `json:"host"`
	Links   int    `json:"links"`
	Example string `json:"example"`
}

// Skips returns the job's links not taken, by reason and host, most first.
func (j *Job) Skips() ([]Skip, error) { return readSkips(j.st.db) }

func readSkips(db *sql.DB) ([]Skip, error) {
	rows, err := db.Query(`SELECT reason, host, n, example FROM skips ORDER BY n DESC, reason, host`)
	if err != nil {
		return nil, fmt.Errorf("crawl: reading skipped links: %w", err)
	}
	defer rows.Close()
	var out []Skip
	for rows.Next() {
		var s Skip
		if err := rows.Scan(&s.Reason, &s.Host, &s.Links, &s.Example); err != nil {
			return nil, fmt.Errorf("crawl: reading skipped links: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// openScope builds the job's scope from the rules and the roots earlier
// runs kept.
func (j *Job) openScope() error {
	f := j.opts.Follow
	j.scope = scope.New(f.Rules)
	j.linkBufs = &sync.Pool{New: func() any { b := make([]links.Link, 0, 64); return &b }}
	rows, err := j.st.db.Query(`SELECT root FROM roots`)
	if err != nil {
		return fmt.Errorf("crawl: reading the scope's roots: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			return fmt.Errorf("crawl: reading the scope's roots: %w", err)
		}
		if err := j.scope.AddRoot(r); err != nil {
			return fmt.Errorf("crawl: %s: %w", StateFile, err)
		}
	}
	return rows.Err()
}

// seed takes a listed URL into the scope, and returns the form it is kept
// in: normalised, so that a link to it is the same URL.
func (j *Job) seed(l *Line) {
	if j.scope == nil || l.Problem != "" {
		return
	}
	if err := j.scope.AddSeed(l.Text); err != nil {
		return // the URL is fetched as listed; its links decide for themselves
	}
	if n, err := scope.Normalize(l.Text, j.opts.Follow.Rules.Norm); err == nil {
		l.Text = n
	}
	j.addListed(l.Text)
}

// addListed notes the host of a listed URL: credentials go to it.
func (j *Job) addListed(u string) {
	if j.listed == nil {
		return
	}
	if p, err := url.Parse(u); err == nil {
		j.listed[p.Host] = true
	}
}

// hasSecrets reports whether h carries credentials (secret).
func hasSecrets(h http.Header) bool {
	for k := range h {
		if secret[k] {
			return true
		}
	}
	return false
}

// openListed reads the hosts the job's listed URLs name, when it follows
// links with credentials (or a Host) in its Header (see Job.listed).
func (j *Job) openListed() error {
	if j.opts.Follow == nil || !hasSecrets(j.opts.Header) && j.opts.Header.Get("Host") == "" {
		return nil
	}
	j.listed = map[string]bool{}
	return each(j.st.db, `SELECT url FROM urls WHERE parent IS NULL AND via IS NULL AND depth = 0 AND kind = 0 AND host != ''`,
		func(rows *sql.Rows) error {
			var u string
			if err := rows.Scan(&u); err != nil {
				return err
			}
			j.addListed(u)
			return nil
		})
}

// saveRoots keeps the scope's roots in state.db.
func (j *Job) saveRoots() error {
	if j.scope == nil {
		return nil
	}
	tx, err := j.st.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, r := range j.scope.Roots() {
		if _, err := tx.Exec(`INSERT OR IGNORE INTO roots(root) VALUES (?)`, r); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// ReadSkips returns the links discovery did not take in the job in dir, by
// reason and host, most first, without taking the job's lock.
func ReadSkips(dir string) ([]Skip, error) {
	st, _, err := openExisting(dir)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return readSkips(st.db)
}
