package adaptive

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polite-go/polite/internal/nanos"
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
	DefaultMaxProbeInterval = 7 * time.Second
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
	// of them spent on probing), up to MaxProbeInterval. A change of
	// capacity resets it; one a throttled window measured, to no less
	// than those 50 requests. Zero means DefaultProbeInterval (2 s).
	ProbeInterval time.Duration
	// MaxProbeInterval bounds the wait between probes, and so the time a
	// rise of capacity goes unseen, except where probing more often would
	// spend more than 2 % of the requests on throttles (a slow host, or
	// the first probe after a fall). Zero means DefaultMaxProbeInterval
	// (7 s).
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

// configs holds the configurations Controllers were made with, so that the
// controllers of a crawl's million hosts share one copy (issue 12: 88 bytes
// each) instead of holding their own. Up to maxShared of them; a program
// that makes controllers of ever new configurations gets copies past that.
var (
	configs  sync.Map // Config -> *Config
	nConfigs atomic.Int32
)

const maxShared = 256

// shared returns a read-only copy of cfg that Controllers may share.
func shared(cfg Config) *Config {
	if p, ok := configs.Load(cfg); ok {
		return p.(*Config)
	}
	if nConfigs.Load() >= maxShared {
		return &cfg
	}
	p, loaded := configs.LoadOrStore(cfg, &cfg)
	if !loaded {
		nConfigs.Add(1)
	}
	return p.(*Config)
}

// phase is where a Controller is in its state machine; the package
// documentation's Phases section tables the transitions. A decrease always
// lands in settled with a reaction window open, the sub-state called
// reacting (see the reacting field).
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
	spareHeadroom  = 1.25                          // a rate no demand pressed for a second rises no higher than this over what was served
	minRise        = int64(2 * time.Millisecond)   // the least latency rise read as a queue: scheduler and GC noise over a µs baseline is not one (issue 16)
	minQueued      = 0.25                          // requests of ours in flight at the host (served × latency) below which a latency rise is not our queue
	drainShare     = 0.1                           // extra cut after a queue was seen, to drain it
	serverLimit    = 0.95                          // served/sent below this: the host cannot keep up
	standing       = 1.0                           // requests of ours waiting at the host (served × latency's rise) that make a queue ours, growing or not
	steepCut       = 0.05                          // share of the capacity a steep knee settles under Target
	noiseSpreads   = 0.75                          // latency noise allowance, in interquartile ranges
	storedSlack    = 0.02                          // how far above its estimate the capacity may be, at least
	minServed      = 4                             // answers per second worth reading a served rate from
	straggle       = int64(100 * time.Millisecond) // throttles sent this soon after a decrease may be stragglers
	minMeasure     = 6                             // answers served that make a throttled window a measurement
	plainThrottles = 2                             // post-cut throttles that, outnumbering the served, cut again early
	coarse         = 0.1                           // a capacity this uncertain (relative) is re-measured soon
	winAnswers     = 8                             // answers a reaction window should see, at least
	probeCost      = 50                            // requests per failed probe (one throttled), at least
	maxDebt        = 3                             // a fall's throttles charged to the next probe, at most
	shallowSaved   = 0.1                           // savings under 100 ms of the capacity: a host with no burst to speak of
	shallowFirst   = 0.1                           // a probe met this far above the estimate shows a host without burst...
	shallowGap     = 0.05                          // ... whose bounds this close stop narrowing its capacity
	farMet         = 1.25                          // a throttle met this far over the estimate (or a lower bound) is far: savings, not the capacity, carried the rate there
	lowProbeReach  = 1.6                           // a refused probe from a lower bound that got this far was spending savings
	nearBracket    = 0.75                          // a count this near under a fine estimate bounds it; further under, the capacity fell
)

// Controller is polite's per-host rate policy: AIMD whose decrease lands on a
// measured capacity instead of a guess. See the package documentation for
// the model. It is a Rater with every optional capability.
//
// Methods take the current time: the Controller reads no clock, starts no
// goroutine and sets no timer. It is safe for concurrent use (one mutex), and
// Observe does not allocate. The zero Controller is not usable; call New.
type Controller struct {
	cfg    *Config // defaults applied; read-only, shared (see shared)
	origin int64   // the instant of New (see nanos.Of)

	// mu guards every field below.
	mu    sync.Mutex
	last  int64   // latest instant seen, ns since origin
	ceil  float64 // min(cfg.Max, SetMax)
	rate  float64 // published rate
	want  float64 // rate the policy wants; published when worth it
	pubAt int64   // when rate was last raised

	capEst float64 // learned capacity in req/s; 0 when none yet
	capErr float64 // how far off capEst may be, in req/s (a count's ±1.5 over its span)

	// The reaction window after a decrease. While it is open, the
	// controller is reacting: the phase is settled, the rate stays at the
	// decrease, throttles start no other decrease, and the answers to
	// requests sent since cutAt are counted to judge it at winEnd. It is a
	// flag, not a phase of its own, so that no decision changes: with a
	// ProbeInterval under 4 ns (probeWait = ProbeInterval/4 = 0), a probe
	// starts in the very tick whose latency check opened a window, and
	// runs inside it.
	cutAt    int64 // requests sent at or after cutAt are "post-cut"
	winEnd   int64 // no other decrease before winEnd
	firstThr int64 // send time of the first post-cut throttle
	lastThr  int64 // send time of the latest post-cut throttle
	okPost   int32 // OK answers to post-cut requests
	thrPost  int32 // throttles and overloads among post-cut requests
	failPost int32 // failures among post-cut requests
	nPost    int32 // answers to post-cut requests
	okAfter  int32 // OK answers to requests sent after firstThr

	decreases int32 // decreases so far

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
		at, due int64 // a throttle's send time; when its peers' answers are back (while pendOn)
	}
	mark struct {
		at, ok int64 // a throttle's send time and the OKs sent before it (while markOn)
	}

	// Probing.
	settleAt  int64   // when the rate last settled
	probeWait int64   // settled time before the next probe
	waitCap   float64 // the capacity probeWait was set against by a failed probe
	probeAt   int64   // when the current probe began
	probeBase float64 // the capacity it started from
	stored    float64 // tokens the host may have saved for the probe
	saved     float64 // most a probe was served beyond the capacity: a lower bound of the host's burst

	// pressedAt is when the latest OK answer to a request the rate held
	// back (not Spare) came; a rise needs one since the last rise.
	pressedAt int64

	probeOK    int32 // OK answers to requests sent since probeAt
	bareProbes int32 // failed probes in a row served far above the estimate without savings
	debt       int32 // throttles since a blind cut (at most maxDebt), until the rate settles; 0 = none

	// Flags, together: a Controller per host, a million hosts (issue 12).
	phase     phase
	refine    bool // capEst is coarse and wants an early probe
	capLow    bool // capEst is only a lower bound (served without congestion)
	latHold   bool // latency is high without a queue growing: hold, no growth
	noBurst   bool // the host keeps no savings: a failed probe's rate bounds its capacity
	reacting  bool // a reaction window is open: its end has not been judged yet
	byLatency bool // the window follows a latency decrease
	blind     bool // the window follows a cut by an unknown amount (the capacity fell)
	falling   bool // the capacity fell: the next settle charges debt to the probes
	pendOn    bool // pend holds a throttle whose bracket is due
	markOn    bool // mark holds a throttle a bracket may start from

	meter rateMeter
	// capSaved is how much of capEst only the savings of a Retry-After
	// pause show, unproven: what a window after a pause was served counts
	// the burst the host refilled during it. capEst, which the rate follows,
	// keeps it (the rate's behaviour is tuned to it); Capacity reports
	// capEst less it. A float32 here fills what was padding: a Controller
	// per host, a million hosts (issue 12).
	capSaved float32
	lat      latencies
}

var (
	_ Rater              = (*Controller)(nil)
	_ CurrentRater       = (*Controller)(nil)
	_ ConcurrencyRater   = (*Controller)(nil)
	_ CeilingRater       = (*Controller)(nil)
	_ CapacityRater      = (*Controller)(nil)
	_ CapacityErrorRater = (*Controller)(nil)
	_ PhaseRater         = (*Controller)(nil)
)

// New returns a Controller configured by cfg, starting at now at
// cfg.Initial.
func New(cfg Config, now time.Time) *Controller {
	cfg = cfg.withDefaults()
	return &Controller{
		cfg:       shared(cfg),
		origin:    nanos.Of(now),
		ceil:      cfg.Max,
		rate:      cfg.Initial,
		want:      cfg.Initial,
		probeWait: int64(cfg.ProbeInterval),
		cutAt:     math.MinInt64,
		winEnd:    math.MinInt64,
		emptyAt:   -1,
		pressedAt: math.MinInt64 / 2,
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
//
// It is what the host's answers prove. The rate may follow an estimate
// above it for a while: after a Retry-After pause the host serves its
// burst, refilled during the pause, and the rate settles against what it
// was served as before, but the capacity counts the pause's time with it
// (issue 33: a host of 5 req/s with a burst of 5 was reported at 8).
func (c *Controller) Capacity() (rate float64, measured bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.proven()
	return p, p > 0 && !c.capLow
}

// CapacityError returns how far off the capacity estimate may be, in
// requests per second either way (a count's ±1.5 answers over the span it
// was counted in, or a bracket's), for an error band beside the estimate.
// It is 0 before any estimate, and while the estimate is only a lower
// bound (Capacity's measured is false).
func (c *Controller) CapacityError() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.capEst <= 0 || c.capLow {
		return 0
	}
	return c.capErr
}

// Phase returns the controller's phase: "starting" (slow start until the
// first congestion signal), "settled", "probing" (reaching above the
// capacity to see whether it grew) or "ramping" (the probe found room).
func (c *Controller) Phase() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.phase.String()
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
		lat = c.lat.p95.ns()
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
		if !s.Spare {
			c.pressedAt = t
		}
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
		if c.debt > 0 && c.debt < maxDebt {
			c.debt++
		}
		c.empty(sent)
		switch {
		case t >= c.winEnd:
			c.congested(t, sent, s.Wait)
		case c.blind && post && sent >= c.cutAt+min(straggle, int64(1e9/c.want)):
			c.recut(t)
		}
	case Failure:
		if post {
			c.failPost++
		}
	}
	return c.publish(t)
}

// tick runs what depends on time alone: brackets, window ends, latency and
// probes.
func (c *Controller) tick(t int64) {
	c.lat.update(t)
	if c.pendOn && t >= c.pend.due {
		c.bracket()
	}
	if c.reacting {
		c.react(t)
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
		c.advanceProbe(t)
	}
}

// clock converts now to ns since the origin, never going backwards.
func (c *Controller) clock(now time.Time) int64 {
	t := nanos.Of(now) - c.origin
	if t < c.last {
		return c.last
	}
	c.last = t
	return t
}

// publish moves the published rate to the wanted one: decreases at once,
// increases at most every pubEvery and only when worth a change. Growth past
// the settled rate needs the rate in use: never above twice what was served
// in the last second, so that a client short of work does not let the rate
// run away and then burst at it; and when no answer since the last rise was
// to a request the rate held back (Signal.Spare), no higher than a quarter
// over what was served: demand must press on a rate before it rises (issue
// 18: sequential requests at 50 a second took a host from 5 to 100 req/s).
func (c *Controller) publish(t int64) float64 {
	w := min(max(c.want, c.cfg.Min), c.ceil)
	if w > c.rate {
		w = min(w, max(2*c.meter.okRate(t), c.cfg.Target*c.capEst, c.rate, c.cfg.Initial))
		if c.pressedAt < c.pubAt {
			// Nothing held back since the last rise: headroom over what
			// was served, no more, so a surge of demand finds some rate
			// waiting.
			w = min(w, max(c.rate, spareHeadroom*c.meter.okRate(t)))
		}
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
