package redisstore

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/internal/redistest"
)

// TestShareOf deals hosts' limits out among workers: over the ranks, the
// requests each worker's stream may put into one second (plus the jitter it
// allows for) add up to no more than rate + burst, the rates to no more than
// the rate, the bursts to no more than the burst when there are enough to
// go round, and a worker alone keeps the host's own limits.
func TestShareOf(t *testing.T) {
	for _, tc := range []struct {
		rate  float64
		burst int
		n     int
		sum   float64 // the rates' sum, want at least
	}{
		{10, 1, 1, 10},
		{10, 5, 1, 10},
		{2, 1, 1, 2},
		{10, 1, 2, 9},
		{10, 1, 3, 8.5},
		{10, 3, 2, 10},
		{2, 1, 2, 1.9},
		{2, 1, 3, 2},
		{2, 1, 4, 2},     // three send, one waits
		{0.5, 1, 3, 0.5}, // one sends
		{10, 1, 20, 9},
		{100, 10, 7, 90},
		{1e300, 1, 3, 1e11}, // no overflow: as good as no limit
	} {
		t.Run(fmt.Sprintf("rate%v_burst%d_workers%d", tc.rate, tc.burst, tc.n), func(t *testing.T) {
			allow := math.Floor(tc.rate + float64(tc.burst))
			for _, hh := range []uint32{0, 1, 12345} {
				var perSecond, rates float64
				bursts, senders := 0, 0
				for rank := range tc.n {
					sh := shareOf(tc.rate, tc.burst, tc.n, rank, hh)
					if sh.rate == 0 {
						continue
					}
					senders++
					l := 1 + shareJitter.Seconds()
					perSecond += float64(sh.burst-1) + math.Ceil(l*sh.rate-1e-9)
					rates += sh.rate
					bursts += sh.burst
				}
				if perSecond > allow {
					t.Errorf("hash %d: the workers may put %v requests into one second, want at most rate + burst = %v", hh, perSecond, allow)
				}
				if rates > tc.rate+1e-9 || rates < tc.sum {
					t.Errorf("hash %d: the rates add up to %v, want between %v and %v", hh, rates, tc.sum, tc.rate)
				}
				if senders <= tc.burst && bursts > tc.burst {
					t.Errorf("hash %d: %d senders hold bursts of %d in all, want at most %d", hh, senders, bursts, tc.burst)
				}
				if senders == 0 {
					t.Errorf("hash %d: no worker sends to the host", hh)
				}
			}
			if tc.n == 1 {
				if sh := shareOf(tc.rate, tc.burst, 1, 0, 7); sh.rate != tc.rate || sh.burst != tc.burst {
					t.Errorf("a worker alone gets %+v, want the host's own rate %v and burst %d", sh, tc.rate, tc.burst)
				}
			}
		})
	}
}

// TestOutageSecond: workers of one fleet send to one host through Redis,
// lose it, go on in Local mode, and get it back; each always has a request
// waiting and each request arrives up to 50 ms after its grant. No sliding
// second and no calendar second sees more than rate + burst requests:
// before, around and during the outage (issue 29, item 4: 12 in a calendar
// second and 13 in a sliding one at rate 10, burst 1, for the whole outage,
// each worker's local bucket holding a burst of its own). The workers run on
// the caller's clock, stepped by the test: Redis itself is real, so the
// test takes about a second of real time per row, for the restart.
func TestOutageSecond(t *testing.T) {
	srv := redistest.StartServer(t)
	for _, tc := range []struct {
		rate    float64
		burst   int
		workers int
	}{
		{10, 1, 3},
		{10, 1, 2},
		{4, 3, 2},
	} {
		t.Run(fmt.Sprintf("rate%v_burst%d_workers%d", tc.rate, tc.burst, tc.workers), func(t *testing.T) {
			srv.Restart(t)
			prefix := fmt.Sprintf("sec%d:", time.Now().UnixNano())
			type worker struct {
				s    *Store
				h    *polite.Host
				next time.Time
				rng  *rand.Rand
			}
			ws := make([]*worker, tc.workers)
			for i := range ws {
				reg := &polite.Registry{Limits: polite.Limits{Rate: tc.rate, Burst: tc.burst, Concurrency: 1000}}
				s := outageStore(t, srv.Addr, reg, Options{Prefix: prefix, Timeout: 100 * time.Millisecond, CallerClock: true})
				h := reg.Get("a.test")
				defer reg.Put(h)
				ws[i] = &worker{s: s, h: h, rng: rand.New(rand.NewPCG(uint64(i), 29))}
			}
			for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				all := true
				for _, w := range ws {
					all = all && w.s.health.workers.Load() == int64(tc.workers)
				}
				if all {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the heartbeats did not count %d workers", tc.workers)
				}
			}

			start := time.Now().Truncate(time.Second).Add(time.Second)
			for _, w := range ws {
				w.next = start
			}
			var arrivals []time.Time
			// run steps the workers through [from, to) on the caller's
			// clock: the earliest asks, is granted or told when to ask
			// again, and its request arrives after a random lateness.
			run := func(to time.Time) {
				for {
					w := slices.MinFunc(ws, func(a, b *worker) int { return a.next.Compare(b.next) })
					if !w.next.Before(to) {
						return
					}
					now := w.next
					a := w.s.Admit(w.h, polite.Query{Now: now, MaxWait: maxHold, First: true})
					switch {
					case a.Err != nil:
						t.Fatalf("Admit at %v = %+v", now.Sub(start), a)
					case !a.Granted:
						w.next = now.Add(max(a.Poll, time.Millisecond))
					case a.At.After(now) && !w.s.Keep(w.h, a.At, now, 1):
						w.next = a.At
					default:
						at := a.At
						if at.Before(now) {
							at = now
						}
						arrivals = append(arrivals, at.Add(time.Duration(w.rng.Int64N(int64(50*time.Millisecond)))))
						w.next = at.Add(time.Microsecond)
					}
				}
			}
			run(start.Add(3 * time.Second))
			srv.Kill()
			run(start.Add(13 * time.Second))
			for _, w := range ws {
				if d, m := w.s.Degraded(); !d || m != Local {
					t.Fatalf("with Redis killed: Degraded() = %v, %v; want true, local", d, m)
				}
			}
			outage := len(arrivals)
			srv.Restart(t)
			for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				back := true
				for _, w := range ws {
					d, _ := w.s.Degraded()
					back = back && !d
				}
				if back {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the workers did not go back to Redis")
				}
			}
			run(start.Add(16 * time.Second))

			slices.SortFunc(arrivals, time.Time.Compare)
			limit := int(math.Floor(tc.rate + float64(tc.burst)))
			sliding, calendar := maxPerSecond(arrivals)
			if sliding > limit || calendar > limit {
				t.Errorf("%d workers at rate %v, burst %d: %d requests in the busiest sliding second, %d in the busiest calendar second; want at most rate + burst = %d",
					tc.workers, tc.rate, tc.burst, sliding, calendar, limit)
			}
			// Not so careful that the host is starved meanwhile.
			if n, want := countIn(arrivals[:outage], start.Add(4*time.Second), start.Add(13*time.Second)), 0.8*9*tc.rate; float64(n) < want {
				t.Errorf("%d requests in the 9 s of the outage's steady state, want at least %.0f (80 %% of the rate)", n, want)
			}
			for _, ph := range []struct {
				name     string
				from, to time.Duration
			}{{"on Redis", 0, 3 * time.Second}, {"Redis lost", 2 * time.Second, 5 * time.Second}, {"local", 4 * time.Second, 13 * time.Second}, {"Redis back", 12 * time.Second, 16 * time.Second}} {
				var in []time.Time
				for _, a := range arrivals {
					if d := a.Sub(start); d >= ph.from && d < ph.to {
						in = append(in, a)
					}
				}
				sl, ca := maxPerSecond(in)
				t.Logf("%s (%v to %v): %d requests, busiest sliding second %d, calendar second %d", ph.name, ph.from, ph.to, len(in), sl, ca)
			}
			t.Logf("%d requests; busiest sliding second %d, calendar second %d (rate + burst = %d)", len(arrivals), sliding, calendar, limit)
		})
	}
}

// maxPerSecond returns the most of the sorted instants ts in any sliding
// second [t, t+1s) and in any calendar second.
func maxPerSecond(ts []time.Time) (sliding, calendar int) {
	j := 0
	cal := map[int64]int{}
	for i, t := range ts {
		for t.Sub(ts[j]) >= time.Second {
			j++
		}
		sliding = max(sliding, i-j+1)
		cal[t.Unix()]++
		calendar = max(calendar, cal[t.Unix()])
	}
	return sliding, calendar
}

func countIn(ts []time.Time, from, to time.Time) int {
	n := 0
	for _, t := range ts {
		if !t.Before(from) && t.Before(to) {
			n++
		}
	}
	return n
}

// TestGCRA: a worker's bucket for a host in an outage starts empty, holds
// at most its burst, gives back exactly, and says when its next token
// comes.
func TestGCRA(t *testing.T) {
	t0 := time.Unix(1000, 0)
	g := newGCRA(share{rate: 10, burst: 2}, t0)
	step := func(now time.Duration, n int, wantAt time.Duration) {
		t.Helper()
		if at := g.take(t0.Add(now), n); at != t0.Add(wantAt) {
			t.Errorf("take(%v, %d) = %v, want %v", now, n, at.Sub(t0), wantAt)
		}
	}
	if n, next := g.tokens(t0); n != 0 || next != t0.Add(100*time.Millisecond) {
		t.Errorf("tokens at the start = %v, next at %v; want 0, next at 100ms", n, next.Sub(t0))
	}
	step(0, 1, 100*time.Millisecond) // empty: the first token in an interval
	step(100*time.Millisecond, 1, 200*time.Millisecond)
	g.giveBack(1)
	step(100*time.Millisecond, 1, 200*time.Millisecond) // given back exactly
	// Idle for a second: the bucket holds its burst (2), not 10.
	if n, next := g.tokens(t0.Add(1200 * time.Millisecond)); n != 2 || !next.IsZero() {
		t.Errorf("tokens after an idle second = %v, next %v; want 2, now", n, next)
	}
	step(1200*time.Millisecond, 2, 1200*time.Millisecond)
	step(1200*time.Millisecond, 1, 1300*time.Millisecond)
}
