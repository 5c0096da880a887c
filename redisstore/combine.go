package redisstore

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/breaker"
	"github.com/polite-go/polite/bucket"
	"github.com/polite-go/polite/inflight"
)

// A worker's admissions and releases for one host are combined: while one
// call for the host is out, the ones that come meanwhile queue, and the
// caller that finds the queue idle sends the queue, call after call, until
// it is empty. A host asked by many callers at once then costs one script
// per round trip, not one per caller, and no caller waits longer than the
// call in flight plus its own.

// pending is one admission waiting for its batch.
type pending struct {
	q    polite.Query
	a    polite.Admission
	done chan struct{} // closed once a is set
}

// combiner queues a host's admissions and releases.
type combiner struct {
	mu   sync.Mutex
	busy bool // a caller is sending the queue
	dead bool // removed from Store.hosts: callers must find another
	qs   []*pending
	rels []string
}

// maxBatch bounds the admissions and the releases of one call.
const maxBatch = 128

// combine queues p (an admission, or nil) and rel (a lease to release, or
// ""), and sends the host's queue unless another caller is at it.
func (s *Store) combine(h *polite.Host, p *pending, rel string) {
	key := h.Key()
	for {
		v, ok := s.hosts.Load(key)
		if !ok {
			v, _ = s.hosts.LoadOrStore(key, new(combiner))
		}
		c := v.(*combiner)
		c.mu.Lock()
		if c.dead {
			c.mu.Unlock()
			continue
		}
		if p != nil {
			c.qs = append(c.qs, p)
		}
		if rel != "" {
			c.rels = append(c.rels, rel)
		}
		if c.busy {
			c.mu.Unlock()
			return
		}
		c.busy = true
		c.mu.Unlock()
		s.drain(h, c)
		return
	}
}

// drain sends c's queue, a batch per call, until it is empty.
func (s *Store) drain(h *polite.Host, c *combiner) {
	for {
		c.mu.Lock()
		n, r := min(len(c.qs), maxBatch), min(len(c.rels), maxBatch)
		if n == 0 && r == 0 {
			c.busy, c.dead = false, true
			s.hosts.Delete(h.Key())
			c.mu.Unlock()
			return
		}
		qs, rels := c.qs[:n:n], c.rels[:r:r]
		c.qs, c.rels = c.qs[n:], c.rels[r:]
		c.mu.Unlock()
		s.send(h, qs, rels)
	}
}

// send runs one admit call for qs and rels and answers each of qs; with no
// admissions, a release call.
func (s *Store) send(h *polite.Host, qs []*pending, rels []string) {
	key := h.Key()
	if len(qs) == 0 {
		args := make([]any, len(rels))
		for i, r := range rels {
			args[i] = r
		}
		s.run(releaseScript, key, args)
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
	// first admission's (tests ask concurrent admissions at one instant).
	now := time.Now()
	if len(qs) > 0 {
		now = qs[0].q.Now
	}
	args := s.args(now, l, nAdmit)
	a := args[nCommon:]
	a[adKeepBlocked], a[adOpenDelay], a[adCut] = flag(s.o.KeepBlocked), s.br.OpenDelay.Microseconds(), s.cut()
	a[adBudgetRatio], a[adBudgetMin], a[adBudgetWindow] = s.budget.Ratio, s.budget.MinPerSecond, s.budget.Window.Seconds()
	a[adCap], a[adLeaseTTL], a[adPressed], a[adReleases] = fleetCap, s.lease, flag(s.pressed(key, now)), len(rels)
	a[adAdaptive] = flag(s.o.Adaptive != nil)
	for _, r := range rels {
		args = append(args, r)
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
	res, err := s.run(admitScript, key, args)
	for i, p := range qs {
		if err != nil {
			p.a = s.degradedAdmit(h, p.q)
		} else {
			r, _ := res.([]any)
			var one any
			if i+1 < len(r) {
				one = r[i+1]
			}
			var ok bool
			if p.a, ok = s.admission(key, p.q, one, seqs[i], poll); !ok {
				s.failed(fmt.Errorf("redisstore: malformed admit reply %.100q", fmt.Sprint(one)))
				p.a = s.degradedAdmit(h, p.q)
			}
		}
		close(p.done)
	}
}

// admission reads one result of the admit script for q (admitOut's
// slots); false for a reply that is not one (it grants nothing).
func (s *Store) admission(key string, q polite.Query, res any, seq uint64, poll time.Duration) (polite.Admission, bool) {
	a, ok := res.([]any)
	if !ok || len(a) != nAdmitOut {
		return polite.Admission{}, false
	}
	code, ok1 := a[aoCode].(int64)
	_, ok2 := a[aoMicros].(int64)
	_, ok3 := a[aoReason].(string)
	if !ok1 || !ok2 || !ok3 || code < 0 || code > 6 {
		return polite.Admission{}, false
	}
	us, why := max(micros(integer(res, aoMicros)), 0), str(res, aoReason)
	adm := s.decode(key, q, code, us, why, seq, poll)
	adm.Spare = adm.Granted && integer(res, aoSpare) == 1
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
