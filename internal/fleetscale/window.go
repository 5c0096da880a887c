package fleetscale

import (
	"slices"
	"time"
)

// Excess is how far one host's arrivals went beyond a token bucket of rate
// and burst, read from the server's side.
type Excess struct {
	// Window is the most requests that arrived within any closed 1-second
	// window, and Allowed what the bucket lets through in one: rate + burst.
	Window, Allowed int
	// Slack is the scheduling slack the arrivals need to fit the bucket:
	// the largest (n - burst)/rate - span over every run of n arrivals
	// spanning span. Zero or less means they fit with none to spare.
	Slack time.Duration
}

// Over reports by how many requests the busiest 1-second window went
// beyond rate + burst (negative: below it).
func (e Excess) Over() int { return e.Window - e.Allowed }

// Measure reads arrivals (in any order) against a bucket of rate requests
// per second and burst. A token bucket that starts full lets at most burst +
// rate×T requests through in any window of length T, so a fleet sharing
// one bucket keeps that bound however many workers it has.
func Measure(arrivals []time.Time, rate float64, burst int) Excess {
	ts := slices.Clone(arrivals)
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	e := Excess{Allowed: burst + int(rate), Slack: -time.Hour}
	j := 0
	for i := range ts {
		for j < len(ts) && ts[j].Sub(ts[i]) <= time.Second {
			j++
		}
		e.Window = max(e.Window, j-i)
	}
	for i := range ts {
		for k := i + burst; k < len(ts); k++ {
			need := time.Duration(float64(k-i+1-burst)/rate*float64(time.Second)) - ts[k].Sub(ts[i])
			e.Slack = max(e.Slack, need)
		}
	}
	return e
}
