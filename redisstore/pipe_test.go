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
