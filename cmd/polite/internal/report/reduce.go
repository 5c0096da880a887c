package report

import (
	"regexp"
	"sort"
	"strconv"
)

// States are the host states the hosts-by-state plot stacks, a host in
// the first of these that holds during a bucket, from the last: blocked
// (after its first soft block), its breaker open, paused, or active (an
// attempt on the wire).
var States = [...]string{"active", "paused", "breaker-open", "blocked"}

// states counts, per time bucket, the hosts in each state. last is the
// end of the events (ms).
func (d *Data) states(attempts *attempts, byIdx []*Host, last int64) {
	for i := range d.States {
		d.States[i] = make([]int, Buckets)
	}
	if d.Start.IsZero() {
		return
	}
	// in[host][bucket]: 1 + the state's index, the highest winning.
	idx := make(map[*Host]int, len(d.Hosts))
	for i, h := range d.Hosts {
		idx[h] = i
	}
	in := make([]uint8, len(d.Hosts)*Buckets)
	mark := func(h *Host, from, to int64, st uint8) {
		i, ok := idx[h]
		if !ok {
			return
		}
		row := in[i*Buckets : (i+1)*Buckets]
		for k := d.index(from); k <= d.index(max(from, to-1)); k++ { // to is not in the span
			row[k] = max(row[k], st)
		}
	}
	attempts.each(func(a *attemptAt) { mark(byIdx[a.host], (a.t*1000-int64(a.lat))/1000, a.t, 1) })
	for _, h := range d.Hosts {
		for _, s := range h.pauses {
			mark(h, s.from, s.to, 2)
		}
		for _, s := range h.breaker {
			mark(h, s.from, s.to, 3)
		}
		if h.blockedAt != 0 {
			mark(h, h.blockedAt, max(last, h.blockedAt), 4)
		}
	}
	for i, st := range in {
		if st > 0 {
			d.States[st-1][i%Buckets]++
		}
	}
}

// inFlight spreads each attempt's time on the wire over the buckets it
// overlaps, in µs: exact integers, so the series sums to Wire.
func (d *Data) inFlight(attempts *attempts) {
	d.InFlight = make([]int64, Buckets)
	w := d.Width.Microseconds()
	s0 := d.Start.UnixMicro()
	attempts.each(func(a *attemptAt) {
		end := a.t * 1000
		from := end - int64(a.lat)
		for k := d.index(from / 1000); k < Buckets && from < end; k++ {
			edge := s0 + int64(k+1)*w
			if k == Buckets-1 {
				edge = end
			}
			to := min(end, edge)
			if to > from {
				d.InFlight[k] += to - from
				from = to
			}
		}
	})
}

// RetryAfters counts the Retry-After answers: what the hosts asked for and
// what polite applied, by RABins.
type RetryAfters struct {
	Requested, Applied [len(RABins) + 1]int
	Pauses             int // applied (a pause)
	GiveUps            int // beyond the longest wait polite takes: no retry
	Clamped            int // applied less than asked, or gave up
}

// RABins are the upper edges of the Retry-After histogram's bins, in
// seconds; a last bin holds the longer ones.
var RABins = [...]float64{1, 2, 5, 10, 30, 60, 300, 900, 3600}

// raLabels name the bins.
var raLabels = [...]string{"<1s", "1–2s", "2–5s", "5–10s", "10–30s", "30s–1m", "1–5m", "5–15m", "15m–1h", "≥1h"}

func raBin(ms float64) int {
	for i, e := range RABins {
		if ms < e*1e3 {
			return i
		}
	}
	return len(RABins)
}

// add counts a Retry-After answer: asked for req ms, applied ms (< 0: gave
// up instead).
func (r *RetryAfters) add(req, applied float64, clamped bool) {
	if req == 0 && applied >= 0 {
		req = applied // not said apart: applied as asked
	}
	r.Requested[raBin(req)]++
	if applied >= 0 {
		r.Applied[raBin(applied)]++
		r.Pauses++
	} else {
		r.GiveUps++
	}
	if clamped {
		r.Clamped++
	}
}

// RetryBins name the retries-per-URL histogram's bins.
var RetryBins = []string{"0", "1", "2", "3", "4", "5–9", "≥10"}

func retryBin(attempts int) int {
	r := max(attempts-1, 0)
	switch {
	case r < 5:
		return r
	case r < 10:
		return 5
	}
	return 6
}

// Limits of the error groups.
const (
	MaxErrGroups = 50 // groups shown
	errExamples  = 3  // URLs shown per group
	maxErrText   = 200
)

// ErrGroup is the failed URLs of one outcome whose errors read alike
// (numbers and quoted parts set aside).
type ErrGroup struct {
	Outcome, Error string
	Count          int
	Examples       []string // URLs
}

type errGroups map[[2]string]*ErrGroup

var (
	quotedRe = regexp.MustCompile(`"[^"]*"`)
	digitsRe = regexp.MustCompile(`[0-9]+`)
)

// errText is the grouping text of a failed result: its error with quoted
// parts (URLs, mostly) and numbers replaced, or its status.
func errText(r *result) string {
	if r.Error == "" {
		if r.Status != 0 {
			return "HTTP " + strconv.Itoa(r.Status)
		}
		return "(no error text)"
	}
	s := r.Error
	if len(s) > 4*maxErrText {
		s = s[:4*maxErrText]
	}
	s = digitsRe.ReplaceAllString(quotedRe.ReplaceAllString(s, `"…"`), "N")
	if len(s) > maxErrText {
		s = s[:maxErrText] + "…"
	}
	return s
}

func (g errGroups) add(r *result) {
	k := [2]string{r.Outcome, errText(r)}
	e := g[k]
	if e == nil {
		e = &ErrGroup{Outcome: k[0], Error: k[1]}
		g[k] = e
	}
	e.Count++
	if len(e.Examples) < errExamples && r.URL != "" {
		e.Examples = append(e.Examples, r.URL)
	}
}

// top returns the n largest groups, most first, and how many were left
// out.
func (g errGroups) top(n int) ([]*ErrGroup, int) {
	all := make([]*ErrGroup, 0, len(g))
	for _, e := range g {
		all = append(all, e)
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].Count != all[j].Count {
			return all[i].Count > all[j].Count
		}
		if all[i].Outcome != all[j].Outcome {
			return all[i].Outcome < all[j].Outcome
		}
		return all[i].Error < all[j].Error
	})
	if len(all) > n {
		return all[:n], len(all) - n
	}
	return all, 0
}
