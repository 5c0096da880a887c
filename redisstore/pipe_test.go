package redisstore

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/adaptive"
	"github.com/polite-go/polite/internal/redistest"
)

// TestPipelineReloadsScripts: many callers' calls share pipelines, each
// gets its own reply, and a Redis that lost its scripts (SCRIPT FLUSH, as
// after a restart) gets them again from within a pipeline: nothing
// degrades, every admission of a full bucket is granted.
func TestPipelineReloadsScripts(t *testing.T) {
	addr := redistest.Start(t)
	reg := &polite.Registry{Limits: polite.Limits{Rate: 1000, Burst: 1000, Concurrency: 1000}}
	s, client := newStore(t, addr, reg, Options{Prefix: "pipe:"})
	round := func(name string) {
		var wg sync.WaitGroup
		errs := make(chan string, 256)
		for i := range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h := reg.Get(fmt.Sprintf("h%d.test", i%16))
				defer reg.Put(h)
				for range 8 {
					a := s.Admit(h, polite.Query{Now: time.Now()})
					if !a.Granted {
						errs <- fmt.Sprintf("%+v", a)
						return
					}
					s.Release(h, a.Lease)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Errorf("%s: admission refused: %s", name, e)
		}
		if d, _ := s.Degraded(); d {
			t.Fatalf("%s: the store degraded", name)
		}
	}
	round("scripts loaded")
	if err := client.ScriptFlush(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	round("after SCRIPT FLUSH")
}

// TestScarceSlotReleasedAtOnce: with a small fleet cap, a release is sent
// when it is made, not with the host's next call: another worker gets the
// slot at once.
func TestScarceSlotReleasedAtOnce(t *testing.T) {
	addr := redistest.Start(t)
	limits := polite.Limits{Rate: 1000, Burst: 10, Concurrency: 1}
	regA, regB := &polite.Registry{Limits: limits}, &polite.Registry{Limits: limits}
	a, _ := newStore(t, addr, regA, Options{Prefix: "scarce:"})
	b, _ := newStore(t, addr, regB, Options{Prefix: "scarce:"})
	ha, hb := regA.Get("a.test"), regB.Get("a.test")
	defer regA.Put(ha)
	defer regB.Put(hb)
	adm := a.Admit(ha, polite.Query{Now: time.Now()})
	if !adm.Granted {
		t.Fatalf("first admission = %+v, want granted", adm)
	}
	if got := b.Admit(hb, polite.Query{Now: time.Now()}); got.Granted || got.Reason != polite.ReasonSlot {
		t.Fatalf("another worker's admission while the slot is leased = %+v, want refused for the slot", got)
	}
	a.Release(ha, adm.Lease)
	if got := b.Admit(hb, polite.Query{Now: time.Now()}); !got.Granted {
		t.Errorf("another worker's admission right after the release = %+v, want granted", got)
	}
}

// TestHotHostCombined: many callers admitting, releasing and reporting
// on one host at once, through two lanes of calls, with State asked
// meanwhile: nothing hangs or degrades, and every report's signal reaches
// the host's log once State has flushed the queue.
func TestHotHostCombined(t *testing.T) {
	addr := redistest.Start(t)
	reg := &polite.Registry{Limits: polite.Limits{Rate: 1e6, Burst: 1 << 20, Concurrency: 1 << 20}}
	s, client := newStore(t, addr, reg, Options{Prefix: "hot:", Adaptive: &adaptive.Config{Max: 1e6, MaxConcurrency: 1 << 20}})
	const callers, each = 32, 10
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := reg.Get("a.test")
			defer reg.Put(h)
			for j := range each {
				now := time.Now()
				a := s.Admit(h, polite.Query{Now: now, MaxWait: time.Second})
				for !a.Granted && a.Reason == polite.ReasonSlot {
					// The controller's cap, small until it has heard answers.
					time.Sleep(a.Wait)
					now = time.Now()
					a = s.Admit(h, polite.Query{Now: now, MaxWait: time.Second})
				}
				if !a.Granted {
					t.Errorf("admission refused: %+v", a)
					return
				}
				s.Release(h, a.Lease)
				s.Report(h, polite.Report{Now: now.Add(time.Millisecond), Sent: now, Outcome: polite.OK, Status: 200,
					Latency: time.Millisecond, Attempt: 1})
				if (i+j)%7 == 0 {
					s.State(h, time.Now())
				}
			}
		}()
	}
	wg.Wait()
	h := reg.Get("a.test")
	defer reg.Put(h)
	s.State(h, time.Now())
	if d, _ := s.Degraded(); d {
		t.Fatal("the store degraded")
	}
	if n := client.LLen(context.Background(), "hot:{a.test}:g").Val(); n != callers*each {
		t.Errorf("the host's log holds %d entries after %d reports, want one each", n, callers*each)
	}
}

// TestCloseSendsQueue: a release waiting for the host's next call is sent
// by Close, not lost with the worker.
func TestCloseSendsQueue(t *testing.T) {
	addr := redistest.Start(t)
	reg := &polite.Registry{Limits: polite.Limits{Rate: 1000, Burst: 10, Concurrency: 1000}}
	s, client := newStore(t, addr, reg, Options{Prefix: "close:"})
	h := reg.Get("a.test")
	defer reg.Put(h)
	a := s.Admit(h, polite.Query{Now: time.Now()})
	if !a.Granted {
		t.Fatalf("admission = %+v, want granted", a)
	}
	s.Release(h, a.Lease)
	if n := client.ZCount(context.Background(), "close:{a.test}:n", "(-inf", "+inf").Val(); n != 1 {
		t.Fatalf("%d leases before the queue is sent, want 1 (the release waits for a call)", n)
	}
	s.Close()
	if n := client.ZCount(context.Background(), "close:{a.test}:n", "(-inf", "+inf").Val(); n != 0 {
		t.Errorf("%d leases after Close, want 0", n)
	}
}

// TestMerge: on a single Redis, every admit call and release of a
// pipeline goes in one run of the admit script (up to maxMerged calls);
// on a Cluster only those of one host (one slot) share one. Other
// scripts' calls go as they are.
func TestMerge(t *testing.T) {
	calls := func(n int) []*call {
		var cs []*call
		for i := range n {
			kind := byte('a')
			if i%3 == 2 {
				kind = 'r'
			}
			cs = append(cs, &call{kind: kind, tag: fmt.Sprintf("h%d.test", i%4), args: []any{1}})
		}
		return append(cs, &call{script: stateScript, tag: "h0.test"})
	}
	single := &Store{c: redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})}
	cluster := &Store{c: redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})}
	defer single.c.Close()
	defer cluster.c.Close()
	sizes := func(gs [][]*call) []int {
		var n []int
		for _, g := range gs {
			n = append(n, len(g))
		}
		return n
	}
	for _, tc := range []struct {
		name  string
		s     *Store
		calls int
		want  []int
	}{
		{"single", single, 12, []int{12}},
		{"single, past maxMerged", single, maxMerged + 6, []int{maxMerged, 6}},
		{"cluster", cluster, 12, []int{3, 3, 3, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			groups, rest := tc.s.merge(calls(tc.calls))
			if got := sizes(groups); !slices.Equal(got, tc.want) || len(rest) != 1 || rest[0].script != stateScript {
				t.Errorf("merge = groups %v, %d left, want groups %v and the state call left", got, len(rest), tc.want)
			}
			for _, g := range groups {
				if tc.s == cluster && slices.ContainsFunc(g, func(c *call) bool { return c.tag != g[0].tag }) {
					t.Errorf("a Cluster's merged call spans hosts: %v", g)
				}
			}
		})
	}
}

// TestMergedCall: one merged call carries admissions to two hosts and a
// release of a third's lease, each answered as its own call would be.
func TestMergedCall(t *testing.T) {
	addr := redistest.Start(t)
	reg := &polite.Registry{Limits: polite.Limits{Rate: 1000, Burst: 1, Concurrency: 100}}
	s, client := newStore(t, addr, reg, Options{Prefix: "merge:", CallerClock: true})
	ctx := context.Background()
	now := time.Now()
	c := reg.Get("c.test")
	defer reg.Put(c)
	lease := s.Admit(c, polite.Query{Now: now}).Lease
	leases := func(key string) int64 { return client.ZCount(ctx, "merge:{"+key+"}:n", "(-inf", "+inf").Val() } // not its keeper
	if n := leases("c.test"); lease == 0 || n != 1 {
		t.Fatalf("c.test's lease %d, %d in its set, want one", lease, n)
	}
	admit := func(key string, admissions int) *call {
		args := s.args(now, reg.LimitsFor(key), adEpoch) // no controller: none of its arguments
		a := args[nCommon:]
		a[adCap], a[adPressed] = 100, 0
		args = append(args, 0, 0, admissions) // no releases, no reports
		for i := range admissions {
			args = append(args, 0, 1, fmt.Sprintf("%s:%d", key, i), 1)
		}
		return &call{kind: 'a', tag: key, keys: append(s.hostKeys(key), s.hostKey(key, "d")),
			args: append(args, "w.0/"+key)}
	}
	calls := []*call{admit("a.test", 2), {kind: 'r', tag: "c.test", keys: []string{"merge:{c.test}:n"}, args: []any{s.leaseID(lease)}},
		admit("b.test", 1)}
	keys, args := s.mergedArgs(calls)
	res, err := admitScript.Run(ctx, client, keys, args...).Result()
	if err != nil {
		t.Fatal(err)
	}
	replies, _ := res.([]any)
	if len(replies) != 3 {
		t.Fatalf("a merged call of 3 = %v, want 3 replies", res)
	}
	// Burst 1: a.test's first admission has its token, its second not;
	// b.test's has its own.
	for i, want := range []struct {
		reply int
		slot  int
		code  int64
	}{{0, 0, 0}, {0, 1, 4}, {2, 0, 0}} {
		if got := integer(replies[want.reply], nAdmitHead+want.slot*nAdmitOut+aoCode); got != want.code {
			t.Errorf("admission %d: code %d, want %d (%v)", i, got, want.code, replies[want.reply])
		}
	}
	if replies[1] != int64(1) {
		t.Errorf("the release's reply = %v, want 1 (one lease given back)", replies[1])
	}
	for key, want := range map[string]int64{"a.test": 1, "b.test": 1, "c.test": 0} {
		if n := leases(key); n != want {
			t.Errorf("%s holds %d leases, want %d", key, n, want)
		}
	}
}
