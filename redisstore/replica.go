package redisstore

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/adaptive"
)

// The fleet's rate controller is polite's own (package adaptive), the one
// a single process runs, not a second algorithm: each worker keeps a
// replica of a host's Controller and feeds it the host's log, the signals
// every worker reported, in the order Redis ran the reports and stamped
// with Redis's clock (see lua/log.lua). A Controller reads no clock of its
// own, so replicas that hear the same entries at the same instants come to
// the same rate, latency-led as in one process. A worker whose replica is
// past the entry the rate in force follows writes its own (when it
// differs), with the entry it follows and the controller's cap on requests
// in flight; setrate refuses one behind it, or from another log. A
// replica that could only approximate (approx) writes none.

// snapEvery is how many entries apart a worker's replica leaves a snapshot
// for late joiners (the log keeps at least logKeep of them, lua/log.lua).
const snapEvery = 256

// replica is a worker's copy of one host's controller.
type replica struct {
	mu      sync.Mutex
	ctl     *adaptive.Controller // nil until the first reply
	epoch   int64                // the log followed (its t0, µs); 0: none
	seen    int64                // the last entry heard
	snap    []byte               // a snapshot to leave with the next report ...
	snapSeq int64                // ... taken at this entry (0: none)
	// approx: the replica could not hear the log from its start or from
	// a snapshot (the log was trimmed past both), so it may differ from
	// the others; it writes no rate and leaves no snapshot.
	approx bool
	// coldRate and coldConc are a new controller's rate and cap for the
	// host (0: not computed yet), the fleet's until it writes its own.
	coldRate atomic.Uint64 // float64 bits
	coldConc atomic.Int64
	// change is a change of rate the replica made after a call no
	// verdict waited for (quiet reports), for the next report's verdict.
	change polite.Verdict
	// used is when the replica last served (Unix ns), for eviction;
	// pressed, that a request of this worker waited for the host's rate
	// (NoteDemand) since its last admission call.
	used    atomic.Int64
	pressed atomic.Bool
	// conc is the controller's cap on requests in flight as last heard
	// (0: none heard).
	conc atomic.Int64
}

// cold returns the rate and in-flight cap a new controller for the host
// with Limits l starts with (its Concurrency under l's cap).
func (r *replica) cold(s *Store, l polite.Limits) (float64, int64) {
	if c := r.coldConc.Load(); c > 0 {
		return math.Float64frombits(r.coldRate.Load()), c
	}
	ctl := adaptive.New(polite.HostAdaptive(*s.o.Adaptive, l), time.Time{})
	rate, conc := ctl.Rate(), int64(ctl.Concurrency())
	if l.Concurrency > 0 && int64(l.Concurrency) < conc {
		conc = int64(l.Concurrency)
	}
	r.coldRate.Store(math.Float64bits(rate))
	r.coldConc.Store(max(conc, 1))
	return rate, max(conc, 1)
}

// NoteDemand records that a request waited for h's rate (a scheduler
// put it off until its token). The next admission call to h says so, and
// the admit script marks the host pressed then: no admission within two
// token intervals of it is Spare, so the fleet's controller hears that
// demand presses on the rate.
func (s *Store) NoteDemand(h *polite.Host, now time.Time) {
	s.replica(h.Key()).pressed.Store(true)
}

var _ polite.DemandNoter = (*Store)(nil)

// pressed reports, once, whether a request to key waited for its rate
// since the last admission call to it.
func (s *Store) pressed(key string) bool {
	v, ok := s.replicas.Load(key)
	return ok && v.(*replica).pressed.Swap(false)
}

// replica returns key's replica, creating it.
func (s *Store) replica(key string) *replica {
	v, ok := s.replicas.Load(key)
	if !ok {
		v, _ = s.replicas.LoadOrStore(key, new(replica))
	}
	r := v.(*replica)
	r.used.Store(time.Now().UnixNano())
	return r
}

// sweepReplicas forgets the replicas, and the marks (see heard), of hosts
// idle past the store's idle time: their keys in Redis are gone too, and
// a later report starts a new log.
func (s *Store) sweepReplicas(now time.Time) {
	limit := now.Add(-micros(s.idle))
	s.replicas.Range(func(k, v any) bool {
		if v.(*replica).used.Load() < limit.UnixNano() {
			s.replicas.Delete(k)
		}
		return true
	})
	s.marks.Range(func(k, v any) bool {
		if int64(v.(uint64)>>8) < limit.Unix() {
			s.marks.Delete(k)
		}
		return true
	})
}

// follow is what a report tells the script about the reporter's replica:
// the log it follows, the last entry heard, and a snapshot to leave.
func (r *replica) follow() (epoch, seen, snapSeq int64, snap []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	epoch, seen = r.epoch, r.seen
	if r.ctl == nil {
		seen = -1
	}
	snapSeq, snap = r.snapSeq, r.snap
	r.snapSeq, r.snap = 0, nil
	return epoch, seen, snapSeq, snap
}

// keep holds the change of rate v says (if any), made after a call no
// report waits for, until a report's verdict can tell it (told).
func (r *replica) keep(v polite.Verdict) {
	if v.Rate <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	from := r.change.RateFrom
	if r.change.Rate <= 0 {
		from = v.RateFrom
	}
	r.change = v
	r.change.RateFrom = from
}

// told puts a change of rate kept for a verdict in v, unless v says one of
// its own.
func (r *replica) told(v *polite.Verdict) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.change.Rate <= 0 {
		return
	}
	if v.Rate <= 0 {
		v.Rate, v.Capacity, v.CapacityErr, v.Measured, v.Phase = r.change.Rate, r.change.Capacity, r.change.CapacityErr,
			r.change.Measured, r.change.Phase
		if v.QuotaRate == 0 {
			v.RateFrom = r.change.RateFrom
		}
	}
	r.change = polite.Verdict{}
}

// written is the rate and cap the controller last wrote for the host.
type written struct {
	rate    float64 // bucket.Inf: none written (the host's configured rate)
	hasRate bool
	seq     int64
	conc    int64
}

// catchUp brings the replica up to the log reply res (logOut's slots) and
// returns the rate, cap and entry the fleet's controller last wrote, as
// the reply found them.
func (s *Store) catchUp(r *replica, key string, res any) (w written, ok bool) {
	epoch, last := integer(res, loEpoch), integer(res, loLast)
	if epoch <= 0 || last <= 0 {
		return w, false
	}
	w.seq, w.conc = integer(res, loRateSeq), integer(res, loConc)
	if rs := str(res, loRate); rs != "" {
		w.rate, w.hasRate = rateOf(float(res, loRate)), true
	}
	from := integer(res, loFrom)
	a, _ := res.([]any)
	var entries []any
	if loEntries < len(a) {
		entries, _ = a[loEntries].([]any)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctl == nil || r.epoch != epoch || last < r.seen || integer(res, loReset) == 1 {
		// A new log (the host's keys expired, or Redis lost them), one
		// rolled back past what this replica heard (Redis restarted from
		// a dump, or failed over to a replica behind it), or a replica
		// that never followed one: a controller born at the log's start,
		// which every replica shares.
		r.ctl = adaptive.New(polite.HostAdaptive(*s.o.Adaptive, s.reg.LimitsFor(key)), time.UnixMicro(epoch))
		r.epoch, r.seen, r.approx = epoch, 0, false
		r.snap, r.snapSeq = nil, 0
	}
	if ss := integer(res, loSnapSeq); ss > r.seen {
		if err := r.ctl.UnmarshalBinary([]byte(str(res, loSnap))); err == nil {
			r.seen, r.approx = ss, false
			s.restores.Add(1)
		}
	}
	if from > r.seen+1 {
		// Behind what the log keeps, with no snapshot to start from: hear
		// what is left. This replica may differ from the others, so it
		// writes no rate and leaves no snapshot (see follow) until it
		// restores one, or the log starts again.
		r.seen, r.approx = from-1, true
	}
	for i, e := range entries {
		n := from + int64(i)
		if n <= r.seen {
			continue
		}
		es, _ := e.(string)
		s.hear(r.ctl, es)
		r.seen = n
	}
	r.conc.Store(int64(r.ctl.Concurrency()))
	if !r.approx && r.seen >= integer(res, loStored)+snapEvery && r.snap == nil {
		if b, err := r.ctl.MarshalBinary(); err == nil {
			r.snap, r.snapSeq = b, r.seen
		}
	}
	return w, true
}

// hear feeds one log entry to c; a malformed one is skipped (every
// replica skips it alike).
func (s *Store) hear(c *adaptive.Controller, e string) {
	f := strings.Fields(e)
	if len(f) < 3 {
		return
	}
	us, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return
	}
	at := time.UnixMicro(us)
	if f[1] == "m" {
		if v, err := strconv.ParseFloat(f[2], 64); err == nil && !math.IsNaN(v) {
			c.SetMax(v) // 0: no ceiling
		}
		return
	}
	if len(f) < 5 {
		return
	}
	kind, err1 := strconv.Atoi(f[1])
	lat, err2 := strconv.ParseInt(f[2], 10, 64)
	wait, err3 := strconv.ParseInt(f[3], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || kind < int(adaptive.OK) || kind > int(adaptive.Failure) {
		return
	}
	c.Observe(at, adaptive.Signal{Kind: adaptive.Kind(kind), Latency: micros(max(lat, 0)), Wait: micros(max(wait, 0)),
		Spare: f[4] == "1"})
}
