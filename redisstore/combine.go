package redisstore

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/adaptive"
	"github.com/polite-go/polite/breaker"
	"github.com/polite-go/polite/bucket"
	"github.com/polite-go/polite/inflight"
)

// A worker's calls for one host are combined: while one call for the host
// is out, the admissions that come meanwhile queue, and the caller that
// finds the queue idle sends the queue, call after call, until it is
// empty. A host asked by many callers at once then costs one script per
// round trip, not one per caller, and no caller waits longer than the call
// in flight plus its own.
//
// Releases and quiet reports (see Report) need no answer: they wait in the
// queue for the host's next admission and ride with it, or go on their own
// once they have waited flushDelay. Anything that reads or changes the
// host otherwise (State, Keep, Cancel, SetRate, SetCeiling, a report that
// needs its answer) sends them first (flush), so that it sees them, and a
// host's reports reach Redis in the order they were made.

// pending is one admission waiting for its batch, or (flush) a caller
// waiting for the host's queued releases and reports to be sent.
type pending struct {
	q     polite.Query
	a     polite.Admission
	flush bool
	done  chan struct{} // closed once a is set (or, with flush, the queue sent)
}

// quiet is a report that rides with the host's next call.
type quiet struct {
	r   polite.Report
	sig adaptive.Signal
	ok  bool // the breaker hears a success
}

// combiner queues a host's admissions, releases and quiet reports. Two
// callers may send it at once (hostSenders), each on its own lane (its
// admit calls' names, see prelude.lua, so that each lane's calls go one
// after the other); only one call out carries reports and flushes, so a
// host's reports reach Redis in the order they were made.
type combiner struct {
	h         *polite.Host
	mu        sync.Mutex
	senders   int   // callers sending the queue
	lanes     uint8 // the lanes they use (bit i: lane i)
	reporting bool  // a call out carries reports or flushes
	dead      bool  // removed from Store.hosts: callers must find another
	armed     bool  // a timer will send the queue's releases and reports
	qs        []*pending
	flushes   []*pending
	rels      []string
	reports   []quiet
}

// maxBatch bounds the admissions, the releases and the reports of one call;
// hostSenders the calls out at once for one host (a second one keeps Redis
// busy while the first's reply is read and its callers woken).
const (
	maxBatch    = 128
	hostSenders = 2
)

// flushDelay is how long a release or a quiet report waits for an
// admission to the same host to ride with before it goes on its own: the
// longest a finished request's lease outlives it, or a success reaches the
// host's breaker and the fleet's controller.
const flushDelay = 50 * time.Millisecond

// combine queues p (an admission or a flush, or nil), rel (a lease to
// release, or "") and rep (a quiet report, or nil), and sends the host's
// queue unless callers are at it; with neither an admission nor a flush
// queued, it leaves the queue to a timer (or the next admission).
func (s *Store) combine(h *polite.Host, p *pending, rel string, rep *quiet) {
	key := h.Key()
	for {
		v, ok := s.hosts.Load(key)
		if !ok {
			v, _ = s.hosts.LoadOrStore(key, &combiner{h: h})
		}
		c := v.(*combiner)
		c.mu.Lock()
		if c.dead {
			c.mu.Unlock()
			continue
		}
		switch {
		case p == nil:
		case p.flush:
			c.flushes = append(c.flushes, p)
		default:
			c.qs = append(c.qs, p)
		}
		if rel != "" {
			c.rels = append(c.rels, rel)
		}
		if rep != nil {
			c.reports = append(c.reports, *rep)
		}
		if c.senders >= hostSenders || c.senders > 0 && len(c.qs) == 0 {
			c.mu.Unlock() // a sender takes them
			return
		}
		if len(c.qs) == 0 && len(c.flushes) == 0 {
			s.arm(h, c)
			c.mu.Unlock()
			return
		}
		lane := c.lane()
		c.mu.Unlock()
		s.drain(h, c, lane, false)
		return
	}
}

// closed reports whether Close was called (it sent the queues).
func (s *Store) closed() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// lane counts a new sender in and returns a lane no other uses; c.mu is
// held.
func (c *combiner) lane() int {
	c.senders++
	for i := 0; ; i++ {
		if c.lanes&(1<<i) == 0 {
			c.lanes |= 1 << i
			return i
		}
	}
}

// arm starts c's timer unless it runs; c.mu is held.
func (s *Store) arm(h *polite.Host, c *combiner) {
	if c.armed {
		return
	}
	c.armed = true
	time.AfterFunc(flushDelay, func() {
		c.mu.Lock()
		c.armed = false
		if c.senders > 0 || c.dead || s.closed() {
			c.mu.Unlock()
			return // the senders send the queue, or arm again
		}
		lane := c.lane()
		c.mu.Unlock()
		s.drain(h, c, lane, true)
	})
}

// flush sends h's queued releases and quiet reports, and returns once they
// and those already out have been heard.
func (s *Store) flush(h *polite.Host) {
	v, ok := s.hosts.Load(h.Key())
	if !ok {
		return
	}
	c := v.(*combiner)
	c.mu.Lock()
	idle := c.senders == 0 && len(c.rels) == 0 && len(c.reports) == 0
	c.mu.Unlock()
	if idle {
		return
	}
	p := &pending{flush: true, done: make(chan struct{})}
	s.combine(h, p, "", nil)
	<-p.done
}

// drain sends c's queue on lane, a batch per call, while it holds
// admissions, or releases and reports that a flush waits for (or, all,
// that a timer sends); the releases and reports left then wait for the
// timer. Reports and flushes go only while no other call out carries
// reports.
func (s *Store) drain(h *polite.Host, c *combiner, lane int, all bool) {
	for {
		c.mu.Lock()
		n, r, m := min(len(c.qs), maxBatch), min(len(c.rels), maxBatch), 0
		var flushed []*pending
		if !c.reporting {
			m = min(len(c.reports), maxBatch)
			if r == len(c.rels) && m == len(c.reports) {
				flushed, c.flushes = c.flushes, nil // this batch sends what they wait for
			}
			if n == 0 && !all && len(flushed) == 0 && len(c.flushes) == 0 {
				r, m = 0, 0 // leave them to the timer
			}
		} else if n == 0 {
			r = 0
		}
		if n == 0 && r == 0 && m == 0 && len(flushed) == 0 {
			c.senders--
			c.lanes &^= 1 << lane
			if c.senders == 0 {
				switch {
				case len(c.rels) > 0 || len(c.reports) > 0:
					s.arm(h, c)
				case !c.armed:
					c.dead = true
					s.hosts.Delete(h.Key())
				}
			}
			c.mu.Unlock()
			return
		}
		carries := m > 0 || len(flushed) > 0
		if carries {
			c.reporting = true
		}
		qs, rels, reps := c.qs[:n:n], c.rels[:r:r], c.reports[:m:m]
		c.qs, c.rels, c.reports = c.qs[n:], c.rels[r:], c.reports[m:]
		c.mu.Unlock()
		s.send(h, qs, rels, reps, lane)
		if carries {
			c.mu.Lock()
			c.reporting = false
			c.mu.Unlock()
		}
		for _, p := range flushed {
			close(p.done)
		}
	}
}

// send runs one admit call for qs, rels and reps and answers each of qs;
// with only releases, a release call.
func (s *Store) send(h *polite.Host, qs []*pending, rels []string, reps []quiet, lane int) {
	key := h.Key()
	if len(qs) == 0 && len(reps) == 0 {
		if len(rels) > 0 {
			s.release(key, rels)
		}
		return
	}
	l := s.reg.LimitsFor(key)
	poll := maxHold
	if l.Rate > 0 && !math.IsInf(l.Rate, 1) {
		poll = max(time.Duration(min(1e9/l.Rate, float64(maxHold))), minPoll)
	}
	fleetCap := 0
	if l.Concurrency > 0 && l.Concurrency < inflight.Max {
		fleetCap = l.Concurrency
	}
	// The fleet's controller may cap the requests in flight too (lua
	// admit): every grant then takes a lease.
	leased := fleetCap > 0 || s.o.Adaptive != nil
	// The batch runs at one instant: Redis's TIME, or with CallerClock the
	// first admission's, or report's (tests ask concurrent admissions at
	// one instant).
	now := time.Now()
	switch {
	case len(qs) > 0:
		now = qs[0].q.Now
	case len(reps) > 0:
		now = reps[0].r.Now
	}
	own := adEpoch // the controller's arguments only with the controller
	if s.o.Adaptive != nil {
		own = nAdmit
	}
	args := s.args(now, l, own)
	a := args[nCommon:]
	// Credit (credit.go) serves first attempts: asked for by a call that
	// carries one.
	want, earned := 0, 0
	if slices.ContainsFunc(qs, func(p *pending) bool { return p.q.First && p.q.Cost <= 1 }) {
		want, earned = s.creditWant(h, l, fleetCap)
	}
	a[adCap], a[adPressed], a[adEarned] = fleetCap, flag(s.pressed(key)), earned
	var rep *replica
	if s.o.Adaptive != nil {
		a[adEpoch], a[adSeen], a[adSnapSeq], a[adSnap] = 0, -2, 0, ""
		a[adInitRate], a[adInitConc] = s.replica(key).cold(s, l)
		if len(reps) > 0 {
			rep = s.replica(key)
			epoch, seen, snapSeq, snap := rep.follow()
			a[adEpoch], a[adSeen], a[adSnapSeq], a[adSnap] = epoch, seen, snapSeq, snap
		}
	}
	args = append(args, len(rels))
	for _, r := range rels {
		args = append(args, r)
	}
	args = append(args, len(reps))
	for _, q := range reps {
		var item [nItem]any
		item[itSuccess], item[itKind], item[itLatency], item[itWait], item[itSpare] = flag(q.ok), -1, 0, 0, 0
		item[itAt] = s.theirs(q.r.Now)
		if s.o.Adaptive != nil && q.sig.Kind != adaptive.Neutral {
			item[itKind], item[itLatency], item[itWait] = int(q.sig.Kind), q.sig.Latency.Microseconds(), q.sig.Wait.Microseconds()
			item[itSpare] = flag(q.sig.Spare)
		}
		args = append(args, item[:]...)
	}
	args = append(args, len(qs))
	seqs := make([]uint64, len(qs))
	for i, p := range qs {
		if leased {
			seqs[i] = s.seq.Add(1)
		}
		cost := max(p.q.Cost, 1)
		hold := min(time.Duration(cost)*poll, maxHold) // a cost of n holds n intervals, as the local store
		args = append(args, min(hold, p.q.MaxWait).Microseconds(), flag(p.q.First), s.leaseID(seqs[i]), cost)
	}
	var credit []uint64 // the leases of the credit's slots, if one is asked for
	if want > 0 {
		args = append(args, want)
		if leased {
			credit = make([]uint64, want)
			for i := range credit {
				credit[i] = s.seq.Add(1)
				args = append(args, s.leaseID(credit[i]))
			}
		}
	}
	res, err := s.run(admitScript, key, args, lane)
	if err != nil {
		for _, q := range reps {
			s.health.local.Report(h, q.r) // heard here at least, as a failed report is
		}
	} else {
		s.heard(key, integer(res, abBreaker), integer(res, abFailures))
		if n := integer(res, abCredit); want > 0 && n == int64(want) {
			s.grant(h, want, credit, time.Now())
		}
	}
	for i, p := range qs {
		if err != nil {
			p.a = s.degradedAdmit(h, p.q)
		} else {
			r, _ := res.([]any)
			var one []any // its result's slots (see admitOut)
			if lo := nAdmitHead + i*nAdmitOut; lo+nAdmitOut <= len(r) {
				one = r[lo : lo+nAdmitOut]
			}
			var ok bool
			if p.a, ok = s.admission(key, p.q, one, seqs[i], poll); !ok {
				s.failed(fmt.Errorf("redisstore: malformed admit reply %.100q", fmt.Sprint(res)))
				p.a = s.degradedAdmit(h, p.q)
			}
		}
		p.done <- struct{}{} // an admission's pending is reused (see admissions): not closed
	}
	// The controller's log last: its rate may cost a call of its own,
	// which the admissions above need not wait for.
	if err == nil && rep != nil {
		var v polite.Verdict
		s.follow(h, rep, now, l, slot(res, abLog), &v)
		rep.keep(v)
	}
}

// A host's marks, as its last reply said: a report to a host whose
// breaker is not closed is never quiet (its answer may flip it), and a
// success to one whose failures are counted must reach them (it clears
// them); without either, and without the fleet's controller, a success
// changes nothing in Redis and is not sent at all.
const (
	markUnclosed = 1 << iota
	markFailing
)

// heard notes key's marks from a reply's breaker state and failures.
func (s *Store) heard(key string, breakerState, failures int64) {
	var m uint8
	if breakerState != 0 {
		m |= markUnclosed
	}
	if failures != 0 {
		m |= markFailing
	}
	if m == 0 {
		if _, ok := s.marks.Load(key); ok {
			s.marks.Delete(key)
		}
		return
	}
	s.marks.Store(key, uint64(m)|uint64(time.Now().Unix())<<8) // when, for sweepReplicas
}

// marked returns key's marks.
func (s *Store) marked(key string) uint8 {
	v, ok := s.marks.Load(key)
	if !ok {
		return 0
	}
	return uint8(v.(uint64))
}

// admission reads one result of the admit script for q (admitOut's
// slots); false for a reply that is not one (it grants nothing).
func (s *Store) admission(key string, q polite.Query, a []any, seq uint64, poll time.Duration) (polite.Admission, bool) {
	if len(a) != nAdmitOut {
		return polite.Admission{}, false
	}
	code, ok1 := a[aoCode].(int64)
	us, ok2 := a[aoMicros].(int64)
	why, ok3 := a[aoReason].(string)
	if !ok1 || !ok2 || !ok3 || code < 0 || code > 6 {
		return polite.Admission{}, false
	}
	adm := s.decode(key, q, code, max(micros(us), 0), why, seq, poll)
	spare, _ := a[aoSpare].(int64)
	adm.Spare = adm.Granted && spare == 1
	return adm, true
}

func (s *Store) decode(key string, q polite.Query, code int64, us time.Duration, why string, seq uint64, poll time.Duration) polite.Admission {
	switch code {
	case 0:
		return polite.Admission{Granted: true, At: q.Now.Add(us), Lease: seq}
	case 1:
		return polite.Admission{Err: &polite.BlockedError{Host: key, Reason: why}}
	case 2:
		return polite.Admission{Wait: us, Poll: us, Reason: polite.Reason(why)}
	case 3:
		err := &breaker.OpenError{Until: q.Now.Add(us)}
		return polite.Admission{Reason: polite.ReasonBreaker, Wait: us, Poll: us, Err: fmt.Errorf("polite: host %q: %w", key, err)}
	case 5:
		return polite.Admission{Wait: slotPoll, Poll: slotPoll, Reason: polite.ReasonSlot}
	case 6:
		l := s.reg.LimitsFor(key)
		return polite.Admission{Reason: polite.ReasonRate,
			Err: fmt.Errorf("polite: host %q: %w: cost %d, burst %d", key, bucket.ErrExceedsBurst, max(q.Cost, 1), max(l.Burst, 1))}
	}
	return polite.Admission{Wait: us, Poll: min(max(us-poll, minPoll), maxHold), Reason: polite.ReasonRate}
}
