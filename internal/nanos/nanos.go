// Package nanos stores instants in 8 bytes instead of a time.Time's 24, for
// state kept per host (a crawl keeps it for a million hosts) that only
// compares its own instants with each other.
//
// An instant is nanoseconds from a reference chosen by the instant itself:
// the process's start, by the monotonic clock when the time.Time carries a
// reading (every time.Now does, so a step of the wall clock moves nothing);
// or, for a time more than 292 years from the process's start (a fake clock
// counted from the zero Time), the zero Time. One object's instants come
// from one clock, so they share a reference; instants further than 292 years
// from both are not supported.
package nanos

import (
	"math"
	"time"
)

var epoch = time.Now()

// Of returns t as an instant.
func Of(t time.Time) int64 {
	d := t.Sub(epoch)
	if d == math.MinInt64 || d == math.MaxInt64 {
		d = t.Sub(time.Time{})
	}
	return int64(d)
}

// Time returns the instant ns as a time.Time, by the reference of like (an
// instant from the same clock): like moved by the difference, so its
// location and monotonic reading are kept.
func Time(ns int64, like time.Time) time.Time {
	return like.Add(time.Duration(ns - Of(like)))
}

// Stamp is Of for a field where 0 means "none" (never set): it never
// returns 0, reading an instant of exactly 0 as 1 ns later. Instants may be
// negative (a fake clock before the process's start), so such a field is
// checked for 0 before it is compared.
func Stamp(t time.Time) int64 { return NonZero(Of(t)) }

// NonZero returns ns, or 1 for 0: an instant for a field where 0 means
// "none" (see Stamp).
func NonZero(ns int64) int64 {
	if ns == 0 {
		return 1
	}
	return ns
}

// Add returns ns+d, saturated rather than wrapped.
func Add(ns int64, d time.Duration) int64 {
	if d > 0 && ns > math.MaxInt64-int64(d) {
		return math.MaxInt64
	}
	if d < 0 && ns < math.MinInt64-int64(d) {
		return math.MinInt64
	}
	return ns + int64(d)
}
