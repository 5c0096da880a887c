package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/polite-go/polite/guard"
)

//go:embed lua/guard.lua
var guardLua string

var guardScript = redis.NewScript(guardLua)

// GuardOptions configure a GuardStore. Every guard sharing one budget must
// use the same.
type GuardOptions struct {
	// Prefix starts every key, "polite:guard:" if empty.
	Prefix string
	// Timeout bounds one call to Redis; 250 ms if zero.
	Timeout time.Duration
	// Outage is what the guard does while Redis does not answer: Local
	// (the default) decides in this process's memory at each level's rate
	// divided by the live guards it last counted, for MaxDegraded at most
	// (5 minutes if zero), then Closed; Closed refuses with 503; Open
	// admits everything.
	Outage      Outage
	MaxDegraded time.Duration
	// Logger, if set, says when the store degrades and recovers.
	Logger *slog.Logger
	// Now, for tests only, replaces Redis's TIME with the caller's clock.
	Now func() time.Time
}

// GuardStore is a guard.Store in Redis, shared by every guard pointed at
// it: one EVALSHA decides all the levels of a request atomically, on
// Redis's clock. Keys are "<prefix>{<tag>}:<level key>", the tag being the
// request's tenant (its identity when it has none), so in a Redis Cluster
// one tenant's keys share a slot. The global level's key cannot share a
// slot with every tenant: with a ClusterClient, a request with a global
// level fails (use a single Redis, or leave the global level out). A key
// expires when its bucket is full again, so Redis holds only buckets that
// are refilling.
//
// It is safe for concurrent use.
type GuardStore struct {
	c       redis.UniversalClient
	o       GuardOptions
	cluster bool
	worker  string

	degraded atomic.Bool
	workers  atomic.Int64 // live guards last counted, this one included
	mu       sync.Mutex   // guards since
	since    time.Time
	local    *guard.Memory // decides while degraded in Local mode
	done     chan struct{}
	once     sync.Once
}

var _ guard.Store = (*GuardStore)(nil)

// ErrGlobalOnCluster is returned by Decide for a request with a global
// level on a Redis Cluster.
var ErrGlobalOnCluster = errors.New("redisstore: the guard's global level needs a single Redis, not a Cluster: its key cannot share every tenant's slot")

// NewGuard returns a GuardStore on c (a Client, ClusterClient or Ring whose
// MaxRetries is -1: a script whose reply was lost must not run twice).
// Close stops its heartbeat.
func NewGuard(c redis.UniversalClient, o GuardOptions) (*GuardStore, error) {
	if retries(c) > 0 {
		return nil, ErrRetries
	}
	if o.Prefix == "" {
		o.Prefix = "polite:guard:"
	}
	if o.Timeout <= 0 {
		o.Timeout = 250 * time.Millisecond
	}
	if o.MaxDegraded <= 0 {
		o.MaxDegraded = 5 * time.Minute
	}
	_, cluster := c.(*redis.ClusterClient)
	s := &GuardStore{c: c, o: o, cluster: cluster, local: guard.NewMemory(guard.MemoryOptions{}),
		done: make(chan struct{}), worker: strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.FormatUint(uint64(workerSeq.Add(1)), 36)}
	go s.beat()
	return s, nil
}

var workerSeq atomic.Uint32

// Close stops the store's heartbeat and prober; it does not close the
// client.
func (s *GuardStore) Close() error {
	s.once.Do(func() { close(s.done) })
	return nil
}

// Degraded reports whether Redis is unreachable, and the mode in force.
func (s *GuardStore) Degraded() (bool, Outage) { return s.degraded.Load(), s.mode() }

// Decide implements guard.Store.
func (s *GuardStore) Decide(ctx context.Context, r *guard.Request, d *guard.Decision) error {
	keys := make([]string, 0, guard.NumLevels)
	args := make([]any, 2, 2+2*guard.NumLevels)
	args[0] = r.Cost
	args[1] = int64(0)
	if s.o.Now != nil {
		args[1] = s.o.Now().UnixMicro()
	}
	var which [guard.NumLevels]int
	for i, b := range r.Levels {
		if b.Key == nil {
			continue
		}
		if i == int(guard.Global) && s.cluster {
			return ErrGlobalOnCluster
		}
		tag := r.Tag
		if i == int(guard.Global) {
			tag = b.Key
		}
		iv := (b.Interval.Nanoseconds() + 999) / 1000
		which[len(keys)] = i
		keys = append(keys, s.o.Prefix+"{"+string(tag)+"}:"+string(b.Key))
		args = append(args, iv, b.Burst*iv)
	}
	if s.degraded.Load() {
		return s.degradedDecide(ctx, r, d)
	}
	cctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	res, err := guardScript.Run(cctx, s.c, keys, args...).Int64Slice()
	cancel()
	if err == nil && len(res) != 2+len(keys) {
		err = fmt.Errorf("guard script answered %d values for %d keys", len(res), len(keys))
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err() // the client went away: no verdict on Redis
		}
		s.failed(fmt.Errorf("redisstore: %w", err))
		return s.degradedDecide(ctx, r, d)
	}
	*d = guard.Decision{Allowed: res[0] == 1}
	for j := range keys {
		i := which[j]
		d.Debt[i] = time.Duration(res[2+j]) * time.Microsecond
		d.Interval[i] = time.Duration(args[2+2*j].(int64)) * time.Microsecond
	}
	return nil
}

// errClosed is what Decide returns in Closed mode while Redis is down.
var errClosed = errors.New("redisstore: Redis unreachable (outage mode closed)")

// degradedDecide answers while Redis does not.
func (s *GuardStore) degradedDecide(ctx context.Context, r *guard.Request, d *guard.Decision) error {
	switch s.mode() {
	case Closed:
		return errClosed
	case Open:
		*d = guard.Decision{Allowed: true}
		for i, b := range r.Levels {
			d.Interval[i] = b.Interval // full buckets: no debt
		}
		return nil
	}
	// Local: this guard's share of each level's rate.
	n := max(s.workers.Load(), 1)
	local := *r
	for i := range local.Levels {
		local.Levels[i].Interval *= time.Duration(n)
	}
	return s.local.Decide(ctx, &local, d)
}

// failed marks the store degraded; its heartbeat then polls Redis every
// probeEvery and ends the outage when Redis answers.
func (s *GuardStore) failed(err error) {
	s.mu.Lock()
	if s.degraded.Load() {
		s.mu.Unlock()
		return
	}
	s.degraded.Store(true)
	s.since = time.Now()
	mode := s.modeLocked()
	s.mu.Unlock() // a Logger may block: never while holding mu
	s.log(slog.LevelWarn, "guard: redis unreachable: degraded", slog.String("mode", mode.String()),
		slog.Int64("workers", s.workers.Load()), slog.String("reason", err.Error()))
}

// recovered ends an outage.
func (s *GuardStore) recovered() {
	s.mu.Lock()
	d := time.Since(s.since)
	s.degraded.Store(false)
	s.since = time.Time{}
	s.mu.Unlock()
	s.log(slog.LevelInfo, "guard: redis answers again: shared limits back", slog.Duration("degraded", d.Round(time.Millisecond)))
}

func (s *GuardStore) mode() Outage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.modeLocked()
}

func (s *GuardStore) modeLocked() Outage {
	if s.o.Outage == Local && !s.since.IsZero() && time.Since(s.since) > s.o.MaxDegraded {
		return Closed
	}
	return s.o.Outage
}

// beat counts this guard among the live ones and reads how many there are
// (Local mode divides the rates by it), every heartbeat while Redis
// answers and every probeEvery while it does not: the first answer after
// an outage ends it.
func (s *GuardStore) beat() {
	key := s.o.Prefix + "guards"
	for {
		n, err := beatOnce(s.c, key, s.worker, s.o.Timeout)
		if err == nil {
			if n > 0 {
				s.workers.Store(n)
			}
			if s.degraded.Load() {
				s.recovered()
			}
		}
		wait := heartbeat
		if s.degraded.Load() {
			wait = probeEvery
		}
		select {
		case <-s.done:
			return
		case <-time.After(wait):
		}
	}
}

func (s *GuardStore) log(level slog.Level, msg string, attrs ...slog.Attr) {
	if s.o.Logger != nil {
		s.o.Logger.LogAttrs(context.Background(), level, "polite: "+msg, attrs...)
	}
}
