package redisstore

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/internal/redistest"
)

// TestFleetAIMD: one wave of throttles, however many workers heard it, is
// one cut; a later wave is another; the rate grows only while demand
// presses on it. The scripts follow a fake clock.
func TestFleetAIMD(t *testing.T) {
	addr := redistest.Start(t)
	synctest.Test(t, func(t *testing.T) {
		reg := &polite.Registry{Limits: polite.Limits{Rate: 10, Burst: 1, Concurrency: 1000}}
		s, _ := newStore(t, addr, reg, Options{Prefix: "aimd:", CallerClock: true, Adaptive: &Adaptive{Max: 100}})
		h := reg.Get("a.test")
		defer reg.Put(h)
		t0 := time.Now()
		rate := func(at time.Time) float64 { return s.State(h, at).Rate }
		throttle := func(sent, heard time.Time) polite.Verdict {
			return s.Report(h, polite.Report{Now: heard, Sent: sent, Outcome: polite.Throttled, Status: 429, Header: http.Header{}, Attempt: 1})
		}

		// Eight workers' requests, all sent before the first 429 was heard.
		// The first's verdict says what the rate was before its cut (an
		// Event's Prev); the Redis store has no capacity estimate or phase.
		for i := range 8 {
			v := throttle(t0, t0.Add(time.Duration(i+1)*time.Millisecond))
			if i == 0 && (v.Rate != 5 || v.RateFrom != 10 || v.Capacity != 0 || v.Phase != "") {
				t.Errorf("first throttle's verdict: rate %v from %v, capacity %v, phase %q; want 5 from 10, 0, \"\"",
					v.Rate, v.RateFrom, v.Capacity, v.Phase)
			}
			if i > 0 && (v.Rate != 0 || v.RateFrom != 0) {
				t.Errorf("throttle %d of the wave: rate %v from %v, want unchanged (0 from 0)", i+1, v.Rate, v.RateFrom)
			}
		}
		if r := rate(t0.Add(10 * time.Millisecond)); r != 5 {
			t.Fatalf("after one wave of 8 throttles the rate is %v, want 5 (one cut of 10 by half)", r)
		}
		// A request sent after that wave was heard, throttled too: a new wave.
		t1 := t0.Add(time.Second)
		throttle(t1, t1.Add(time.Millisecond))
		if r := rate(t1.Add(2 * time.Millisecond)); r != 2.5 {
			t.Fatalf("after a second wave the rate is %v, want 2.5", r)
		}

		// No demand: answers come with the bucket full; nothing grows.
		t2 := t1.Add(10 * time.Second)
		for i := range 10 {
			now := t2.Add(time.Duration(i) * time.Second)
			s.Report(h, polite.Report{Now: now, Sent: now, Outcome: polite.OK, Status: 200, Attempt: 1})
		}
		if r := rate(t2.Add(10 * time.Second)); r != 2.5 {
			t.Errorf("answers with no demand pressing moved the rate to %v, want 2.5", r)
		}
		// Demand: every admission takes the one token, the answer finds
		// the bucket empty; the rate grows (10 % a second) toward Max.
		t3 := t2.Add(20 * time.Second)
		for i := range 100 {
			now := t3.Add(time.Duration(i) * 100 * time.Millisecond)
			s.Admit(h, polite.Query{Now: now})
			s.Report(h, polite.Report{Now: now, Sent: now, Outcome: polite.OK, Status: 200, Attempt: 1})
		}
		if r := rate(t3.Add(10 * time.Second)); r <= 2.5*1.5 || r > 100 {
			t.Errorf("after 10 s of demand pressing on 2.5 req/s the rate is %v, want well above it", r)
		}
	})
}
