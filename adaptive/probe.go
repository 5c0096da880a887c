package adaptive

import "math"

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
		if !c.pendOn && c.markAt == c.emptyAt {
			c.stored = max(hi*float64(t-c.lat.med.ns()-c.markAt)/1e9-float64(c.okCum-c.markOK), 0)
		} else {
			c.stored = max(hi-c.rate, 0) * float64(t-c.emptyAt) / 1e9
		}
	}
	if tracing {
		c.trace(t, "probe stored=%.2f wait=%.1f", c.stored, float64(c.probeWait)/1e9)
	}
}

// advanceProbe runs a probe at t: it ends it at the latency knee, and
// otherwise raises its rate and checks whether it found room.
func (c *Controller) advanceProbe(t int64) {
	if c.latencyHigh(t, 0.5) || c.steep(t) && c.newestHigh(t, 0.5) {
		c.probeKnee(t)
		return
	}
	// The excess doubles every probeDouble: slow while the host's
	// savings may still explain what it serves, fast once they cannot.
	c.want = c.probeRate(t)
	c.checkProbe(t)
}

// probeKnee ends a probe that met the latency knee. Nothing new; back
// under the capacity, a little lower for a window to drain the queue the
// probe left. What the host served meanwhile, with a queue in front of it,
// is its capacity, or under it.
func (c *Controller) probeKnee(t int64) {
	ok := c.meter.okRate(t)
	if span := t - c.lat.med.ns() - c.probeAt; span >= int64(c.cfg.Window) {
		// What the probe was served, counted from its start: the last
		// second's count mixes in the time before, spent under the
		// capacity, and would never raise a low estimate.
		ok = max(ok, float64(c.probeOK-1)*1e9/float64(span)) // less an answer: one more counted at tens per second is a few percent over
	}
	// What the host served over the newest half second is a lower bound of
	// its capacity too, and unlike the last second's count it does not lag
	// the climb: live, on a one-server FIFO queue of about 95 req/s, the
	// probes read 84-87 from the second and settled at 76-82; with the
	// half second they read 88-89 (issue 16).
	ok = max(ok, min(c.meter.okRateOver(t, 4), c.rate))
	if ok > c.capEst && !c.capLow {
		c.capEst, c.capSaved = ok, 0
	}
	c.probeFailed()
	c.settle(t)
	c.want *= 1 - drainShare
	c.decrease(t, t, true)
}

// checkProbe moves a probe to ramping once the host has served more than
// its savings can explain.
func (c *Controller) checkProbe(t int64) {
	if excess := c.excess(t); excess > c.stored+max(2, 0.1*c.probeBase) {
		if !c.capLow {
			c.markOn = false // the capacity changed: no bracket across it
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
	c.probeWait, c.waitCap = max(w, c.probeSpan()), c.capEst
}

// probeSpan is how long probeCost requests take at the capacity (ns; 0
// without an estimate): the least wait between probes that keeps one
// throttle per failed probe within the 2 % share.
func (c *Controller) probeSpan() int64 {
	if c.capEst <= 0 {
		return 0
	}
	return int64(probeCost / c.capEst * 1e9)
}

// probeRate is the rate the current probe had at sent. On a host that never
// throttled, latency is the only sign of the knee, and it takes a few
// answers to read: there the excess doubles no faster than winAnswers
// answers come back at the capacity (a 10 req/s queue behind nginx's
// limit_req in delay mode otherwise fills before the first is read).
func (c *Controller) probeRate(sent int64) float64 {
	double := probeDouble
	if c.emptyAt < 0 && c.probeBase > 0 {
		double = max(double, int64(winAnswers/c.probeBase*1e9))
	}
	tau := float64(max(sent-c.probeAt, 0)) / float64(double)
	return c.probeBase * (1 + probeStep*(math.Exp2(tau)-1))
}

// excess is what the current probe was served beyond the capacity it
// started from, counting requests whose answers are back by t.
func (c *Controller) excess(t int64) float64 {
	back := float64(t-c.lat.med.ns()-c.probeAt) / 1e9
	return float64(c.probeOK) - c.probeBase*max(back, 0)
}
