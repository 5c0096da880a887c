package cli

import (
	"github.com/polite-go/polite"
	"github.com/polite-go/polite/adaptive"
)

// DefaultMaxRate is the adaptive rate's ceiling when the user names none:
// a polite one. An unknown server's owner agreed to no load at all; ten
// times the default --rate lets a host that bears it be crawled briskly,
// and an API job that needs more says so with --max-rate.
const DefaultMaxRate = 20.0

// maxRate is the ceiling of the adaptive rate in force.
func (o *fetchOptions) maxRate() float64 {
	if o.MaxRate > 0 {
		return o.MaxRate
	}
	return adaptive.DefaultMax
}

// adaptive sets the Transport's adaptive controller for --adaptive: each
// host's rate starts at --rate (its Limits.Rate) and tunes itself, up to
// --max-rate (0: the controller's default ceiling).
//
// The spacing of the floor rate is a wait polite chooses itself, so it is
// kept within --max-delay too (issue 17, defect 1: cut to 0.1 req/s, a
// dead host's attempts went 10 s apart under --max-delay 1s), unless --rate
// asks for slower still.
//
// A rule's adaptive key turns it on or off for the rule's hosts.
func (o *fetchOptions) adaptive(tr *polite.Transport) {
	perRule := o.Rules != nil && o.Rules.anyAdaptive()
	if !o.Adaptive && !perRule {
		return
	}
	c := o.adaptiveConfig()
	if !perRule {
		tr.Adaptive = c
		return
	}
	// The Transport's own factory for c: the host's rate, rule ceiling
	// and all, as tr.Adaptive = c would make it.
	controller := (&polite.Transport{Adaptive: c}).LocalOptions().NewRater
	tr.NewRater = func(key string, l polite.Limits) adaptive.Rater {
		on, set := o.Rules.adaptiveFor(key)
		if !set {
			on = o.Adaptive
		}
		if !on {
			return nil // the host keeps its rate
		}
		return controller(key, l)
	}
}

// adaptiveConfig is the controller's configuration for the flags.
func (o *fetchOptions) adaptiveConfig() *adaptive.Config {
	c := &adaptive.Config{Max: o.MaxRate}
	if s := o.MaxDelay.Seconds(); s > 0 {
		if floor := 1 / s; floor > adaptive.DefaultMin {
			top := o.MaxRate
			if top <= 0 {
				top = adaptive.DefaultMax
			}
			c.Min = min(floor, o.Rate, top)
		}
	}
	return c
}
