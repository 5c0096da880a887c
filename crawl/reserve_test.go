package crawl

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/testbed"
)

// sharedStore is one Store for several Transports, as a fleet's Redis is:
// each host's state is kept once, under its key, whichever Transport asks.
// It counts what it is asked: Admit and State, the calls that would each
// be a round trip to Redis.
type sharedStore struct {
	reg    *polite.Registry
	local  polite.Store
	mu     sync.Mutex
	hosts  map[string]*polite.Host
	admits atomic.Int64
	states atomic.Int64
}

func newSharedStore(l polite.Limits) *sharedStore {
	reg := &polite.Registry{Limits: l}
	return &sharedStore{reg: reg, local: polite.NewLocalStore(reg, polite.LocalOptions{}), hosts: map[string]*polite.Host{}}
}

// host is the shared state of h's key (held for good: never evicted).
func (s *sharedStore) host(h *polite.Host) *polite.Host {
	s.mu.Lock()
	defer s.mu.Unlock()
	sh, ok := s.hosts[h.Key()]
	if !ok {
		sh = s.reg.Get(h.Key())
		s.hosts[h.Key()] = sh
	}
	return sh
}

func (s *sharedStore) Admit(h *polite.Host, q polite.Query) polite.Admission {
	s.admits.Add(1)
	return s.local.Admit(s.host(h), q)
}
func (s *sharedStore) Keep(h *polite.Host, now, reserved time.Time, cost int) bool {
	return s.local.Keep(s.host(h), now, reserved, cost)
}
func (s *sharedStore) Cancel(h *polite.Host, now time.Time, cost int) {
	s.local.Cancel(s.host(h), now, cost)
}
func (s *sharedStore) Report(h *polite.Host, r polite.Report) polite.Verdict {
	return s.local.Report(s.host(h), r)
}
func (s *sharedStore) SetRate(h *polite.Host, now time.Time, rate float64) float64 {
	return s.local.SetRate(s.host(h), now, rate)
}
func (s *sharedStore) SetCeiling(h *polite.Host, now time.Time, why polite.Reason, rate float64) (float64, bool) {
	return s.local.SetCeiling(s.host(h), now, why, rate)
}
func (s *sharedStore) State(h *polite.Host, now time.Time) polite.HostState {
	s.states.Add(1)
	return s.local.State(s.host(h), now)
}
func (s *sharedStore) Release(h *polite.Host, lease uint64) { s.local.Release(s.host(h), lease) }

// TestFleetReserves: three fleet workers share one host's rate through one
// Store. Asking Ready, each worker's scheduler reads the host ready at
// each token's instant and every one sends a Try for it; reserving
// (Options.Reserve), each asks once and the losers are refused at once.
// Both send every URL once, at the rate; reserving asks the Store less.
func TestFleetReserves(t *testing.T) {
	srv := testbed.NewServer(testbed.HostConfig{Name: "a.test"})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	const n, rate = 60, 40.0
	calls := map[bool]float64{}
	states := map[bool]int64{}
	for _, reserve := range []bool{false, true} {
		var urls []string
		for i := range n {
			urls = append(urls, fmt.Sprintf("http://a.test/%v/%d", reserve, i))
		}
		fr := newMemFrontier(urls)
		limits := polite.Limits{Rate: rate, Burst: 1, Concurrency: 4}
		s := newSharedStore(limits)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		var wg sync.WaitGroup
		sums := make([]Summary, 3)
		start := time.Now()
		for w := range sums {
			tr := &polite.Transport{Base: srv.Transport(), Limits: limits, Store: s, IgnoreRobots: true}
			wg.Go(func() {
				sum, err := runFleetJob(t, ctx, t.TempDir(), tr, fr, Options{Workers: 4, FleetPoll: 20 * time.Millisecond, Reserve: reserve})
				if err != nil {
					t.Error(err)
				}
				sums[w] = sum
			})
		}
		wg.Wait()
		cancel()
		took := time.Since(start)
		fr.check(t, urls)
		accepted := 0
		for _, sum := range sums {
			if sum.Fleet != nil {
				accepted += sum.Fleet.Accepted
			}
		}
		if accepted != n {
			t.Errorf("reserve %v: %d results accepted, want %d", reserve, accepted, n)
		}
		// The rate holds: n requests at 40/s, burst 1, take (n-1)/40 s.
		if min := time.Duration(float64(n-1) / rate * float64(time.Second)); took < min {
			t.Errorf("reserve %v: %d URLs in %v, faster than the rate allows (%v)", reserve, n, took, min)
		}
		calls[reserve] = float64(s.admits.Load()+s.states.Load()) / n
		t.Logf("reserve %v: %d admits, %d states for %d URLs in %v", reserve, s.admits.Load(), s.states.Load(), n, took)
		states[reserve] = s.states.Load()
	}
	// Reserving, the job reads State until a host's first request has
	// gone out (Ready, before its robots.txt is known), and for its
	// progress and events; not per URL. (Under -race, 62 against 257.)
	if states[true] > states[false]/2 {
		t.Errorf("reserving, State was asked %d times for %d URLs (Ready: %d), want half at most", states[true], n, states[false])
	}
	// In one process, a call is a few µs and a Try rarely loses the token
	// Ready saw (with Redis, live, the schedulers' calls went from 11.6 to
	// 6.6 a URL): fewer calls here, not a ratio.
	if calls[true] >= 0.9*calls[false] {
		t.Errorf("reserving asked the Store %.1f times a URL, Ready %.1f: want fewer", calls[true], calls[false])
	}
}

// quietFrontier is a memFrontier that says whether its crawl has had an
// interactive URL (InteractiveFrontier).
type quietFrontier struct {
	*memFrontier
	il bool
}

func (f *quietFrontier) Interactive() bool { return f.il }

// TestFleetAsksLessWithoutInteractive: a worker that holds a host's URLs
// asks the frontier for the host's interactive URLs every
// interactivePoll only once the crawl has had one; before, its waits
// after an empty lease grow to FleetPoll, as any worker's do. (It ran a
// fleet job in real time and counted lease calls a second, which missed
// its bound 1 run in 3 under -race beside other work; in fake time the
// workers' split of the host's URLs still moved the count from 19 to 35.)
func TestFleetAsksLessWithoutInteractive(t *testing.T) {
	const poll = 250 * time.Millisecond
	waits := func(holding, interactive bool) []time.Duration {
		asked := 0
		var out []time.Duration
		d := time.Duration(0)
		for range 6 {
			d = emptyWait(d, poll, holding, func() bool { asked++; return interactive })
			out = append(out, d)
		}
		if !holding && asked > 0 {
			t.Errorf("holding nothing, the frontier was asked %d times whether it has interactive URLs, want never", asked)
		}
		return out
	}
	ms := time.Millisecond
	grow := []time.Duration{31250 * time.Microsecond, 62500 * time.Microsecond, 125 * ms, 250 * ms, 250 * ms, 250 * ms}
	capped := []time.Duration{31250 * time.Microsecond, 62500 * time.Microsecond, 100 * ms, 100 * ms, 100 * ms, 100 * ms}
	for _, tc := range []struct {
		holding, interactive bool
		want                 []time.Duration
	}{
		{false, false, grow},
		{false, true, grow},
		{true, false, grow},
		{true, true, capped},
	} {
		if got := waits(tc.holding, tc.interactive); !slices.Equal(got, tc.want) {
			t.Errorf("holding %v, interactive %v: waits %v, want %v", tc.holding, tc.interactive, got, tc.want)
		}
	}
	// What the feeder asks: the frontier, if it can tell (a Redis one
	// can), or "maybe" (every other).
	for _, tc := range []struct {
		fr   Frontier
		want bool
	}{
		{&quietFrontier{memFrontier: newMemFrontier(nil), il: false}, false},
		{&quietFrontier{memFrontier: newMemFrontier(nil), il: true}, true},
		{newMemFrontier(nil), true},
	} {
		if got := (&fleet{fr: tc.fr}).interactive(); got != tc.want {
			t.Errorf("%T (interactive %v): fleet.interactive() = %v, want %v", tc.fr, tc.want, got, tc.want)
		}
	}
}
