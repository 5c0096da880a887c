package redisstore

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/inflight"
	"github.com/polite-go/polite/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// scriptCalls returns how many script runs the Redis at c has served.
func scriptCalls(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_evalsha:calls="); ok {
			n, _ = strconv.ParseInt(v[:strings.IndexByte(v, ',')], 10, 64)
		}
	}
	return n
}

// TestCreditSavesCalls: a worker asking a host of a high rate and a large
// cap for first attempts, one after another, gets credit once its calls
// come close together, and most of its requests need no call; every token
// and slot is still Redis's: the bucket holds what it gave, the lease set
// every request in flight (and the credit's unused slots), and once the
// requests end and the store closes, no lease is left.
func TestCreditSavesCalls(t *testing.T) {
	addr := redistest.Start(t)
	synctest.Test(t, func(t *testing.T) {
		reg := &polite.Registry{Limits: polite.Limits{Rate: 1e6, Burst: 1000, Concurrency: 100000}}
		s, client := newStore(t, addr, reg, Options{Prefix: "credit:", CallerClock: true})
		h := reg.Get("a.test")
		defer reg.Put(h)
		const n = 200
		before := scriptCalls(t, client)
		var leases []uint64
		t0 := time.Now() // the scripts' clock: the bucket does not refill
		for i := range n {
			a := s.Admit(h, polite.Query{Now: t0, First: true})
			if !a.Granted || a.Lease == 0 {
				t.Fatalf("admission %d = %+v, want granted with a lease", i, a)
			}
			leases = append(leases, a.Lease)
		}
		calls := scriptCalls(t, client) - before
		if calls > n/4 {
			t.Errorf("%d first attempts took %d script calls, want at most %d (credit)", n, calls, n/4)
		}
		st := s.State(h, t0)
		if st.InFlight != n {
			t.Errorf("State: %d in flight after %d admissions, want %d (the credit's unused slots are not)", st.InFlight, n, n)
		}
		leased := client.ZCount(context.Background(), "credit:{a.test}:n", "(-inf", "+inf").Val()
		if leased < n || leased > n+creditMax {
			t.Errorf("%d leases after %d admissions, want %d to %d (a credit's unused slots)", leased, n, n, n+creditMax)
		}
		if st.Tokens > 1000-n {
			t.Errorf("the bucket holds %.1f tokens after %d admissions, want at most %d", st.Tokens, n, 1000-n)
		}
		for _, l := range leases {
			s.Release(h, l)
		}
		s.Close()
		if left := client.ZCount(context.Background(), "credit:{a.test}:n", "(-inf", "+inf").Val(); left != 0 {
			t.Errorf("%d leases left after every release and Close, want 0", left)
		}
		t.Logf("%d first attempts, %d script calls", n, calls)
	})
}

// TestNoCreditAtCrawlRates: a host paced at a millisecond or more per
// token never gets credit: each admission is a call of its own.
func TestNoCreditAtCrawlRates(t *testing.T) {
	addr := redistest.Start(t)
	reg := &polite.Registry{Limits: polite.Limits{Rate: 900, Burst: 100, Concurrency: 100000}}
	s, client := newStore(t, addr, reg, Options{Prefix: "nocredit:"})
	h := reg.Get("a.test")
	defer reg.Put(h)
	before := scriptCalls(t, client)
	for i := range 20 {
		if a := s.Admit(h, polite.Query{Now: time.Now(), First: true}); !a.Granted {
			t.Fatalf("admission %d = %+v, want granted", i, a)
		}
	}
	if calls := scriptCalls(t, client) - before; calls != 20 {
		t.Errorf("20 admissions took %d script calls, want 20 (no credit at 900/s)", calls)
	}
	if _, ok := s.credits.Load("a.test"); ok {
		t.Error("a credit is kept for a host that can never have one")
	}
}

// TestCreditWithinBucket: two workers admitting first attempts to one
// host at one instant, as fast as they can until refused, are given
// exactly the bucket's burst between them, credit or not; and with a cap
// and no rate, exactly the cap: a credit's tokens and slots are taken
// from the fleet's when given, never beyond them.
func TestCreditWithinBucket(t *testing.T) {
	addr := redistest.Start(t)
	for _, tc := range []struct {
		name   string
		limits polite.Limits
		want   int
	}{
		{"rate", polite.Limits{Rate: 32000, Burst: 200, Concurrency: inflight.Max}, 200},
		{"cap", polite.Limits{Rate: 1e9, Burst: 1 << 20, Concurrency: 256}, 256},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				reg := &polite.Registry{Limits: tc.limits}
				o := Options{Prefix: "within" + tc.name + ":", CallerClock: true}
				a, client := newStore(t, addr, reg, o)
				b, _ := newStore(t, addr, reg, o)
				h := reg.Get("a.test")
				defer reg.Put(h)
				t0 := time.Now()
				granted, fromCredit := 0, 0
				stores := []*Store{a, b}
				open := []bool{true, true}
				for i := 0; open[0] || open[1]; i++ {
					w := i % 2
					if !open[w] {
						continue
					}
					before := scriptCalls(t, client)
					adm := stores[w].Admit(h, polite.Query{Now: t0, First: true})
					if !adm.Granted {
						open[w] = false
						continue
					}
					granted++
					if scriptCalls(t, client) == before {
						fromCredit++
					}
					if granted > tc.want {
						t.Fatalf("granted %d, more than the %d the host has", granted, tc.want)
					}
				}
				if granted != tc.want {
					t.Errorf("granted %d, want %d", granted, tc.want)
				}
				if fromCredit == 0 {
					t.Error("no admission came from credit: the test tests nothing")
				}
				t.Logf("%d granted, %d from credit", granted, fromCredit)
			})
		})
	}
}

// TestCreditEndsOnReport: a report that pauses the host ends the worker's
// credit: its next first attempt asks Redis and hears the pause.
func TestCreditEndsOnReport(t *testing.T) {
	addr := redistest.Start(t)
	synctest.Test(t, func(t *testing.T) {
		reg := &polite.Registry{Limits: polite.Limits{Rate: 1e6, Burst: 1000, Concurrency: 100000}}
		s, client := newStore(t, addr, reg, Options{Prefix: "creditend:"})
		h := reg.Get("a.test")
		defer reg.Put(h)
		var last polite.Admission
		for range 3 { // the second call asks for credit
			last = s.Admit(h, polite.Query{Now: time.Now(), First: true})
		}
		if v, ok := s.credits.Load("a.test"); !ok || v.(*credit).tokens == 0 {
			t.Fatal("no credit in force after three quick first attempts")
		}
		now := time.Now()
		v := s.Report(h, polite.Report{Now: now, Sent: now, Outcome: polite.Throttled, Status: http.StatusTooManyRequests,
			Header: http.Header{"Retry-After": {"30"}}, Latency: time.Millisecond, Attempt: 1, Spare: last.Spare})
		if v.Pause <= 0 {
			t.Fatalf("verdict of a 429 with Retry-After 30 = %+v, want a pause", v)
		}
		before := scriptCalls(t, client)
		a := s.Admit(h, polite.Query{Now: time.Now(), First: true})
		if a.Granted || a.Wait < 20*time.Second {
			t.Errorf("admission after the pause = %+v, want refused for the pause", a)
		}
		if scriptCalls(t, client) == before {
			t.Error("the admission after the pause did not ask Redis")
		}
	})
}

// TestCreditEarnsBudget: first attempts admitted from credit earn the
// retry budget their share, as those admitted by a call do: it reaches
// Redis with the next call or report.
func TestCreditEarnsBudget(t *testing.T) {
	addr := redistest.Start(t)
	synctest.Test(t, func(t *testing.T) {
		budget := func(rate float64) float64 {
			reg := &polite.Registry{Limits: polite.Limits{Rate: rate, Burst: 1000, Concurrency: 100000}}
			s, _ := newStore(t, addr, reg, Options{Prefix: "budget" + strconv.Itoa(int(rate)) + ":", CallerClock: true})
			h := reg.Get("a.test")
			defer reg.Put(h)
			t0 := time.Now()
			for range 50 {
				if a := s.Admit(h, polite.Query{Now: t0, First: true}); !a.Granted {
					t.Fatalf("admission refused: %+v", a)
				}
			}
			// A failure that asks no retry: a report that needs its answer,
			// carrying what the credit admitted.
			s.Report(h, polite.Report{Now: t0, Sent: t0, Outcome: polite.ServerError, Status: 500, Attempt: 1})
			return s.State(h, t0).RetryBudget
		}
		paced, credited := budget(900), budget(1e6)
		if paced < 10 {
			t.Fatalf("budget after 50 first attempts at 900/s = %.2f, want at least 50 × 0.2", paced)
		}
		if diff := credited - paced; diff > 1e-6 || diff < -1e-6 {
			t.Errorf("budget after 50 first attempts: %.4f with credit, %.4f without; want the same", credited, paced)
		}
	})
}

// TestCreditLapses: a credit unused within creditLife lapses: its unused
// slots are released (the lease set holds the requests still in flight
// only), and the next credit asked for is as large as the last one used;
// one used up within its life doubles the next. In a synctest bubble, so
// that creditLife passes only when the test says.
func TestCreditLapses(t *testing.T) {
	addr := redistest.Start(t)
	synctest.Test(t, func(t *testing.T) {
		reg := &polite.Registry{Limits: polite.Limits{Rate: 1e6, Burst: 1000, Concurrency: 100000}}
		s, client := newStore(t, addr, reg, Options{Prefix: "lapse:", CallerClock: true})
		h := reg.Get("a.test")
		defer reg.Put(h)
		leases := func() int64 {
			return client.ZCount(context.Background(), "lapse:{a.test}:n", "(-inf", "+inf").Val()
		}
		cr := func() *credit {
			v, ok := s.credits.Load("a.test")
			if !ok {
				t.Fatal("no credit kept for the host")
			}
			return v.(*credit)
		}
		admit := func() {
			t.Helper()
			if a := s.Admit(h, polite.Query{Now: time.Now(), First: true}); !a.Granted {
				t.Fatalf("admission refused: %+v", a)
			}
		}
		admit()
		admit() // the second call within creditLife asks for creditFirst
		if c := cr(); c.tokens != creditFirst {
			t.Fatalf("credit after two calls: %d tokens, want %d", c.tokens, creditFirst)
		}
		admit() // one of the credit's
		if got := leases(); got != 3+creditFirst-1 {
			t.Fatalf("%d leases with a credit of %d, one used, want %d", got, creditFirst, 3+creditFirst-1)
		}
		time.Sleep(creditLife + flushDelay + time.Millisecond) // it lapses, and its releases ride on their own
		synctest.Wait()
		if got := leases(); got != 3 {
			t.Errorf("%d leases once the credit lapsed, want 3 (the requests in flight)", got)
		}
		if c := cr(); c.tokens != 0 || c.want != 1 {
			t.Errorf("after the lapse: %d tokens, next credit %d; want 0 and 1 (as many as used)", c.tokens, c.want)
		}

		// Used up within its life, a credit doubles the next.
		admit()
		admit() // asks for 1
		admit() // uses it
		admit() // asks again: doubled
		if c := cr(); c.want != 2 || c.tokens != 2 {
			t.Errorf("after a credit used up: next %d, in force %d tokens; want 2 and 2", c.want, c.tokens)
		}
	})
}
