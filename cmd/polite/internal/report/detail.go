package report

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
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
	band := false
	for _, h := range d.Detail {
		band = band || slices.ContainsFunc(h.capErrs, func(e float64) bool { return e > 0 })
	}
	fmt.Fprintf(b, `<p class="legend">%s rate set %s achieved (ok/s over %s) %s capacity estimate %s 429 %s 503 %s paused %s breaker open %s latency p50 %s p95</p>`,
		swatch("#1f77b4"), swatch("#2ca02c"), fmtSpan(time.Duration(d.windowBuckets())*d.Width), swatch("#ff7f0e"), swatch("#d62728"), swatch(tick503), swatch("#f3d9a6"), swatch("#c9b3e6"),
		swatch("#555"), swatch("#aaa"))
	note := "The capacity estimate is the dashed line: what the controller reckons the host serves."
	if band {
		note += " The band around it is how far off the controller says it may be (a count of answers is ±1.5 over the time it was counted in); there is none while it is only a lower bound."
	}
	note += " Each 429 and 503 is a tick on the time axis; the latency lines are the p50 and p95 of the answers over the same trailing window, and a gap in them a spell with no answers."
	b.WriteString(`<p class="muted">` + note + "</p>\n")
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
	ok := make([]int, Buckets)
	for _, t := range h.okAt {
		ok[d.index(t)]++
	}
	achieved := d.perSecond(ok)
	ymax := 0.0
	for _, v := range achieved {
		ymax = max(ymax, v)
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
	// Achieved: ok answers per second over the trailing window (a rate,
	// not a count per bucket: a bucket is often shorter than the gap
	// between two answers), at each bucket's end.
	pts := make([]string, 0, Buckets+1)
	for k, v := range achieved {
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", bx(k+1), y(v)))
	}
	fmt.Fprintf(b, `<polyline class="s" data-series="ok" data-n="%d" points="%s" fill="none" stroke="#2ca02c" stroke-width="1.5"/>`,
		len(h.okAt), strings.Join(pts, " "))
	stepLine(b, d, h.steps, y, end, "rate", "#1f77b4", "2")
	stepLine(b, d, h.caps, y, end, "capacity", "#ff7f0e", "1.5\" stroke-dasharray=\"5 3")
	// 429 and 503 ticks, one mark per bucket carrying its count.
	d.ticks(b, h.ticks, "429", "#d62728", top+ht, -0.2)
	d.ticks(b, h.ticks503, "503", tick503, top+ht, 0.2)
	d.axis(b, top, ht, ymax, " req/s")
	// Latency below: p50 and p95 of the answers in each bucket.
	ltop := top + ht + gap
	lat := make([][]float64, Buckets)
	for _, p := range h.latAt {
		k := d.index(p.t)
		lat[k] = append(lat[k], p.v)
	}
	// Over the achieved rate's trailing window, so a host answering less
	// often than a bucket is long draws a line, and a gap is a spell of a
	// window or more without answers.
	w := d.windowBuckets()
	lmax := 0.0
	p50s, p95s := make([]float64, Buckets), make([]float64, Buckets)
	var pool []float64
	for k := range lat {
		pool = pool[:0]
		for _, l := range lat[max(k-w+1, 0) : k+1] {
			pool = append(pool, l...)
		}
		p50s[k], p95s[k] = quantiles(pool)
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
		// One polyline per run of buckets with answers: a gap is no
		// answers, not 0 ms; a lone bucket is a dot.
		var seg []string
		flush := func() {
			switch len(seg) {
			case 0:
			case 1:
				xy := strings.Split(seg[0], ",")
				fmt.Fprintf(b, `<circle class="lat" cx="%s" cy="%s" r="1.5" fill="%s"/>`, xy[0], xy[1], s.color)
			default:
				fmt.Fprintf(b, `<polyline class="lat" points="%s" fill="none" stroke="%s" stroke-width="1.2"/>`, strings.Join(seg, " "), s.color)
			}
			seg = seg[:0]
		}
		for k, v := range s.v {
			if math.IsNaN(v) {
				flush()
				continue
			}
			seg = append(seg, fmt.Sprintf("%.1f,%.1f", bx(k)+float64(innerW)/Buckets/2, ly(v)))
		}
		flush()
	}
	fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#999"/>`, left, ltop+lh, plotW-right, ltop+lh)
	yLabels(b, ltop, lh, lmax, "ms")
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

// tick503 is the colour of a 503's tick.
const tick503 = "#8c564b"

// ticks draws one tick per bucket holding any of at (ms), carrying the
// count, shifted by off of a bucket's width so 429s and 503s side by side
// stay apart.
func (d *Data) ticks(b *strings.Builder, at []int64, series, color string, base, off float64) {
	n := make([]int, Buckets)
	for _, t := range at {
		n[d.index(t)]++
	}
	for k, c := range n {
		if c > 0 {
			x := bx(k) + float64(innerW)/Buckets*(0.5+off)
			fmt.Fprintf(b, `<line class="s" data-series="%s" data-n="%d" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"><title>%d × %s</title></line>`,
				series, c, x, base, x, base-math.Min(6+2*float64(c), 30), color, c, series)
		}
	}
}

// okWindow is the span the achieved rate is counted over: a second, or a
// bucket when buckets are longer.
func (d *Data) okWindow() time.Duration { return max(time.Second, d.Width) }

// windowBuckets is okWindow in buckets, rounded up.
func (d *Data) windowBuckets() int {
	return max(int((d.okWindow()+d.Width-1)/max(d.Width, time.Millisecond)), 1)
}

// perSecond turns counts per bucket into a rate per second over the
// trailing okWindow (fewer buckets at the start).
func (d *Data) perSecond(n []int) []float64 {
	w := d.windowBuckets()
	out := make([]float64, len(n))
	sum := 0
	for k, c := range n {
		sum += c
		if k >= w {
			sum -= n[k-w]
		}
		out[k] = float64(sum) / (float64(min(k+1, w)) * d.Width.Seconds())
	}
	return out
}

// fmtSpan writes a duration short: "1s", "1.5s", "350ms".
func fmtSpan(t time.Duration) string {
	if t < time.Second {
		return t.Round(time.Millisecond).String()
	}
	return t.Round(100 * time.Millisecond).String()
}
