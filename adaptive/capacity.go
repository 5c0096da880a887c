package adaptive

import (
	"math"
	"time"
)

// empty records that the host's bucket was empty when a request sent at
// sent was throttled. The OKs sent before it are counted once their answers
// are back, a median latency later.
func (c *Controller) empty(sent int64) {
	c.emptyAt = max(c.emptyAt, sent)
	if !c.pendOn {
		c.pend.at, c.pend.due, c.pendOn = sent, sent+c.lat.med.ns(), true
	}
}

// bracket closes a pending mark and measures the capacity between it and
// the previous one.
func (c *Controller) bracket() {
	at, ok := c.pend.at, c.okCum
	c.pendOn = false
	c.markAt, c.markOK = at, ok
	if !c.markOn || at-c.mark.at > maxSpan {
		c.mark.at, c.mark.ok, c.markOn = at, ok, true
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
		c.capEst, c.capErr, c.capSaved = est, err, 0
	case est >= c.capEst-c.capErr && err < c.capErr && !c.capLow:
		// Within a coarse estimate's error, and finer: take it instead. (A
		// long span can bias it low, if the host's bucket filled and
		// overflowed meanwhile; a low estimate costs a little rate until a
		// probe finds the room, a high one a throttle every settle.)
		c.capEst, c.capErr, c.capSaved = est, err, 0
	default:
		// The estimate stands, but what it proves may rise to the bracket.
		c.prove(max(est, c.proven()))
		return
	}
	if c.phase == settled {
		c.want = max(c.want, c.cfg.Target*c.capEst)
		if !c.reacting {
			c.want = c.cfg.Target * c.capEst
		}
	}
}

// proven returns the part of the capacity estimate that the host's
// answers prove: the estimate less what the savings of a pause may explain
// (see capSaved). It is what Capacity reports.
func (c *Controller) proven() float64 {
	return max(c.capEst-float64(c.capSaved), 0)
}

// prove records that of the capacity estimate, the answers prove lo (a rate
// counted over a span that includes the pause before it) and no more, or
// all of it when lo is as high. The estimate itself, which the rate
// follows, is unchanged.
func (c *Controller) prove(lo float64) {
	d := max(c.capEst-max(lo, 0), 0)
	s := float32(d)
	if float64(s) < d {
		s = math.Nextafter32(s, math.MaxFloat32) // never prove more than lo
	}
	c.capSaved = s
}

// latencyHigh reports whether the latency is past share × the tolerance
// above the baseline, noise allowed for, and by at least minRise: the
// median of the newest answers, or every one of the very newest (a queue
// building at the pace of the rate shows in them before the median moves).
func (c *Controller) latencyHigh(t int64, share float64) bool {
	limit := c.latencyLimit(t, share)
	return limit > 0 && (float64(c.lat.med.ns()) > limit || float64(c.lat.newest.ns()) > limit)
}

// newestHigh reports whether the mean of the very newest answers is past
// share × the tolerance (see latencyHigh). One answer that waited far past
// the rest lifts it: behind a queue that forms at a rate of its own, a
// request of ours waits up to 1/capacity per request ahead, many times
// the unloaded latency (issue 34: 67 ms over 10 ms), and three more
// waiting behind it, before the least of the four shows it, cost the p95.
func (c *Controller) newestHigh(t int64, share float64) bool {
	limit := c.latencyLimit(t, share)
	return limit > 0 && float64(c.lat.newestMean()) > limit
}

// latencyLimit is the latency past which share × the tolerance is
// exceeded, in ns; 0 when latency is not read (too few answers, no
// baseline, a negative tolerance).
func (c *Controller) latencyLimit(t int64, share float64) float64 {
	if c.cfg.LatencyTolerance < 0 || c.lat.n < minLatN {
		return 0
	}
	b, spread := c.lat.baseline(t)
	if b <= 0 {
		return 0
	}
	rise := max(float64(b)*c.cfg.LatencyTolerance*share+noiseSpreads*float64(spread), float64(minRise))
	return float64(b) + rise
}

// latencyCheck reads a queue from the latency. When the median climbs past
// the tolerance and the host serves less than it is sent, a queue is
// growing; when it serves all it is sent but a request of ours waits there
// on average, a queue stands. Either way what it serves is its capacity:
// settle under that, lower for a window to drain the queue. When latency
// climbs without a queue of ours, hold: no growth, no probes.
func (c *Controller) latencyCheck(t int64) {
	if !c.latencyHigh(t, 1) && !(c.phase == starting && c.steep(t) && c.newestHigh(t, 1)) {
		c.latHold = false
		return
	}
	if float64(c.lat.newestMean()) <= c.latencyLimit(t, 1) {
		// Only the median is high, and the newest answers are back under
		// the limit: the median still counts a queue that has drained
		// since (after a latency decrease, the one it drained). Cutting
		// again would measure the capacity from what the drain was
		// served (issue 34: 8.75 req/s of 13.2).
		c.latHold = true
		return
	}
	okRate := c.meter.okRate(t)
	// A queue of ours at the host needs requests of ours waiting there: by
	// Little's law, served × latency of them in flight on average. Under a
	// quarter of a request, the latency rose for another reason (the
	// client's own CPU or workers, another client): hold, do not cut.
	// 1,000 hosts sharing 128 workers each saw 17 served/s at 8 ms and were
	// cut from 1,000 req/s to 15 (issue 16: the spread between two 100k-URL
	// crawls). Behind nginx's limit_req queue at 10 r/s, one request of
	// ours waiting is 10 × 0.1 s = 1. The newest answers' mean counts
	// what waits there now: at a cold start into a delay queue their
	// least lags a growing queue by one answer in four, and a cut
	// 100 ms later let 1.6 more requests into it (issue 32).
	lat := max(c.lat.med.ns(), c.lat.newestMean())
	if t < int64(time.Second) || okRate*float64(lat)/1e9 < minQueued ||
		okRate >= serverLimit*c.rate && okRate*float64(lat-c.base(t))/1e9 < standing {
		c.latHold = true
		return
	}
	c.latHold = false
	if tracing {
		c.trace(t, "latency med=%v newest=%v okRate=%.2f", c.lat.med.ns(), c.lat.newest.ns(), okRate)
	}
	if c.phase == probing {
		// Past the full tolerance before the probe's own check (at half
		// of it) saw it: the probe met the knee all the same.
		c.probeKnee(t)
		return
	}
	// Read while the rate grew, the served rate lags the capacity:
	// probe again soon.
	c.refine = c.phase == starting || c.phase == ramping
	if c.refine {
		okRate = max(okRate, min(c.meter.okRateOver(t, 4), c.rate))
	}
	c.capEst, c.capLow, c.capErr, c.capSaved = okRate, false, 1.5, 0
	c.want = c.target(t) * okRate * (1 - drainShare)
	c.decrease(t, t, true)
}

// base is the latency baseline at t, in ns (0 before there is one).
func (c *Controller) base(t int64) int64 {
	b, _ := c.lat.baseline(t)
	return b
}

// target is the share of the capacity to settle at: Target, but steepCut
// less on a host that never throttled, whose capacity only a queue's
// latency shows, where a request waiting costs more than twice the
// unloaded latency (1/capacity per request ahead, behind a queue that
// forms at a rate of its own, as nginx's limit_req delays). There a queue
// that noise leaves drains at the pace the rate leaves spare, and at
// Target it stands (issue 34: 15 req/s, 10 ms unloaded, settled at 97 %
// of the knee with a p95 of 14.4 ×).
func (c *Controller) target(t int64) float64 {
	if c.steep(t) {
		return c.cfg.Target - steepCut
	}
	return c.cfg.Target
}

// steep reports whether the host is a steep knee: it never throttled, and
// a request waiting behind its queue waits 1/capacity, more than twice the
// unloaded latency. Before a capacity is known, what the host served over
// the last second stands for it.
func (c *Controller) steep(t int64) bool {
	b, capacity := c.base(t), c.capEst
	if capacity <= 0 {
		capacity = c.meter.okRate(t)
	}
	return c.emptyAt < 0 && capacity > 0 && b > 0 && 1e9/capacity > 2*float64(b)
}
