package report

import (
	"fmt"
	"sort"
	"strings"
)

// Skip is what discovery did not take (crawl.Skip): the links skipped for
// one reason on the pages of one host, and the first of them.
type Skip struct {
	Reason, Host string
	Links        int
	Example      string
}

// Bounds on what a crawl's shape keeps: the depths it shows, and the
// sitemaps it remembers to tell the URLs they named.
const (
	maxDepthRows = 1000
	maxSitemaps  = 100_000
)

// Depth is the finished URLs at one depth of a crawl (--follow).
type Depth struct {
	URLs, OK int
}

// okOutcome reports whether an outcome is a success: ok, or not_modified
// (a re-crawl's 304).
func okOutcome(o string) bool { return o == "ok" || o == "not_modified" }

// crawled reports whether the job discovered URLs: it has the crawl's
// shape to show.
func (d *Data) crawled() bool { return d.Found > 0 || len(d.Job.Skips) > 0 }

// writeCrawl shows a crawl's shape (issue 35, item 5): URLs by depth, how
// they were found, and the links not taken by reason, with the hosts whose
// pages had the most and an example each.
func (d *Data) writeCrawl(b *strings.Builder) {
	if !d.crawled() {
		return
	}
	b.WriteString("<h2>Crawl</h2>\n")
	fmt.Fprintf(b, `<p>%s URLs were found by following links (%s of them in sitemaps), %s were listed; %s read as sitemaps.`,
		fmtNum(d.Found), fmtNum(d.FromSitemap), fmtNum(d.URLs-d.Found), fmtNum(d.Sitemaps))
	if d.NotModified > 0 {
		fmt.Fprintf(b, ` %s answered 304 Not Modified to a re-crawl's validators.`, fmtNum(d.NotModified))
	}
	fmt.Fprintf(b, ` Body bytes received: %s.</p>`+"\n", fmtBytes(d.Bytes))
	b.WriteString(`<table id="depths"><thead><tr><th>depth</th><th>URLs</th><th>ok</th></tr></thead><tbody>` + "\n")
	for i, r := range d.Depths {
		if r.URLs == 0 {
			continue
		}
		fmt.Fprintf(b, `<tr><td>%d</td><td data-series="depth" data-n="%d">%s</td><td>%s</td></tr>`+"\n", i, r.URLs, fmtNum(r.URLs), fmtNum(r.OK))
	}
	b.WriteString("</tbody></table>\n")
	if len(d.Job.Skips) == 0 {
		b.WriteString(`<p class="muted">No link was skipped.</p>` + "\n")
		return
	}
	type reason struct {
		name  string
		links int
		rows  []Skip
	}
	by := map[string]*reason{}
	for _, s := range d.Job.Skips {
		r := by[s.Reason]
		if r == nil {
			r = &reason{name: s.Reason}
			by[s.Reason] = r
		}
		r.links += s.Links
		r.rows = append(r.rows, s)
	}
	rs := make([]*reason, 0, len(by))
	for _, r := range by {
		rs = append(rs, r)
	}
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].links != rs[j].links {
			return rs[i].links > rs[j].links
		}
		return rs[i].name < rs[j].name
	})
	b.WriteString(`<p>Links not followed, by reason (a link counts once per page that had it). max_depth and max_per_host are where a crawl trap, such as an endless calendar, was cut short.</p>
<table id="skips"><thead><tr><th>reason</th><th>links</th><th>hosts with most</th><th>for example</th></tr></thead><tbody>` + "\n")
	for _, r := range rs {
		sort.Slice(r.rows, func(i, j int) bool { return r.rows[i].Links > r.rows[j].Links })
		var hosts []string
		for i, s := range r.rows {
			if i == 3 {
				hosts = append(hosts, fmt.Sprintf("%d more", len(r.rows)-3))
				break
			}
			name := s.Host
			if name == "" {
				name = "(listed)"
			}
			hosts = append(hosts, fmt.Sprintf("%s %s", esc(name), fmtNum(s.Links)))
		}
		fmt.Fprintf(b, `<tr><td>%s</td><td data-series="skips" data-n="%d">%s</td><td>%s</td><td class="ex">%s</td></tr>`+"\n",
			esc(r.name), r.links, fmtNum(r.links), strings.Join(hosts, ", "), esc(r.rows[0].Example))
	}
	b.WriteString("</tbody></table>\n")
}

// fmtBytes says n bytes in binary units.
func fmtBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
