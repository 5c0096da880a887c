package redisstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

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
	if n := client.ZCard(context.Background(), "close:{a.test}:l").Val(); n != 1 {
		t.Fatalf("%d leases before the queue is sent, want 1 (the release waits for a call)", n)
	}
	s.Close()
	if n := client.ZCard(context.Background(), "close:{a.test}:l").Val(); n != 0 {
		t.Errorf("%d leases after Close, want 0", n)
	}
}
