package redisstore

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/adaptive"
	"github.com/polite-go/polite/breaker"
	"github.com/polite-go/polite/internal/redistest"
	"github.com/polite-go/polite/storetest"
)

var caseN atomic.Int64

// newStore returns a Store with options o for reg, on a client of the
// redis-server at addr (returned too), both closed when t ends. The pool is
// as large as the suite's most concurrent case: go-redis waits for a
// connection with timers from a package-wide pool, which a synctest bubble
// must not share with another.
func newStore(t *testing.T, addr string, reg *polite.Registry, o Options) (*Store, *redis.Client) {
	t.Helper()
	client := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 128})
	t.Cleanup(func() { client.Close() })
	s, err := New(client, reg, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, client
}

// TestConformance runs the Store conformance suite against a real
// redis-server, the scripts following the suite's fake clock.
func TestConformance(t *testing.T) {
	addr := redistest.Start(t)
	storetest.Run(t, func(t *testing.T, c storetest.Config) (polite.Store, *polite.Registry) {
		reg := &polite.Registry{Limits: c.Limits, IdleTimeout: c.IdleTimeout}
		s, _ := newStore(t, addr, reg, Options{
			Prefix:       fmt.Sprintf("t%d:", caseN.Add(1)),
			LocalOptions: polite.LocalOptions{Breaker: breaker.Config{Threshold: c.BreakerThreshold, OpenDelay: c.BreakerOpen, Jitter: -1}},
			IdleTimeout:  c.IdleTimeout,
			LeaseTTL:     c.LeaseTTL,
			CallerClock:  true,
		})
		return s, reg
	})
}

func TestNewRefusesRetryingClient(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	if _, err := New(c, &polite.Registry{}, Options{}); err != ErrRetries {
		t.Errorf("New with a client that retries = %v, want ErrRetries", err)
	}
}

// TestCluster runs every script against a three-node Redis Cluster, for
// hosts whose keys land on different nodes: each script touches one host's
// keys only, all in the slot of its hash tag, so none fails with CROSSSLOT
// (a failed call would degrade the store). Real time: go-redis's cluster
// client keeps goroutines a synctest bubble cannot wait out.
func TestCluster(t *testing.T) {
	addrs := redistest.StartCluster(t, 3)
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRetries: -1})
	defer client.Close()
	reg := &polite.Registry{Limits: polite.Limits{Rate: 100, Burst: 2, Concurrency: 2}}
	s, err := New(client, reg, Options{Prefix: "cluster:"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	nodes := map[string]bool{}
	for i := range 12 {
		key := fmt.Sprintf("host%d.test", i)
		h := reg.Get(key)
		now := time.Now()
		a := s.Admit(h, polite.Query{Now: now})
		if !a.Granted || a.Lease == 0 {
			t.Fatalf("%s: Admit = %+v, want granted with a lease", key, a)
		}
		hdr := http.Header{"Retry-After": {"1"}}
		v := s.Report(h, polite.Report{Now: now, Sent: now, Outcome: polite.Throttled, Status: 429, Header: hdr, Attempt: 1})
		if v.Pause != time.Second {
			t.Errorf("%s: Report(429, Retry-After 1) paused %v, want 1s", key, v.Pause)
		}
		s.Keep(h, now, now, 1)
		s.Cancel(h, now, 1)
		s.SetRate(h, now, 50)
		s.SetCeiling(h, now, polite.ReasonCrawlDelay, 10)
		s.Release(h, a.Lease)
		if st := s.State(h, now); st.PausedUntil.IsZero() || st.Rate != 10 || st.InFlight != 0 {
			t.Errorf("%s: State = %+v, want paused, rate 10 (the crawl-delay ceiling), nothing in flight", key, st)
		}
		if d, _ := s.Degraded(); d {
			t.Fatalf("%s: the store degraded: a script failed on the cluster", key)
		}
		reg.Put(h)
		addr, err := client.MasterForKey(context.Background(), "cluster:{"+key+"}:h")
		if err == nil {
			nodes[addr.String()] = true
		}
	}
	if len(nodes) < 2 {
		t.Errorf("the hosts' keys landed on %d node(s); the test wants them spread", len(nodes))
	}
}

// TestOneController: the fleet's adaptive rate is polite's controller,
// answer by answer, whether one worker hears every answer or three hear
// them in turn (storetest.RunAdaptive, the cases the local store passes).
func TestOneController(t *testing.T) {
	addr := redistest.Start(t)
	for _, workers := range []int{1, 3} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			var stores []*Store
			defer func() {
				var restored int64
				for _, s := range stores {
					restored += s.restores.Load()
				}
				if workers > 1 && restored == 0 {
					t.Errorf("no late joiner restored a snapshot: the snapshot path went untested")
				}
			}()
			storetest.RunAdaptive(t, func(t *testing.T, c storetest.Config, workers int) []storetest.Worker {
				prefix := fmt.Sprintf("one%d:", caseN.Add(1))
				var fleet []storetest.Worker
				for range workers {
					reg := &polite.Registry{Limits: c.Limits}
					s, _ := newStore(t, addr, reg, Options{
						Prefix:       prefix,
						LocalOptions: polite.LocalOptions{Breaker: breaker.Config{Threshold: c.BreakerThreshold, OpenDelay: c.BreakerOpen, Jitter: -1}},
						LeaseTTL:     c.LeaseTTL,
						Adaptive:     c.Adaptive,
						CallerClock:  true,
					})
					stores = append(stores, s)
					fleet = append(fleet, storetest.Worker{Store: s, Registry: reg})
				}
				return fleet
			}, workers)
		})
	}
}

// TestLogRolledBack: Redis restarted from an older dump (the host's log
// has the same start but fewer entries than a worker heard): the worker's
// replica starts again from the log instead of skipping the entries it
// thinks it heard, and the fleet's rate moves on.
func TestLogRolledBack(t *testing.T) {
	addr := redistest.Start(t)
	reg := &polite.Registry{Limits: polite.Limits{Rate: 5, Burst: 5, Concurrency: 8}}
	s, client := newStore(t, addr, reg, Options{Prefix: "roll:", CallerClock: true, Adaptive: &adaptive.Config{Max: 200}})
	h := reg.Get("a.test")
	defer reg.Put(h)
	ctx := context.Background()
	keys := []string{"roll:{a.test}:h", "roll:{a.test}:g", "roll:{a.test}:s"}
	t0 := time.Now()
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * 150 * time.Millisecond) }
	s.Admit(h, polite.Query{Now: t0})
	ok := func(i int) {
		lat := 10 * time.Millisecond
		if i > 20 {
			lat = 40 * time.Millisecond // the answers after the rollback differ from those it lost
		}
		s.Report(h, polite.Report{Now: at(i), Sent: at(i).Add(-lat), Outcome: polite.OK, Status: 200,
			Latency: lat, Attempt: 1})
	}
	for i := 1; i <= 10; i++ {
		ok(i)
	}
	s.State(h, at(10)) // sends what is queued
	dumps := map[string]string{}
	for _, k := range keys {
		if d, err := client.Dump(ctx, k).Result(); err == nil {
			dumps[k] = d
		}
	}
	for i := 11; i <= 20; i++ {
		ok(i)
	}
	s.State(h, at(20))
	for k, d := range dumps {
		if err := client.RestoreReplace(ctx, k, 0, d).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i := 21; i <= 30; i++ {
		ok(i)
	}
	// A worker that joins now hears the log from its first entry; the
	// first worker's replica must agree with it, entry for entry.
	reg2 := &polite.Registry{Limits: reg.Limits}
	s2, _ := newStore(t, addr, reg2, Options{Prefix: "roll:", CallerClock: true, Adaptive: &adaptive.Config{Max: 200}})
	h2 := reg2.Get("a.test")
	defer reg2.Put(h2)
	s2.Report(h2, polite.Report{Now: at(31), Sent: at(31), Outcome: polite.OK, Status: 200, Latency: 10 * time.Millisecond, Attempt: 1})
	ok(32)
	s2.Report(h2, polite.Report{Now: at(33), Sent: at(33), Outcome: polite.OK, Status: 200, Latency: 10 * time.Millisecond, Attempt: 1})
	snap := func(s *Store) []byte {
		v, _ := s.replicas.Load("a.test")
		r := v.(*replica)
		r.mu.Lock()
		defer r.mu.Unlock()
		b, _ := r.ctl.MarshalBinary()
		return b
	}
	s.State(h, at(34)) // sends what is queued
	s2.State(h2, at(34))
	s.Report(h, polite.Report{Now: at(35), Sent: at(35), Outcome: polite.OK, Status: 200, Latency: 10 * time.Millisecond, Attempt: 1})
	s2.Report(h2, polite.Report{Now: at(36), Sent: at(36), Outcome: polite.OK, Status: 200, Latency: 10 * time.Millisecond, Attempt: 1})
	s.State(h, at(37))
	s2.State(h2, at(37))
	// Both hear the log to its end: a canceled request appends nothing.
	s.Report(h, polite.Report{Now: at(38), Sent: at(38), Outcome: polite.Canceled, Attempt: 1})
	s2.Report(h2, polite.Report{Now: at(38), Sent: at(38), Outcome: polite.Canceled, Attempt: 1})
	s.State(h, at(39))
	s2.State(h2, at(39))
	if !bytes.Equal(snap(s), snap(s2)) {
		t.Errorf("after the log rolled back, the first worker's replica differs from one that heard the log from its start")
	}
}

// TestExpiredLeasesDropped: leases whose workers never gave them back
// leave the host's lease set within a second of the next admission past
// their expiry, though the cap is far from full: the count skips dropping
// them between (see inflight in prelude.lua), never for longer.
func TestExpiredLeasesDropped(t *testing.T) {
	addr := redistest.Start(t)
	reg := &polite.Registry{Limits: polite.Limits{Rate: 1000, Burst: 100, Concurrency: 1000}}
	s, client := newStore(t, addr, reg, Options{Prefix: "exp:", CallerClock: true, LeaseTTL: time.Second})
	h := reg.Get("a.test")
	defer reg.Put(h)
	leases := func() int64 {
		t.Helper()
		n, err := client.ZCount(context.Background(), "exp:{a.test}:n", "(-inf", "+inf").Result() // not its keeper
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	t0 := time.Now()
	for range 5 {
		if a := s.Admit(h, polite.Query{Now: t0}); !a.Granted {
			t.Fatalf("admission at t0 refused: %+v", a)
		}
	}
	if n := leases(); n != 5 {
		t.Fatalf("leases after 5 admissions = %d, want 5", n)
	}
	// Half a second on, none has expired: all count.
	if a := s.Admit(h, polite.Query{Now: t0.Add(500 * time.Millisecond)}); !a.Granted {
		t.Fatalf("admission at t0+0.5s refused: %+v", a)
	}
	if n := leases(); n != 6 {
		t.Errorf("leases at t0+0.5s = %d, want 6", n)
	}
	// At t0+1.2s the first five have expired, and the last drop was 1.2 s
	// ago: they go; the one of t0+0.5s stays.
	if a := s.Admit(h, polite.Query{Now: t0.Add(1200 * time.Millisecond)}); !a.Granted {
		t.Fatalf("admission at t0+1.2s refused: %+v", a)
	}
	if n := leases(); n != 2 {
		t.Errorf("leases at t0+1.2s = %d, want 2 (the 5 expired ones dropped)", n)
	}
}

// TestLeaseSetKept: releases that give back every lease leave the host's
// lease set in place (its keeper), with its expiry: the next admission
// need not create it again, and it never lives without one.
func TestLeaseSetKept(t *testing.T) {
	addr := redistest.Start(t)
	reg := &polite.Registry{Limits: polite.Limits{Rate: 1000, Burst: 100, Concurrency: 4}} // scarce: released at once
	s, client := newStore(t, addr, reg, Options{Prefix: "keep:"})
	h := reg.Get("a.test")
	defer reg.Put(h)
	ctx := context.Background()
	for i := range 3 {
		a := s.Admit(h, polite.Query{Now: time.Now()})
		if !a.Granted {
			t.Fatalf("admission %d refused: %+v", i, a)
		}
		s.Release(h, a.Lease)
		n, err := client.ZCount(ctx, "keep:{a.test}:n", "(-inf", "+inf").Result()
		ttl := client.PTTL(ctx, "keep:{a.test}:n").Val()
		if err != nil || n != 0 || ttl <= 0 {
			t.Errorf("after admission and release %d: %d leases (%v), the set's expiry %v; want none, the set kept with an expiry",
				i, n, err, ttl)
		}
	}
	if st := s.State(h, time.Now()); st.InFlight != 0 || st.Concurrency != 4 {
		t.Errorf("State = %d of %d in flight, want 0 of 4 (the keeper is no lease)", st.InFlight, st.Concurrency)
	}
}

// TestHotLeaseSet: a host with more than 32 requests in flight gets a
// second keeper, which makes its lease set a skiplist (each ZADD and ZREM
// finds its member at once); one with a few stays a listpack. Neither
// keeper counts as a lease, and the leases still come and go.
func TestHotLeaseSet(t *testing.T) {
	addr := redistest.Start(t)
	reg := &polite.Registry{Limits: polite.Limits{Rate: 1e6, Burst: 1000, Concurrency: 1000}}
	s, client := newStore(t, addr, reg, Options{Prefix: "hot:"})
	ctx := context.Background()
	admit := func(key string, n int) []uint64 {
		t.Helper()
		h := reg.Get(key)
		defer reg.Put(h)
		var leases []uint64
		for i := range n {
			a := s.Admit(h, polite.Query{Now: time.Now()})
			if !a.Granted {
				t.Fatalf("%s: admission %d refused: %+v", key, i, a)
			}
			leases = append(leases, a.Lease)
		}
		return leases
	}
	check := func(key string, leases int64, encoding string) {
		t.Helper()
		k := "hot:{" + key + "}:n"
		n, err := client.ZCount(ctx, k, "(-inf", "+inf").Result()
		enc := client.ObjectEncoding(ctx, k).Val()
		if err != nil || n != leases || enc != encoding {
			t.Errorf("%s: %d leases (%v), encoded %q; want %d, %q", key, n, err, enc, leases, encoding)
		}
	}
	admit("few.test", 3)
	check("few.test", 3, "listpack")
	hot := admit("hot.test", 40)
	check("hot.test", 40, "skiplist")
	h := reg.Get("hot.test")
	for _, l := range hot {
		s.Release(h, l)
	}
	defer reg.Put(h)
	if st := s.State(h, time.Now()); st.InFlight != 0 { // sends the queued releases first
		t.Errorf("State of the hot host after every release: %d in flight, want 0 (no keeper is a lease)", st.InFlight)
	}
	check("hot.test", 0, "skiplist")
}
