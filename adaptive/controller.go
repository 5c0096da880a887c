package adaptive

import (
	"math"
	"sync"
	"time"
)

// Defaults for Config fields left zero.
const (
	DefaultInitial          = 1.0  // requests per second at a cold start
	DefaultMin              = 0.1  // one request every 10 s
	DefaultMax              = 1000 // a safety ceiling; set a real one per host
	DefaultTarget           = 0.97
	DefaultBackoff          = 0.5
	DefaultGrowth           = 1.4 // doubles the rate about every 0.5 s
	DefaultWindow           = 500 * time.Millisecond
	DefaultLatencyTolerance = 0.5
	DefaultProbeInterval    = 2 * time.Second
	DefaultMaxProbeInterval = 10 * time.Second
	DefaultMaxConcurrency   = 256
)

// Config tunes a Controller. The zero Config is a good default; each field
// documents the value zero stands for.
type Config struct {
	// Initial is the rate of a cold start, in requests per second; it grows
	// from there until the first congestion signal. Zero means
	// DefaultInitial (1 req/s).
	Initial float64
	// Min is the floor: the rate never goes below it. Zero means DefaultMin
	// (0.1 req/s).
	Min float64
	// Max is the ceiling: the rate never goes above it, nor above the one set
	// by SetMax. Zero means DefaultMax (1000 req/s).
	Max float64

	// Target is the share of the measured capacity to settle at, in (0, 1]:
	// close enough to use the host, far enough that its bucket refills
	// between probes. Zero means DefaultTarget (0.97).
	Target float64
	// Backoff is the multiplicative decrease applied when a congestion signal
	// comes and no capacity has been measured to settle at, in (0, 1). Zero
	// means DefaultBackoff (0.5, halving).
	Backoff float64
	// Growth is the increase of a cold start (slow start): each OK answer
	// adds Growth × 1 req/s, so that the rate grows by a factor e every
	// 1/Growth seconds; a ramp after a probe that found room grows at half
	// that. Zero means DefaultGrowth (1.4: doubling about every half second).
	Growth float64

	// Window is the least reaction window: after a decrease, no other
	// decrease comes before max(Window, p95 latency, 8 requests at the rate)
	// has passed, so that the answers to requests already under way, all of
	// one congestion event, count once. At the window's end the answers to
	// requests sent after the decrease say whether it was enough. Those
	// already sent never count, so the window only needs to outlast the
	// wave and gather a few answers. Zero means DefaultWindow (500 ms).
	Window time.Duration

	// LatencyTolerance is how far the median latency may climb above the
	// host's unloaded baseline, as a share of it, before a queue is
	// suspected: 0.5 suspects one past 1.5 × baseline (plus the noise the
	// latencies show unloaded). Probes stop at half of it. Zero means
	// DefaultLatencyTolerance; negative ignores latency.
	LatencyTolerance float64

	// ProbeInterval is how long the rate stays settled before it first
	// probes for more capacity. A probe that finds nothing new costs one
	// throttled request, so each such probe makes the next wait 1.5 times
	// longer, and at least as long as 50 requests take at the capacity (2 %
	// of them spent on probing), up to MaxProbeInterval; a change of
	// capacity resets it. Zero means DefaultProbeInterval (2 s).
	ProbeInterval time.Duration
	// MaxProbeInterval bounds the wait between probes, and so the time a
	// rise of capacity goes unseen. Zero means DefaultMaxProbeInterval
	// (10 s).
	MaxProbeInterval time.Duration

	// MaxConcurrency bounds Concurrency. Zero means DefaultMaxConcurrency
	// (256).
	MaxConcurrency int
}

func (c Config) withDefaults() Config {
	def := func(v *float64, d float64) {
		if !(*v > 0) || math.IsInf(*v, 1) {
			*v = d
		}
	}
	def(&c.Initial, DefaultInitial)
	def(&c.Min, DefaultMin)
	def(&c.Max, DefaultMax)
	def(&c.Target, DefaultTarget)
	def(&c.Backoff, DefaultBackoff)
	def(&c.Growth, DefaultGrowth)
	c.Target = min(c.Target, 1)
	if c.Backoff >= 1 {
		c.Backoff = DefaultBackoff
	}
	c.Max = max(c.Max, c.Min)
	c.Initial = min(max(c.Initial, c.Min), c.Max)
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.LatencyTolerance == 0 || math.IsNaN(c.LatencyTolerance) {
		c.LatencyTolerance = DefaultLatencyTolerance
	}
	if c.ProbeInterval <= 0 {
		c.ProbeInterval = DefaultProbeInterval
	}
	if c.MaxProbeInterval <= 0 {
		c.MaxProbeInterval = DefaultMaxProbeInterval
	}
	c.MaxProbeInterval = max(c.MaxProbeInterval, c.ProbeInterval)
	if c.MaxConcurrency <= 0 {
		c.MaxConcurrency = DefaultMaxConcurrency
	}
	return c
}

type phase uint8

const (
	starting phase = iota // slow start: multiplicative growth until the first signal
	settled               // at Target × capacity (or at a lower bound of it)
	probing               // reaching above the capacity to see whether it grew
	ramping               // the probe found room: multiplicative growth again
)

var phaseNames = [...]string{"starting", "settled", "probing", "ramping"}

func (p phase) String() string { return phaseNames[p] }

// Tuning that is not worth a Config field.
const (
	pubEvery       = int64(100 * time.Millisecond) // least time between two published increases
	pubStep        = 0.01                          // least relative increase worth publishing
	probeStep      = 0.1                           // a probe's first excess over the capacity...
	probeDouble    = int64(300 * time.Millisecond) // ... doubles this often
	minSpan        = int64(time.Second)            // shortest bracket that measures a capacity
	maxSpan        = int64(30 * time.Second)       // longest
	minLatN        = 8                             // OK answers needed before latency counts
	drainShare     = 0.1                           // extra cut after a queue was seen, to drain it
	serverLimit    = 0.95                          // served/sent below this: the host cannot keep up
	noiseSpreads   = 0.75                          // latency noise allowance, in interquartile ranges
	storedSlack    = 0.02                          // how far above its estimate the capacity may be, at least
	minServed      = 4                             // answers per second worth reading a served rate from
	straggle       = int64(100 * time.Millisecond) // throttles sent this soon after a decrease may be stragglers
	minMeasure     = 6                             // answers served that make a throttled window a measurement
	plainThrottles = 4                             // post-cut throttles that, outnumbering the served, cut again early
	coarse         = 0.1                           // a capacity this uncertain (relative) is re-measured soon
	winAnswers     = 8                             // answers a reaction window should see, at least
	probeCost      = 50                            // requests per failed probe (one throttled), at least
	shallowSaved   = 0.1                           // savings under 100 ms of the capacity: a host with no burst to speak of
	shallowFirst   = 0.1                           // a probe met this far above the estimate shows a host without burst...
	shallowGap     = 0.05                          // ... whose bounds this close stop narrowing its capacity
	lowProbeReach  = 1.6                           // a refused probe from a lower bound that got this far was spending savings
	nearBracket    = 0.75                          // a count this near under a fine estimate bounds it; further under, the capacity fell
)

// Controller is polite's per-host rate policy: AIMD whose decrease lands on a
// measured capacity instead of a guess. See the package documentation for
// the model.
//
// Methods take the current time: the Controller reads no clock, starts no
// goroutine and sets no timer. It is safe for concurrent use (one mutex), and
// Observe does not allocate. The zero Controller is not usable; call New.
type Controller struct {
	cfg    Config // defaults applied; read-only
	origin time.Time

	// mu guards every field below.
	mu    sync.Mutex
	last  int64   // latest instant seen, ns since origin
	ceil  float64 // min(cfg.Max, SetMax)
	rate  float64 // published rate
	want  float64 // rate the policy wants; published when worth it
	pubAt int64   // when rate was last raised

	phase   phase
	capEst  float64 // learned capacity in req/s; 0 when none yet
	capErr  float64 // how far off capEst may be, in req/s (a count's ±1.5 over its span)
	refine  bool    // capEst is coarse and wants an early probe
	capLow  bool    // capEst is only a lower bound (served without congestion)
	latHold bool    // latency is high without a queue growing: hold, no growth

	// The reaction window after a decrease.
	cutAt     int64 // requests sent at or after cutAt are "post-cut"
	winEnd    int64 // no other decrease before winEnd
	measuring bool  // the window's end has not been judged yet
	byLatency bool  // the window follows a latency decrease
	okPost    int   // OK answers to post-cut requests
	thrPost   int   // throttles and overloads among post-cut requests
	failPost  int   // failures among post-cut requests
	nPost     int   // answers to post-cut requests
	firstThr  int64 // send time of the first post-cut throttle
	lastThr   int64 // send time of the latest post-cut throttle
	okAfter   int   // OK answers to requests sent after firstThr
	decreases int   // decreases so far

	// Brackets: the host's bucket is empty whenever it throttles, so what it
	// served between two throttles, over the time between them, bounds its
	// capacity from below (BBR's long-term sampling of token-bucket
	// policers does the same).
	okCum   int64 // OK answers so far
	emptyAt int64 // send time of the latest throttle; -1 if none
	// The host's bucket was empty at markAt, with markOK OK answers to
	// requests sent before: what it saved since is what it earned minus
	// what it served.
	markAt, markOK int64
	pend           struct {
		at, due int64 // a throttle's send time; when its peers' answers are back
		active  bool
	}
	mark struct {
		at, ok int64 // a throttle's send time and the OKs sent before it
		valid  bool
	}

	// Probing.
	settleAt   int64   // when the rate last settled
	probeWait  int64   // settled time before the next probe
	probeAt    int64   // when the current probe began
	probeBase  float64 // the capacity it started from
	probeOK    int     // OK answers to requests sent since probeAt
	stored     float64 // tokens the host may have saved for the probe
	saved      float64 // most a probe was served beyond the capacity: a lower bound of the host's burst
	noBurst    bool    // the host keeps no savings: a failed probe's rate bounds its capacity
	bareProbes int     // failed probes in a row served far above the estimate without savings

	meter rateMeter
	lat   latencies
}

// New returns a Controller configured by cfg, starting at now at
// cfg.Initial.
func New(cfg Config, now time.Time) *Controller {
	cfg = cfg.withDefaults()
	return &Controller{
		cfg:       cfg,
		origin:    now,
		ceil:      cfg.Max,
		rate:      cfg.Initial,
		want:      cfg.Initial,
		probeWait: int64(cfg.ProbeInterval),
		cutAt:     math.MinInt64,
		winEnd:    math.MinInt64,
		emptyAt:   -1,
	}
}

// Rate returns the rate in force, in requests per second.
func (c *Controller) Rate() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rate
}

// Capacity returns the host's capacity as learned so far, in requests per
// second, and whether it was measured under congestion (rather than only
// seen served, a lower bound). It returns 0, false before any estimate.
func (c *Controller) Capacity() (rate float64, measured bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.capEst, c.capEst > 0 && !c.capLow
}

// SetMax sets a ceiling on the rate, below Config.Max: from robots.txt's
// Crawl-delay, RateLimit headers or per-host configuration. Zero, a negative
// rate or +Inf removes it. A rate in force above the ceiling drops at once.
func (c *Controller) SetMax(r float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !(r > 0) || math.IsInf(r, 1) {
		r = c.cfg.Max
	}
	c.ceil = max(min(r, c.cfg.Max), c.cfg.Min)
	c.want = min(c.want, c.ceil)
	c.rate = min(c.rate, c.ceil)
}

// Concurrency returns how many requests may be in flight to the host: what
// the rate needs at the host's unloaded latency (Little's law, with room for
// spread), and no more, so that a queue at the host stays short even when
// the rate overshoots (the idea of Vector's adaptive concurrency).
func (c *Controller) Concurrency() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	lat, _ := c.lat.baseline(c.last)
	if lat == 0 {
		lat = c.lat.p95
	}
	n := int(math.Ceil(c.rate*float64(lat)/1e9*1.25)) + 2
	return min(max(n, 1), c.cfg.MaxConcurrency)
}

// Observe takes the outcome of one attempt at now and returns the host's rate
// from now on.
func (c *Controller) Observe(now time.Time, s Signal) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.Kind < OK || s.Kind >= Neutral {
		return c.rate
	}
	t := c.clock(now)
	c.tick(t)
	sent := t - int64(max(s.Latency, 0))
	post := sent >= c.cutAt
	c.meter.add(t, s.Kind == OK)
	if post {
		c.nPost++
	}
	switch s.Kind {
	case OK:
		c.okCum++
		c.lat.add(int64(max(s.Latency, 0)))
		if post {
			c.okPost++
			if c.thrPost > 0 && sent >= c.firstThr {
				c.okAfter++
			}
		}
		switch c.phase {
		case starting:
			if !c.latHold {
				c.want += c.cfg.Growth
			}
		case ramping:
			if !c.latHold {
				c.want += c.cfg.Growth / 2
			}
		case probing:
			if sent >= c.probeAt {
				c.probeOK++
				c.checkProbe(t)
			}
		}
	case Throttle, Overload:
		if post {
			if c.thrPost == 0 {
				c.firstThr = sent
			}
			c.lastThr = max(c.lastThr, sent)
			c.thrPost++
		}
		c.empty(sent)
		if t >= c.winEnd {
			c.congested(t, sent, s.Wait)
		}
	case Failure:
		if post {
			c.failPost++
		}
	}
	return c.publish(t)
}

// clock converts now to ns since the origin, never going backwards.
func (c *Controller) clock(now time.Time) int64 {
	t := int64(now.Sub(c.origin))
	if t < c.last {
		return c.last
	}
	c.last = t
	return t
}

// window is the reaction window: max(Window, p95 latency), and long enough
// for about winAnswers answers at the rate.
func (c *Controller) window() int64 {
	return max(int64(c.cfg.Window), c.lat.p95, int64(winAnswers/c.want*1e9))
}

// latencyHigh reports whether the median latency is past share × the
// tolerance above the baseline, noise allowed for.
func (c *Controller) latencyHigh(t int64, share float64) bool {
	if c.cfg.LatencyTolerance < 0 || c.lat.n < minLatN {
		return false
	}
	b, spread := c.lat.baseline(t)
	if b <= 0 {
		return false
	}
	limit := float64(b)*(1+c.cfg.LatencyTolerance*share) + noiseSpreads*float64(spread)
	return float64(c.lat.med) > limit
}

// empty records that the host's bucket was empty when a request sent at
// sent was throttled. The OKs sent before it are counted once their answers
// are back, a median latency later.
func (c *Controller) empty(sent int64) {
	c.emptyAt = max(c.emptyAt, sent)
	if !c.pend.active {
		c.pend.at, c.pend.due, c.pend.active = sent, sent+c.lat.med, true
	}
}

// bracket closes a pending mark and measures the capacity between it and
// the previous one.
func (c *Controller) bracket() {
	at, ok := c.pend.at, c.okCum
	c.pend.active = false
	c.markAt, c.markOK = at, ok
	if !c.mark.valid || at-c.mark.at > maxSpan {
		c.mark.at, c.mark.ok, c.mark.valid = at, ok, true
		return
	}
	span := at - c.mark.at
	if span < minSpan {
		return // keep the older mark, for a longer span
	}
	// Between two empty instants the host served its capacity over the
	// span, give or take a token (and less if its bucket filled up and
	// overflowed meanwhile): a lower bound that only ever raises the estimate.
	est := (float64(ok-c.mark.ok) - 0.5) * 1e9 / float64(span)
	if tracing {
		c.trace(c.last, "bracket span=%.2f est=%.2f", float64(span)/1e9, est)
	}
	c.mark.at, c.mark.ok = at, ok
	err := 1e9 / float64(span)
	switch {
	case est > c.capEst:
		if est > c.capEst*1.05 {
			c.probeWait = int64(c.cfg.ProbeInterval)
		}
		c.capEst, c.capErr = est, err
	case est >= c.capEst-c.capErr && err < c.capErr && !c.capLow:
		// Within a coarse estimate's error, and finer: take it instead. (A
		// long span can bias it low, if the host's bucket filled and
		// overflowed meanwhile; a low estimate costs a little rate until a
		// probe finds the room, a high one a throttle every settle.)
		c.capEst, c.capErr = est, err
	default:
		return
	}
	if c.phase == settled {
		c.want = max(c.want, c.cfg.Target*c.capEst)
		if !c.measuring {
			c.want = c.cfg.Target * c.capEst
		}
	}
}

// congested handles the first congestion signal outside a reaction window:
// one decrease, then a window whose end judges whether it was enough.
func (c *Controller) congested(t, sent int64, wait time.Duration) {
	r := c.rate
	probe := c.phase == probing // a probe's rate followed probeRate; a ramp's did not
	if tracing {
		c.trace(t, "congested wait=%v okRate=%.2f", wait, c.meter.okRate(t))
	}
	nearLow := c.capLow && r <= 1.25*c.capEst
	if nearLow {
		// Throttled just above a lower bound of the capacity: that bound
		// is the capacity, near enough; brackets refine it.
		c.capLow = false
		if c.phase == ramping {
			c.phase = probing
		}
	}
	surprise, shallow := false, false
	if c.phase == probing && !c.capLow {
		// A probe is first served from what the host saved while the rate
		// sat under its capacity. Throttled well before those savings (as
		// far as earlier probes showed them) ran out, the capacity fell.
		e := c.excess(t)
		surprise = c.saved > 0 && e < 0.5*min(c.saved, c.stored)-1
		seen := c.saved > 0
		if !surprise {
			c.saved = max(c.saved, e)
		}
		// A host whose probes were never served more than a sliver of
		// what sitting under its capacity earns keeps no savings: either
		// the rate sat at its capacity, or the host has no burst and
		// refuses as soon as the rate passes its capacity. Only in the
		// second case is a probe served far above the estimate; there, the
		// rate the probe had when it sent the refused request bounds the
		// capacity from above as closely as the estimate bounds it from
		// below. A host with a deep bucket serves a probe far past its
		// capacity from savings: its rate met bounds nothing. Nor do the
		// savings of a host that says when to come back: it is paused
		// for it, and refills meanwhile.
		bare := probe && !surprise && seen && wait <= 0 && c.saved < min(0.5*c.stored, shallowSaved*c.capEst)
		met := c.probeRate(sent)
		if bare && met > c.capEst*(1+shallowFirst) {
			// Twice running: once can be a host whose savings the rate,
			// sitting at its capacity, never let build up.
			c.bareProbes++
			c.noBurst = c.noBurst || c.bareProbes >= 2
		} else {
			c.bareProbes = 0
		}
		shallow = c.noBurst && bare && met > c.capEst*(1+shallowGap)
		if shallow {
			r = met
		}
	}
	switch {
	case shallow:
		// Between the two bounds: settle under the middle, as a lower
		// bound that the next probe, soon, tests again.
		if tracing {
			c.trace(t, "shallow saved=%.2f stored=%.2f", c.saved, c.stored)
		}
		c.capEst, c.capErr, c.capLow = (c.capEst+r)/2, 0, true
		c.want = c.cfg.Target * c.capEst
		c.probeWait = int64(c.cfg.ProbeInterval)
	case c.phase == probing && !c.capLow && !surprise:
		// The probe met the known capacity: nothing new. Back under it, and
		// probe less often.
		c.want = c.cfg.Target * min(c.capEst, r)
		c.probeFailed()
	case nearLow && c.phase == settled:
		// Settled at a lower bound of the capacity and throttled: the
		// capacity lies between the bound and the rate. Settle under the
		// bound, not under half the rate; the window's end measures it if
		// the capacity fell instead.
		c.want = c.cfg.Target * min(c.capEst, r)
	case c.phase == settled || surprise:
		c.noBurst = false
		// Throttled while settled: the capacity is below the rate (it fell,
		// or was overrated), by an unknown amount.
		c.want = c.cfg.Backoff * r
		if c.capEst > r {
			c.capEst, c.capLow = r, false
		}
	default:
		// Growing past an unknown capacity: what was served lately bounds
		// it from above (though inflated by the host's burst); so does a
		// Backoff cut of the rate that met it. With a lower bound of the
		// capacity known, cut halfway between it and the rate that met
		// the throttle: the window says which half the capacity is in.
		c.want = c.cfg.Backoff * r
		ok := c.meter.okRate(t)
		if ok >= minServed {
			c.want = min(c.want, c.cfg.Target*ok)
		}
		if c.capEst > 0 {
			lo := c.cfg.Target * c.capEst
			if c.capLow {
				hi := ok
				// A probe's rate at the refused request's send time is a
				// closer upper bound than the last second's service, unless
				// it ran far past the bound (on the host's savings).
				if met := c.probeRate(sent); probe && wait <= 0 && met < lowProbeReach*c.capEst {
					hi = max(hi, met)
				}
				lo = (c.capEst + min(r, max(hi, c.capEst))) / 2
			}
			c.want = max(c.want, min(lo, r*c.cfg.Target))
		}
	}
	if wait > 0 {
		c.probeWait = max(c.probeWait, min(20*int64(wait), int64(c.cfg.MaxProbeInterval)))
	}
	c.decrease(t, t+int64(max(wait, 0)), false)
}

// decrease opens a reaction window for requests sent from at on.
func (c *Controller) decrease(t, at int64, byLatency bool) {
	c.want = max(c.want, c.cfg.Min)
	c.phase = settled
	c.settleAt = t
	c.cutAt = at
	c.winEnd = at + c.window()
	c.measuring = true
	c.byLatency = byLatency
	c.okPost, c.thrPost, c.failPost, c.nPost, c.okAfter = 0, 0, 0, 0, 0
	c.lastThr = math.MinInt64
	c.decreases++
}

// endWindow judges a reaction window at its end by the answers to requests
// sent after the decrease. Still throttled (stragglers right after the
// decrease aside): the host's bucket stayed empty, so what it served is its
// capacity; settle under it. Not throttled: what was served is a lower bound
// of the capacity.
func (c *Controller) endWindow(t int64) {
	c.measuring = false
	backAt := t - c.lat.med // requests sent before backAt have their answers
	if tracing {
		c.trace(t, "endWindow ok=%d thr=%d n=%d okAfter=%d cutAt=%.3f firstThr=%.3f backAt=%.3f", c.okPost, c.thrPost, c.nPost, c.okAfter, float64(c.cutAt)/1e9, float64(c.firstThr)/1e9, float64(backAt)/1e9)
	}
	// Still throttled late in the window: a request sent after the
	// decrease, past the wave's stragglers (or half the window, if that
	// comes first), was throttled.
	late := c.thrPost > 0 && c.lastThr >= c.cutAt+min((c.winEnd-c.cutAt)/2, straggle+c.lat.p95)
	switch {
	case late &&
		c.okPost < minMeasure && c.winEnd-c.cutAt < 4*c.window():
		// Still throttled, but too few answers served to measure the
		// capacity by: keep the window open a while longer.
		c.measuring = true
		c.winEnd = t + c.window()
	case late &&
		c.okPost < minMeasure:
		// Still throttled and, even after waiting, too few served to
		// measure anything by (the host may have been paused): a plain
		// multiplicative decrease, the estimate untouched.
		c.want = c.cfg.Backoff * c.want
		c.decrease(t, t, false)
	case late:
		// Still throttled late in the window. Measure from the first
		// post-cut throttle when there is room: the bucket was empty then,
		// even after a pause that let it refill.
		ok, from := c.okPost, c.cutAt
		// Only when enough were served after it: a client that pauses the
		// whole host on a throttle (polite.Transport does) may have served
		// none, and a capacity of zero measured over a pause is no capacity.
		if backAt-c.firstThr >= int64(c.cfg.Window)/2 && c.okAfter >= minMeasure {
			ok, from = c.okAfter, c.firstThr
		}
		span := max(backAt-from, int64(c.cfg.Window)/4)
		m := float64(ok) * 1e9 / float64(span)
		// A count of a few answers is coarse: keep an estimate it agrees
		// with, within a token and a half over the span. And a single late
		// throttle shows the rate a token or so over the capacity, not that
		// the bucket stayed empty: the count is only a lower bound then,
		// and a bracket's finer estimate nearby stands.
		bracketed := c.thrPost == 1 && c.capEst > 0 && c.capErr <= coarse*c.capEst && m < c.capEst && m > nearBracket*c.capEst
		if tol := 1.5e9 / float64(span); !bracketed && (c.capLow || m < c.capEst-tol || m > c.capEst+tol) {
			c.capEst, c.capErr = m, tol
			c.refine = tol > coarse*m
		}
		c.capLow = false
		c.want = c.cfg.Target * c.capEst
		c.probeWait = int64(c.cfg.ProbeInterval)
		c.decrease(t, t, false)
	case c.failPost*2 > c.nPost && c.nPost >= minLatN:
		// Mostly failing: slow down without learning anything.
		c.want = c.cfg.Backoff * c.want
		c.decrease(t, t, false)
	case c.byLatency:
		c.settle(t)
	default:
		if c.capEst == 0 || c.capLow {
			span := max(backAt-c.cutAt, int64(c.cfg.Window)/4)
			if lo := float64(c.okPost) * 1e9 / float64(span); lo > c.capEst {
				c.capEst, c.capLow, c.capErr = min(lo, c.want), true, 0
			}
		}
		c.settle(t)
	}
}

// settle holds the rate under the capacity (or at a lower bound of it) and
// schedules the next probe.
func (c *Controller) settle(t int64) {
	c.phase = settled
	c.settleAt = t
	switch {
	case c.capEst <= 0:
	case c.capLow:
		c.want = max(c.want, c.cfg.Target*c.capEst)
		c.probeWait = min(c.probeWait, int64(c.cfg.ProbeInterval)/4)
	default:
		c.want = c.cfg.Target * c.capEst
		if c.refine {
			// Measured from a few answers only: probe soon, once, for a
			// bracket that pins it down.
			c.refine = false
			c.probeWait = min(c.probeWait, int64(c.cfg.ProbeInterval)/4)
		}
	}
}

// tick runs what depends on time alone: brackets, window ends, latency and
// probes.
func (c *Controller) tick(t int64) {
	c.lat.update(t)
	if c.pend.active && t >= c.pend.due {
		c.bracket()
	}
	if c.measuring {
		switch {
		case t >= c.winEnd:
			c.endWindow(t)
		case c.thrPost >= plainThrottles && c.thrPost >= c.okPost &&
			c.lastThr >= c.cutAt+straggle+c.lat.p95 &&
			float64(c.okPost)+1.5 < 0.8*c.want*float64(max(t-c.lat.med-c.cutAt, straggle))/1e9:
			// Past the stragglers, most requests sent after the decrease
			// are throttled, and far fewer served than the rate sends: it
			// was plainly not enough. Cut again now, to what was served
			// since, give or take half an answer (too few to measure by:
			// a rate a little under the capacity costs less than one
			// over it, throttled the whole next window), and let the
			// next window measure.
			span := max(t-c.lat.med-c.cutAt, straggle)
			c.want = max((float64(c.okPost)+0.5)*1e9/float64(span), c.cfg.Backoff*c.want)
			c.decrease(t, t, false)
		}
		return
	}
	if t >= c.winEnd {
		c.latencyCheck(t)
	}
	switch c.phase {
	case settled:
		if !c.latHold && c.capEst > 0 && t-c.settleAt >= c.probeWait {
			c.startProbe(t)
		}
	case probing:
		if c.latencyHigh(t, 0.5) {
			// Latency leads: the probe has met the knee. Nothing new; back
			// under the capacity, a little lower for a window to drain
			// the queue the probe left. What the host served meanwhile,
			// with a queue in front of it, is its capacity, or under it.
			if ok := c.meter.okRate(t); ok > c.capEst && !c.capLow {
				c.capEst = ok
			}
			c.probeFailed()
			c.settle(t)
			c.want *= 1 - drainShare
			c.decrease(t, t, true)
			return
		}
		// The excess doubles every probeDouble: slow while the host's
		// savings may still explain what it serves, fast once they cannot.
		c.want = c.probeRate(t)
		c.checkProbe(t)
	}
}

// latencyCheck reads a queue from the latency. When the median climbs past
// the tolerance and the host serves less than it is sent, a queue is
// growing and what it serves is its capacity: settle under that, lower for
// a window to drain the queue. When latency climbs without a queue growing,
// hold: no growth, no probes.
func (c *Controller) latencyCheck(t int64) {
	if !c.latencyHigh(t, 1) {
		c.latHold = false
		return
	}
	okRate := c.meter.okRate(t)
	if okRate >= serverLimit*c.rate || t < int64(time.Second) {
		c.latHold = true
		return
	}
	c.latHold = false
	if tracing {
		c.trace(t, "latency med=%v okRate=%.2f", c.lat.med, okRate)
	}
	// Read while the rate grew, the served rate lags the capacity:
	// probe again soon.
	c.refine = c.phase == starting || c.phase == ramping
	if c.refine {
		okRate = max(okRate, min(c.meter.okRateOver(t, 4), c.rate))
	}
	c.capEst, c.capLow, c.capErr = okRate, false, 1.5
	c.want = c.cfg.Target * okRate * (1 - drainShare)
	c.decrease(t, t, true)
}

// startProbe begins reaching above the capacity. A host's bucket refills
// while the rate sits under its capacity, so a probe is first served from
// those savings; only service beyond them shows that the capacity grew.
func (c *Controller) startProbe(t int64) {
	c.phase = probing
	c.probeAt = t
	c.probeBase = c.capEst
	c.probeOK = 0
	c.stored = math.Inf(1)
	if c.emptyAt >= 0 {
		// What the host earned since its bucket was last seen empty, less
		// what it served meanwhile; the capacity may be a little above its
		// estimate: allow for it.
		hi := c.capEst + max(c.capEst*storedSlack, c.capErr)
		if !c.pend.active && c.markAt == c.emptyAt {
			c.stored = max(hi*float64(t-c.lat.med-c.markAt)/1e9-float64(c.okCum-c.markOK), 0)
		} else {
			c.stored = max(hi-c.rate, 0) * float64(t-c.emptyAt) / 1e9
		}
	}
	if tracing {
		c.trace(t, "probe stored=%.2f wait=%.1f", c.stored, float64(c.probeWait)/1e9)
	}
}

// checkProbe moves a probe to ramping once the host has served more than
// its savings can explain.
func (c *Controller) checkProbe(t int64) {
	if excess := c.excess(t); excess > c.stored+max(2, 0.1*c.probeBase) {
		if !c.capLow {
			c.mark.valid = false // the capacity changed: no bracket across it
		}
		c.phase = ramping
		c.capLow = true
		if tracing {
			c.trace(t, "ramp excess=%.1f stored=%.1f", excess, c.stored)
		}
	}
}

// probeFailed makes the next probe wait longer: 1.5 times the last wait,
// and at least long enough that one throttle per probe stays within
// probeCost requests at the capacity; never more than MaxProbeInterval.
func (c *Controller) probeFailed() {
	w := min(max(c.probeWait*3/2, int64(c.cfg.ProbeInterval)), int64(c.cfg.MaxProbeInterval))
	if c.capEst > 0 {
		w = max(w, int64(probeCost/c.capEst*1e9))
	}
	c.probeWait = w
}

// probeRate is the rate the current probe had at sent.
func (c *Controller) probeRate(sent int64) float64 {
	tau := float64(max(sent-c.probeAt, 0)) / float64(probeDouble)
	return c.probeBase * (1 + probeStep*(math.Exp2(tau)-1))
}

// excess is what the current probe was served beyond the capacity it
// started from, counting requests whose answers are back by t.
func (c *Controller) excess(t int64) float64 {
	back := float64(t-c.lat.med-c.probeAt) / 1e9
	return float64(c.probeOK) - c.probeBase*max(back, 0)
}

// publish moves the published rate to the wanted one: decreases at once,
// increases at most every pubEvery and only when worth a change. Growth past
// the settled rate needs the rate in use: never above twice what was served
// in the last second, so that a client short of work does not let the rate
// run away and then burst at it.
func (c *Controller) publish(t int64) float64 {
	w := min(max(c.want, c.cfg.Min), c.ceil)
	if w > c.rate {
		w = min(w, max(2*c.meter.okRate(t), c.cfg.Target*c.capEst, c.rate, c.cfg.Initial))
	}
	c.want = w
	switch {
	case w < c.rate:
		c.rate = w
	case w > c.rate*(1+pubStep) && t-c.pubAt >= pubEvery:
		c.rate = w
		c.pubAt = t
	}
	return c.rate
}
