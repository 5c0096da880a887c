package report

import (
	"fmt"
	"strconv"
	"strings"
)

// stateColors are the colours of States.
var stateColors = [len(States)]string{"#4c9a5b", "#f0c05a", "#9467bd", "#d62728"}

// writeStates draws the hosts in each state per time bucket, stacked (a
// bucket's column spans its whole width: a stacked step area).
func (d *Data) writeStates(b *strings.Builder) {
	b.WriteString("<h2>Hosts by state over time</h2>\n")
	ymax := 1
	for k := range Buckets {
		n := 0
		for s := range States {
			n += d.States[s][k]
		}
		ymax = max(ymax, n)
	}
	const top, h = 8.0, 140.0
	fmt.Fprintf(b, `<svg id="states" width="%d" height="%d" role="img" aria-label="hosts by state per time bucket">`, plotW, int(h+30))
	bw := float64(innerW) / Buckets
	for k := range Buckets {
		y := top + h
		for s, name := range States {
			n := d.States[s][k]
			if n == 0 {
				continue
			}
			hh := float64(n) / float64(ymax) * h
			y -= hh
			fmt.Fprintf(b, `<rect class="s" data-series="state:%s" data-n="%d" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %d hosts</title></rect>`,
				name, n, bx(k), y, bw+0.2, hh, stateColors[s], name, n)
		}
	}
	d.axis(b, top, h, float64(ymax), " hosts")
	b.WriteString("</svg>\n<div class=\"legend\">")
	for s, name := range States {
		peak := 0
		for _, n := range d.States[s] {
			peak = max(peak, n)
		}
		fmt.Fprintf(b, `<span>%s%s (at most %d at once)</span>`, swatch(stateColors[s]), name, peak)
	}
	b.WriteString(`</div><p class="muted">A host counts once per bucket, in the first that held of: blocked (from its first soft block on), breaker open, paused, active (an attempt on the wire).</p>` + "\n")
}

// writeInFlight draws the attempts on the wire, averaged over each bucket
// (the time they spent in it over its width), as a step line.
func (d *Data) writeInFlight(b *strings.Builder) {
	b.WriteString("<h2>Requests in flight</h2>\n")
	w := float64(d.Width.Microseconds())
	ymax := 0.0
	var sum int64
	us := make([]string, Buckets)
	for k, v := range d.InFlight {
		ymax = max(ymax, float64(v)/w)
		sum += v
		us[k] = strconv.FormatInt(v, 10)
	}
	ymax = niceMax(ymax)
	const top, h = 8.0, 100.0
	y := func(v int64) float64 { return top + h - float64(v)/w/ymax*h }
	pts := make([]string, 0, Buckets)
	for k, v := range d.InFlight {
		pts = append(pts, fmt.Sprintf("%.1f,%.1f %.1f,%.1f", bx(k), y(v), bx(k+1), y(v)))
	}
	fmt.Fprintf(b, `<svg id="inflight" width="%d" height="%d" role="img" aria-label="requests in flight, averaged per time bucket">`, plotW, int(h+30))
	fmt.Fprintf(b, `<polyline class="s" data-series="inflight-us" data-n="%d" data-v="%s" points="%s" fill="none" stroke="#1f77b4" stroke-width="1.5"/>`,
		sum, strings.Join(us, ","), strings.Join(pts, " "))
	d.axis(b, top, h, ymax, " in flight")
	b.WriteString("</svg>\n<p class=\"muted\">The attempts' time on the wire in each bucket over its width: the mean number in flight.</p>\n")
}

// writeRetryAfter draws the Retry-After answers by what the hosts asked for
// and what polite applied, side by side per bin.
func (d *Data) writeRetryAfter(b *strings.Builder) {
	r := &d.RA
	b.WriteString("<h2>Retry-After: asked for and applied</h2>\n")
	if r.Pauses+r.GiveUps == 0 {
		b.WriteString(`<p class="muted">No host answered with a Retry-After polite acted on.</p>` + "\n")
		return
	}
	fmt.Fprintf(b, `<p>%d answers with a Retry-After: %d paused their host, %d were longer than polite waits (it gave up on the request); %d clamped (applied less than asked, or given up on).</p>`+"\n",
		r.Pauses+r.GiveUps, r.Pauses, r.GiveUps, r.Clamped)
	series := []struct {
		name, color string
		v           []int
	}{{"ra-requested", "#ff7f0e", r.Requested[:]}, {"ra-applied", "#1f77b4", r.Applied[:]}}
	ymax := 1
	for _, s := range series {
		for _, n := range s.v {
			ymax = max(ymax, n)
		}
	}
	const top, h, slot = 8.0, 120.0, 90.0
	fmt.Fprintf(b, `<svg id="retry-after" width="%d" height="%d" role="img" aria-label="Retry-After asked for and applied">`, plotW, int(h+30))
	for i, label := range raLabels {
		x := left + float64(i)*slot
		for j, s := range series {
			n := s.v[i]
			hh := float64(n) / float64(ymax) * h
			fmt.Fprintf(b, `<rect class="s" data-series="%s" data-n="%d" x="%.1f" y="%.1f" width="36" height="%.1f" fill="%s"><title>%s %s: %d</title></rect>`,
				s.name, n, x+float64(j)*38, top+h-hh, hh, s.color, strings.TrimPrefix(s.name, "ra-"), label, n)
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, x+37, top+h+13, label)
	}
	fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/><text x="%d" y="%.1f">%d</text>`,
		left, top+h, left+slot*float64(len(raLabels)), top+h, left+4, top+10, ymax)
	b.WriteString("</svg>\n")
	fmt.Fprintf(b, `<div class="legend"><span>%sasked for</span><span>%sapplied (a pause)</span></div>`+"\n", swatch("#ff7f0e"), swatch("#1f77b4"))
}

// writeRetries draws the finished URLs by how many retries they took.
func (d *Data) writeRetries(b *strings.Builder) {
	b.WriteString("<h2>Retries per URL</h2>\n")
	ymax := 1
	for _, n := range d.Retries {
		ymax = max(ymax, n)
	}
	rowH := 18
	fmt.Fprintf(b, `<svg id="retries" width="700" height="%d" role="img" aria-label="URLs by retries">`, rowH*len(RetryBins)+4)
	for i, label := range RetryBins {
		n, y := d.Retries[i], i*rowH
		fmt.Fprintf(b, `<text x="90" y="%d" text-anchor="end">%s</text>`, y+13, label)
		fmt.Fprintf(b, `<rect class="s" data-series="retries" data-n="%d" x="96" y="%d" width="%.1f" height="%d" fill="#6a8fbf"/>`,
			n, y+2, max(1, float64(n)/float64(ymax)*500), rowH-4)
		fmt.Fprintf(b, `<text x="%.1f" y="%d">%s URLs</text>`, 100+float64(n)/float64(ymax)*500, y+13, fmtNum(n))
	}
	b.WriteString("</svg>\n<p class=\"muted\">Finished URLs (results.jsonl) by their attempts after the first.</p>\n")
}

// writeErrors lists the failed URLs by outcome and error, with examples.
func (d *Data) writeErrors(b *strings.Builder) {
	b.WriteString("<h2>Errors</h2>\n")
	if d.Failed == 0 {
		b.WriteString(`<p class="muted">No URL failed.</p>` + "\n")
		return
	}
	fmt.Fprintf(b, `<p>%s URLs failed, in %d groups of one outcome and errors that read alike (numbers and quoted parts set aside)`,
		fmtNum(d.Failed), len(d.Errors)+d.ErrsCut)
	if d.ErrsCut > 0 {
		fmt.Fprintf(b, "; the %d smallest groups are left out", d.ErrsCut)
	}
	b.WriteString(`.</p><table id="errors"><thead><tr><th>outcome</th><th>error</th><th>URLs</th><th>for example</th></tr></thead><tbody>` + "\n")
	for _, g := range d.Errors {
		ex := make([]string, len(g.Examples))
		for i, u := range g.Examples {
			ex[i] = esc(u)
		}
		fmt.Fprintf(b, `<tr><td>%s</td><td class="err">%s</td><td data-series="errors" data-n="%d">%s</td><td class="ex">%s</td></tr>`+"\n",
			esc(g.Outcome), esc(g.Error), g.Count, fmtNum(g.Count), strings.Join(ex, "<br>"))
	}
	b.WriteString("</tbody></table>\n")
}
