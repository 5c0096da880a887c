package polite

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/polite-go/polite/adaptive"
	"github.com/polite-go/polite/breaker"
	"github.com/polite-go/polite/retry"
	"github.com/polite-go/polite/robots"
)

// hostExt is the state a host gains once a Transport sends to it: pauses,
// the breaker, the retry budget, a block mark, a rate ceiling. A Registry
// used on its own never creates one, which keeps an idle Host small.
type hostExt struct {
	pauseUntil atomic.Int64 // unix ns before which no request goes; 0 = none
	pauseWhy   atomic.Value // Reason of the current pause
	blocked    atomic.Pointer[string]
	ceiling    atomic.Uint64 // float64 bits: the rate the host must not exceed (robots, RateLimit); 0 = none
	breaker    *breaker.Breaker
	budget     retry.Budget

	robotsSeen    atomic.Pointer[robots.Robots] // the copy whose Crawl-delay is applied
	robotsCeiling atomic.Uint64                 // float64 bits: 1/Crawl-delay; 0 = none

	lastThrottle atomic.Int64 // unix ns when the last throttle event was counted

	rater   adaptive.Rater // nil unless the Transport is adaptive
	lastMax atomic.Uint64  // float64 bits: the ceiling last told to rater
}

// throttleWave reports whether a throttle answering a request sent at sent
// belongs to an event already counted (the request left before it was
// heard); if not, it starts a new event at now.
func (x *hostExt) throttleWave(sent, now time.Time) bool {
	for {
		last := x.lastThrottle.Load()
		if sent.UnixNano() < last {
			return true
		}
		if x.lastThrottle.CompareAndSwap(last, now.UnixNano()) {
			return false
		}
	}
}

// maxRate returns the lowest of the host's ceilings (robots.txt, RateLimit
// fields), +Inf when none is set.
func (x *hostExt) maxRate() float64 {
	c := x.getCeiling()
	if r := math.Float64frombits(x.robotsCeiling.Load()); r > 0 && r < c {
		c = r
	}
	return c
}

// idle reports whether nothing in x needs the host kept: no pause pending, no
// block to remember, the breaker closed. (A block or an open breaker must
// outlive idleness, or eviction would forgive it.)
func (x *hostExt) idle(now time.Time) bool {
	return x.pauseUntil.Load() <= now.UnixNano() && x.blocked.Load() == nil &&
		x.breaker.State(now) == breaker.Closed
}

// pause extends the host's pause to until (never shortens it) and reports
// whether it moved.
func (x *hostExt) pause(until time.Time, why Reason) bool {
	u := until.UnixNano()
	for {
		cur := x.pauseUntil.Load()
		if u <= cur {
			return false
		}
		if x.pauseUntil.CompareAndSwap(cur, u) {
			x.pauseWhy.Store(why)
			return true
		}
	}
}

// paused returns how long the host is still paused at now, and why.
func (x *hostExt) paused(now time.Time) (time.Duration, Reason) {
	u := x.pauseUntil.Load()
	if u == 0 {
		return 0, ""
	}
	d := time.Duration(u - now.UnixNano())
	if d <= 0 {
		return 0, ""
	}
	why, _ := x.pauseWhy.Load().(Reason)
	return d, why
}

func (x *hostExt) getCeiling() float64 {
	c := math.Float64frombits(x.ceiling.Load())
	if c <= 0 {
		return math.Inf(1)
	}
	return c
}

func (x *hostExt) setCeiling(r float64) { x.ceiling.Store(math.Float64bits(r)) }
