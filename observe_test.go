package polite

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/polite-go/polite/adaptive"
)

// recorder keeps every Event and the request id its context carried.
type recorder struct {
	mu     sync.Mutex // guards events, ctxIDs
	events []Event
	ctxIDs []uint64
}

func (r *recorder) Observe(e Event) { r.ObserveContext(context.Background(), e) }

func (r *recorder) ObserveContext(ctx context.Context, e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e.Header = nil // not to be kept
	r.events = append(r.events, e)
	r.ctxIDs = append(r.ctxIDs, RequestID(ctx))
}

func (r *recorder) find(k EventKind, why Reason) (Event, uint64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, e := range r.events {
		if e.Kind == k && e.Reason == why {
			return e, r.ctxIDs[i], true
		}
	}
	return Event{}, 0, false
}

// TestEventInputs: events carry the inputs of their decisions (the raw
// Retry-After, what was asked and applied, the previous rate and the
// controller's state), the request id given in the context, and that
// context, to a ContextObserver.
func TestEventInputs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		tr := &Transport{Limits: Limits{Rate: 50, Burst: 1, Concurrency: 1}, Observer: rec, MaxRetryAfter: time.Minute,
			Retries: -1, Adaptive: &adaptive.Config{Initial: 50}}
		c, _ := setup(t, tr, map[string]http.HandlerFunc{
			"slow.test": func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "30")
				w.WriteHeader(http.StatusTooManyRequests)
			},
			"gone.test": func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "3600")
				w.WriteHeader(http.StatusTooManyRequests)
			},
		})
		for i, u := range []string{"http://slow.test/", "http://gone.test/"} {
			req, _ := http.NewRequestWithContext(WithRequestID(context.Background(), uint64(41+i)), "GET", u, nil)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}

		p, ctxID, ok := rec.find(EventPause, ReasonRetryAfter)
		if !ok {
			t.Fatal("no Retry-After pause event")
		}
		if p.ID != 41 || ctxID != 41 || p.RetryAfter != "30" || p.Requested != 30*time.Second || p.Delay != 30*time.Second || p.Clamped {
			t.Errorf("pause = id %d (context %d), raw %q, requested %v, applied %v, clamped %v; want 41, 41, \"30\", 30s, 30s, false",
				p.ID, ctxID, p.RetryAfter, p.Requested, p.Delay, p.Clamped)
		}
		g, _, ok := rec.find(EventGiveUp, ReasonRetryAfter)
		if !ok {
			t.Fatal("no give-up event for a Retry-After past MaxRetryAfter")
		}
		if g.ID != 42 || g.RetryAfter != "3600" || g.Requested != time.Hour || !g.Clamped {
			t.Errorf("give-up = id %d, raw %q, requested %v, clamped %v; want 42, \"3600\", 1h, true", g.ID, g.RetryAfter, g.Requested, g.Clamped)
		}
		r, _, ok := rec.find(EventRate, ReasonAdaptive)
		if !ok {
			t.Fatal("no adaptive rate event after a 429")
		}
		if r.ID != 41 || !(r.Prev > r.Rate) || r.Phase == "" {
			t.Errorf("rate event = id %d, %v → %v, phase %q; want id 41, a cut from the previous rate, a phase", r.ID, r.Prev, r.Rate, r.Phase)
		}
		a, _, ok := rec.find(EventAttempt, "")
		if !ok || a.ID != 41 || a.Status != 429 {
			t.Errorf("attempt event = %+v, want id 41, status 429", a)
		}
	})
}

// TestRequestIDsNumbered: requests without an id get distinct ones, shared
// by all of a request's events.
func TestRequestIDsNumbered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		c, _ := setup(t, &Transport{Limits: fast(), Observer: rec}, map[string]http.HandlerFunc{
			"a.test": func(w http.ResponseWriter, r *http.Request) {},
		})
		for range 3 {
			resp, _, err := get(t, c, "http://a.test/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		seen := map[uint64]bool{}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		for _, e := range rec.events {
			if e.Kind == EventAttempt {
				seen[e.ID] = true
			}
		}
		if len(seen) != 3 || seen[0] {
			t.Errorf("attempt ids = %v, want 3 distinct non-zero", seen)
		}
	})
}

// TestOwnIDsApart: the robots.txt fetch a request needs is numbered by the
// Transport, from OwnIDs up, never with an id a caller numbers from 1 (a
// crawl's URL 1 and the robots.txt fetch made for it both had id 1, and the
// fetch's EventDone stood for the URL's in the crawl's metrics).
func TestOwnIDsApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		c, _ := setup(t, &Transport{Limits: fast(), Observer: rec, UserAgent: "idbot"}, map[string]http.HandlerFunc{
			"a.test": func(w http.ResponseWriter, r *http.Request) {},
		})
		for i := range 2 {
			req, _ := http.NewRequestWithContext(WithRequestID(context.Background(), uint64(1+i)), "GET", "http://a.test/p", nil)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		done := map[uint64]int{}
		for _, e := range rec.events {
			if e.Kind == EventDone {
				done[e.ID]++
			}
		}
		own := 0
		for id, n := range done {
			if id >= OwnIDs {
				own += n
			}
		}
		if done[1] != 1 || done[2] != 1 || own != 1 || len(done) != 3 {
			t.Errorf("EventDone ids = %v; want 1 and 2 once each, and the robots.txt fetch's own id (≥ OwnIDs) once", done)
		}
	})
}

// TestEventDone: a request's EventDone carries its logical duration (the
// backoff between its attempts included, unlike each attempt's latency),
// its attempts and final answer; a retry's events say why it was resent.
func TestEventDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		n := 0
		c, _ := setup(t, &Transport{Limits: fast(), Observer: rec, Retries: 2}, map[string]http.HandlerFunc{
			"flaky.test": func(w http.ResponseWriter, r *http.Request) {
				if n++; n == 1 {
					w.WriteHeader(http.StatusInternalServerError)
				}
			},
		})
		resp, _, err := get(t, c, "http://flaky.test/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		d, _, ok := rec.find(EventDone, "")
		if !ok {
			t.Fatal("no EventDone")
		}
		w, _, ok := rec.find(EventWait, ReasonBackoff)
		if !ok {
			t.Fatal("no backoff wait before the retry")
		}
		if d.Attempt != 2 || d.Status != 200 || d.Outcome != OK || d.Err != nil || d.Latency < w.Delay || d.ID == 0 {
			t.Errorf("done = attempts %d, status %d, outcome %v, err %v, latency %v (id %d); want 2, 200, ok, nil, ≥ the backoff %v",
				d.Attempt, d.Status, d.Outcome, d.Err, d.Latency, d.ID, w.Delay)
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		var prev []Outcome
		for _, e := range rec.events {
			if e.Kind == EventAttempt {
				prev = append(prev, e.PrevOutcome)
			}
		}
		if len(prev) != 2 || prev[1] != ServerError {
			t.Errorf("attempts' PrevOutcome = %v, want [ok server_error]", prev)
		}
	})
}

// TestTryPrevOutcome: a retry made through Try says why it was resent, as
// one RoundTrip makes does (issue 33, item 6: a crawl's retries were all
// counted as "ok").
func TestTryPrevOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		tr := &Transport{Limits: fast(), Observer: rec, Retries: 2}
		setup(t, tr, map[string]http.HandlerFunc{"flaky.test": func(http.ResponseWriter, *http.Request) {}})
		for _, o := range []TryOptions{{Attempt: 1, Retries: 2}, {Attempt: 2, Retries: 2, Prev: Throttled}} {
			req, _ := http.NewRequest("GET", "http://flaky.test/", nil)
			resp, _, err := tr.Try(req, o)
			if err != nil || resp == nil {
				t.Fatalf("Try(%+v) = %v, %v", o, resp, err)
			}
			resp.Body.Close()
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		var got []string
		for _, e := range rec.events {
			if e.Kind == EventSend || e.Kind == EventAttempt {
				got = append(got, fmt.Sprintf("%d:%d:%v", e.Kind, e.Attempt, e.PrevOutcome))
			}
		}
		want := []string{fmt.Sprintf("%d:1:ok", EventSend), fmt.Sprintf("%d:1:ok", EventAttempt),
			fmt.Sprintf("%d:2:throttled", EventSend), fmt.Sprintf("%d:2:throttled", EventAttempt)}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("events (kind:attempt:prev) = %v, want %v", got, want)
		}
	})
}
