package proxylive

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// Row is one line of the results table.
type Row struct {
	Scenario, Name string
	// Measured is the row's figures as text.
	Measured string
	// Goal is what the row must meet; empty for a baseline, which is
	// reported and not judged.
	Goal string
	Pass bool
	// Err says why the row could not be measured.
	Err string
}

// Verdict is "pass", "FAIL", "baseline", or "ERROR" for a row with no
// figures. A measured row with an error (a client that exited non-zero)
// fails.
func (r Row) Verdict() string {
	switch {
	case r.Err != "" && r.Measured == "":
		return "ERROR"
	case r.Goal == "":
		return "baseline"
	case r.Pass && r.Err == "":
		return "pass"
	}
	return "FAIL"
}

// WriteTable writes rows as a markdown table.
func WriteTable(w io.Writer, rows []Row) {
	fmt.Fprintln(w, "| scenario | row | measured | goal | verdict |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	cell := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ") }
	for _, r := range rows {
		m := r.Measured
		if r.Err != "" {
			m = strings.TrimSpace(m + " error: " + r.Err)
		}
		g := r.Goal
		if g == "" {
			g = "—"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", cell(r.Scenario), cell(r.Name), cell(m), cell(g), r.Verdict())
	}
}

// SiteFigures are a run's figures from nginx's log: the requests under one
// path prefix, robots.txt apart.
type SiteFigures struct {
	Requests, OK, Refused int // refused: 429 or 503
	Robots                int // requests for /robots.txt
	// Span is from the first request's arrival to the last one's end.
	Span time.Duration
	// P95 is the 95th percentile $request_time of the OK requests.
	P95 time.Duration
}

// Goodput is OK requests per second over the span.
func (f SiteFigures) Goodput() float64 {
	if f.Span <= 0 {
		return 0
	}
	return float64(f.OK) / f.Span.Seconds()
}

// CapacityShare is the OK requests against what a site with limit_req
// rate and burst could serve over the span: rate × span + burst.
func (f SiteFigures) CapacityShare(rate, burst int) float64 {
	c := float64(rate)*f.Span.Seconds() + float64(burst)
	if c <= 0 {
		return 0
	}
	return float64(f.OK) / c
}

// RefusedShare is the share of the requests nginx saw that it refused.
func (f SiteFigures) RefusedShare() float64 {
	if f.Requests == 0 {
		return 0
	}
	return float64(f.Refused) / float64(f.Requests)
}

// measureSite reads the figures of the hits under prefix.
func measureSite(hits []Hit, prefix string) SiteFigures {
	var f SiteFigures
	first, last := math.Inf(1), math.Inf(-1)
	var lat []time.Duration
	for _, h := range hits {
		if h.Path == "/robots.txt" {
			f.Robots++
			continue
		}
		if !strings.HasPrefix(h.Path, prefix) {
			continue
		}
		f.Requests++
		first, last = min(first, h.Arrival()), max(last, h.End)
		switch h.Status {
		case 200:
			f.OK++
			lat = append(lat, time.Duration(h.Took*float64(time.Second)))
		case 429, 503:
			f.Refused++
		}
	}
	if f.Requests > 0 {
		f.Span = time.Duration((last - first) * float64(time.Second))
	}
	f.P95 = percentile(lat, 0.95)
	return f
}

// pathCounts counts nginx's requests for each path under prefix.
func pathCounts(hits []Hit, prefix string) map[string]int {
	n := map[string]int{}
	for _, h := range hits {
		if strings.HasPrefix(h.Path, prefix) {
			n[h.Path]++
		}
	}
	return n
}

// exactlyOnce compares nginx's counts with the paths a client asked for:
// how many were seen once, never, or more than once, and how many paths
// nginx saw that were not asked for.
func exactlyOnce(counts map[string]int, want []string) (once, missing, dup, extra int) {
	asked := map[string]bool{}
	for _, p := range want {
		asked[p] = true
		switch c := counts[p]; {
		case c == 0:
			missing++
		case c == 1:
			once++
		default:
			dup++
		}
	}
	for p := range counts {
		if !asked[p] {
			extra++
		}
	}
	return
}

// connOpens are the arrival times (Unix seconds, sorted) of the first
// request nginx saw on each connection carrying a path under prefix: when
// each connection (for a tunnel, each tunnel) began to be used.
func connOpens(hits []Hit, prefix string) []float64 {
	first := map[int64]float64{}
	for _, h := range hits {
		if !strings.HasPrefix(h.Path, prefix) {
			continue
		}
		if t, ok := first[h.Conn]; !ok || h.Arrival() < t {
			first[h.Conn] = h.Arrival()
		}
	}
	out := make([]float64, 0, len(first))
	for _, t := range first {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// maxInWindow is the most times (sorted) that fall in any half-open
// window [t, t+w).
func maxInWindow(times []float64, w float64) int {
	best, j := 0, 0
	for i := range times {
		for j < len(times) && times[j] < times[i]+w {
			j++
		}
		best = max(best, j-i)
	}
	return best
}

// meanRate is events per second from the first time to the last.
func meanRate(times []float64) float64 {
	if len(times) < 2 || times[len(times)-1] <= times[0] {
		return 0
	}
	return float64(len(times)-1) / (times[len(times)-1] - times[0])
}

// clientStatuses reads "STATUS URL ..." lines: each URL's last status.
func clientStatuses(out []byte) map[string]int {
	st := map[string]int{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		var code int
		if _, err := fmt.Sscanf(f[0], "%d", &code); err != nil {
			continue
		}
		st[f[1]] = code
	}
	return st
}

// firstBad is the first "STATUS URL" line whose status is not 200.
func firstBad(out []byte) string {
	for line := range strings.Lines(string(out)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] != "200" {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// countOK is how many of urls have status 200 in st.
func countOK(st map[string]int, urls []string) int {
	n := 0
	for _, u := range urls {
		if st[u] == 200 {
			n++
		}
	}
	return n
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
