package redisstore

import (
	"sync"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/bucket"
)

// A credit is tokens, and where the fleet caps the host's requests in
// flight as many leased slots, that Redis gave this worker beyond an
// admit call's admissions, for the first attempts the worker makes to the
// host within creditLife: each of those is admitted here, without a call
// (#30: a host asked by many requests a second paid a script for each).
//
// Redis gives one only where the host has far more than the worker asks
// (admit.lua, credit): every admission of the call granted without a
// wait, no block, pause or open breaker, no request of any worker waiting
// for a token or a slot within a second, the tokens due within creditSpan
// (1 ms) at the rate in force, and the slots with those in flight at most
// a quarter of the cap. The tokens are taken from the fleet's bucket and
// the slots leased when the credit is given, so the fleet never has more
// in flight than its cap, and a host sees no more than its rate and
// burst, give or take the tokens of one credit (a millisecond of its rate)
// used up to creditLife after they were due. A host paced at the rates
// crawlers use (a millisecond or more per token) never gets one.
//
// What a credit costs: for creditLife at most, the worker's requests do
// not hear a pause, a block or an open breaker that another worker's
// report set (its own reports that say one end its credit), and its
// unused slots count as in flight for the fleet (its own State leaves
// them out); unused tokens are lost, as the worker asks for about as many
// as it used last time.
type credit struct {
	h      *polite.Host
	mu     sync.Mutex
	asked  time.Time // the last admit call with a first attempt (this worker's clock)
	given  bool      // a credit was given and has not lapsed
	until  time.Time // when its tokens lapse
	tokens int       // left
	seqs   []uint64  // the leases of its slots not yet used (none without a cap)
	used   int       // its tokens used
	firsts int       // first attempts it admitted, their share of the retry budget not yet sent
	want   int       // the credit to ask for next
	timer  *time.Timer
}

// creditLife is how long a credit's tokens wait for requests. A worker
// asks for credit once its admit calls with first attempts to a host come
// within creditLife of each other: creditFirst tokens first, doubled
// while a credit runs out within its life (up to creditMax), otherwise
// as many as the last one used.
const (
	creditLife  = 100 * time.Millisecond
	creditFirst = 4
	creditMax   = 64
)

// The bounds Redis gives credit within (admit.lua): its tokens due within
// creditSpan, its slots at most 1/creditShare of the cap.
const (
	creditSpan  = time.Millisecond
	creditShare = 4
)

// fromCredit admits q from h's credit, if it has one: first attempts of
// cost 1 only (a retry asks Redis, whose budget it draws on).
func (s *Store) fromCredit(h *polite.Host, q polite.Query) (polite.Admission, bool) {
	if !q.First || q.Cost > 1 {
		return polite.Admission{}, false
	}
	v, ok := s.credits.Load(h.Key())
	if !ok {
		return polite.Admission{}, false
	}
	c := v.(*credit)
	c.mu.Lock()
	if c.tokens == 0 || !time.Now().Before(c.until) {
		c.mu.Unlock()
		return polite.Admission{}, false
	}
	c.tokens--
	c.used++
	c.firsts++
	var lease uint64
	if n := len(c.seqs); n > 0 {
		lease = c.seqs[n-1]
		c.seqs = c.seqs[:n-1]
	}
	c.mu.Unlock()
	return polite.Admission{Granted: true, At: q.Now, Lease: lease, Spare: true}, true
}

// creditWant returns the credit to ask for in an admit call with a first
// attempt to h, whose limits are l and fleet cap fleetCap (0: none), and
// the first attempts h's credit admitted since the last call (taken: the
// call carries them).
func (s *Store) creditWant(h *polite.Host, l polite.Limits, fleetCap int) (want, earned int) {
	// What Redis would refuse anyway, as far as the limits tell: tokens
	// due later than creditSpan, slots more than a quarter of the cap.
	most := creditMax
	rate := l.Rate
	if s.o.Adaptive != nil && s.o.Adaptive.Max > 0 && (rate <= 0 || s.o.Adaptive.Max < rate) {
		rate = s.o.Adaptive.Max
	}
	if rate > 0 && rate < bucket.Inf {
		most = min(most, int(rate*creditSpan.Seconds()))
	}
	if fleetCap > 0 {
		most = min(most, fleetCap/creditShare)
	}
	key, now := h.Key(), time.Now()
	v, ok := s.credits.Load(key)
	if !ok {
		if most <= 0 {
			return 0, 0
		}
		c := &credit{h: h, want: creditFirst, asked: now}
		c.mu.Lock()
		defer c.mu.Unlock()
		if v, ok = s.credits.LoadOrStore(key, c); !ok {
			c.timer = time.AfterFunc(2*creditLife, func() { s.lapse(c) })
			return 0, 0 // the host's first call: no demand seen yet
		}
	}
	c := v.(*credit)
	c.mu.Lock()
	defer c.mu.Unlock()
	earned, c.firsts = c.firsts, 0
	demand := now.Sub(c.asked) <= creditLife
	c.asked = now
	if c.given && c.tokens == 0 {
		c.want, c.given = min(2*c.want, creditMax), false // all used within its life: ask for more
	}
	if !demand || c.tokens > 0 && now.Before(c.until) {
		return 0, earned // no second credit while one is in force
	}
	return max(min(c.want, most), 0), earned
}

// grant puts into force the credit of n tokens an admit call to h gave
// (and n slots, leased as seqs, when leased), at now; a credit still in
// force is given back first.
func (s *Store) grant(h *polite.Host, n int, seqs []uint64, now time.Time) {
	key := h.Key()
	v, ok := s.credits.Load(key)
	if !ok {
		v, _ = s.credits.LoadOrStore(key, &credit{h: h, want: creditFirst, asked: now})
	}
	c := v.(*credit)
	c.mu.Lock()
	old := c.seqs
	c.given, c.until, c.tokens, c.used = true, now.Add(creditLife), n, 0
	c.seqs = append(c.seqs[:0:0], seqs...)
	if c.timer == nil {
		c.timer = time.AfterFunc(creditLife, func() { s.lapse(c) })
	} else {
		c.timer.Reset(creditLife)
	}
	c.mu.Unlock()
	s.release1(h, old)
}

// lapse ends credit c once its life is over: its unused slots are
// released, and the next credit asked for is sized by what this one saw.
// A host whose calls stopped coming is forgotten.
func (s *Store) lapse(c *credit) {
	c.mu.Lock()
	if s.closed() {
		c.mu.Unlock()
		return // Close released its slots
	}
	now := time.Now()
	if c.given && now.Before(c.until) {
		c.timer.Reset(c.until.Sub(now)) // given again meanwhile
		c.mu.Unlock()
		return
	}
	var rels []uint64
	if c.given {
		if c.tokens > 0 {
			c.want = max(c.used, 1) // (all used, it grows: creditWant)
		}
		rels, c.seqs, c.tokens, c.given = c.seqs, nil, 0, false
	}
	if now.Sub(c.asked) > creditLife {
		s.credits.CompareAndDelete(c.h.Key(), c) // (a first attempt's budget share not sent yet is lost)
	} else {
		c.timer.Reset(creditLife)
	}
	c.mu.Unlock()
	if !s.health.degraded.Load() {
		s.release1(c.h, rels) // (leases Redis cannot hear of expire there)
	}
}

// endCredit ends h's credit now (a report of its said something the fleet
// must hear before another request goes): its unused slots are released,
// its tokens lost. It returns the first attempts the credit admitted whose
// budget share was not sent yet (taken: the caller sends them).
func (s *Store) endCredit(h *polite.Host) (earned int) {
	v, ok := s.credits.Load(h.Key())
	if !ok {
		return 0
	}
	c := v.(*credit)
	c.mu.Lock()
	rels := c.seqs
	c.seqs, c.tokens, c.given = nil, 0, false
	earned, c.firsts = c.firsts, 0
	c.mu.Unlock()
	s.release1(h, rels)
	return earned
}

// unusedCredit returns how many slots of key's credit this worker has not
// used yet: leased in Redis, but no request's.
func (s *Store) unusedCredit(key string) int {
	v, ok := s.credits.Load(key)
	if !ok {
		return 0
	}
	c := v.(*credit)
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seqs)
}

// release1 queues the release of each of seqs.
func (s *Store) release1(h *polite.Host, seqs []uint64) {
	for _, seq := range seqs {
		s.combine(h, nil, s.leaseID(seq), nil)
	}
}
