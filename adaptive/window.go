package adaptive

import (
	"math"
	"time"
)

// window is the reaction window: max(Window, p95 latency), and long enough
// for about winAnswers answers at the rate.
func (c *Controller) window() int64 {
	return max(int64(c.cfg.Window), c.lat.p95.ns(), int64(winAnswers/c.want*1e9))
}

// congested handles the first congestion signal outside a reaction window:
// one decrease, then a window whose end judges whether it was enough.
func (c *Controller) congested(t, sent int64, wait time.Duration) {
	r := c.rate
	probe := c.phase == probing // a probe's rate followed probeRate; a ramp's did not
	if tracing {
		c.trace(t, "congested wait=%v okRate=%.2f", wait, c.meter.okRate(t))
	}
	// A probe refused before it was served more than the savings it
	// reckoned (what the host earned at the estimate since it last
	// throttled, less what it served) found no room over the estimate,
	// however far its rate ran on them.
	onSavings := c.phase == probing && c.excess(t) <= c.stored && !math.IsInf(c.stored, 1)
	nearLow := c.capLow && (r <= farMet*c.capEst || onSavings)
	if nearLow {
		// Throttled just above a lower bound of the capacity, or by a
		// probe from it that ran on savings alone: that bound is the
		// capacity, near enough; brackets refine it. Bisecting toward
		// the rate a probe's savings carried it to put the rate over
		// the capacity for a window: on bucket-load at 18.4 req/s
		// (burst 4), a probe from a bound of 18 ran to 27 on its
		// savings, and the cut to 22.6 cost two throttles more and a
		// probe to measure again (issue 34).
		c.capLow = false
		if c.phase == ramping {
			c.phase = probing
		}
	}
	surprise, shallow, blind := false, false, false
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
		switch {
		case !shallow:
		case met > farMet*c.capEst:
			// Refused far above the estimate: a sliver of savings let
			// the probe's rate run on before the refusal came back, so
			// what the host served over the last second is the closer
			// bound. A 20 req/s bucket of burst 5, sat at 97 % of it,
			// saved a token or two between probes and read as a host
			// without burst; a probe refused at 30.7 moved the estimate
			// to the middle, 25.5, and cost four throttles more (issue
			// 34, bucket-load, live). Nearer the estimate the probe's
			// rate is the closer bound: the last second lags its climb.
			r = min(met, max(c.meter.okRate(t), c.capEst*(1+shallowGap)))
		default:
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
		c.capEst, c.capErr, c.capLow, c.capSaved = (c.capEst+r)/2, 0, true, 0
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
		blind = true
		// Throttled while settled: the capacity is below the rate (it fell,
		// or was overrated), by an unknown amount.
		c.want = c.cfg.Backoff * r
		if c.capEst > r {
			proven := c.proven()
			c.capEst, c.capLow = r, false
			c.prove(proven)
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
	c.blind = blind
	if blind {
		c.debt = max(c.debt, 1) // counted until the rate settles; charged if the capacity fell
	}
}

// recut answers a throttle to a request sent, at the new pace, after a
// blind cut: the host's bucket was empty when the cut was made (it had just
// refused), so a request spaced one interval of the new rate after it is
// refused only if that rate is still over the capacity. Cut again at once,
// by the same factor; waiting for the window's end would spend a throttle
// every other request meanwhile (live, 40 -> 10 req/s: two more). Once per
// fall: the next window measures, and judges any further cut.
func (c *Controller) recut(t int64) {
	if tracing {
		c.trace(t, "recut")
	}
	c.want = c.cfg.Backoff * c.want
	if c.capEst > c.want {
		// Or the window's end, finding the host quiet, would settle back
		// at the old estimate.
		c.capEst, c.capErr, c.capLow, c.capSaved = c.want, c.rate-c.want, false, 0
		c.markOn = false // no bracket across the fall
		c.refine = true  // a guess: one probe soon pins it down
	}
	c.falling = true
	c.decrease(t, t, false)
}

// decrease opens a reaction window for requests sent from at on.
func (c *Controller) decrease(t, at int64, byLatency bool) {
	c.want = max(c.want, c.cfg.Min)
	c.phase = settled
	c.settleAt = t
	c.cutAt = at
	c.winEnd = at + c.window()
	c.reacting = true
	c.byLatency = byLatency
	c.blind = false
	c.okPost, c.thrPost, c.failPost, c.nPost, c.okAfter = 0, 0, 0, 0, 0
	c.lastThr = math.MinInt64
	c.decreases++
}

// countFrom is where a reaction window's answers, counted as a rate, prove
// a capacity from: the decrease, or, when the decrease paused the host (a
// throttle's Retry-After), the start of the pause, which is settleAt
// (nothing moves it while the window is open). The host's bucket was empty
// when it throttled and refilled while the client waited, so the first
// answers after the pause are its burst, earned during the pause: counted
// over the window alone, they read as capacity (issue 33).
func (c *Controller) countFrom() int64 {
	return min(c.settleAt, c.cutAt)
}

// react runs an open reaction window at t: it judges the decrease at the
// window's end, or sooner when it was plainly not enough.
func (c *Controller) react(t int64) {
	switch {
	case t >= c.winEnd:
		c.endWindow(t)
	case c.thrPost >= plainThrottles && c.thrPost >= c.okPost &&
		c.lastThr >= c.cutAt+straggle+c.lat.p95.ns() &&
		float64(c.okPost)+1.5 < 0.8*c.want*float64(max(t-c.lat.med.ns()-c.cutAt, straggle))/1e9:
		// Past the stragglers, most requests sent after the decrease
		// are throttled, and far fewer served than the rate sends: it
		// was plainly not enough. Cut again now, to what was served
		// since, give or take half an answer (too few to measure by:
		// a rate a little under the capacity costs less than one
		// over it, throttled the whole next window), and let the
		// next window measure.
		span := max(t-c.lat.med.ns()-c.cutAt, straggle)
		c.want = max((float64(c.okPost)+0.5)*1e9/float64(span), c.cfg.Backoff*c.want)
		if c.capEst > c.want {
			// The capacity fell below the estimate: what was served is
			// the estimate now (coarse; brackets refine it), or the
			// window's end, finding the host no longer throttling, would
			// settle back at the old one (issue 16: 40 → 10 req/s).
			c.capEst, c.capErr, c.capLow = c.want, 1.5e9/float64(span), false
			c.prove((float64(c.okPost) + 0.5) * 1e9 / float64(max(t-c.lat.med.ns()-c.countFrom(), straggle)))
			c.markOn = false // no bracket across the fall
			c.falling = c.debt > 0
		}
		c.decrease(t, t, false)
	}
}

// endWindow judges a reaction window at its end by the answers to requests
// sent after the decrease. Still throttled (stragglers right after the
// decrease aside): the host's bucket stayed empty, so what it served is its
// capacity; settle under it. Not throttled: what was served is a lower bound
// of the capacity.
func (c *Controller) endWindow(t int64) {
	c.reacting = false
	backAt := t - c.lat.med.ns() // requests sent before backAt have their answers
	if tracing {
		c.trace(t, "endWindow ok=%d thr=%d n=%d okAfter=%d cutAt=%.3f firstThr=%.3f backAt=%.3f", c.okPost, c.thrPost, c.nPost, c.okAfter, float64(c.cutAt)/1e9, float64(c.firstThr)/1e9, float64(backAt)/1e9)
	}
	// Still throttled late in the window: a request sent after the
	// decrease, past the wave's stragglers (or half the window, if that
	// comes first), was throttled.
	late := c.thrPost > 0 && c.lastThr >= c.cutAt+min((c.winEnd-c.cutAt)/2, straggle+c.lat.p95.ns())
	switch {
	case late &&
		c.okPost < minMeasure && c.winEnd-c.cutAt < 4*c.window():
		// Still throttled, but too few answers served to measure the
		// capacity by: keep the window open a while longer.
		c.reacting = true
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
		// and a bracket's finer estimate nearby stands. So does a lower
		// bound a bracket measured, finely, against a coarse count that
		// reaches it within the count's error: the count, over a window
		// the cut put over the capacity, cannot tell them apart, and
		// taking it costs a probe soon to measure again (issue 34:
		// 17.1 ± 4.3 counted under a bracket of 18.7 ± 0.5, at 19).
		tol := 1.5e9 / float64(span)
		bracketed := c.capEst > 0 && c.capErr <= coarse*c.capEst && m < c.capEst &&
			(c.thrPost == 1 && m > nearBracket*c.capEst || c.capLow && c.capErr > 0 && m+tol >= c.capEst)
		if c.debt > 0 && m < nearBracket*c.capEst {
			c.falling = true // measured far under the estimate a blind cut started from
		}
		if !bracketed && (c.capLow || m < c.capEst-tol || m > c.capEst+tol) {
			c.capEst, c.capErr, c.capSaved = m, tol, 0
			if from == c.cutAt {
				c.prove(float64(ok) * 1e9 / float64(max(backAt-c.countFrom(), int64(c.cfg.Window)/4)))
			}
			c.refine = tol > coarse*m
		}
		c.capLow = false
		c.want = c.cfg.Target * c.capEst
		// The capacity measured, probes start over: from ProbeInterval,
		// but no sooner than a failed probe would make the next one
		// wait, probeCost requests at the capacity. At 17 req/s, 2 s
		// made the first probe after the start's measurement cost 3 %
		// of its requests (issue 34).
		c.probeWait = max(int64(c.cfg.ProbeInterval), c.probeSpan())
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
				c.prove(float64(c.okPost) * 1e9 / float64(max(backAt-c.countFrom(), int64(c.cfg.Window)/4)))
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
		c.want = c.target(t) * c.capEst
		if c.refine {
			// Measured from a few answers only: probe soon, once, for a
			// bracket that pins it down.
			c.refine = false
			c.probeWait = min(c.probeWait, int64(c.cfg.ProbeInterval)/4)
			return // a fall's debt waits for the bracket: the next settle charges it
		}
		// A failed probe costs a throttled request: probeCost requests at
		// the capacity between probes. The wait was set when the probe
		// failed, against the capacity then; after a fall (40 → 10 req/s,
		// live) the same wait would spend four times the share.
		if c.capEst < c.waitCap {
			c.probeWait = max(c.probeWait, min(c.probeSpan(), int64(c.cfg.MaxProbeInterval)))
			c.waitCap = c.capEst
		}
	}
	if c.falling {
		// The fall cost throttles of its own (the blind cut's, a recut's,
		// the probe that pinned the new capacity down), and the probes'
		// share pays for them first: the next probe waits until they and
		// its own are one in probeCost requests at the new capacity. Live,
		// 40 -> 10 req/s: the fall cost two, and two probes in the next
		// 15 s made 2.2 % of that span's requests throttled.
		if c.capEst > 0 && !c.capLow {
			c.probeWait = max(c.probeWait, int64(float64(1+c.debt)*probeCost/c.capEst*1e9))
		}
	}
	c.falling, c.debt = false, 0
}
