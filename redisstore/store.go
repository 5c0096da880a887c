// Package redisstore keeps polite's per-host admission state in Redis, so
// that a fleet of workers (processes, machines) treats each host as one
// polite client would: one token bucket, one pause, one block mark, one
// breaker and one retry budget per host, shared.
//
// Every decision is one Lua script run atomically on the host's keys. A
// worker's admissions to one host made while a call for it is out go
// together in its next call, and releases and quiet reports (an answer
// that changes nothing to say: a success with the breaker closed, no retry
// asked) ride with them, so a request costs about one round trip, not
// three (see combine.go); the admit calls and releases a worker has for
// one Redis node at once go in one script run (see pipe.go). Time comes
// from Redis's TIME, in
// integer microseconds, never from a worker's clock; a worker converts its
// own instants (a request's send time) with the offset it measures on every
// reply. The host's keys are "<prefix>{<host key>}:…", so in a Redis Cluster
// one host's keys share a slot.
//
// Token bucket arithmetic is GCRA in microseconds, the interval rounded up,
// so rounding can only under-admit. A host's keys expire once it has been
// idle (bucket full, no pause, breaker closed) for IdleTimeout, and a host
// whose keys are gone starts with a full bucket, as in the local store.
//
// With Options.Adaptive, each host's rate and in-flight cap are set by
// polite's own controller (package adaptive), the one a single process
// runs: every worker keeps a replica of it, fed the host's log of every
// worker's answers in the order Redis heard them (see replica.go), so one
// algorithm, latency-led, decides for one process and for a fleet. The
// scripts' arguments and replies are named in one table (schema.go).
//
// A host with far more to give than a worker asks of it (a rate of a
// thousand requests a second or more per token asked, a cap four times
// what is in flight, nothing held back) gives the worker credit: a few
// tokens, and slots under the cap, taken from the fleet's when given, for
// its next first attempts within 100 ms, which it admits without a call
// (see credit.go). A host paced at crawlers' rates never gives credit.
package redisstore

import (
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/adaptive"
	"github.com/polite-go/polite/breaker"
	"github.com/polite-go/polite/bucket"
	"github.com/polite-go/polite/inflight"
	"github.com/polite-go/polite/retry"
)

var (
	//go:embed lua/prelude.lua
	prelude string
	//go:embed lua/admit.lua
	admitLua string
	//go:embed lua/report.lua
	reportLua string
	//go:embed lua/keep.lua
	keepLua string
	//go:embed lua/cancel.lua
	cancelLua string
	//go:embed lua/setrate.lua
	setRateLua string
	//go:embed lua/setceiling.lua
	setCeilingLua string
	//go:embed lua/state.lua
	stateLua string
	//go:embed lua/unblock.lua
	unblockLua string
	//go:embed lua/log.lua
	logLua string
)

// Each script is the shared prelude and its own body, its names of
// arguments and reply slots numbered from its tables (schema.go). go-redis
// runs them with EVALSHA (in pipelines, pipe.go), and with EVAL when Redis
// does not have them yet. The admit script runs merged calls: admit calls
// and releases of any hosts on one node, in one run (pipe.go).
var (
	admitScript      = redis.NewScript(build(admitArgs[:], admitOut[:], true, prelude+logLua+admitLua))
	reportScript     = luaScript(reportArgs[:], reportOut[:], true, reportLua)
	keepScript       = luaScript(keepArgs[:], nil, true, keepLua)
	cancelScript     = luaScript(cancelArgs[:], nil, true, cancelLua)
	setRateScript    = luaScript(setRateArgs[:], nil, true, setRateLua)
	setCeilingScript = luaScript(setCeilingArgs[:], setCeilingOut[:], true, setCeilingLua)
	stateScript      = luaScript(nil, stateOut[:], true, stateLua)
	unblockScript    = luaScript(nil, nil, true, unblockLua)
)

// Options configure a Store. Every worker of a fleet must use the same.
type Options struct {
	// Prefix starts every key, "polite:" if empty: name the fleet with it
	// when several share one Redis.
	Prefix string
	// Timeout bounds one call to Redis; 250 ms if zero.
	Timeout time.Duration

	// The per-host policy: breaker, retry budget, backoff, the longest
	// Retry-After waited out, blocks kept, the RateLimit spacing cap, each
	// as polite.LocalOptions has it (Transport.LocalOptions gives a
	// Transport's). NewRater is not used: the fleet's rate is Adaptive's.
	polite.LocalOptions
	// Adaptive, when set, has polite's own rate controller (package
	// adaptive, the one Transport.Adaptive gives one process) tune each
	// host's shared rate and in-flight cap from every worker's answers and
	// latencies; each host's Config is polite.HostAdaptive(*Adaptive, its
	// Limits). Pass the Transport's Adaptive. See replica.go for how the
	// workers agree.
	Adaptive *adaptive.Config
	// IdleTimeout is how long an idle host's keys live; the registry's
	// default (polite.DefaultIdleTimeout) if zero.
	IdleTimeout time.Duration
	// LeaseTTL is how long an in-flight slot stays leased to a request that
	// never gives it back (its worker was killed): longer than a request
	// may take, body included. One minute if zero.
	LeaseTTL time.Duration

	// Outage is what the store does while Redis does not answer (Local
	// by default), and MaxDegraded how long Local lasts before it turns
	// Closed (5 minutes if zero). Logger, if set, says each change of
	// phase: degraded (in which mode, and why), Local turned Closed, and
	// recovered (from which mode); Status tells the same to a program.
	Outage      Outage
	MaxDegraded time.Duration
	Logger      *slog.Logger

	// CallerClock makes the scripts use the instants the caller passes
	// (Query.Now, Report.Now) instead of Redis's TIME: for tests and
	// simulations under a fake clock only. A fleet must never use it.
	CallerClock bool
}

// Store is a polite.Store kept in Redis. It is safe for concurrent use.
type Store struct {
	c      redis.UniversalClient
	reg    *polite.Registry
	o      Options
	br     breaker.Config
	budget retry.BudgetConfig
	idle   int64 // µs
	lease  int64 // µs

	// admissions are the pendings of admissions, reused: send answers one
	// by a value on its done (one slot), not by closing it, and the caller,
	// once answered, puts it back: two allocations a request fewer, of ten
	// (BenchmarkRedisRequest, hot host). The Store's own, not the
	// package's: a channel made in a synctest bubble is the bubble's.
	admissions sync.Pool

	// worker names this Store's leases and calls; seq numbers the leases,
	// calls the mutating calls.
	worker string
	seq    atomic.Uint64
	calls  atomic.Uint64

	health    health
	hosts     sync.Map      // host key -> *combiner, while it has calls to make
	pipe      pipe          // the script calls waiting for a pipeline (pipe.go)
	marks     sync.Map      // host key -> its marks (markUnclosed, markFailing) as last heard, while it has any
	replicas  sync.Map      // host key -> *replica of its controller (with Adaptive)
	restores  atomic.Int64  // replicas restored from a snapshot (for tests)
	shares    sync.Map      // host key -> *gcra, this worker's part of it while Redis is out (Local)
	credits   sync.Map      // host key -> *credit (credit.go), once Redis gave it one
	done      chan struct{} // closed by Close
	closeOnce sync.Once

	// offset is Redis's clock minus ours, in µs, as last measured: the
	// send time of a request is ours, the throttle wave it is compared
	// with is Redis's.
	offset atomic.Int64
}

var _ polite.Store = (*Store)(nil)

// ErrRetries is returned by New for a client that retries commands on its
// own: a script whose reply was lost would run twice (two tokens taken for
// one request). Set MaxRetries to -1 on the client given to the store.
var ErrRetries = errors.New("redisstore: the Redis client retries commands on its own; set MaxRetries: -1")

// New returns a Store on c, for the hosts of reg (whose rules give each
// host its Limits). c may be a Client, a ClusterClient or a Ring. Close
// stops the store's heartbeat.
func New(c redis.UniversalClient, reg *polite.Registry, o Options) (*Store, error) {
	if retries(c) > 0 {
		return nil, ErrRetries
	}
	if o.Prefix == "" {
		o.Prefix = "polite:"
	}
	if o.Timeout <= 0 {
		o.Timeout = 250 * time.Millisecond
	}
	if o.MaxRetryAfter <= 0 {
		o.MaxRetryAfter = polite.DefaultMaxRetryAfter
	}
	idle := o.IdleTimeout
	if idle <= 0 {
		idle = polite.DefaultIdleTimeout
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = time.Minute
	}
	if o.MaxDegraded <= 0 {
		o.MaxDegraded = 5 * time.Minute
	}
	var id [8]byte
	rand.Read(id[:])
	s := &Store{c: c, reg: reg, o: o, br: o.Breaker.WithDefaults(),
		budget: o.Budget.WithDefaults(), idle: idle.Microseconds(), lease: o.LeaseTTL.Microseconds(),
		worker: hex.EncodeToString(id[:]), done: make(chan struct{})}
	local := o.LocalOptions
	local.NewRater = nil // while degraded, Local mode sets each host's share itself
	s.health.local = polite.NewLocalStore(reg, local)
	go s.beat()
	return s, nil
}

// Close sends the releases and reports still queued, and stops the
// store's heartbeat and prober; it does not close the client.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		// The releases and reports still queued go now, not with calls
		// that will not come (the client may be closed next), and the
		// slots of credits not used with them.
		s.credits.Range(func(_, v any) bool {
			c := v.(*credit)
			c.mu.Lock()
			if c.timer != nil { // (nil while grant makes it)
				c.timer.Stop()
			}
			c.mu.Unlock()
			if !s.health.degraded.Load() {
				s.endCredit(c.h)
			}
			return true
		})
		s.hosts.Range(func(_, v any) bool {
			if c := v.(*combiner); !s.health.degraded.Load() {
				s.flush(c.h)
			}
			return true
		})
		close(s.done)
	})
	return nil
}

// Degraded reports whether Redis is unreachable, and the mode in force.
func (s *Store) Degraded() (bool, Outage) {
	return s.health.degraded.Load(), s.mode()
}

// retries returns how often the client retries a command on its own
// (go-redis turns MaxRetries -1 into 0 and 0 into the default, 3), or 0 for
// a client it cannot tell.
func retries(c redis.UniversalClient) int {
	var n int
	switch c := c.(type) {
	case *redis.Client:
		n = c.Options().MaxRetries
	case *redis.ClusterClient:
		n = c.Options().MaxRetries
	case *redis.Ring:
		n = c.Options().MaxRetries
	default:
		return 0
	}
	return n
}

// Admit implements polite.Store. Admissions to one host made while a call
// for it is out go together in the next call (see combine).
func (s *Store) Admit(h *polite.Host, q polite.Query) polite.Admission {
	if s.health.degraded.Load() {
		return s.degradedAdmit(h, q)
	}
	if g := s.tailShare(h, q.Now); g != nil {
		return s.tailAdmit(h, q, g)
	}
	if a, ok := s.fromCredit(h, q); ok {
		return a
	}
	return s.sharedAdmit(h, q)
}

// sharedAdmit asks Redis.
func (s *Store) sharedAdmit(h *polite.Host, q polite.Query) polite.Admission {
	p, _ := s.admissions.Get().(*pending)
	if p == nil {
		p = &pending{done: make(chan struct{}, 1)}
	}
	p.q = q
	s.combine(h, p, "", nil)
	<-p.done
	a := p.a
	*p = pending{done: p.done}
	s.admissions.Put(p)
	return a
}

// slotPoll is how soon a request refused an in-flight slot asks again:
// slots come back when other workers' requests end, which no one can
// announce without a round trip of its own.
const slotPoll = 25 * time.Millisecond

// leaseID names lease seq of this Store, in one allocation (a concatenation
// of FormatUint's string took two, twice a request).
func (s *Store) leaseID(seq uint64) string {
	var b [64]byte
	return string(strconv.AppendUint(append(append(b[:0], s.worker...), ':'), seq, 10))
}

// Release implements polite.Store. Where the fleet's cap on the host's
// requests in flight is small (at most rideCap), a slot is scarce and
// the release is sent at once (with whatever the host's queue holds);
// otherwise it goes with the host's next call, or on its own within
// flushDelay (see combine).
func (s *Store) Release(h *polite.Host, lease uint64) {
	if lease == 0 || s.health.degraded.Load() {
		return // a lease Redis cannot hear of expires there
	}
	if s.scarce(h.Key()) {
		s.combine(h, &pending{flush: true, done: make(chan struct{})}, s.leaseID(lease), nil)
		return
	}
	s.combine(h, nil, s.leaseID(lease), nil)
}

// rideCap is the largest fleet cap on a host's requests in flight under
// which releases are sent at once: a worker waiting for one of a few
// slots should not wait flushDelay more for a request that has ended.
const rideCap = 32

// scarce reports whether key's requests in flight are capped at rideCap
// or fewer, by its limits or by the fleet's controller as last heard.
func (s *Store) scarce(key string) bool {
	if c := s.reg.LimitsFor(key).Concurrency; c > 0 && c <= rideCap {
		return true
	}
	if s.o.Adaptive == nil {
		return false
	}
	v, ok := s.replicas.Load(key)
	if !ok {
		return true // not heard yet: the controller starts with a small cap
	}
	c := v.(*replica).conc.Load()
	return c <= 0 || c <= rideCap
}

// The local store's pacing of a bucket's waiters: a token due within about
// one interval (at least minPoll, at most maxHold) is reserved and waited
// for; a later one is asked for again about one interval before it is due.
const (
	minPoll = 10 * time.Millisecond
	maxHold = 250 * time.Millisecond
)

// Keep implements polite.Store.
func (s *Store) Keep(h *polite.Host, now, reserved time.Time, cost int) bool {
	if s.health.degraded.Load() {
		return s.health.local.Keep(h, now, reserved, cost)
	}
	s.flush(h) // the host's queued releases and reports first
	key := h.Key()
	args := s.args(now, s.reg.LimitsFor(key), nKeep)
	args[nCommon+kpReserved], args[nCommon+kpCost] = s.theirs(reserved), max(cost, 1)
	res, err := s.run(keepScript, key, args, 0)
	return err == nil && integer([]any{res}, 0) == 1
}

// Cancel implements polite.Store.
func (s *Store) Cancel(h *polite.Host, now time.Time, cost int) {
	if s.health.degraded.Load() {
		s.health.local.Cancel(h, now, cost)
		return
	}
	s.flush(h) // the host's queued releases and reports first
	key := h.Key()
	args := s.args(now, s.reg.LimitsFor(key), nCancel)
	args[nCommon+cnCost] = max(cost, 1)
	s.run(cancelScript, key, args, 0)
}

// Report implements polite.Store.
func (s *Store) Report(h *polite.Host, r polite.Report) polite.Verdict {
	if s.health.degraded.Load() {
		return s.health.local.Report(h, r)
	}
	key := h.Key()
	l := s.reg.LimitsFor(key)
	rd := polite.ReadReport(r, polite.ReadOptions{Backoff: s.o.Backoff, MaxRetryAfter: s.o.MaxRetryAfter, MaxSpacing: s.o.MaxSpacing,
		Adaptive: s.o.Adaptive != nil})
	v := polite.Verdict{Advertised: rd.Advertised, GiveUp: rd.GiveUp}
	var sig adaptive.Signal
	if s.o.Adaptive != nil {
		sig = polite.SignalOf(r, rd.Advertised)
	}
	if s.quiet(key, rd, sig) {
		// Nothing to answer: it rides with the host's next call, unless
		// it would change nothing there.
		if s.o.Adaptive != nil || rd.Success && s.marked(key)&markFailing != 0 {
			s.combine(h, nil, "", &quiet{r: r, sig: sig, ok: rd.Success})
		}
		if s.o.Adaptive != nil {
			s.replica(key).told(&v)
		}
		return v
	}
	earned := s.endCredit(h) // what it says reaches the fleet before another request goes
	s.flush(h)               // the host's reports in the order they were made
	args := s.args(r.Now, l, nReport)
	a := args[nCommon:]
	a[rpSent], a[rpThrottle], a[rpPause], a[rpPauseWhy] = s.theirs(r.Sent), flag(rd.Throttle), rd.Pause.Microseconds(), string(rd.PauseWhy)
	a[rpFailure], a[rpSuccess], a[rpBlock] = flag(rd.Failure), flag(rd.Success), rd.Block
	a[rpQuotaPause], a[rpCeiling], a[rpRetry] = rd.QuotaPause.Microseconds(), rd.Ceiling, flag(rd.Retry)
	a[rpThreshold], a[rpWindow], a[rpOpenDelay] = s.br.Threshold, s.br.Window.Microseconds(), s.br.OpenDelay.Microseconds()
	a[rpMaxOpen], a[rpCut] = s.br.MaxOpenDelay.Microseconds(), s.cut()
	a[rpBudgetRatio], a[rpBudgetMin], a[rpBudgetWindow] = s.budget.Ratio, s.budget.MinPerSecond, s.budget.Window.Seconds()
	a[rpEarned] = earned
	a[rpAdaptive], a[rpKind], a[rpLatency], a[rpWait], a[rpSpare] = 0, -1, 0, 0, 0
	a[rpEpoch], a[rpSeen], a[rpSnapSeq], a[rpSnap] = 0, -1, 0, ""
	var rep *replica
	if s.o.Adaptive != nil {
		rep = s.replica(key)
		a[rpAdaptive], a[rpKind], a[rpWait], a[rpSpare] = 1, int(sig.Kind), sig.Wait.Microseconds(), flag(sig.Spare)
		if sig.Kind == adaptive.Neutral {
			a[rpKind] = -1
		}
		a[rpLatency] = sig.Latency.Microseconds()
		epoch, seen, snapSeq, snap := rep.follow()
		a[rpEpoch], a[rpSeen], a[rpSnapSeq], a[rpSnap] = epoch, seen, snapSeq, snap
	}
	res, err := s.run(reportScript, key, args, 0)
	if err != nil {
		return s.health.local.Report(h, r)
	}
	if d := integer(res, roPause); d >= 0 {
		v.Pause, v.PauseWhy = micros(d), rd.PauseWhy
	}
	if integer(res, roQuotaPause) == 1 {
		v.QuotaPause = rd.QuotaPause
	}
	v.Blocked = integer(res, roBlocked) == 1
	v.Breaker = breaker.Transition{From: breaker.State(integer(res, roFrom)), To: breaker.State(integer(res, roTo))}
	s.heard(key, integer(res, roBreaker), integer(res, roFailures))
	if v.Breaker.To == breaker.Open && v.Breaker.From != breaker.Open {
		v.Breaker.Until = r.Now.Add(micros(integer(res, roUntil) - integer(res, roNow)))
	}
	v.QuotaRate = float(res, roQuotaRate)
	v.Retry = integer(res, roRetry) == 1
	if v.QuotaRate > 0 {
		v.RateFrom = rateOf(float(res, roRateFrom))
	}
	if rep != nil {
		s.follow(h, rep, r.Now, l, slot(res, roLog), &v)
		rep.told(&v)
	}
	return v
}

// quiet reports whether a report to key (read as rd, its signal sig) may
// ride with the host's next call, its verdict given at once: it asks no
// retry, pauses, blocks, caps and counts no failure, its signal is an OK
// one (or none), and the host's breaker was closed when last heard (a
// success would close a half-open one: a change to say).
func (s *Store) quiet(key string, rd polite.Reading, sig adaptive.Signal) bool {
	if rd.Throttle || rd.Pause > 0 || rd.Block != "" || rd.QuotaPause > 0 || rd.Ceiling > 0 || rd.Retry || rd.Failure || rd.GiveUp {
		return false
	}
	if s.o.Adaptive != nil && sig.Kind != adaptive.OK && sig.Kind != adaptive.Neutral {
		return false
	}
	return s.marked(key)&markUnclosed == 0
}

// follow brings rep up to the log a report returned and, when its
// controller's rate or cap differs from the one in force and no replica
// further along wrote one, writes its own with the entry it follows,
// saying so in v as the local store does. An approximate replica (see
// replica.approx) writes nothing.
func (s *Store) follow(h *polite.Host, rep *replica, now time.Time, l polite.Limits, log any, v *polite.Verdict) {
	key := h.Key()
	w, ok := s.catchUp(rep, key, log)
	if !ok {
		return
	}
	rep.mu.Lock()
	if rep.approx {
		// A replica that could not start where the others did hears the
		// log but leaves the rate to those that are exact.
		rep.mu.Unlock()
		return
	}
	rate, conc, seq, epoch := rep.ctl.Rate(), int64(rep.ctl.Concurrency()), rep.seen, rep.epoch
	if l.Concurrency > 0 && int64(l.Concurrency) < conc {
		conc = int64(l.Concurrency)
	}
	capacity, measured := rep.ctl.Capacity()
	capErr, phase := rep.ctl.CapacityError(), rep.ctl.Phase()
	rep.mu.Unlock()
	cur := l.Rate
	if w.hasRate {
		cur = w.rate
	}
	if rate > cur*0.98 && rate < cur*1.02 {
		rate = cur // changes under 2 % are skipped, as the local store skips them
	}
	if seq <= w.seq || (rate == cur && conc == w.conc) {
		return
	}
	args := s.args(now, l, nSetRate)
	args[nCommon+srRate], args[nCommon+srSeq], args[nCommon+srConc], args[nCommon+srEpoch] = rate, seq, conc, epoch
	if _, err := s.run(setRateScript, key, args, 0); err != nil || rate == cur {
		return
	}
	v.Rate, v.Capacity, v.CapacityErr, v.Measured, v.Phase = rate, capacity, capErr, measured, phase
	if v.QuotaRate == 0 {
		v.RateFrom = cur
	}
}

// SetRate implements polite.Store.
func (s *Store) SetRate(h *polite.Host, now time.Time, rate float64) float64 {
	if s.health.degraded.Load() {
		return s.health.local.SetRate(h, now, rate)
	}
	s.flush(h) // the host's queued releases and reports first
	key := h.Key()
	l := s.reg.LimitsFor(key)
	args := s.args(now, l, nSetRate)
	args[nCommon+srRate], args[nCommon+srSeq], args[nCommon+srConc], args[nCommon+srEpoch] = rate, 0, 0, 0
	res, err := s.run(setRateScript, key, args, 0)
	if err != nil {
		return s.health.local.SetRate(h, now, rate)
	}
	return rateOf(float([]any{res}, 0))
}

// Unblock implements polite.Unblocker: the mark is lifted fleet-wide, and
// in the local store that stands in while Redis is out.
func (s *Store) Unblock(h *polite.Host) bool {
	lifted := false
	if u, ok := s.health.local.(polite.Unblocker); ok {
		lifted = u.Unblock(h)
	}
	if s.health.degraded.Load() {
		return lifted
	}
	s.flush(h)
	res, err := s.run(unblockScript, h.Key(), s.args(time.Now(), s.reg.LimitsFor(h.Key()), 0), 0)
	if err != nil {
		return lifted
	}
	n, _ := res.(int64)
	return lifted || n == 1
}

// SetCeiling implements polite.Store. The fleet's controller hears the
// change through the host's log.
func (s *Store) SetCeiling(h *polite.Host, now time.Time, why polite.Reason, rate float64) (float64, bool) {
	if s.health.degraded.Load() {
		return s.health.local.SetCeiling(h, now, why, rate)
	}
	s.flush(h) // the host's queued releases and reports first
	key := h.Key()
	l := s.reg.LimitsFor(key)
	if why != polite.ReasonCrawlDelay && rate > 0 {
		rate = max(rate, polite.MinCeiling(s.o.MaxSpacing))
	}
	args := s.args(now, l, nSetCeiling)
	args[nCommon+scWhy], args[nCommon+scRate], args[nCommon+scAdaptive] = string(why), max(rate, 0), flag(s.o.Adaptive != nil)
	res, err := s.run(setCeilingScript, key, args, 0)
	if err != nil {
		return s.health.local.SetCeiling(h, now, why, rate)
	}
	return rateOf(float(res, coRate)), integer(res, coChanged) == 1
}

// State implements polite.Store. With Adaptive, the capacity estimate is
// this worker's replica's of the fleet's controller.
func (s *Store) State(h *polite.Host, now time.Time) polite.HostState {
	if s.health.degraded.Load() {
		return s.degradedState(h, now)
	}
	s.flush(h) // the host's queued releases and reports first
	key := h.Key()
	st := polite.HostState{Key: key, Rule: s.reg.RuleFor(key)}
	st.InFlight, st.Concurrency = h.InFlight()
	l := s.reg.LimitsFor(key)
	res, err := s.run(stateScript, key, s.args(now, l, 0), 0)
	if err != nil {
		return s.health.local.State(h, now)
	}
	fleetCap := 0
	if l.Concurrency > 0 && l.Concurrency < inflight.Max {
		fleetCap = l.Concurrency
	}
	if cc := int(integer(res, stConc)); cc > 0 && (fleetCap == 0 || cc < fleetCap) {
		fleetCap = cc
	}
	if fleetCap > 0 {
		st.InFlight, st.Concurrency = int(integer(res, stLeases)), fleetCap // the fleet's
		st.InFlight = max(st.InFlight-s.unusedCredit(key), 0)               // less this worker's credit not yet used
	}
	rnow := integer(res, stNow)
	at := func(us int64) time.Time { return now.Add(micros(us - rnow)) }
	st.Rate, st.Tokens, st.Ceiling = rateOf(float(res, stRate)), float(res, stTokens), float(res, stCeiling)
	if st.Tokens < 1 && st.Rate > 0 {
		// Rounded up to the script's microsecond: a scheduler that comes
		// back at NextToken must find the token there, not a few
		// nanoseconds short of it (and lose a poll).
		st.NextToken = now.Add(time.Duration(math.Ceil((1-st.Tokens)/st.Rate*1e6)) * time.Microsecond)
	}
	if pu := integer(res, stPause); pu > rnow {
		st.PausedUntil, st.PauseWhy = at(pu), polite.Reason(str(res, stPauseWhy))
	}
	cbs, cbu := breaker.State(integer(res, stBreaker)), integer(res, stBreakerUntil)
	switch {
	case cbs == breaker.Open && cbu <= rnow:
		st.Breaker = breaker.HalfOpen
	default:
		st.Breaker = cbs
	}
	if cbs != breaker.Closed && cbu > rnow {
		st.BreakerUntil = at(cbu)
	}
	st.Blocked = str(res, stBlock)
	st.RetryBudget = s.retryTokens(float(res, stBudgetFloor), float(res, stBudgetEarned), integer(res, stBudgetAt), rnow)
	if v, ok := s.replicas.Load(key); ok {
		r := v.(*replica)
		r.mu.Lock()
		if r.ctl != nil {
			st.Capacity, st.Measured = r.ctl.Capacity()
			st.CapacityErr = r.ctl.CapacityError()
		}
		r.mu.Unlock()
	}
	return st
}

// retryTokens brings a host's retry budget (floor and earned tokens as of
// bt, µs; floor < 0: never used, so full) up to now, as the scripts'
// advance does, and returns what it would allow.
func (s *Store) retryTokens(floor, earned float64, bt, now int64) float64 {
	b := s.budget
	full := max(b.MinPerSecond, 0) * b.Window.Seconds()
	if floor < 0 {
		return full
	}
	if sec := float64(now-bt) / 1e6; sec > 0 {
		if b.MinPerSecond > 0 {
			floor = min(full, floor+b.MinPerSecond*sec)
		}
		earned *= math.Exp(-sec / b.Window.Seconds())
	}
	return floor + earned
}

// args returns a script's arguments: the common four (the clock, the
// host's rate and burst, the idle lifetime; see schema.go) set, then n of
// its own for the caller to set.
func (s *Store) args(now time.Time, l polite.Limits, n int) []any {
	var clock int64
	if s.o.CallerClock {
		clock = now.UnixMicro()
	}
	rate := l.Rate
	if math.IsInf(rate, 1) || rate == bucket.Inf {
		rate = -1
	}
	a := make([]any, nCommon+n)
	a[aClock], a[aRate], a[aBurst], a[aIdle], a[aPacing] = clock, rate, max(l.Burst, 1), s.idle, flag(!l.Smooth)
	return a
}

// theirs converts an instant of ours to Redis's clock, in µs.
func (s *Store) theirs(t time.Time) int64 {
	if s.o.CallerClock {
		return t.UnixMicro()
	}
	return t.UnixMicro() + s.offset.Load()
}

// cut draws the fraction of the open delay its jitter removes.
func (s *Store) cut() float64 {
	if s.br.Jitter <= 0 {
		return 0
	}
	return s.br.Jitter * s.br.Rand()
}

// keyLeases names a host's lease set among its keys (hostKey). It was "l"
// while leases were scored by their expiry: a fleet that runs workers of
// both kinds during an upgrade keeps two sets, not one that each purges of
// the other's leases (see admit.lua).
const keyLeases = "n"

// hostKey is the key named name of the host with key key: its hash tag
// is the host key, so that one host's keys share a Cluster slot.
func (s *Store) hostKey(key, name string) string { return s.o.Prefix + "{" + key + "}:" + name }

// hostKeys are the keys every script takes first, in their order (see
// prelude.lua): the host's hash, its breaker failures, its in-flight
// leases, the controller's log and its snapshot; room is left for a
// mutating call's replies (D).
func (s *Store) hostKeys(key string) []string {
	ks := make([]string, 5, 6)
	for i, name := range [5]string{"h", "f", keyLeases, "g", "s"} {
		ks[i] = s.hostKey(key, name)
	}
	return ks
}

// run runs script on key's keys (admit on one of the combiner's lanes)
// and measures the clock offset from the
// reply's "now" when the script returns one.
func (s *Store) run(script *redis.Script, key string, args []any, lane int) (any, error) {
	deadline := time.Now().Add(s.o.Timeout)
	keys := s.hostKeys(key)
	mutating := script == admitScript || script == reportScript
	if mutating {
		// Named, so that sending it again (below) is safe: see prelude.lua.
		keys = append(keys, s.hostKey(key, "d"))
		name := s.worker
		if script == admitScript {
			name += "." + strconv.Itoa(lane) // the combiner's lane: its calls go one at a time
		}
		args = append(args, name+"/"+strconv.FormatUint(s.calls.Add(1), 10))
	}
	c := &call{script: script, tag: key, keys: keys, args: args}
	if script == admitScript {
		c.kind = 'a' // merged with the node's other admit calls and releases (pipe.go)
	}
	sent := time.Now()
	res, err := s.pipelined(deadline, c)
	if err != nil && mutating && time.Now().Before(deadline) && !errors.Is(err, redis.Nil) {
		// Once more within the call's time: the first may have run and
		// lost its reply; then this one gets that reply.
		res, err = s.pipelined(deadline, c)
	}
	if err != nil {
		err = fmt.Errorf("redisstore: %w", err)
		s.failed(err)
		return nil, err
	}
	if !s.o.CallerClock && script == admitScript {
		// Our clock at the reply's midpoint against Redis's.
		mid := sent.Add(time.Since(sent) / 2)
		s.offset.Store(integer(res, 0) - mid.UnixMicro())
	}
	return res, nil
}

// release gives back key's leases ids, in a release call merged with the
// node's next admit calls (pipe.go). A lease Redis does not hear of
// expires there.
func (s *Store) release(key string, ids []string) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	c := &call{kind: 'r', tag: key, keys: []string{s.hostKey(key, keyLeases)}, args: args}
	if _, err := s.pipelined(time.Now().Add(s.o.Timeout), c); err != nil {
		s.failed(fmt.Errorf("redisstore: %w", err))
	}
}

func flag(b bool) int {
	if b {
		return 1
	}
	return 0
}

func micros(us int64) time.Duration { return time.Duration(us) * time.Microsecond }

// integer, str and float read element i of a script's reply, zero when it
// is missing or of another type: a malformed reply refuses nothing and
// invents nothing.
func integer(res any, i int) int64 {
	a, ok := res.([]any)
	if !ok || i >= len(a) {
		return 0
	}
	switch v := a[i].(type) {
	case int64:
		return v
	case string:
		n, _ := strconv.ParseInt(v, 10, 64)
		return n
	}
	return 0
}

func str(res any, i int) string {
	a, ok := res.([]any)
	if !ok || i >= len(a) {
		return ""
	}
	v, _ := a[i].(string)
	return v
}

// slot returns element i of a script's reply (nil when it is missing).
func slot(res any, i int) any {
	a, ok := res.([]any)
	if !ok || i >= len(a) {
		return nil
	}
	return a[i]
}

func float(res any, i int) float64 {
	f, err := strconv.ParseFloat(str(res, i), 64)
	if err != nil || math.IsNaN(f) {
		return 0
	}
	return f
}

// rateOf turns a script's rate (-1: unlimited) into polite's.
func rateOf(r float64) float64 {
	if r < 0 {
		return bucket.Inf
	}
	return r
}
