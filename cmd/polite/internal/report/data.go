// Package report builds `polite report`: one offline HTML page about a
// crawl job, from its results.jsonl, events.jsonl (the audit log) and
// state.db, with plots drawn as inline SVG by this package.
//
// The data is reduced before it is drawn: attempts are counted into at
// most Buckets time buckets (exact counts, so every plotted series sums to
// the totals the tables show), the hosts table is capped at MaxHosts rows
// and the per-host plots at DetailHosts hosts.
package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/polite-go/polite/audit"
)

// Limits on what a report shows.
const (
	Buckets     = 120 // time buckets of the plots
	MaxHosts    = 500 // rows of the hosts table
	DetailHosts = 8   // hosts given their own plot
)

// Classes of attempts, as the throughput plot stacks them.
var Classes = []string{"2xx", "3xx", "4xx", "429", "5xx", "503", "error"}

// classOf returns the class of an attempt with status s (0: no response).
func classOf(s int) int {
	switch {
	case s == 0:
		return 6
	case s == 429:
		return 3
	case s == 503:
		return 5
	case s < 300:
		return 0
	case s < 400:
		return 1
	case s < 500:
		return 2
	}
	return 4
}

// Job is what state.db says of the job (see crawl.ReadStatus); the zero
// Job when there is none to read.
type Job struct {
	Total, Pending int
	Skips          []Skip // links discovery did not take (crawl.ReadSkips)
}

// Data is a job reduced for its report.
type Data struct {
	Dir     string
	Job     Job
	Built   time.Time
	Running bool // URLs are pending

	// From results.jsonl: finished URLs by outcome.
	URLs     int
	Outcomes map[string]int

	// From events.jsonl.
	Start, End time.Time
	Requests   int                // attempts
	Statuses   map[int]int        // attempts by status (0: no response)
	WaitBy     map[string]float64 // seconds waited by reason, over requests
	PauseBy    map[string]float64 // seconds hosts were paused, by reason
	GiveUps    map[string]int
	Clamped    int           // Retry-After / crawl-delay values polite applied less of
	Width      time.Duration // of a time bucket
	Throughput [][]int       // [class][bucket] attempts
	Hosts      []*Host       // by throttle pain, most first
	HostsCut   int           // hosts left out of the table
	AllHosts   []*Host       // every host, in Hosts' order (hosts.csv)
	Detail     []*Host       // the most throttled hosts, for their plots
	Events     int           // lines read
	Partial    int           // bytes of a partial last line of events.jsonl skipped
	// Unread are the whole lines of events.jsonl left out because they
	// could not be read (longer than 1 MiB, or not a record), and
	// ResultsUnread those of results.jsonl (not JSON): a report without a
	// few lines beats none (issue 29, item 6).
	Unread        audit.Skipped
	ResultsUnread int

	States   [len(States)][]int // [state][bucket] hosts in it (see States)
	InFlight []int64            // [bucket] µs of attempts on the wire in it
	Wire     int64              // µs all attempts were on the wire
	RA       RetryAfters
	Retries  []int       // [RetryBins] URLs by retries
	Failed   int         // URLs not ok
	Errors   []*ErrGroup // failed URLs by outcome and error, most first
	ErrsCut  int         // groups left out

	// A crawl's shape (--follow), from results.jsonl: URLs by depth, those
	// found (in sitemaps), the sitemaps read, the 304s to a re-crawl, and
	// the body bytes received.
	Depths      []Depth
	Found       int
	FromSitemap int
	Sitemaps    int
	NotModified int
	Bytes       int64
}

// Host is one host's figures.
type Host struct {
	Name         string
	Requests, OK int
	S429, S503   int
	URLs, URLsOK int
	P50, P95     float64 // latency, ms
	Rate         float64 // final rate set; NaN when never set
	MinRate      float64
	MaxRate      float64
	Capacity     float64
	Measured     bool
	Paused       float64 // seconds
	BreakerOpens int
	idx          uint32    // its place in the reading's hosts (attemptAt.host)
	steps        []point   // rate set over time
	caps         []point   // capacity estimate over time
	capErrs      []float64 // how far off each of caps may be, either way (0: unknown)
	ticks        []int64   // 429s, ms
	ticks503     []int64   // 503s, ms
	pauses       []span
	breaker      []span
	openAt       int64   // an open breaker's start, 0 when closed
	okAt         []int64 // the detail hosts' ok answers (ms), see detail
	latAt        []point // and their latencies
	blockedAt    int64   // the first block, 0 for none
	rateSet      bool    // a rate event was read
}

type point struct {
	t int64 // ms
	v float64
}

type span struct{ from, to int64 }

// Pain orders hosts for the detail plots: 429s and 503s, a second of pause
// and a breaker opening each count one.
func (h *Host) Pain() float64 {
	return float64(h.S429+h.S503+h.BreakerOpens) + h.Paused
}

// result is the part of a results.jsonl line a report reads.
type result struct {
	URL      string `json:"url"`
	Host     string `json:"host"`
	Outcome  string `json:"outcome"`
	Status   int    `json:"status"`
	Attempts int    `json:"attempts"`
	Error    string `json:"error"`
	Bytes    int64  `json:"bytes"`
	Depth    int    `json:"depth"`
	FoundOn  string `json:"found_on"`
	Kind     string `json:"kind"`
}

// Read reduces a job's results.jsonl and events.jsonl (either may be nil)
// to its report's data. A partial last line (a job still writing) is
// skipped, and so is a whole line that cannot be read, counted in
// Unread and ResultsUnread.
func Read(results, events io.Reader, job Job) (*Data, error) {
	d := &Data{Job: job, Outcomes: map[string]int{}, Statuses: map[int]int{}, WaitBy: map[string]float64{},
		PauseBy: map[string]float64{}, GiveUps: map[string]int{}, Built: time.Now().UTC()}
	d.Retries = make([]int, len(RetryBins))
	errs := errGroups{}
	hosts := map[string]*Host{}
	var byIdx []*Host
	host := func(name string) *Host {
		h := hosts[name]
		if h == nil {
			h = &Host{Name: name, Rate: math.NaN(), MinRate: math.Inf(1), MaxRate: math.Inf(-1), idx: uint32(len(byIdx))}
			hosts[name] = h
			byIdx = append(byIdx, h)
		}
		return h
	}
	sitemaps := map[string]bool{}
	if results != nil {
		var err error
		d.ResultsUnread, err = readResults(results, func(r *result) {
			d.URLs++
			d.Outcomes[r.Outcome]++
			d.Retries[retryBin(r.Attempts)]++
			ok := okOutcome(r.Outcome)
			if !ok {
				d.Failed++
				errs.add(r)
			}
			if r.Host != "" {
				h := host(r.Host)
				h.URLs++
				if ok {
					h.URLsOK++
				}
			}
			d.Bytes += r.Bytes
			if r.Outcome == "not_modified" {
				d.NotModified++
			}
			if r.Kind == "sitemap" {
				d.Sitemaps++
				if len(sitemaps) < maxSitemaps {
					sitemaps[r.URL] = true
				}
			}
			if r.FoundOn != "" {
				d.Found++
				// A sitemap's result comes before those of the
				// URLs it named: they were added when it committed.
				if r.Kind != "sitemap" && sitemaps[r.FoundOn] {
					d.FromSitemap++
				}
			}
			if r.Depth >= 0 && r.Depth < maxDepthRows {
				for len(d.Depths) <= r.Depth {
					d.Depths = append(d.Depths, Depth{})
				}
				d.Depths[r.Depth].URLs++
				if ok {
					d.Depths[r.Depth].OK++
				}
			}
		})
		if err != nil {
			return nil, err
		}
	}
	var first, last int64 = math.MaxInt64, math.MinInt64
	var attempts attempts
	if events != nil {
		var err error
		d.Unread, err = audit.ReadSkipping(events, func(r *audit.Record) error {
			d.Events++
			first, last = min(first, r.T), max(last, r.T)
			h := host(r.Host)
			switch r.Kind {
			case "attempt":
				lat := min(max(int64(math.Round(r.Latency*1e3)), 0), math.MaxInt32) // µs
				attempts.add(attemptAt{t: r.T, lat: int32(lat), class: uint8(classOf(r.Status)),
					ok: r.Outcome == "ok", answered: r.Status != 0, host: h.idx})
				first = min(first, (r.T*1000-lat)/1000) // its start, in the plots' span
				d.Wire += lat
				d.Requests++
				d.Statuses[r.Status]++
				h.Requests++
				if r.Outcome == "ok" {
					h.OK++
				}
				switch r.Status {
				case 429:
					h.S429++
					h.ticks = append(h.ticks, r.T)
				case 503:
					h.S503++
					h.ticks503 = append(h.ticks503, r.T)
				}
			case "wait":
				d.WaitBy[r.Reason] += r.Delay / 1e3
			case "pause":
				if r.Reason == "retry-after" {
					d.RA.add(r.Req, r.Delay, r.Clamped)
				}
				d.PauseBy[r.Reason] += r.Delay / 1e3
				h.Paused += r.Delay / 1e3
				h.pauses = append(h.pauses, span{r.T, r.T + int64(r.Delay)})
			case "give-up":
				d.GiveUps[r.Reason]++
				if r.Reason == "retry-after" {
					d.RA.add(r.Req, -1, r.Clamped)
				}
			case "blocked":
				if h.blockedAt == 0 {
					h.blockedAt = r.T
				}
			case "rate":
				v := math.Inf(1) // null: no limit
				if r.Rate != nil {
					v = *r.Rate
				}
				h.Rate, h.MinRate, h.MaxRate = v, min(h.MinRate, v), max(h.MaxRate, v)
				h.rateSet = true
				h.steps = append(h.steps, point{r.T, v})
				if r.Cap > 0 {
					h.Capacity, h.Measured = r.Cap, r.Meas
					h.caps = append(h.caps, point{r.T, r.Cap})
					h.capErrs = append(h.capErrs, r.CapErr)
				}
			case "breaker":
				switch r.Detail {
				case "open":
					h.BreakerOpens++
					if h.openAt == 0 {
						h.openAt = r.T
					}
				case "closed", "half-open":
					if h.openAt != 0 {
						h.breaker = append(h.breaker, span{h.openAt, r.T})
						h.openAt = 0
					}
				}
			}
			if r.Clamped {
				d.Clamped++
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		d.Partial = d.Unread.Partial
	}
	if first <= last {
		d.Start, d.End = time.UnixMilli(first).UTC(), time.UnixMilli(last).UTC()
	}
	d.bucket(&attempts, first, last)
	lats := attempts.latencies(byIdx)
	d.Errors, d.ErrsCut = errs.top(MaxErrGroups)
	d.Running = job.Pending > 0
	for _, h := range hosts {
		if h.openAt != 0 {
			h.breaker = append(h.breaker, span{h.openAt, last})
		}
		if h.Requests == 0 && h.URLs == 0 {
			continue // robots.txt fetches' own host keys, say: nothing to show
		}
		h.P50, h.P95 = quantiles(lats[h.idx])
		if !h.rateSet {
			h.MinRate, h.MaxRate = math.NaN(), math.NaN()
		}
		d.Hosts = append(d.Hosts, h)
	}
	sort.Slice(d.Hosts, func(i, j int) bool {
		a, b := d.Hosts[i], d.Hosts[j]
		if a.Pain() != b.Pain() {
			return a.Pain() > b.Pain()
		}
		if a.Requests != b.Requests {
			return a.Requests > b.Requests
		}
		return a.Name < b.Name
	})
	for _, h := range d.Hosts {
		if len(d.Detail) < DetailHosts && h.Pain() > 0 {
			d.Detail = append(d.Detail, h)
		}
	}
	d.states(&attempts, byIdx, last)
	attempts.detail(d.Detail, byIdx)
	d.AllHosts = d.Hosts
	if len(d.Hosts) > MaxHosts {
		d.HostsCut = len(d.Hosts) - MaxHosts
		d.Hosts = d.Hosts[:MaxHosts]
	}
	return d, nil
}

// attemptAt is one attempt, as the report keeps it: 24 bytes and no
// pointer, since a job of a million URLs has a million of them (issue 35:
// the report took 176 MB of a 1M-page crawl's peak, 40 MB at 100k).
type attemptAt struct {
	t        int64 // its end, ms
	lat      int32 // µs
	class    uint8
	ok       bool   // its outcome was ok
	answered bool   // it had a status
	host     uint32 // Host.idx
}

// attempts holds attemptAt in chunks of attemptsChunk: a slice grown by
// append would hold up to twice what it needs.
type attempts struct{ chunks [][]attemptAt }

const attemptsChunk = 8192

func (as *attempts) add(a attemptAt) {
	n := len(as.chunks)
	if n == 0 || len(as.chunks[n-1]) == attemptsChunk {
		as.chunks = append(as.chunks, make([]attemptAt, 0, attemptsChunk))
		n++
	}
	as.chunks[n-1] = append(as.chunks[n-1], a)
}

// each calls fn for each attempt, in the order added.
func (as *attempts) each(fn func(*attemptAt)) {
	for _, c := range as.chunks {
		for i := range c {
			fn(&c[i])
		}
	}
}

// latencies returns each host's answered latencies (ms), by Host.idx:
// slices of one array, filled host by host.
func (as *attempts) latencies(hosts []*Host) [][]float64 {
	n := make([]int, len(hosts))
	total := 0
	as.each(func(a *attemptAt) {
		if a.answered {
			n[a.host]++
			total++
		}
	})
	all := make([]float64, total)
	out := make([][]float64, len(hosts))
	at := 0
	for i, k := range n {
		out[i] = all[at : at : at+k]
		at += k
	}
	as.each(func(a *attemptAt) {
		if a.answered {
			out[a.host] = append(out[a.host], float64(a.lat)/1e3)
		}
	})
	return out
}

// detail fills the detail hosts' series for their plots: their ok answers
// and latencies over time.
func (as *attempts) detail(hs []*Host, byIdx []*Host) {
	want := make([]bool, len(byIdx))
	for _, h := range hs {
		want[h.idx] = true
	}
	as.each(func(a *attemptAt) {
		if !want[a.host] {
			return
		}
		h := byIdx[a.host]
		if a.ok {
			h.okAt = append(h.okAt, a.t)
		}
		if a.answered {
			h.latAt = append(h.latAt, point{a.t, float64(a.lat) / 1e3})
		}
	})
}

// bucket counts attempts into time buckets spanning first..last.
func (d *Data) bucket(attempts *attempts, first, last int64) {
	d.Throughput = make([][]int, len(Classes))
	for i := range d.Throughput {
		d.Throughput[i] = make([]int, Buckets)
	}
	if first > last {
		d.Width = time.Second
		d.InFlight = make([]int64, Buckets)
		return
	}
	w := (last - first + Buckets) / Buckets // ms, at least 1
	d.Width = time.Duration(w) * time.Millisecond
	attempts.each(func(a *attemptAt) { d.Throughput[a.class][d.index(a.t)]++ })
	d.inFlight(attempts)
}

// index returns the bucket of time t (ms).
func (d *Data) index(t int64) int {
	w := d.Width.Milliseconds()
	i := int((t - d.Start.UnixMilli()) / w)
	return min(max(i, 0), Buckets-1)
}

// quantiles returns the 50th and 95th percentiles of v (NaN when empty).
func quantiles(v []float64) (p50, p95 float64) {
	if len(v) == 0 {
		return math.NaN(), math.NaN()
	}
	slices.Sort(v)
	at := func(q float64) float64 { return v[min(int(q*float64(len(v))), len(v)-1)] }
	return at(0.5), at(0.95)
}

// readResults calls fn for each whole line of results.jsonl, and returns
// how many lines it left out because they are not JSON.
func readResults(r io.Reader, fn func(*result)) (unread int, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var res result
	for {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			return unread, nil // the end, or a partial last line
		}
		if err != nil {
			return unread, fmt.Errorf("results.jsonl: %w", err)
		}
		res = result{}
		if !scanResult(line, &res) {
			res = result{}
			if err := json.Unmarshal(line, &res); err != nil {
				unread++
				continue
			}
		}
		fn(&res)
	}
}

// fmtNum formats a count with thin grouping.
func fmtNum(n int) string {
	s := strconv.Itoa(n)
	if len(s) <= 4 {
		return s
	}
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}
