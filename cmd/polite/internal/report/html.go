package report

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/polite-go/polite/cmd/polite/internal/term"
)

// style and script are the page's only CSS and JavaScript, allowed by
// their hashes in the Content-Security-Policy; the plots need neither
// script nor network. The script only sorts the hosts table.
const style = `body{font:14px/1.4 system-ui,sans-serif;margin:1.5em auto;max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #ddd}h3{font-size:1em;margin:1.2em 0 .2em}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}td,th{padding:2px 8px;text-align:right;border-bottom:1px solid #eee}
td:first-child,th:first-child{text-align:left;max-width:28em;overflow-wrap:anywhere}th{cursor:pointer;background:#f6f6f6}
.kv td{text-align:left}.muted{color:#777}.hot{color:#b00;font-weight:600}svg{display:block;margin:.3em 0}
.legend span{display:inline-block;margin-right:1em}svg.sw{display:inline-block;margin:0 4px 0 0;vertical-align:middle}
svg text{font:11px system-ui,sans-serif;fill:#555}td.err,td.ex,#errors th{text-align:left;overflow-wrap:anywhere;max-width:30em}`

const script = `document.querySelectorAll('table.sort th').forEach(function(th,i){th.addEventListener('click',function(){
var t=th.closest('table'),b=t.tBodies[0],r=Array.from(b.rows),d=th.dataset.d==='1'?-1:1;th.dataset.d=d===1?'1':'0';
r.sort(function(x,y){var a=x.cells[i].dataset.v,c=y.cells[i].dataset.v;if(a===undefined){a=x.cells[i].textContent;c=y.cells[i].textContent;return d*a.localeCompare(c)}return d*(parseFloat(a)-parseFloat(c))});
r.forEach(function(x){b.appendChild(x)})})});`

// colors of the attempt classes (Classes).
var colors = []string{"#4c9a5b", "#8fbf6a", "#e0b040", "#d62728", "#9467bd", "#ff7f0e", "#555"}

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// CSP is the page's Content-Security-Policy: nothing may be fetched; only
// the page's own style and script run.
var CSP = "default-src 'none'; style-src " + hash(style) + "; script-src " + hash(script) +
	"; img-src 'none'; connect-src 'none'; form-action 'none'; base-uri 'none'"

// esc makes s text of the page: markup escaped, and the characters a
// terminal acts on (s may be a server's reason phrase or a list's line,
// and a page is also read with cat and grep) or that reorder text (bidi
// overrides) written as Go escapes (issue 29, item 5).
func esc(s string) string { return html.EscapeString(term.Quote(s)) }

// Write writes d's report page to w.
func Write(w io.Writer, d *Data) error {
	var b strings.Builder
	b.Grow(256 << 10)
	title := "polite report: " + d.Dir
	fmt.Fprintf(&b, `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="%s">
<meta name="referrer" content="no-referrer"><title>%s</title><style>%s</style></head><body>
`, esc(CSP), esc(title), style)
	fmt.Fprintf(&b, "<h1>%s</h1>\n", esc(title))
	d.writeTotals(&b)
	d.writeCrawl(&b)
	d.writeThroughput(&b)
	d.writeStates(&b)
	d.writeInFlight(&b)
	d.writeStatuses(&b)
	d.writeRetryAfter(&b)
	d.writeRetries(&b)
	d.writeErrors(&b)
	d.writeHosts(&b)
	d.writeDetail(&b)
	partial := ""
	if d.Partial > 0 {
		partial = fmt.Sprintf(" The last line of events.jsonl was cut (%d bytes: a job still writing it, or killed) and was left out.", d.Partial)
	}
	if n := d.Unread.Lines; n > 0 {
		partial += fmt.Sprintf(" %s of events.jsonl could not be read and %s left out (the first: %v).", lines(n), were(n), d.Unread.First)
	}
	if n := d.ResultsUnread; n > 0 {
		partial += fmt.Sprintf(" %s of results.jsonl could not be read and %s left out.", lines(n), were(n))
	}
	fmt.Fprintf(&b, `<h2>How this report was reduced</h2><p class="muted">%s events and %s results read; time buckets of %v;
hosts table capped at %d rows (%d left out; every host is in %s beside this page); error groups capped at %d (%d left out);
plots for the %d most throttled hosts.%s Built %s.</p>
<script>%s</script></body></html>
`, fmtNum(d.Events), fmtNum(d.URLs), d.Width, MaxHosts, d.HostsCut, CSVFile, MaxErrGroups, d.ErrsCut, DetailHosts, esc(partial),
		d.Built.Format(time.RFC3339), script)
	_, err := io.WriteString(w, b.String())
	return err
}

func (d *Data) writeTotals(b *strings.Builder) {
	state := "finished"
	if d.Running {
		state = fmt.Sprintf("running: snapshot at %s, %s of %s URLs pending", d.Built.Format("15:04:05 UTC"),
			fmtNum(d.Job.Pending), fmtNum(d.Job.Total))
	}
	b.WriteString(`<h2>Totals</h2><table class="kv">`)
	row := func(k, v string) { fmt.Fprintf(b, "<tr><td>%s</td><td>%s</td></tr>\n", esc(k), v) }
	row("Job", esc(state))
	if !d.Start.IsZero() {
		row("Time span", fmt.Sprintf("%s → %s (%s)", d.Start.Format("2006-01-02 15:04:05"), d.End.Format("15:04:05 UTC"),
			d.End.Sub(d.Start).Round(time.Second)))
	}
	var outs []string
	for _, k := range sortedKeys(d.Outcomes) {
		outs = append(outs, fmt.Sprintf("%s %s", esc(k), fmtNum(d.Outcomes[k])))
	}
	row("URLs finished", fmt.Sprintf(`<span id="urls" data-n="%d">%s</span>: %s`, d.URLs, fmtNum(d.URLs), strings.Join(outs, ", ")))
	row("URLs failed", fmt.Sprintf(`<span id="failed" data-n="%d">%s</span>`, d.Failed, fmtNum(d.Failed)))
	row("Requests sent", fmt.Sprintf(`<span id="requests" data-n="%d">%s</span> (attempts, retries included)`, d.Requests, fmtNum(d.Requests)))
	row("Time on the wire", fmt.Sprintf(`<span id="wire" data-n="%d">%s</span> (summed over attempts)`, d.Wire, fmtDur(float64(d.Wire)/1e6)))
	row("Retry-After answers", fmt.Sprintf(`<span id="ra-pauses" data-n="%d">%d</span> paused their host, <span id="ra-giveups" data-n="%d">%d</span> given up on, %d clamped`,
		d.RA.Pauses, d.RA.Pauses, d.RA.GiveUps, d.RA.GiveUps, d.RA.Clamped))
	row("Politeness cost: waited", secondsBy(d.WaitBy)+` <span class="muted">(each URL's wait for its host's rate, cap, pause or breaker, or for its retry, summed)</span>`)
	row("Politeness cost: hosts paused", secondsBy(d.PauseBy))
	var gs []string
	for _, k := range sortedKeys(d.GiveUps) {
		gs = append(gs, fmt.Sprintf("%s %d", esc(k), d.GiveUps[k]))
	}
	if len(gs) > 0 {
		row("Gave up", strings.Join(gs, ", "))
	}
	if d.Clamped > 0 {
		row("Clamped", fmt.Sprintf("%d Retry-After or crawl-delay values polite applied less of", d.Clamped))
	}
	b.WriteString("</table>\n")
}

func secondsBy(m map[string]float64) string {
	total := 0.0
	var parts []string
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] })
	for _, k := range keys {
		total += m[k]
		if m[k] >= 0.0005 { // not "backoff 0s": a retry sent at once
			parts = append(parts, fmt.Sprintf("%s %s", esc(k), fmtDur(m[k])))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return fmt.Sprintf("%s: %s", fmtDur(total), strings.Join(parts, ", "))
}

// fmtDur writes s seconds to the millisecond below a minute, to the
// tenth of a second above.
func fmtDur(s float64) string {
	d := time.Duration(s * float64(time.Second))
	if d >= time.Minute {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// plot geometry
const (
	plotW, left, right = 1000, 50, 10
	innerW             = plotW - left - right
)

// bx returns the x of bucket i's left edge.
func bx(i int) float64 { return left + float64(i)*innerW/Buckets }

// tx returns the x of time t (ms).
func (d *Data) tx(t int64) float64 {
	s, e := d.Start.UnixMilli(), d.Start.UnixMilli()+d.Width.Milliseconds()*Buckets
	return left + float64(t-s)/float64(max(e-s, 1))*innerW
}

func (d *Data) axis(b *strings.Builder, top, h float64, ymax float64, unit string) {
	fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#999"/>`, left, top+h, plotW-right, top+h)
	fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#999"/>`, left, top, left, top+h)
	yLabels(b, top, h, ymax, unit)
	for k := 0; k <= 4; k++ {
		t := d.Start.Add(time.Duration(k) * d.Width * Buckets / 4)
		anchor := "middle"
		if k == 4 {
			anchor = "end"
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="%s">+%s</text>`, bx(k*Buckets/4), top+h+13, anchor,
			t.Sub(d.Start).Round(time.Second))
	}
}

// yLabels writes a plot's y axis labels in the margin left of it, where no
// bar or line is drawn: the maximum (with a faint grid line across), its
// unit under it, and 0.
func yLabels(b *strings.Builder, top, h, ymax float64, unit string) {
	fmt.Fprintf(b, `<line class="grid" x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>`, left, top, plotW-right, top)
	fmt.Fprintf(b, `<text class="ymax" x="%d" y="%.1f" text-anchor="end">%s</text>`, left-4, top+4, esc(fmtAxis(ymax)))
	fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`, left-4, top+16, esc(strings.TrimSpace(unit)))
	fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">0</text>`, left-4, top+h)
}

// fmtAxis writes an axis value or a rate short: no ".0" on whole numbers.
func fmtAxis(v float64) string {
	switch {
	case v >= 100 || v == math.Trunc(v):
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	case v >= 1:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

func (d *Data) writeThroughput(b *strings.Builder) {
	b.WriteString("<h2>Throughput over time, by outcome</h2>\n")
	per := make([]int, Buckets)
	ymax := 1
	for i := range Buckets {
		for c := range Classes {
			per[i] += d.Throughput[c][i]
		}
		ymax = max(ymax, per[i])
	}
	secs := d.Width.Seconds()
	rmax := niceMax(float64(ymax) / secs) // req/s at the top
	const top, h = 8.0, 200.0
	fmt.Fprintf(b, `<svg id="throughput" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="attempts per time bucket by outcome">`,
		plotW, int(h+30), plotW, int(h+30))
	bw := float64(innerW) / Buckets
	for i := range Buckets {
		y := top + h
		for c := range Classes {
			n := d.Throughput[c][i]
			if n == 0 {
				continue
			}
			hh := float64(n) / secs / rmax * h
			y -= hh
			fmt.Fprintf(b, `<rect class="s" data-series="%s" data-n="%d" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %d</title></rect>`,
				Classes[c], n, bx(i), y, max(bw-0.5, 0.5), hh, colors[c], Classes[c], n)
		}
	}
	d.axis(b, top, h, rmax, " req/s")
	b.WriteString("</svg>\n<div class=\"legend\">")
	for c, name := range Classes {
		n := 0
		for _, v := range d.Throughput[c] {
			n += v
		}
		fmt.Fprintf(b, `<span>%s%s %s</span>`, swatch(colors[c]), name, fmtNum(n))
	}
	b.WriteString("</div>\n")
}

func (d *Data) writeStatuses(b *strings.Builder) {
	b.WriteString("<h2>Status mix</h2>\n")
	codes := make([]int, 0, len(d.Statuses))
	for s := range d.Statuses {
		codes = append(codes, s)
	}
	slices.Sort(codes)
	ymax := 1
	for _, s := range codes {
		ymax = max(ymax, d.Statuses[s])
	}
	rowH := 18
	fmt.Fprintf(b, `<svg id="statuses" width="700" height="%d" role="img" aria-label="attempts by status">`, rowH*len(codes)+4)
	for i, s := range codes {
		n := d.Statuses[s]
		name, fill, cls := fmt.Sprint(s), "#6a8fbf", ""
		if s == 0 {
			name = "no response"
		}
		if s == 429 || s == 503 {
			fill, cls = "#d62728", ` class="hot"`
		}
		y := i * rowH
		fmt.Fprintf(b, `<text x="90" y="%d" text-anchor="end"%s>%s</text>`, y+13, cls, name)
		fmt.Fprintf(b, `<rect class="s" data-series="status" data-n="%d" x="96" y="%d" width="%.1f" height="%d" fill="%s"/>`,
			n, y+2, math.Max(1, float64(n)/float64(ymax)*500), rowH-4, fill)
		fmt.Fprintf(b, `<text x="%.1f" y="%d">%s (%.1f%%)</text>`, 100+float64(n)/float64(ymax)*500, y+13, fmtNum(n),
			100*float64(n)/float64(max(d.Requests, 1)))
	}
	b.WriteString("</svg>\n")
	if n := d.Statuses[429] + d.Statuses[503]; n > 0 {
		fmt.Fprintf(b, `<p class="hot">%s answers were 429 or 503: the hosts asked polite to slow down.</p>`, fmtNum(n))
	}
}

func (d *Data) writeHosts(b *strings.Builder) {
	fmt.Fprintf(b, "<h2>Hosts</h2>\n<p class=\"muted\">%d hosts, most throttled first (click a heading to sort)", len(d.Hosts)+d.HostsCut)
	if d.HostsCut > 0 {
		fmt.Fprintf(b, "; the %d least throttled are left out here (every host is in %s beside this page)", d.HostsCut, CSVFile)
	}
	b.WriteString(`.</p><table id="hosts" class="sort"><thead><tr><th>host</th><th>requests</th><th title="URLs that ended ok, of the host's finished URLs">URLs ok %</th><th>429s</th><th>503s</th>
<th>p50 ms</th><th>p95 ms</th><th>rate</th><th>min</th><th>max</th><th>capacity</th><th>paused</th><th>breaker opens</th></tr></thead><tbody>
`)
	for _, h := range d.Hosts {
		okPct, okCell := math.NaN(), `<span class="muted">–</span>`
		if h.URLs > 0 {
			okPct = 100 * float64(h.URLsOK) / float64(h.URLs)
			okCell = fmt.Sprintf("%.1f", okPct)
		}
		fmt.Fprintf(b, `<tr><td>%s</td><td data-v="%d">%s</td><td data-v="%s">%s</td><td data-v="%d"%s>%d</td><td data-v="%d">%d</td>`,
			esc(h.Name), h.Requests, fmtNum(h.Requests), numAttr(okPct), okCell, h.S429, hot(h.S429), h.S429, h.S503, h.S503)
		for _, v := range []float64{h.P50, h.P95, h.Rate, h.MinRate, h.MaxRate} {
			fmt.Fprintf(b, `<td data-v="%s">%s</td>`, numAttr(v), fmtOpt(v))
		}
		capNote := ""
		if h.Capacity > 0 && !h.Measured {
			capNote = `<span class="muted" title="a lower bound: not yet measured under congestion">≥</span>`
		}
		fmt.Fprintf(b, `<td data-v="%s">%s%s</td>`, numAttr(h.Capacity), capNote, fmtOpt(h.Capacity))
		fmt.Fprintf(b, `<td data-v="%.3f">%s</td><td data-v="%d">%d</td></tr>`+"\n", h.Paused, fmtDur(h.Paused), h.BreakerOpens, h.BreakerOpens)
	}
	b.WriteString("</tbody></table>\n")
}

// swatch is a legend's colour sample (an SVG: the policy allows no inline
// style attribute).
func swatch(color string) string {
	return `<svg class="sw" width="10" height="10"><rect width="10" height="10" fill="` + color + `"/></svg>`
}

func hot(n int) string {
	if n > 0 {
		return ` class="hot"`
	}
	return ""
}

func numAttr(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-1"
	}
	return fmt.Sprintf("%.3f", v)
}

func fmtOpt(v float64) string {
	switch {
	case math.IsNaN(v) || v == 0:
		return `<span class="muted">–</span>`
	case math.IsInf(v, 0) || v > 1e15:
		return "∞"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 1:
		return fmt.Sprintf("%.1f", v) // one decimal down a column
	}
	return fmt.Sprintf("%.2g", v)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// lines says "1 line" or "n lines".
func lines(n int) string {
	if n == 1 {
		return "1 line"
	}
	return fmtNum(n) + " lines"
}

func were(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}
