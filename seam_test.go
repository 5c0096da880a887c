package polite

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/polite-go/polite/internal/nanos"
	"github.com/polite-go/polite/retry"
)

// countingStore counts the admissions asked of the Store it wraps.
type countingStore struct {
	Store
	admits atomic.Int32
}

func (s *countingStore) Admit(h *Host, q Query) Admission {
	s.admits.Add(1)
	return s.Store.Admit(h, q)
}

// TestWaitersTakeTurns: requests waiting for a host's rate ask the Store in
// turn, not each every interval, and are sent in the order they came: with
// 8 waiting at 10 req/s (burst 1), a few admissions per request, where
// each asking on its own made about 8 for each token.
func TestWaitersTakeTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &Transport{Base: nopBase{}, IgnoreRobots: true, Limits: Limits{Rate: 10, Burst: 1, Concurrency: 100}}
		s := &countingStore{Store: NewLocalStore(tr.Registry(), LocalOptions{})}
		tr.Store = s
		const n = 8
		var mu sync.Mutex
		var order []int
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				if err := tr.Wait(context.Background(), "a.test"); err != nil {
					t.Error(err)
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
			})
			time.Sleep(time.Millisecond) // they come in order
		}
		wg.Wait()
		for i, w := range order {
			if i != w {
				t.Errorf("sent in order %v, want the order they came", order)
				break
			}
		}
		if got := s.admits.Load(); got > 3*n {
			t.Errorf("%d admissions asked for %d requests, want at most %d", got, n, 3*n)
		}
		t.Logf("%d admissions for %d requests", s.admits.Load(), n)
	})
}

// A Store kept elsewhere is built on the Transport's Registry: asking for
// the Registry first must not fix the Store before the caller sets it.
func TestStoreSetAfterRegistry(t *testing.T) {
	tr := &Transport{Base: nopBase{}, IgnoreRobots: true}
	s := &countingStore{Store: NewLocalStore(tr.Registry(), LocalOptions{})}
	tr.Store = s
	req, _ := http.NewRequest("GET", "http://a.test/", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := s.admits.Load(); n != 1 {
		t.Errorf("the Store set after Registry() was asked %d admissions, want 1", n)
	}
}

// leasingStore hands out a lease with every grant of the Store it wraps,
// as a fleet's store does, and counts the leases not given back.
type leasingStore struct {
	Store
	next atomic.Uint64
	mu   sync.Mutex
	out  map[uint64]bool
}

func (s *leasingStore) Admit(h *Host, q Query) Admission {
	a := s.Store.Admit(h, q)
	if a.Granted {
		a.Lease = s.next.Add(1)
		s.mu.Lock()
		s.out[a.Lease] = true
		s.mu.Unlock()
	}
	return a
}

func (s *leasingStore) Release(h *Host, lease uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.out[lease] {
		panic(fmt.Sprintf("lease %d released twice or never granted", lease))
	}
	delete(s.out, lease)
}

// TestLeasesComeBack: every lease a Store grants is given back exactly once
// whatever the request comes to (a body read or closed, a retried 500, a
// throttle with Retry-After, a failure without response, a request given
// up while it waits for a reserved token or a global slot, Try), or a
// fleet's in-flight cap would leak slots until every request waits.
func TestLeasesComeBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &Transport{Limits: Limits{Rate: 20, Burst: 2, Concurrency: 4}, MaxInFlight: 3, IgnoreRobots: true,
			Backoff: retry.Backoff{Base: time.Millisecond, Cap: 10 * time.Millisecond}}
		var n atomic.Int32
		c, _ := setup(t, tr, map[string]http.HandlerFunc{
			"ok.test":  func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") },
			"err.test": func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) },
			"slow.test": func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1)%2 == 0 {
					w.Header().Set("Retry-After", "1")
					w.WriteHeader(429)
				}
			},
		})
		s := &leasingStore{Store: NewLocalStore(tr.Registry(), LocalOptions{}), out: map[uint64]bool{}}
		tr.Store = s
		var wg sync.WaitGroup
		for i := range 30 {
			host := []string{"ok.test", "err.test", "slow.test"}[i%3]
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(50+i*20)*time.Millisecond)
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+host+"/", nil)
				if resp, err := c.Do(req); err == nil {
					if i%2 == 0 {
						io.Copy(io.Discard, resp.Body)
					}
					resp.Body.Close()
				}
			})
		}
		wg.Wait()
		try := func() {
			req, _ := http.NewRequest("GET", "http://ok.test/try", nil)
			if resp, _, err := tr.Try(req, TryOptions{Attempt: 1}); err == nil && resp != nil {
				resp.Body.Close()
			}
		}
		try()
		// Every global slot held by an open body: Try gets the host's token
		// and lease, then finds no global slot and gives them back.
		var open []*http.Response
		for range 3 {
			time.Sleep(time.Second) // a token
			if resp, err := c.Get("http://ok.test/held"); err == nil {
				open = append(open, resp)
			}
		}
		time.Sleep(time.Second)
		try()
		for _, resp := range open {
			resp.Body.Close()
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.out) != 0 || s.next.Load() == 0 {
			t.Errorf("%d of %d leases never given back", len(s.out), s.next.Load())
		}
	})
}

// A pause keeps its reason, a known one without an allocation, one a
// Classifier made up as it was given.
func TestPauseReason(t *testing.T) {
	var p hostPolicy
	now := time.Unix(1e9, 0)
	i := 0
	if allocs := testing.AllocsPerRun(10, func() {
		i++
		p.pause(now, time.Duration(i)*time.Second, ReasonRetryAfter)
	}); allocs != 0 {
		t.Errorf("pause with %q allocates %v times, want 0", ReasonRetryAfter, allocs)
	}
	if _, why := p.paused(now); why != ReasonRetryAfter {
		t.Errorf("paused reason = %q, want %q", why, ReasonRetryAfter)
	}
	p.pause(now, time.Hour, "made-up")
	if d, why := p.paused(now); why != "made-up" || d != time.Hour {
		t.Errorf("paused = %v, %q, want 1h0m0s, \"made-up\"", d, why)
	}
}

// A host's pause, throttle wave and rate pressure are kept as instants of
// the monotonic clock (nanos.Of), which lie before the process's start for
// a clock of another era and may be 0 or negative; 0 stays "none". Each is
// checked on a clock before the process started (a fake clock in 2000,
// without a monotonic reading), after it, and on the real one, whose
// monotonic reading also keeps a step of the wall clock out of every pause.
func TestPolicyInstantsOfAnyEra(t *testing.T) {
	for _, tc := range []struct {
		name string
		now  time.Time
	}{
		{"year 2000", time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"year 2200", time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"real clock", time.Now()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p hostPolicy
			now := tc.now
			if !p.idle(now) {
				t.Error("a new policy is not idle")
			}
			if p.pressedAt(now, 10) || p.throttledSince(now.Add(-time.Hour)) {
				t.Error("a new policy reads as pressed or throttled")
			}
			if !p.pause(now, 30*time.Second, ReasonRetryAfter) {
				t.Fatal("pause did not move")
			}
			if d, why := p.paused(now); d != 30*time.Second || why != ReasonRetryAfter {
				t.Errorf("paused = %v, %q, want 30s, %q", d, why, ReasonRetryAfter)
			}
			if p.pause(now, 10*time.Second, ReasonBackoff) {
				t.Error("a shorter pause shortened it")
			}
			if p.idle(now) || !p.idle(now.Add(31*time.Second)) {
				t.Error("idle during the pause, or not after it")
			}
			if d, _ := p.paused(now.Add(31 * time.Second)); d != 0 {
				t.Errorf("paused after the end = %v, want 0", d)
			}
			if p.throttleWave(now, now) {
				t.Error("the first throttle counted as an earlier wave's")
			}
			if !p.throttleWave(now.Add(-time.Millisecond), now.Add(time.Millisecond)) {
				t.Error("a request sent before the throttle was heard started a new wave")
			}
			if !p.throttledSince(now.Add(-time.Second)) || p.throttledSince(now.Add(time.Second)) {
				t.Error("throttledSince wrong either side of the throttle")
			}
			p.ratePressed.Store(nanos.Stamp(now))
			if !p.pressedAt(now.Add(time.Millisecond), 10) || p.pressedAt(now.Add(time.Minute), 10) {
				t.Error("pressedAt wrong inside or past its window")
			}
			var far hostPolicy
			far.pause(now, math.MaxInt64, ReasonRetryAfter) // capped (or saturated in 2200), never wraps
			if d, _ := far.paused(now); d < 100*365*24*time.Hour || d > maxPause {
				t.Errorf("a pause of MaxInt64 reads as %v, want a century or more, at most the cap %v", d, maxPause)
			}
		})
	}
}
