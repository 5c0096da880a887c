package redisstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/polite-go/polite"
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
