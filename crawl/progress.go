package crawl

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/breaker"
	"github.com/polite-go/polite/bucket"
)

// hostStats is what the job saw of one host, for the live display and the
// summary. It is safe for concurrent use.
type hostStats struct {
	requests  atomic.Int64 // attempts sent
	throttled atomic.Int64 // 429 and 503 answers
	blocked   atomic.Int64 // soft blocks
	errors    atomic.Int64 // attempts without a response
	done      atomic.Int64 // URLs finished (this run)
	failed    atomic.Int64 // URLs finished other than ok (this run)

	mu   sync.Mutex // guards lat, next
	lat  []time.Duration
	next int
}

const latencyWindow = 128 // the p95 is of this many latest attempts

func (s *hostStats) latency(d time.Duration) {
	s.mu.Lock()
	if len(s.lat) < latencyWindow {
		s.lat = append(s.lat, d)
	} else {
		s.lat[s.next] = d
		s.next = (s.next + 1) % latencyWindow
	}
	s.mu.Unlock()
}

func (s *hostStats) p95() time.Duration {
	s.mu.Lock()
	l := slices.Clone(s.lat)
	s.mu.Unlock()
	if len(l) == 0 {
		return 0
	}
	slices.Sort(l)
	return l[(len(l)*95+99)/100-1]
}

// record counts one attempt the Transport sent.
func (s *hostStats) record(tr polite.Tried) {
	s.requests.Add(1)
	switch {
	case tr.Outcome == polite.Throttled:
		s.throttled.Add(1)
	case tr.Outcome == polite.Blocked:
		s.blocked.Add(1)
	case tr.Status == 0:
		s.errors.Add(1)
	}
	if tr.Status != 0 {
		s.latency(tr.Latency)
	}
}

// Progress is a snapshot of a running job.
type Progress struct {
	// Total is the number of URLs in the job; Done of them are finished,
	// over every run, DoneNow in this one.
	Total, Done, DoneNow int
	// Outcomes counts finished URLs by outcome, over every run.
	Outcomes map[string]int
	// InFlight, Queued and Delayed count URLs being fetched, ready to go as
	// soon as their host's rate or in-flight cap lets them, and waiting:
	// put off by a backoff, or held with their host by a pause (Retry-After,
	// RateLimit reset, a block) or an open breaker.
	InFlight, Queued, Delayed int
	// Elapsed is the time since Run started.
	Elapsed time.Duration
	// Hosts are the busiest hosts, most requests in flight first, then most
	// URLs left.
	Hosts []HostProgress
	// HostCount is the number of hosts in the job.
	HostCount int
	// Loading says Load is reading a list; Read counts the entries (URLs
	// and lines that are not) Load has read, this one's and earlier ones',
	// and Dropped those of them the job had already (a line repeated in
	// the list, the same URL written another way, or a URL an earlier
	// list added), which Load did not add again; MaxURLs's skipped ones
	// are neither (see Skipped).
	Loading bool
	Read    int
	Dropped int
}

// HostProgress is one host's line in a Progress.
type HostProgress struct {
	Host string
	// Budget is the key of the Transport budget the host draws on when it
	// is not the host's own (--key domain or ip): Rate, Paused and Why are
	// the budget's.
	Budget    string
	Rate      float64       // the host's current rate limit, requests per second (0: no limit)
	InFlight  int           // requests in flight now
	Left      int           // URLs not finished
	Requests  int64         // attempts sent this run
	Throttled int64         // 429/503 answers this run
	Blocked   int64         // soft blocks this run
	Errors    int64         // attempts without a response this run
	Done      int64         // URLs finished this run
	Failed    int64         // of which not ok
	P95       time.Duration // of the latest attempts' latencies
	Paused    time.Duration // how much longer the host is paused, if it is
	// Why says what holds the host back now, "" when nothing does: its
	// pause and the pause's reason (retry-after, backoff, ratelimit), an
	// open breaker, a soft block, the robots.txt Crawl-delay or RateLimit
	// ceiling it runs at, its in-flight cap, or its rate.
	Why string
}

// Progress returns a snapshot of the job, with at most topHosts hosts (all
// when negative).
func (j *Job) Progress(topHosts int) Progress {
	j.mu.Lock()
	p := Progress{Total: j.total, Done: j.doneBefore + j.doneNow, DoneNow: j.doneNow, Outcomes: make(map[string]int, len(j.outcomes)),
		Loading: j.loading.Load(), Read: int(j.linesRead.Load()), Dropped: int(j.dropped.Load())}
	for k, v := range j.outcomes {
		p.Outcomes[k] = v
	}
	if !j.start.IsZero() {
		p.Elapsed = time.Since(j.start)
	}
	loaded := j.loaded
	j.mu.Unlock()
	if !loaded {
		return p // Run is still loading the pending URLs: counts only
	}
	p.InFlight, p.Queued, p.Delayed = j.sched.counts()
	p.HostCount = j.hostCount
	if topHosts == 0 {
		return p
	}
	now := time.Now()
	type cand struct {
		h        *host
		inflight int
		left     int
	}
	var cs []cand
	j.sched.mu.Lock()
	for _, h := range j.sched.gone {
		cs = append(cs, cand{h: h})
	}
	for _, h := range j.sched.hosts {
		left := h.loaded + h.unloaded()
		if topHosts > 0 && left == 0 && h.stats.requests.Load() == 0 {
			continue
		}
		cs = append(cs, cand{h, h.inflight, left})
	}
	j.sched.mu.Unlock()
	sort.SliceStable(cs, func(a, b int) bool {
		if cs[a].inflight != cs[b].inflight {
			return cs[a].inflight > cs[b].inflight
		}
		if cs[a].left != cs[b].left {
			return cs[a].left > cs[b].left
		}
		if ra, rb := cs[a].h.stats.requests.Load(), cs[b].h.stats.requests.Load(); ra != rb {
			return ra > rb
		}
		return cs[a].h.key < cs[b].h.key
	})
	if topHosts > 0 && len(cs) > topHosts {
		cs = cs[:topHosts]
	}
	for _, c := range cs {
		h := c.h
		hp := HostProgress{
			Host: h.key, InFlight: c.inflight, Left: c.left,
			Requests: h.stats.requests.Load(), Throttled: h.stats.throttled.Load(), Blocked: h.stats.blocked.Load(),
			Errors: h.stats.errors.Load(), Done: h.stats.done.Load(), Failed: h.stats.failed.Load(), P95: h.stats.p95(),
		}
		bk := j.budgetOf(h)
		if bk != h.key {
			hp.Budget = bk
		}
		if st, ok := j.tr.State(bk); ok {
			if st.PausedUntil.After(now) {
				hp.Paused = st.PausedUntil.Sub(now)
			}
			if st.Rate < bucket.Inf {
				hp.Rate = st.Rate
			}
			hp.Why = slowBecause(st, now)
		}
		p.Hosts = append(p.Hosts, hp)
	}
	return p
}

// slowBecause says what holds a host back at now, "" when nothing does, in
// the order the Transport's gates would: block, pause, breaker, then the
// rate (under a ceiling or its own) and the in-flight cap.
func slowBecause(st polite.HostState, now time.Time) string {
	switch {
	case st.Blocked != "":
		return "blocked: " + st.Blocked
	case st.PausedUntil.After(now):
		return fmt.Sprintf("paused %v (%s)", st.PausedUntil.Sub(now).Round(100*time.Millisecond), pauseName(st.PauseWhy))
	case st.Breaker == breaker.Open:
		return "breaker open"
	case st.Breaker == breaker.HalfOpen:
		return "breaker probing"
	case st.Concurrency > 0 && st.InFlight >= st.Concurrency:
		return fmt.Sprintf("in-flight cap (%d)", st.Concurrency)
	case st.NextToken.After(now) && st.Ceiling > 0 && st.Rate >= st.Ceiling*0.999:
		switch st.CeilingWhy {
		case polite.ReasonCrawlDelay:
			return fmt.Sprintf("robots.txt Crawl-delay (%.3g/s)", st.Ceiling)
		case polite.ReasonRateLimit:
			return fmt.Sprintf("server's RateLimit header (%.3g/s)", st.Ceiling)
		}
		return fmt.Sprintf("crawl-delay/RateLimit ceiling (%.3g/s)", st.Ceiling)
	case st.NextToken.After(now) && st.Rule != "":
		return fmt.Sprintf("rate %.3g/s (rule %s)", st.Rate, st.Rule)
	case st.NextToken.After(now):
		return fmt.Sprintf("rate %.3g/s", st.Rate)
	}
	return ""
}

// Slowest is the host a job waits for longest: the one whose URLs left,
// at the rate its budget holds it to, after its pause, take the longest.
type Slowest struct {
	Host string  // the host, or with --key domain|ip the budget's key
	Left int     // URLs not finished (of every host under the budget)
	Rate float64 // the rate its budget holds it to, requests per second
	ETA  time.Duration
	// Held is how much of ETA the host waits on a timer before it is sent
	// anything (0: none), and HeldBy what the timer is: "pause", "breaker"
	// or "block re-check" (a soft-blocked host's wait for its probe, which
	// may block again: the ETA holds if the probe is answered).
	Held   time.Duration
	HeldBy string
}

// Slowest returns the host expected to finish last at the rate each is held
// to (Left ÷ Rate, plus what is left of its pause, open breaker or soft
// block's re-check wait), and false when no host with URLs left has a
// finite rate or a wait: the job's own throughput is then the better
// estimate. It reads every host in memory: call it every second or so, not
// per URL.
func (j *Job) Slowest() (Slowest, bool) {
	j.mu.Lock()
	loaded := j.loaded
	j.mu.Unlock()
	if !loaded {
		return Slowest{}, false
	}
	now := time.Now()
	left := map[string]int{}
	recheck := map[string]time.Time{} // by budget, its hosts' latest re-check
	j.sched.mu.Lock()
	for _, h := range j.sched.hosts {
		if n := h.loaded + h.unloaded(); n > 0 && h.gaveUp.Load() == nil {
			k := j.budgetOf(h)
			left[k] += n
			if at := h.blk.recheckAt(j.recheck()); at.After(recheck[k]) {
				recheck[k] = at
			}
		}
	}
	j.sched.mu.Unlock()
	var worst Slowest
	for key, n := range left {
		st, ok := j.tr.State(key)
		if !ok {
			continue
		}
		held, by := st.PausedUntil, "pause"
		if st.BreakerUntil.After(held) {
			held, by = st.BreakerUntil, "breaker"
		}
		// A blocked host waits for its re-check whatever its rate: its
		// figure was n ÷ rate, "<1s" all the while (issue 33, item 15).
		if at := recheck[key]; at.After(held) {
			held, by = at, "block re-check"
		}
		var wait time.Duration
		if held.After(now) {
			wait = held.Sub(now)
		}
		finite := st.Rate > 0 && st.Rate < bucket.Inf
		if !finite && wait == 0 {
			continue
		}
		eta := wait
		if finite {
			eta += time.Duration(float64(n) / st.Rate * float64(time.Second))
		}
		if eta > worst.ETA || eta == worst.ETA && key < worst.Host {
			worst = Slowest{Host: key, Left: n, Rate: st.Rate, ETA: eta}
			if wait > 0 {
				worst.Held, worst.HeldBy = wait, by
			}
		}
	}
	return worst, worst.Host != ""
}

// pauseName says what paused a host, as a user reads it.
func pauseName(why polite.Reason) string {
	switch why {
	case polite.ReasonRetryAfter:
		return "server's Retry-After"
	case polite.ReasonRateLimit:
		return "server's RateLimit reset"
	case polite.ReasonBackoff:
		return "backoff after failures"
	case polite.ReasonStore:
		return "shared store unreachable"
	}
	return string(why)
}
