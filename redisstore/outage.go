package redisstore

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/polite-go/polite"
)

// Outage says what a worker does while Redis does not answer. Whatever the
// mode, no request waits on a dead Redis longer than Options.Timeout, and
// the store goes back to Redis within a second of it answering again.
type Outage int

const (
	// Local (the default): each worker sends each host its part of the
	// host's limits, dealt out among the live workers this one last saw
	// so that no second sees more than the host's rate plus its burst
	// from the fleet (see shareOf; a host whose rate and burst make fewer
	// requests a second than there are workers is sent to by that many),
	// for Options.MaxDegraded at most; Closed after that. Pauses, blocks
	// and breakers are this worker's own meanwhile.
	Local Outage = iota
	// Closed sends nothing until Redis is back: requests wait (with
	// ReasonStore) rather than fail.
	Closed
	// Open runs each worker at each host's full rate: up to the worker
	// count times the rate in all. Only for uses where politeness is not
	// the point.
	Open
)

func (o Outage) String() string {
	switch o {
	case Local:
		return "local"
	case Closed:
		return "closed"
	case Open:
		return "open"
	}
	return "unknown"
}

// ParseOutage reads "local", "closed" or "open".
func ParseOutage(s string) (Outage, bool) {
	for _, o := range []Outage{Local, Closed, Open} {
		if o.String() == s {
			return o, true
		}
	}
	return 0, false
}

// Outage timing.
const (
	// heartbeat is how often a worker says it is alive; a worker silent for
	// workerTTL is no longer counted.
	heartbeat = time.Second
	workerTTL = 5 * time.Second
	// probeEvery is how often a degraded store asks Redis whether it is
	// back: recovery within a second of it answering.
	probeEvery = 500 * time.Millisecond
	// closedPoll is how soon a request refused in Closed mode asks again.
	closedPoll = 250 * time.Millisecond
)

// health is the store's view of Redis: healthy, or degraded since when and
// why, with the live worker count and this worker's rank among them last
// seen.
type health struct {
	degraded atomic.Bool
	workers  atomic.Int64 // live workers last seen, this one included; 0 before any count
	rank     atomic.Int64 // this worker's place among them (their names sorted)
	// tail is when the shares of the last outage stop applying, in Unix ns
	// on the callers' clock: 0 when they do not, tailNext before the first
	// admission after it.
	tail atomic.Int64

	mu     sync.Mutex // guards since, why, probe and closed; count and rank are stored under it
	since  time.Time
	why    error
	probe  bool // a prober runs
	closed bool // the switch from Local to Closed has been said

	local polite.Store // the local store used while degraded (Local, Open)
}

// failed records a failed call: the store is degraded from now on. It
// logs after letting go of health.mu: a Logger may block (a display that
// is busy asking Status), and Status takes the lock.
func (s *Store) failed(err error) {
	h := &s.health
	h.mu.Lock()
	var attrs []slog.Attr
	if !h.degraded.Load() {
		s.shares.Clear() // each outage starts its shares empty
		h.tail.Store(0)
		h.degraded.Store(true)
		h.since, h.why, h.closed = time.Now(), err, false
		attrs = []slog.Attr{slog.String("mode", s.o.Outage.String()), slog.Int64("workers", h.workers.Load()),
			slog.String("reason", err.Error())}
		if s.o.Outage == Local {
			attrs = append(attrs, slog.Duration("closed_after", s.o.MaxDegraded))
		}
	}
	if !h.probe {
		h.probe = true
		go s.probe()
	}
	h.mu.Unlock()
	if attrs != nil {
		s.log(slog.LevelWarn, "redis unreachable: degraded", attrs...)
	}
}

// mode returns the outage mode in force: Local turns Closed once the store
// has been degraded for MaxDegraded.
func (s *Store) mode() Outage {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	return s.modeLocked()
}

// modeLocked is mode with health.mu held.
func (s *Store) modeLocked() Outage {
	if s.o.Outage == Local && !s.health.since.IsZero() && time.Since(s.health.since) > s.o.MaxDegraded {
		return Closed
	}
	return s.o.Outage
}

// Status is a store's view of Redis, for a display or a watchdog.
type Status struct {
	// Degraded: Redis does not answer, since Since.
	Degraded bool
	Since    time.Time
	// Mode is the outage mode in force while Degraded: Local turns Closed
	// once it has lasted Options.MaxDegraded, at LocalUntil (zero unless
	// Mode is Local). ClosedSince is when nothing more was sent (zero
	// unless Mode is Closed).
	Mode        Outage
	LocalUntil  time.Time
	ClosedSince time.Time
	// Workers is the live worker count last seen, this one included (0
	// before any count).
	Workers int
}

// Status returns the store's view of Redis now.
func (s *Store) Status() Status {
	h := &s.health
	h.mu.Lock()
	defer h.mu.Unlock()
	st := Status{Degraded: h.degraded.Load(), Workers: int(h.workers.Load())}
	if !st.Degraded {
		return st
	}
	st.Since, st.Mode = h.since, s.modeLocked()
	switch {
	case st.Mode == Local:
		st.LocalUntil = h.since.Add(s.o.MaxDegraded)
	case st.Mode == Closed && s.o.Outage == Local:
		st.ClosedSince = h.since.Add(s.o.MaxDegraded)
	case st.Mode == Closed:
		st.ClosedSince = h.since
	}
	return st
}

// sayClosed logs the switch from Local to Closed, once per outage, when it
// has come; after letting go of health.mu, as failed does.
func (s *Store) sayClosed() {
	h := &s.health
	h.mu.Lock()
	if h.closed || s.o.Outage != Local || !h.degraded.Load() || s.modeLocked() != Closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	d, why := time.Since(h.since).Round(time.Millisecond), h.why.Error()
	h.mu.Unlock()
	s.log(slog.LevelWarn, "redis still unreachable: closed, nothing sent until it answers", slog.String("mode", Closed.String()),
		slog.Duration("degraded", d), slog.String("reason", why))
}

// probe asks Redis every probeEvery until it answers, then makes the store
// healthy again.
func (s *Store) probe() {
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		s.sayClosed()
		ctx, cancel := context.WithTimeout(context.Background(), s.o.Timeout)
		err := s.ping(ctx)
		cancel()
		if err != nil {
			continue
		}
		h := &s.health
		h.mu.Lock()
		d, mode := time.Since(h.since), s.modeLocked()
		h.degraded.Store(false)
		h.since, h.why, h.probe, h.closed = time.Time{}, nil, false, false
		h.tail.Store(tailNext) // the shares apply a little longer (see shareTail)
		h.mu.Unlock()
		s.log(slog.LevelInfo, "redis answers again: shared limits back", slog.String("was", mode.String()),
			slog.Duration("degraded", d.Round(time.Millisecond)))
		return
	}
}

// ping checks Redis through the script path: a state read of a canary key.
func (s *Store) ping(ctx context.Context) error {
	return stateScript.Run(ctx, s.c, s.hostKeys("polite-canary"), 0, -1, 1, 1000).Err()
}

// beatOnce counts member among the live ones in the sorted set key for
// workerTTL, drops those whose time ran out, and returns how many are live,
// in one transaction.
func beatOnce(c redis.UniversalClient, key, member string, timeout time.Duration) (int64, error) {
	n, _, err := beatRanked(c, key, member, timeout)
	return n, err
}

// beatRanked is beatOnce, which also returns member's rank among the live
// ones, their names sorted: every worker that reads the same set ranks the
// same way.
func beatRanked(c redis.UniversalClient, key, member string, timeout time.Duration) (n, rank int64, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	now := time.Now()
	var live *redis.StringSliceCmd
	_, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, key, redis.Z{Score: float64(now.Add(workerTTL).UnixMilli()), Member: member})
		p.ZRemRangeByScore(ctx, key, "-inf", "("+itoa(now.UnixMilli()))
		live = p.ZRange(ctx, key, 0, -1)
		p.PExpire(ctx, key, 2*workerTTL)
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	names := live.Val()
	for _, w := range names {
		if w < member {
			rank++
		}
	}
	return int64(len(names)), rank, nil
}

// beat keeps this worker counted among the live ones and reads the count
// and its rank, every heartbeat until Close.
func (s *Store) beat() {
	t := time.NewTicker(heartbeat)
	defer t.Stop()
	key := s.o.Prefix + "workers"
	for n := 0; ; n++ {
		if n%64 == 63 {
			s.sweepReplicas(time.Now())
		}
		if n, rank, err := beatRanked(s.c, key, s.worker, s.o.Timeout); err == nil && n > 0 {
			s.health.mu.Lock() // count and rank change together
			s.health.workers.Store(n)
			s.health.rank.Store(rank)
			s.health.mu.Unlock()
		}
		select {
		case <-s.done:
			return
		case <-t.C:
		}
	}
}

// degradedAdmit answers an admission while Redis does not.
func (s *Store) degradedAdmit(h *polite.Host, q polite.Query) polite.Admission {
	switch s.mode() {
	case Closed:
		return polite.Admission{Wait: closedPoll, Poll: closedPoll, Reason: polite.ReasonStore}
	case Local:
		return s.shareAdmit(h, q)
	}
	return s.health.local.Admit(h, q)
}

// degradedState is State while Redis does not answer: the local store's,
// with what the outage mode adds. A host sent nothing (Closed, or not this
// worker's in Local) reads as paused for closedPoll with ReasonStore, and in
// Local a host's rate and next token are this worker's share's: a
// scheduler that asks Ready then waits rather than asking again at once.
func (s *Store) degradedState(h *polite.Host, now time.Time) polite.HostState {
	st := s.health.local.State(h, now)
	store := func() {
		if until := now.Add(closedPoll); st.PausedUntil.Before(until) {
			st.PausedUntil, st.PauseWhy = until, polite.ReasonStore
		}
	}
	switch s.mode() {
	case Closed:
		store()
	case Local:
		sh, ok := s.shareNow(h)
		switch {
		case !ok:
		case sh.rate == 0:
			store()
		default:
			st.Rate = sh.rate
			if v, ok := s.shares.Load(h.Key()); ok && v.(*gcra).share == sh {
				st.Tokens, st.NextToken = v.(*gcra).tokens(now)
			}
		}
	}
	return st
}

func (s *Store) log(level slog.Level, msg string, attrs ...slog.Attr) {
	if s.o.Logger != nil {
		s.o.Logger.LogAttrs(context.Background(), level, "polite: "+msg, attrs...)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
