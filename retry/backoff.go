package retry

import (
	"math"
	"math/rand/v2"
	"strconv"
	"time"
)

// Jitter selects how a Backoff randomises its delays. The schedules are the
// ones Marc Brooker compared in "Exponential Backoff and Jitter" (AWS
// Architecture Blog, 2015); Full, the zero value, did the least total work
// and is the default.
type Jitter int

const (
	// Full waits a uniformly random time in [0, ceiling), where ceiling is
	// min(Cap, Base·2^(attempt-1)).
	Full Jitter = iota
	// Equal waits ceiling/2 plus a uniformly random time in [0, ceiling/2).
	Equal
	// Decorrelated waits min(Cap, uniform in [Base, 3·prev)), growing from the
	// previous delay rather than from the attempt number.
	Decorrelated
	// NoJitter waits exactly the ceiling. Brooker's "clear loser": clients
	// that fail together retry together. For tests and special cases.
	NoJitter
)

// String returns "full", "equal", "decorrelated" or "none".
func (j Jitter) String() string {
	switch j {
	case Full:
		return "full"
	case Equal:
		return "equal"
	case Decorrelated:
		return "decorrelated"
	case NoJitter:
		return "none"
	}
	return "Jitter(" + strconv.Itoa(int(j)) + ")"
}

// Defaults for a Backoff's zero fields.
const (
	DefaultBase = 500 * time.Millisecond
	DefaultCap  = 60 * time.Second
)

// Backoff is an exponential backoff schedule with jitter. The zero value is
// full jitter from 500 ms up to 60 s. A Backoff is a value: safe to copy and
// to use from many goroutines.
type Backoff struct {
	// Base is the ceiling of the first retry's delay. If zero or negative,
	// DefaultBase is used.
	Base time.Duration
	// Cap bounds every delay. If zero or negative, DefaultCap is used.
	Cap time.Duration
	// Jitter selects the schedule. The zero value is Full.
	Jitter Jitter
}

// Delay returns the delay before retry number attempt (1 is the first
// retry), with r in [0, 1) as the random draw; the result is a pure function
// of its arguments, in [0, Cap]. prev is the delay returned for the previous
// attempt, used only by Decorrelated (0 or less means none: the first retry
// then draws from [Base, 3·Base)). An attempt below 1 counts as 1; r outside
// [0, 1) is clamped into it; huge attempts saturate at Cap without overflow.
// An unknown Jitter behaves as Full.
func (b Backoff) Delay(attempt int, prev time.Duration, r float64) time.Duration {
	base, top := b.Base, b.Cap
	if base <= 0 {
		base = DefaultBase
	}
	if top <= 0 {
		top = DefaultCap
	}
	if !(r >= 0) { // also NaN
		r = 0
	}
	if r >= 1 {
		r = math.Nextafter(1, 0)
	}
	if b.Jitter == Decorrelated {
		if prev < base {
			prev = base
		}
		lo, hi := float64(base), 3*float64(prev)
		return scale(lo+r*(hi-lo), top)
	}
	ceil := ceiling(base, top, attempt)
	switch b.Jitter {
	case NoJitter:
		return ceil
	case Equal:
		half := ceil / 2
		return half + scale(r*float64(ceil-half), ceil-half)
	}
	return scale(r*float64(ceil), ceil)
}

// Next is Delay with r drawn from math/rand/v2, which is safe for
// concurrent use without a lock.
func (b Backoff) Next(attempt int, prev time.Duration) time.Duration {
	return b.Delay(attempt, prev, rand.Float64())
}

// ceiling returns min(top, base·2^(attempt-1)) without overflow.
func ceiling(base, top time.Duration, attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	d := base
	for i := 1; i < attempt && d < top; i++ {
		if d > top/2 {
			return top
		}
		d *= 2
	}
	return min(d, top)
}

// scale converts x nanoseconds to a Duration in [0, limit]. float64(limit)
// is the float nearest limit, so any float below it is at most limit and the
// comparison alone keeps the conversion in range.
func scale(x float64, limit time.Duration) time.Duration {
	if x >= float64(limit) {
		return limit
	}
	if x <= 0 {
		return 0
	}
	return time.Duration(x)
}
