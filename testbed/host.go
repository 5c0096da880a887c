package testbed

import (
	"context"
	"html"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Host is one simulated host: an http.Handler with a hidden capacity that
// records the server-side truth of what it received (Stats, Timeline).
//
// A request goes through, in order: the soft block (SoftBlock), the bucket
// (Rate, Burst, Schedule; Status when empty, or a wait under NoThrottle), a
// hang (TimeoutProb), the queue for a server (Servers, MaxQueue) and the
// service time (Latency, Slowdown, Jitter); then the page is written.
//
// All timing uses time.Now and timers, never polling, so a Host works in real
// time and inside a testing/synctest bubble alike; its clock starts at
// NewHost, so create it inside the bubble. A Server started on sockets
// ends each wait with a kernel sleep, which is precise where Go's timers
// are not (see preciseTail). A Host is safe for concurrent use.
type Host struct {
	cfg     HostConfig // defaults applied; read-only
	start   time.Time
	svc     float64     // Servers/Latency in req/s; 0 means unlimited
	precise atomic.Bool // end waits precisely: served on real sockets, in real time (see preciseTail)

	// One mutex guards every field below: counters move together with the
	// bucket and the timeline, so Stats is a consistent snapshot (Arrivals
	// always equals the sum of outcomes plus InFlight), which separate atomics
	// could not give.
	mu       sync.Mutex
	bucket   bucket
	changes  []change // capacity in force from each offset, sorted by at
	next     int      // changes[next:] are still to come
	rng      *rand.Rand
	lat      reservoir
	busy     int       // servers busy
	serving  int       // requests in service (for Slowdown)
	queue    []*waiter // requests waiting for a server, FIFO
	pages    int       // page requests received, for SoftBlock.After
	st       Stats     // counters; Elapsed and latencies are filled by Stats
	timeline []Second
}

// waiter is a request queued for a server.
type waiter struct {
	ready   chan struct{} // closed when a server is handed over
	granted bool          // a server was handed over
	gone    bool          // the client left before
}

// NewHost returns a host configured by cfg, started now. It panics if
// cfg.Validate reports a problem: check configs from users with Validate.
func NewHost(cfg HostConfig) *Host {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	cfg = cfg.withDefaults()
	now := time.Now()
	h := &Host{
		cfg:      cfg,
		start:    now,
		svc:      cfg.serviceRate(),
		bucket:   newBucket(cfg.Rate, cfg.Burst, now),
		changes:  []change{{at: 0, rate: cfg.Rate, burst: cfg.Burst}},
		next:     1,
		rng:      rand.New(rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15)),
		timeline: []Second{{}},
	}
	h.lat.rng = *rand.NewPCG(cfg.Seed, 1)
	for _, s := range cfg.Schedule {
		h.changes = append(h.changes, change{at: s.At, rate: s.Rate, burst: s.Burst})
	}
	h.mu.Lock()
	h.advanceLocked(now)
	h.mu.Unlock()
	return h
}

// Name returns the host's configured name.
func (h *Host) Name() string { return h.cfg.Name }

// Config returns the host's configuration with defaults applied.
func (h *Host) Config() HostConfig {
	c := h.cfg
	c.Schedule = slices.Clone(c.Schedule)
	return c
}

// Started returns the instant the host's clock started: Schedule offsets and
// Timeline windows count from it.
func (h *Host) Started() time.Time { return h.start }

// SetCapacity changes the bucket's rate (requests per second; 0 means
// unlimited) and burst (0 means 1) now, as a manual Schedule step. Steps of
// the Schedule still to come apply when their time comes.
func (h *Host) SetCapacity(rate float64, burst int) {
	if !validRate(rate) || burst < 0 {
		panic("testbed: SetCapacity(" + strconv.FormatFloat(rate, 'g', -1, 64) + ", " + strconv.Itoa(burst) + "): want a finite rate ≥ 0 and burst ≥ 0")
	}
	if burst == 0 {
		burst = 1
	}
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.advanceLocked(now)
	h.bucket.set(now, rate, burst)
	h.changes = slices.Insert(h.changes, h.next, change{at: h.since(now), rate: rate, burst: burst})
	h.next++
}

// Stats returns the host's counters and latency percentiles now.
func (h *Host) Stats() Stats {
	now := time.Now()
	h.mu.Lock()
	h.advanceLocked(now)
	st := h.st
	st.Elapsed = h.since(now)
	st.Max = h.lat.max
	lat := h.lat // the samples are copied by percentiles, outside the lock
	lat.samples = slices.Clone(lat.samples)
	h.mu.Unlock()
	p := lat.percentiles(0.50, 0.95, 0.99)
	st.P50, st.P95, st.P99 = p[0], p[1], p[2]
	return st
}

// Timeline returns one Second per 1-second window since the host started, up
// to and including the current one (which is still filling). The host keeps
// every window: about 70 bytes per second of run time.
func (h *Host) Timeline() []Second {
	now := time.Now()
	h.mu.Lock()
	h.advanceLocked(now)
	win := slices.Clone(h.timeline)
	changes := slices.Clone(h.changes)
	h.mu.Unlock()
	fillCapacity(win, changes, h.svc)
	return win
}

// since is the offset of t from the host's start (0 for earlier instants,
// such as a clock read just before NewHost).
func (h *Host) since(t time.Time) time.Duration { return max(t.Sub(h.start), 0) }

// advanceLocked applies the Schedule steps due by now and extends the
// timeline to now's window. New windows start with the current in-flight
// count: those requests are in flight during them.
func (h *Host) advanceLocked(now time.Time) int {
	elapsed := h.since(now)
	for h.next < len(h.changes) && h.changes[h.next].at <= elapsed {
		c := h.changes[h.next]
		h.bucket.set(h.start.Add(c.at), c.rate, c.burst)
		h.next++
	}
	win := int(elapsed / time.Second)
	for len(h.timeline) <= win {
		h.timeline = append(h.timeline, Second{
			Start:       time.Duration(len(h.timeline)) * time.Second,
			MaxInFlight: h.st.InFlight,
		})
	}
	return win
}

type outcome int

const (
	admitted outcome = iota
	rejected
	shed
	blocked
	timedOut
)

// arriveLocked counts an arrival at now and returns its window.
func (h *Host) arriveLocked(now time.Time, robots bool) int {
	win := h.advanceLocked(now)
	h.st.Arrivals++
	if robots {
		h.st.Robots++
	}
	h.st.InFlight++
	h.st.MaxInFlight = max(h.st.MaxInFlight, h.st.InFlight)
	w := &h.timeline[win]
	w.Arrivals++
	w.MaxInFlight = max(w.MaxInFlight, h.st.InFlight)
	return win
}

// finishLocked counts the outcome of a request that arrived in window win.
func (h *Host) finishLocked(now time.Time, win int, o outcome) {
	h.advanceLocked(now)
	w := &h.timeline[win]
	switch o {
	case admitted:
		h.st.Admitted++
		w.Admitted++
	case rejected:
		h.st.Rejected++
		w.Rejected++
	case shed:
		h.st.Shed++
		w.Shed++
	case blocked:
		h.st.Blocked++
		w.Blocked++
	case timedOut:
		h.st.TimedOut++
		w.TimedOut++
	}
	h.st.InFlight--
}

func (h *Host) finish(win int, o outcome) {
	now := time.Now()
	h.mu.Lock()
	h.finishLocked(now, win, o)
	h.mu.Unlock()
}

// blockLocked counts a page request to path and decides whether to
// soft-block it.
func (h *Host) blockLocked(path string) bool {
	h.pages++
	sb := &h.cfg.SoftBlock
	for _, p := range sb.Paths {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return sb.Always ||
		sb.After > 0 && h.pages > sb.After ||
		sb.Prob > 0 && h.rng.Float64() < sb.Prob
}

// queueFullLocked reports whether a request that has to wait must be shed.
func (h *Host) queueFullLocked() bool {
	switch {
	case h.cfg.MaxQueue < 0:
		return true
	case h.cfg.MaxQueue == 0:
		return false
	}
	return h.st.Queued >= h.cfg.MaxQueue
}

func (h *Host) enqueueLocked() {
	h.st.Queued++
	h.st.MaxQueued = max(h.st.MaxQueued, h.st.Queued)
}

// serviceTimeLocked draws a service time: Latency slowed by the requests in
// service and spread by Jitter.
func (h *Host) serviceTimeLocked() time.Duration {
	if h.cfg.Latency == 0 {
		return 0
	}
	f := 1 + h.cfg.Slowdown*float64(h.serving)
	if h.cfg.Jitter > 0 {
		f *= 1 + h.cfg.Jitter*(2*h.rng.Float64()-1)
	}
	return time.Duration(float64(h.cfg.Latency) * f)
}

// ServeHTTP answers one request as the simulated host. Any path serves a page
// but two: /robots.txt serves Robots, and /status/NNN answers status NNN
// (200 to 599) after the same checks as a page. With Content set, Content
// answers every request that gets through those checks instead.
func (h *Host) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	arrival := time.Now()
	isRobots := r.URL.Path == "/robots.txt"

	h.mu.Lock()
	win := h.arriveLocked(arrival, isRobots)
	if !isRobots && h.cfg.SoftBlock.enabled() && h.blockLocked(r.URL.Path) {
		h.finishLocked(arrival, win, blocked)
		h.mu.Unlock()
		h.writeChallenge(w)
		return
	}
	var wait time.Duration // for a borrowed token, under NoThrottle
	var rl rateLimit
	if h.bucket.rate > 0 {
		if h.cfg.NoThrottle {
			if h.bucket.deficit(arrival) > 0 && h.queueFullLocked() {
				h.finishLocked(arrival, win, shed)
				h.mu.Unlock()
				writeShed(w)
				return
			}
			owed := h.bucket.borrow(arrival)
			wait = refillTime(arrival, owed, h.bucket.rate, h.start, h.changes[h.next:])
		} else if !h.bucket.take(arrival) {
			wait := refillTime(arrival, h.bucket.deficit(arrival), h.bucket.rate, h.start, h.changes[h.next:])
			rl := h.rateLimitLocked()
			h.finishLocked(arrival, win, rejected)
			h.mu.Unlock()
			h.writeReject(w, arrival, wait, rl)
			return
		}
		rl = h.rateLimitLocked()
	}
	if wait > 0 {
		h.enqueueLocked()
	}
	hang := !isRobots && h.cfg.TimeoutProb > 0 && h.rng.Float64() < h.cfg.TimeoutProb
	h.mu.Unlock()

	h.setRateLimit(w.Header(), rl)
	ctx := r.Context()
	if wait > 0 {
		ok := h.sleep(ctx, wait)
		h.mu.Lock()
		h.st.Queued--
		h.mu.Unlock()
		if !ok {
			h.finish(win, timedOut)
			writeGone(w)
			return
		}
	}
	if hang {
		<-ctx.Done()
		h.finish(win, timedOut)
		writeGone(w)
		return
	}
	switch h.acquire(ctx) {
	case acquireShed:
		h.finish(win, shed)
		writeShed(w)
		return
	case acquireGone:
		h.finish(win, timedOut)
		writeGone(w)
		return
	}
	var service time.Duration
	if h.cfg.Latency > 0 {
		h.mu.Lock()
		service = h.serviceTimeLocked()
		h.serving++
		h.mu.Unlock()
	}
	ok := h.sleep(ctx, service)
	now := time.Now()
	h.mu.Lock()
	if h.cfg.Latency > 0 {
		h.serving--
	}
	h.releaseLocked()
	if !ok {
		h.finishLocked(now, win, timedOut)
		h.mu.Unlock()
		writeGone(w)
		return
	}
	h.lat.add(now.Sub(arrival))
	h.finishLocked(now, win, admitted)
	h.mu.Unlock()
	h.writeAnswer(w, r, isRobots)
}

// preciseTail is the part of a wait a Host on real sockets sleeps in the
// kernel instead of on a Go timer. Go's timers wake through the netpoller,
// whose waits on Linux are whole milliseconds: a 0.5 ms service time took
// 1.1 ms at the median, and a jittered 10 ms one 10.7 ms on average, so
// a host configured for 100 req/s (one server × 10 ms) served about 93
// and the live benchmark's goodput was counted against a capacity the
// host never had (issue 34). A kernel sleep (nanosleep) of the last
// stretch ends within about 0.1 ms; it blocks its thread, so only the
// tail goes there, and the rest waits on a timer that the request's
// context can end.
const preciseTail = 2 * time.Millisecond

// RealTime has the host end each wait with a kernel sleep of its last
// stretch (see preciseTail), for a host served on sockets in real time by
// a server of one's own; a Server's Start methods call it for theirs.
// Never call it inside a testing/synctest bubble: the fake clock would not
// wait for a kernel sleep.
func (h *Host) RealTime() { h.precise.Store(true) }

// sleep waits for d or until ctx ends, reporting whether d elapsed. A host
// served on sockets ends the wait precisely (see preciseTail).
func (h *Host) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 || !h.precise.Load() || !kernelSleeps {
		return sleep(ctx, d)
	}
	end := time.Now().Add(d)
	if d > preciseTail && !sleep(ctx, d-preciseTail) {
		return false
	}
	if rest := time.Until(end); rest > 0 {
		kernelSleep(rest)
	}
	return ctx.Err() == nil
}

// sleep waits for d or until ctx ends, reporting whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

type acquireResult int

const (
	acquired acquireResult = iota
	acquireShed
	acquireGone
)

// acquire takes a server, waiting in FIFO order behind earlier requests.
func (h *Host) acquire(ctx context.Context) acquireResult {
	if h.cfg.Servers == 0 {
		return acquired
	}
	h.mu.Lock()
	if h.busy < h.cfg.Servers {
		h.busy++
		h.mu.Unlock()
		return acquired
	}
	if h.queueFullLocked() {
		h.mu.Unlock()
		return acquireShed
	}
	wt := &waiter{ready: make(chan struct{})}
	h.queue = append(h.queue, wt)
	h.enqueueLocked()
	h.mu.Unlock()
	select {
	case <-wt.ready:
		return acquired
	case <-ctx.Done():
		h.mu.Lock()
		if wt.granted {
			h.releaseLocked()
		} else {
			wt.gone = true
			h.st.Queued--
		}
		h.mu.Unlock()
		return acquireGone
	}
}

// releaseLocked hands the caller's server to the next waiter, or frees it.
func (h *Host) releaseLocked() {
	if h.cfg.Servers == 0 {
		return
	}
	for len(h.queue) > 0 {
		wt := h.queue[0]
		h.queue[0] = nil
		h.queue = h.queue[1:]
		if wt.gone {
			continue
		}
		wt.granted = true
		h.st.Queued--
		close(wt.ready)
		return
	}
	h.busy--
}

// rateLimit is the bucket's state for the RateLimit header fields.
type rateLimit struct {
	on                            bool
	limit, remaining, reset, wind int64
}

func (h *Host) rateLimitLocked() rateLimit {
	if h.cfg.RateLimitHeaders == RateLimitNone {
		return rateLimit{}
	}
	// The policy is the bucket's rate over a whole number of seconds, at
	// least as long as the bucket takes to fill: what it admits over any
	// such window, sustained, without counting on its burst.
	b := &h.bucket
	w := max(int64(math.Ceil(float64(b.burst)/b.rate)), 1)
	return rateLimit{
		on:        true,
		limit:     max(int64(b.rate*float64(w)), 1),
		remaining: b.remaining(),
		reset:     ceilSeconds(b.untilFull()),
		wind:      w,
	}
}

func (h *Host) setRateLimit(hdr http.Header, rl rateLimit) {
	if !rl.on {
		return
	}
	m := h.cfg.RateLimitHeaders
	if m == RateLimitDraft || m == RateLimitBoth {
		hdr.Set("RateLimit-Policy", `"default";q=`+itoa(rl.limit)+`;w=`+itoa(rl.wind))
		hdr.Set("RateLimit", `"default";r=`+itoa(rl.remaining)+`;t=`+itoa(rl.reset))
	}
	if m == RateLimitX || m == RateLimitBoth {
		hdr.Set("X-RateLimit-Limit", itoa(rl.limit))
		hdr.Set("X-RateLimit-Remaining", itoa(rl.remaining))
		hdr.Set("X-RateLimit-Reset", itoa(rl.reset))
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// ceilSeconds rounds d up to whole seconds.
func ceilSeconds(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }

// writeReject answers a request beyond capacity. wait is the honest time
// until the bucket has a token again.
func (h *Host) writeReject(w http.ResponseWriter, now time.Time, wait time.Duration, rl rateLimit) {
	hdr := w.Header()
	switch h.cfg.RetryAfter {
	case RetryAfterSeconds:
		hdr.Set("Retry-After", itoa(max(ceilSeconds(wait), 1)))
	case RetryAfterDate:
		// An HTTP-date has whole seconds: round up, never promise early.
		t := now.Add(wait)
		if tr := t.Truncate(time.Second); !tr.Equal(t) {
			t = tr.Add(time.Second)
		}
		hdr.Set("Retry-After", t.UTC().Format(http.TimeFormat))
	}
	h.setRateLimit(hdr, rl)
	writeText(w, h.cfg.Status, "testbed: over capacity\n")
}

func writeShed(w http.ResponseWriter) {
	writeText(w, http.StatusServiceUnavailable, "testbed: overloaded, queue full\n")
}

// writeGone answers a request whose client has gone; nobody reads it over
// HTTP, but a handler called directly shows it.
func writeGone(w http.ResponseWriter) {
	writeText(w, http.StatusGatewayTimeout, "testbed: client gone before the answer\n")
}

func writeText(w http.ResponseWriter, status int, body string) {
	hdr := w.Header()
	hdr.Set("Content-Type", "text/plain; charset=utf-8")
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// challengeBody imitates a bot-manager interstitial.
const challengeBody = `<!DOCTYPE html><html lang="en-US"><head><title>Just a moment...</title>` +
	`<meta http-equiv="refresh" content="360"></head><body>` +
	`<h1>Checking your browser before accessing the site.</h1>` +
	`<p>Enable JavaScript and cookies to continue.</p></body></html>` + "\n"

func (h *Host) writeChallenge(w http.ResponseWriter) {
	hdr := w.Header()
	hdr.Set("Cf-Mitigated", "challenge")
	hdr.Set("Cache-Control", "private, max-age=0, no-store, no-cache, must-revalidate")
	hdr.Set("Content-Type", "text/html; charset=UTF-8")
	hdr.Set("Content-Length", strconv.Itoa(len(challengeBody)))
	w.WriteHeader(h.cfg.SoftBlock.Status)
	io.WriteString(w, challengeBody)
}

// writeAnswer writes the content of an admitted request.
func (h *Host) writeAnswer(w http.ResponseWriter, r *http.Request, isRobots bool) {
	if h.cfg.Content != nil {
		h.cfg.Content.ServeHTTP(w, r)
		return
	}
	if isRobots {
		if h.cfg.Robots == "" {
			writeText(w, http.StatusNotFound, "testbed: no robots.txt\n")
			return
		}
		writeText(w, http.StatusOK, h.cfg.Robots)
		return
	}
	if code, ok := strings.CutPrefix(r.URL.Path, "/status/"); ok {
		if n, err := strconv.Atoi(code); err == nil && n >= 200 && n <= 599 {
			writeText(w, n, http.StatusText(n)+"\n")
			return
		}
	}
	writePage(w, h.cfg.Name, r.URL.RequestURI(), h.cfg.BodySize)
}

// writePage writes the page for name and uri: exactly size bytes of HTML, a
// deterministic function of its arguments.
func writePage(w http.ResponseWriter, name, uri string, size int) {
	head := "<!DOCTYPE html>\n<html><head><title>" + html.EscapeString(name+uri) + "</title></head>\n<body><p>"
	const foot = "</p></body></html>\n"
	hdr := w.Header()
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	hdr.Set("Content-Length", strconv.Itoa(size))
	w.WriteHeader(http.StatusOK)
	fill := size - len(head) - len(foot)
	if fill < 0 {
		io.WriteString(w, (head + foot)[:size])
		return
	}
	io.WriteString(w, head)
	blob := filler()
	off := int(fnv64a(fnv64a(fnvOffset, name), uri) % uint64(len(blob)))
	for fill > 0 {
		n := min(fill, len(blob)-off)
		w.Write(blob[off : off+n])
		fill -= n
		off = 0
	}
	io.WriteString(w, foot)
}

// FNV-1a, inline: hash/fnv's interface would allocate on every page.
const fnvOffset, fnvPrime = 14695981039346656037, 1099511628211

func fnv64a(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

// filler is 64 KiB of deterministic lorem-ipsum text that page bodies are cut
// from.
var filler = sync.OnceValue(func() []byte {
	words := strings.Fields("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod " +
		"tempor incididunt ut labore et dolore magna aliqua polite crawler host rate token bucket")
	rng := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, 0, 64<<10+16)
	for len(b) < 64<<10 {
		b = append(b, words[rng.IntN(len(words))]...)
		b = append(b, ' ')
	}
	return b[:64<<10]
})
