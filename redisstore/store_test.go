package redisstore

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/polite-go/polite"
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
