package report

import (
	"fmt"
	"math"
	"strings"
)

// writeDetail draws, for each of the most throttled hosts, the rate the
// limiter set (a step line) against the rate the host served (ok answers
// per bucket) and the controller's capacity estimate, with each 429 as a
// tick on the axis, Retry-After and other pauses and open-breaker spans
// shaded, and the latency below.
func (d *Data) writeDetail(b *strings.Builder) {
	b.WriteString("<h2>The most throttled hosts</h2>\n")
	if len(d.Detail) == 0 {
		b.WriteString(`<p class="muted">No host was throttled, paused or had its breaker open.</p>`)
		return
	}
	fmt.Fprintf(b, `<p class="legend">%s rate set %s achieved (ok/s) %s capacity estimate %s 429 %s paused %s breaker open %s latency p50 %s p95</p>`,
		swatch("#1f77b4"), swatch("#2ca02c"), swatch("#ff7f0e"), swatch("#d62728"), swatch("#f3d9a6"), swatch("#c9b3e6"),
		swatch("#555"), swatch("#aaa"))
	b.WriteString(`<p class="muted">The capacity estimate is the dashed line; the band around it is how far off the controller says it may be (a count of answers is ±1.5 over the time it was counted in). None while it is only a lower bound.</p>` + "\n")
	for i, h := range d.Detail {
		d.writeHost(b, i, h)
	}
}

func (d *Data) writeHost(b *strings.Builder, i int, h *Host) {
	fmt.Fprintf(b, "<h3>%s</h3><p class=\"muted\">%s requests, %d × 429, %d × 503, paused %s, breaker opened %d×</p>\n",
		esc(h.Name), fmtNum(h.Requests), h.S429, h.S503, fmtDur(h.Paused), h.BreakerOpens)
	const top, ht, gap, lh = 6.0, 150.0, 24.0, 70.0
	total := top + ht + gap + lh + 18
	fmt.Fprintf(b, `<svg id="host-%d" class="host" width="%d" height="%d" viewBox="0 0 %d %.0f" role="img" aria-label="rates of %s">`,
		i, plotW, int(total), plotW, total, esc(h.Name))
	secs := d.Width.Seconds()
	ok := make([]int, Buckets)
	for _, t := range h.okAt {
		ok[d.index(t)]++
	}
	ymax := 0.0
	for _, n := range ok {
		ymax = max(ymax, float64(n)/secs)
	}
	for _, p := range h.steps {
		if p.v < 1e15 {
			ymax = max(ymax, p.v)
		}
	}
	for k, p := range h.caps {
		ymax = max(ymax, p.v+h.capErrs[k])
	}
	ymax = niceMax(ymax)
	y := func(v float64) float64 { return top + ht - math.Min(v, ymax)/ymax*ht }
	end := d.Start.UnixMilli() + d.Width.Milliseconds()*Buckets
	// Shading first, under the lines.
	for _, s := range h.pauses {
		x0, x1 := d.tx(s.from), d.tx(min(s.to, end))
		fmt.Fprintf(b, `<rect class="pause" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#f3d9a6" opacity=".7"/>`, x0, top, math.Max(x1-x0, 1), ht)
	}
	for _, s := range h.breaker {
		x0, x1 := d.tx(s.from), d.tx(min(s.to, end))
		fmt.Fprintf(b, `<rect class="breaker" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#c9b3e6" opacity=".7"/>`, x0, top, math.Max(x1-x0, 1), ht)
	}
	capBand(b, d, h, y, end)
	// Achieved: ok answers per second in each bucket.
	var pts []string
	for k, n := range ok {
		pts = append(pts, fmt.Sprintf("%.1f,%.1f %.1f,%.1f", bx(k), y(float64(n)/secs), bx(k+1), y(float64(n)/secs)))
	}
	fmt.Fprintf(b, `<polyline class="s" data-series="ok" data-n="%d" points="%s" fill="none" stroke="#2ca02c" stroke-width="1.5"/>`,
		len(h.okAt), strings.Join(pts, " "))
	stepLine(b, d, h.steps, y, end, "rate", "#1f77b4", "2")
	stepLine(b, d, h.caps, y, end, "capacity", "#ff7f0e", "1.5\" stroke-dasharray=\"5 3")
	// 429 ticks, one mark per bucket carrying its count.
	ticks := make([]int, Buckets)
	for _, t := range h.ticks {
		ticks[d.index(t)]++
	}
	for k, n := range ticks {
		if n > 0 {
			x := bx(k) + float64(innerW)/Buckets/2
			fmt.Fprintf(b, `<line class="s" data-series="429" data-n="%d" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#d62728" stroke-width="2"><title>%d × 429</title></line>`,
				n, x, top+ht, x, top+ht-math.Min(6+2*float64(n), 30), n)
		}
	}
	d.axis(b, top, ht, ymax, " req/s")
	// Latency below: p50 and p95 of the answers in each bucket.
	ltop := top + ht + gap
	lat := make([][]float64, Buckets)
	for _, p := range h.latAt {
		k := d.index(p.t)
		lat[k] = append(lat[k], p.v)
	}
	lmax := 0.0
	p50s, p95s := make([]float64, Buckets), make([]float64, Buckets)
	for k := range lat {
		p50s[k], p95s[k] = quantiles(lat[k])
		if !math.IsNaN(p95s[k]) {
			lmax = max(lmax, p95s[k])
		}
	}
	lmax = niceMax(lmax)
	ly := func(v float64) float64 { return ltop + lh - math.Min(v, lmax)/lmax*lh }
	for _, s := range []struct {
		v     []float64
		color string
	}{{p95s, "#aaa"}, {p50s, "#555"}} {
		var seg []string
		for k, v := range s.v {
			if !math.IsNaN(v) {
				seg = append(seg, fmt.Sprintf("%.1f,%.1f", bx(k)+float64(innerW)/Buckets/2, ly(v)))
			}
		}
		if len(seg) > 0 {
			fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.2"/>`, strings.Join(seg, " "), s.color)
		}
	}
	fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#999"/>`, left, ltop+lh, plotW-right, ltop+lh)
	fmt.Fprintf(b, `<text x="%d" y="%.1f">latency, up to %s ms</text><text x="%d" y="%.1f" text-anchor="end">0</text>`,
		left+4, ltop+10, fmtAxis(lmax), left-4, ltop+lh)
	b.WriteString("</svg>\n")
}

// stepLine draws a value set at instants as a step line to the end.
func stepLine(b *strings.Builder, d *Data, pts []point, y func(float64) float64, end int64, name, color, width string) {
	if len(pts) == 0 {
		return
	}
	var s []string
	for k, p := range pts {
		v := min(p.v, 1e15)
		to := end
		if k+1 < len(pts) {
			to = pts[k+1].t
		}
		s = append(s, fmt.Sprintf("%.1f,%.1f %.1f,%.1f", d.tx(p.t), y(v), d.tx(to), y(v)))
	}
	fmt.Fprintf(b, `<polyline class="%s" points="%s" fill="none" stroke="%s" stroke-width="%s"/>`, name, strings.Join(s, " "), color, width)
}

// capBand shades the capacity estimate's error band: from each estimate to
// the next, capacity ± its error, where the controller gave one.
func capBand(b *strings.Builder, d *Data, h *Host, y func(float64) float64, end int64) {
	for k, p := range h.caps {
		e := h.capErrs[k]
		if e <= 0 {
			continue
		}
		to := end
		if k+1 < len(h.caps) {
			to = h.caps[k+1].t
		}
		x0, x1 := d.tx(p.t), d.tx(min(to, end))
		y0, y1 := y(p.v+e), y(max(p.v-e, 0))
		fmt.Fprintf(b, `<rect class="capband" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#ff7f0e" opacity=".18"><title>capacity %.1f ± %.1f req/s</title></rect>`,
			x0, y0, math.Max(x1-x0, 1), math.Max(y1-y0, 1), p.v, e)
	}
}

// niceMax rounds v up to 1, 2 or 5 times a power of ten (1 for 0).
func niceMax(v float64) float64 {
	if !(v > 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}
