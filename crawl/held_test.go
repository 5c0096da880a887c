package crawl

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/polite-go/polite"
)

// TestHeldSpells: a URL handed out after its host held it back carries the
// spells it was held, each with its reason and length (issue 33, item 2:
// a job held at 0.5/s by a rule reported "waited: none").
func TestHeldSpells(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		next := start // the host's next token
		slotBusyUntil := start.Add(1200 * time.Millisecond)
		s := newSched(func(h *host, now time.Time) (time.Duration, polite.Reason) {
			if now.Before(slotBusyUntil) && now.After(start) {
				return 300 * time.Millisecond, polite.ReasonSlot // poll: another client holds the slots
			}
			if now.Before(next) {
				return next.Sub(now), polite.ReasonRate
			}
			next = now.Add(500 * time.Millisecond)
			return 0, ""
		})
		go s.clock()
		defer s.Stop()
		s.mu.Lock()
		h := &host{key: "a.test"}
		s.hosts[h.key] = h
		for i := range 3 {
			it := &item{id: int64(i + 1), host: h}
			h.hold(it)
			s.requeue(it, time.Time{}, false, start)
		}
		s.mu.Unlock()
		var got []*item
		for range 3 {
			it := s.next()
			got = append(got, it)
			s.done(it)
		}
		if len(got[0].held) != 0 {
			t.Errorf("the first URL went at once, yet carries %v", got[0].held)
		}
		total := map[polite.Reason]time.Duration{}
		for _, it := range got[1:] {
			if len(it.held) == 0 {
				t.Fatalf("URL %d was held back and carries no spell", it.id)
			}
			for _, sp := range it.held {
				total[sp.why] += sp.d
			}
		}
		// The second URL waits for its token until 0.5 s, then for slots
		// polled every 300 ms until 1.4 s; the third for its token until
		// 1.9 s.
		if total[polite.ReasonSlot] != 900*time.Millisecond || total[polite.ReasonRate] != time.Second {
			t.Errorf("held %v, want 900ms for the slots and 1s for the rate", total)
		}
		if now := time.Since(start); now != 1900*time.Millisecond {
			t.Errorf("the last URL went at +%v, want +1.9s", now)
		}
	})
}

// TestHeldEvents: a job whose one host is held to 20/s writes the time it
// held the host's URLs back to events.jsonl as waits for its rate, which is
// what the report sums as the politeness cost, and the rate it started at.
func TestHeldEvents(t *testing.T) {
	srv, _ := twoHosts(t, 0)
	var list strings.Builder
	for range 10 {
		list.WriteString("http://a.test/p\n")
	}
	for i := range 10 {
		list.WriteString("http://a.test/q/" + string(rune('a'+i)) + "\n")
	}
	dir := t.TempDir()
	tr := &polite.Transport{Base: srv.Transport(), IgnoreRobots: true, Limits: polite.Limits{Rate: 20, Burst: 1, Concurrency: 4}}
	runJob(t, dir, tr, list.String(), Options{Workers: 4})
	var rate time.Duration
	starts := 0
	for _, r := range readEvents(t, dir) {
		if r.Kind == "wait" && r.Reason == string(polite.ReasonRate) {
			rate += time.Duration(r.Delay * float64(time.Millisecond))
		}
		if r.Kind == "rate" && r.Reason == string(polite.ReasonPolicy) {
			starts++
			if r.Host != "a.test" || r.Rate == nil || *r.Rate != 20 || r.Detail != "defaults" {
				t.Errorf("starting rate %s %v %q, want a.test at 20 from the defaults", r.Host, r.Rate, r.Detail)
			}
		}
	}
	if starts != 1 {
		t.Errorf("%d starting-rate events, want 1 (issue 33, item 3: a rate that never changed showed as –)", starts)
	}
	// 11 URLs (10 lines are one URL) at 20/s, burst 1: each after the
	// first was held until its token, 50 ms apart: 500 ms at least,
	// less the time a worker took to come for each.
	if rate < 400*time.Millisecond {
		t.Errorf("events.jsonl holds %v of waits for the rate; want about 500ms (10 URLs held 50 ms each)", rate)
	}
}

// TestHeldSpellEndsWhenSendable: a host held 100 ms for its rate while
// every worker is busy elsewhere for a second carries 100 ms, not the
// second it then waited for a worker (that is no politeness cost).
func TestHeldSpellEndsWhenSendable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		s := newSched(func(h *host, now time.Time) (time.Duration, polite.Reason) {
			if h.key == "a.test" && now.Before(start.Add(100*time.Millisecond)) {
				return start.Add(100 * time.Millisecond).Sub(now), polite.ReasonRate
			}
			return 0, ""
		})
		go s.clock()
		defer s.Stop()
		s.mu.Lock()
		for key, n := range map[string]int{"a.test": 1, "b.test": 2} {
			h := &host{key: key}
			s.hosts[key] = h
			for i := range n {
				it := &item{id: int64(i + 1), host: h}
				h.hold(it)
				s.requeue(it, time.Time{}, false, start)
			}
		}
		s.mu.Unlock()
		// Two workers: each takes a b.test URL (a.test is held) and is
		// busy with it for a second.
		for range 2 {
			if it := s.next(); it.host.key != "b.test" {
				t.Fatalf("a worker got %s, want b.test's URL (a.test is held)", it.host.key)
			}
		}
		time.Sleep(time.Second)
		it := s.next()
		if it.host.key != "a.test" {
			t.Fatalf("got %s, want a.test's URL", it.host.key)
		}
		var held time.Duration
		for _, sp := range it.held {
			held += sp.d
		}
		if held != 100*time.Millisecond {
			t.Errorf("a.test's URL carries %v held (%v), want 100ms: the rest it waited for a worker", held, it.held)
		}
	})
}
