package breaker

import (
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polite-go/polite/internal/nanos"
)

// ErrOpen is the error, wrapped in an *OpenError, that Allow returns while
// the breaker refuses requests.
var ErrOpen = errors.New("breaker: open")

// OpenError is Allow's refusal. errors.Is(err, ErrOpen) matches it.
type OpenError struct {
	// Until is when the breaker will next let a probe through, unless a
	// probe already out reports first (which may close it sooner).
	Until time.Time
}

func (e *OpenError) Error() string {
	return "breaker: open until " + e.Until.Format(time.RFC3339Nano)
}

// Unwrap returns ErrOpen.
func (e *OpenError) Unwrap() error { return ErrOpen }

// State is a breaker's state.
type State int

const (
	// Closed lets every request through and counts failures.
	Closed State = iota
	// Open refuses every request until its delay has passed.
	Open
	// HalfOpen has let one probe through and refuses others until the
	// probe reports.
	HalfOpen
)

// String returns "closed", "open" or "half-open".
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half-open"
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// Transition is the state change a Record caused; From == To when none.
type Transition struct {
	From, To State
	// Until is, when To is Open, when the next probe may go.
	Until time.Time
}

// Changed reports whether the state changed.
func (t Transition) Changed() bool { return t.From != t.To }

// Config defaults.
const (
	DefaultThreshold    = 5
	DefaultWindow       = 30 * time.Second
	DefaultOpenDelay    = 5 * time.Second
	DefaultMaxOpenDelay = 5 * time.Minute
	DefaultJitter       = 0.2
	// MaxThreshold bounds Threshold: the breaker keeps the time of each of
	// the last Threshold failures, so a huge Threshold meant as "never open"
	// must not allocate gigabytes.
	MaxThreshold = 1000
)

// Config configures a Breaker. The zero value is the default.
type Config struct {
	// Threshold is how many consecutive failures open the breaker. If zero
	// or negative, DefaultThreshold is used; above MaxThreshold,
	// MaxThreshold is.
	Threshold int
	// Window is the span the last Threshold failures must fall within: a
	// failure a day is not an outage. If zero or negative, DefaultWindow is
	// used.
	Window time.Duration
	// OpenDelay is how long the breaker first stays open. Each failed probe
	// doubles it, up to MaxOpenDelay; closing resets it. If zero or
	// negative, DefaultOpenDelay is used.
	OpenDelay time.Duration
	// MaxOpenDelay caps the open delay. If zero or negative,
	// DefaultMaxOpenDelay is used; if less than OpenDelay, OpenDelay is.
	MaxOpenDelay time.Duration
	// Jitter is the fraction of each open delay that is randomised: the
	// breaker stays open for a uniformly random time in
	// [delay·(1-Jitter), delay], so breakers that opened together do not
	// probe together, and OpenDelay and MaxOpenDelay remain upper bounds.
	// If zero, DefaultJitter is used; if negative, none; values above 1
	// count as 1.
	Jitter float64
	// Rand returns a number in [0, 1) for the jitter. It is called with the
	// Breaker's lock held. If nil, math/rand/v2's Float64 is used.
	Rand func() float64
}

// WithDefaults returns c with the defaults and bounds filled in, as a
// Breaker uses it: for code that follows the same rules elsewhere (the
// crawl job's failures in a row, a shared store's script).
func (c Config) WithDefaults() Config { return c.normalize() }

func (c Config) normalize() Config {
	if c.Threshold <= 0 {
		c.Threshold = DefaultThreshold
	}
	c.Threshold = min(c.Threshold, MaxThreshold)
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.OpenDelay <= 0 {
		c.OpenDelay = DefaultOpenDelay
	}
	if c.MaxOpenDelay <= 0 {
		c.MaxOpenDelay = DefaultMaxOpenDelay
	}
	c.MaxOpenDelay = max(c.MaxOpenDelay, c.OpenDelay)
	switch {
	case c.Jitter == 0:
		c.Jitter = DefaultJitter
	case c.Jitter < 0 || math.IsNaN(c.Jitter):
		c.Jitter = 0
	case c.Jitter > 1:
		c.Jitter = 1
	}
	if c.Rand == nil {
		c.Rand = rand.Float64
	}
	return c
}

// Breaker is a circuit breaker for one host. Closed, it lets requests
// through and counts consecutive failures; Threshold of them within Window
// open it. Open, it refuses requests for the open delay. Then it is
// half-open: Allow lets exactly one probe through and refuses the rest. The
// probe's success closes the breaker; its failure reopens it for twice the
// delay (up to MaxOpenDelay). A probe that never reports (its caller gave
// up on it) is replaced: after another open delay the next Allow is the new
// probe; an abandoned probe does not lengthen the delay.
//
// The caller calls Allow before each request and Record after each request
// that Allow admitted. Record cannot tell which admitted request was the
// probe, so in half-open the first report decides, even if it comes from a
// request admitted before the breaker opened; reports that arrive while the
// breaker is open are ignored.
//
// Time is explicit: every method takes now, and nothing runs in the
// background.
//
// The zero Breaker is ready to use with the default Config. A Breaker is
// safe for concurrent use; Allow and Record do not allocate while it is
// closed. It must not be copied after first use.
type Breaker struct {
	// mu guards every field below but notClosed.
	mu    sync.Mutex
	cfg   *Shared // nil until first use, then the defaults unless Init set it
	state State
	next  int32         // ring index of the next failure (and of the oldest)
	nfail int32         // consecutive failures while closed, up to Threshold
	fails *[]int64      // ring: the last Threshold failure instants (see nanos.Of) while closed; made at the first failure
	delay time.Duration // the current open delay, before jitter; 0 = cfg.OpenDelay
	until int64         // instant (see nanos.Of); Open: when a probe may go; HalfOpen: when the probe is presumed lost

	// notClosed mirrors state != Closed, written under mu, so that Allow and
	// OpenUntil answer a closed breaker (nearly every call) without the
	// lock. A request that reads it just before the breaker opens goes
	// through, as it would had it come a moment sooner.
	notClosed atomic.Bool
	// clean mirrors state == Closed && nfail == 0, written under mu: a
	// success then changes nothing, so Record returns without the lock
	// (every answer of a healthy host; a lock there serialized a hot
	// host's requests across cores). A success that reads it just before a
	// failure lands is ordered before that failure, as it could have been.
	clean atomic.Bool
}

// Shared is a Config normalized once, for many Breakers to read: a
// crawler's breaker per host then costs no copy of it. It is immutable.
type Shared struct{ cfg Config }

// Share normalizes cfg for Breakers to share through Init.
func Share(cfg Config) *Shared { return &Shared{cfg: cfg.normalize()} }

// Config returns the normalized configuration (defaults filled in), for a
// breaker kept elsewhere (a shared store) to follow the same rules.
func (s *Shared) Config() Config { return s.cfg }

var defaults = Share(Config{})

// Init makes b, which must be unused, read its configuration from s. It
// lets a Breaker live inside another struct (no allocation of its own)
// without a copy of its Config.
func (b *Breaker) Init(s *Shared) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cfg = s
}

// New returns a Breaker configured by cfg.
func New(cfg Config) *Breaker {
	return &Breaker{cfg: Share(cfg)}
}

// init readies b's configuration; b.mu must be held.
func (b *Breaker) init() {
	if b.cfg == nil {
		b.cfg = defaults
	}
	if b.delay == 0 {
		b.delay = b.cfg.cfg.OpenDelay
	}
}

// Allow reports whether a request may go now: nil, or an *OpenError
// wrapping ErrOpen. Once the open delay has passed, the first caller gets
// nil and is the probe; it must Record the outcome.
func (b *Breaker) Allow(now time.Time) error {
	if !b.notClosed.Load() {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.init()
	if b.state == Closed {
		return nil
	}
	if nanos.Of(now) < b.until {
		return &OpenError{Until: nanos.Time(b.until, now)}
	}
	// Open and its delay is over, or half-open and the probe is presumed
	// lost: this caller is the probe.
	b.state = HalfOpen
	b.notClosed.Store(true)
	b.until = nanos.Of(now.Add(b.jittered()))
	return nil
}

// Record reports the outcome of a request Allow admitted and returns the
// state change it caused, for the caller to log.
func (b *Breaker) Record(now time.Time, ok bool) Transition {
	if ok && b.clean.Load() {
		return Transition{From: Closed, To: Closed}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	defer b.keepClean() // before the unlock
	b.init()
	switch b.state {
	case Closed:
		if ok {
			b.nfail = 0
			return Transition{From: Closed, To: Closed}
		}
		if b.fails == nil {
			// Behind a pointer: a host that never fails (most) pays 8
			// bytes for the ring, not a slice header.
			ring := make([]int64, b.cfg.cfg.Threshold)
			b.fails = &ring
		}
		fails := *b.fails
		fails[b.next] = nanos.Of(now)
		b.next = (b.next + 1) % int32(len(fails))
		b.nfail = min(b.nfail+1, int32(len(fails)))
		// b.next now indexes the oldest of the last Threshold failures.
		if int(b.nfail) == len(fails) && nanos.Of(now)-fails[b.next] <= int64(b.cfg.cfg.Window) {
			b.open(now)
			return Transition{From: Closed, To: Open, Until: nanos.Time(b.until, now)}
		}
		return Transition{From: Closed, To: Closed}
	case HalfOpen:
		if ok {
			b.state = Closed
			b.notClosed.Store(false)
			b.nfail = 0
			b.delay = b.cfg.cfg.OpenDelay
			return Transition{From: HalfOpen, To: Closed}
		}
		if b.delay > b.cfg.cfg.MaxOpenDelay/2 {
			b.delay = b.cfg.cfg.MaxOpenDelay
		} else {
			b.delay *= 2
		}
		b.open(now)
		return Transition{From: HalfOpen, To: Open, Until: nanos.Time(b.until, now)}
	}
	return Transition{From: b.state, To: b.state}
}

// State returns the state at now. An open breaker whose delay has passed
// reports HalfOpen: the next Allow admits a probe.
func (b *Breaker) State(now time.Time) State {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == Open && nanos.Of(now) >= b.until {
		return HalfOpen
	}
	return b.state
}

// OpenUntil returns, taking nothing, when Allow will next admit a request
// if it would refuse one at now: the end of the open delay, or while a
// half-open probe is out, when it is presumed lost. It returns the zero
// time when Allow would admit.
func (b *Breaker) OpenUntil(now time.Time) time.Time {
	if !b.notClosed.Load() {
		return time.Time{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != Closed && nanos.Of(now) < b.until {
		return nanos.Time(b.until, now)
	}
	return time.Time{}
}

// keepClean updates clean from the state; b.mu must be held.
func (b *Breaker) keepClean() { b.clean.Store(b.state == Closed && b.nfail == 0) }

func (b *Breaker) open(now time.Time) {
	b.state = Open
	b.notClosed.Store(true)
	b.nfail = 0
	b.until = nanos.Of(now.Add(b.jittered()))
}

// jittered returns the open delay shortened by up to Jitter of itself.
func (b *Breaker) jittered() time.Duration {
	r := b.cfg.cfg.Rand()
	if !(r >= 0) { // NaN too
		r = 0
	}
	cut := float64(b.delay) * b.cfg.cfg.Jitter * min(r, 1)
	if cut >= float64(b.delay) { // also keeps the conversion in range
		return 0
	}
	return b.delay - time.Duration(cut)
}
