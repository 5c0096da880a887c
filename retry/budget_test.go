package retry

import (
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A budgetStep is one call on a Budget at t0+at, then a check of Tokens.
type budgetStep struct {
	at     time.Duration
	op     string // "deposit", "withdraw" or "" (only check Tokens)
	n      int    // repetitions of op; 0 means 1
	ok     bool   // every Withdraw's result
	tokens float64
}

func runBudget(t *testing.T, b *Budget, steps []budgetStep) {
	t.Helper()
	for i, st := range steps {
		now := t0.Add(st.at)
		for range max(st.n, 1) {
			switch st.op {
			case "deposit":
				b.Deposit(now)
			case "withdraw":
				if ok := b.Withdraw(now); ok != st.ok {
					t.Fatalf("step %d: Withdraw(t0+%v) = %v, want %v", i, st.at, ok, st.ok)
				}
			}
		}
		if got := b.Tokens(now); math.Abs(got-st.tokens) > 1e-9 {
			t.Fatalf("step %d: after %s×%d, Tokens(t0+%v) = %v, want %v", i, st.op, max(st.n, 1), st.at, got, st.tokens)
		}
	}
}

func TestBudget(t *testing.T) {
	e := math.Exp(-1)
	tests := []struct {
		name  string
		cfg   BudgetConfig
		steps []budgetStep
	}{
		{"fresh budget holds the reserve", BudgetConfig{Ratio: 0.25, MinPerSecond: 1, Window: 10 * s}, []budgetStep{
			{at: 0, tokens: 10},
			{at: 0, op: "withdraw", n: 10, ok: true, tokens: 0},
			{at: 0, op: "withdraw", ok: false, tokens: 0},
			{at: 1 * s, tokens: 1},
			{at: 1 * s, op: "withdraw", ok: true, tokens: 0},
			{at: 1500 * ms, op: "withdraw", ok: false, tokens: 0.5},
			{at: 2 * s, op: "withdraw", ok: true, tokens: 0},
		}},
		{"deposits pay for retries", BudgetConfig{Ratio: 0.25, MinPerSecond: -1}, []budgetStep{
			{at: 0, op: "withdraw", ok: false, tokens: 0},
			{at: 0, op: "deposit", n: 3, tokens: 0.75},
			{at: 0, op: "withdraw", ok: false, tokens: 0.75},
			{at: 0, op: "deposit", tokens: 1},
			{at: 0, op: "withdraw", ok: true, tokens: 0},
			{at: 0, op: "withdraw", ok: false, tokens: 0},
		}},
		{"fifths add up despite rounding", BudgetConfig{MinPerSecond: -1}, []budgetStep{
			{at: 0, op: "deposit", n: 5, tokens: 1},
			{at: 0, op: "withdraw", ok: true, tokens: 0},
		}},
		{"earned tokens fade over the window", BudgetConfig{Ratio: 1, MinPerSecond: -1, Window: 10 * s}, []budgetStep{
			{at: 0, op: "deposit", n: 10, tokens: 10},
			{at: 10 * s, tokens: 10 * e},
			{at: 20 * s, tokens: 10 * e * e},
			{at: 20 * s, op: "withdraw", ok: true, tokens: 10*e*e - 1},
			{at: 20 * s, op: "withdraw", ok: false, tokens: 10*e*e - 1},
		}},
		{"floor saves at most a window", BudgetConfig{MinPerSecond: 2, Window: 5 * s}, []budgetStep{
			{at: 0, op: "withdraw", n: 10, ok: true, tokens: 0},
			{at: 2 * s, tokens: 4},
			{at: time.Hour, tokens: 10},
		}},
		{"withdraw takes earned first", BudgetConfig{Ratio: 0.5, MinPerSecond: 1, Window: 10 * s}, []budgetStep{
			{at: 0, op: "withdraw", n: 10, ok: true, tokens: 0},
			{at: 0, op: "deposit", n: 4, tokens: 2},
			{at: 0, op: "withdraw", ok: true, tokens: 1},
			{at: 10 * s, tokens: 10 + e},
			{at: 10 * s, op: "withdraw", ok: true, tokens: 9 + e},
			// Had the floor paid, the earned e would linger: 10 + e·e.
			{at: 20 * s, tokens: 10},
		}},
		{"negative ratio earns nothing", BudgetConfig{Ratio: -1, MinPerSecond: 1, Window: 10 * s}, []budgetStep{
			{at: 0, op: "withdraw", n: 10, ok: true, tokens: 0},
			{at: 0, op: "deposit", n: 100, tokens: 0},
			{at: 0, op: "withdraw", ok: false, tokens: 0},
		}},
		{"time going backwards accrues nothing", BudgetConfig{Window: 10 * s}, []budgetStep{
			{at: 5 * s, op: "withdraw", n: 10, ok: true, tokens: 0},
			{at: 3 * s, tokens: 0},
			{at: 6 * s, tokens: 1},
		}},
		{"zero config is the default", BudgetConfig{}, []budgetStep{
			{at: 0, tokens: DefaultBudgetMinPerSecond * DefaultBudgetWindow.Seconds()},
			{at: 0, op: "withdraw", n: 10, ok: true, tokens: 0},
			{at: 0, op: "deposit", n: 10, tokens: 10 * DefaultBudgetRatio},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runBudget(t, NewBudget(tt.cfg), tt.steps)
		})
	}
}

func TestBudgetZeroValue(t *testing.T) {
	var b Budget
	runBudget(t, &b, []budgetStep{
		{at: 0, tokens: 10},
		{at: 0, op: "withdraw", n: 10, ok: true, tokens: 0},
		{at: s, tokens: 1},
	})
}

// TestBudgetAmplification runs a host where every attempt fails for 100 s
// at 10 requests per second, with up to 5 retries each: the budget keeps
// retries to the reserve, 20 % of requests and the floor.
func TestBudgetAmplification(t *testing.T) {
	b := NewBudget(BudgetConfig{})
	const rps, seconds, maxRetries = 10, 100, 5
	requests, retries := 0, 0
	for i := range rps * seconds {
		now := t0.Add(time.Duration(i) * time.Second / rps)
		b.Deposit(now)
		requests++
		for range maxRetries {
			if !b.Withdraw(now) {
				break
			}
			retries++
		}
	}
	limit := DefaultBudgetMinPerSecond*DefaultBudgetWindow.Seconds() +
		DefaultBudgetRatio*float64(requests) + DefaultBudgetMinPerSecond*seconds
	t.Logf("retries = %d, requests = %d, limit %v", retries, requests, limit)
	if float64(retries) > limit {
		t.Errorf("retries = %d over %d requests, want at most %v", retries, requests, limit)
	}
	if float64(retries) < 0.9*limit {
		t.Errorf("retries = %d over %d requests, want about %v: the budget should be spent", retries, requests, limit)
	}
}

// TestBudgetConcurrent hammers one Budget from many goroutines at a fixed
// instant, so the outcome is exact whatever the interleaving.
func TestBudgetConcurrent(t *testing.T) {
	const goroutines, deposits, withdrawals = 8, 500, 200
	b := NewBudget(BudgetConfig{Ratio: 0.25, MinPerSecond: 1, Window: 10 * s})
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range deposits {
				b.Deposit(t0)
			}
		})
	}
	wg.Wait()
	var granted atomic.Int64
	for range goroutines {
		wg.Go(func() {
			for range withdrawals {
				if b.Withdraw(t0) {
					granted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if want := int64(10 + 0.25*goroutines*deposits); granted.Load() != want {
		t.Errorf("granted %d withdrawals, want %d", granted.Load(), want)
	}
}

// TestBudgetConcurrentMixed interleaves deposits and withdrawals from many
// goroutines with clocks that disagree slightly, as time.Now() taken before
// the lock does.
func TestBudgetConcurrentMixed(t *testing.T) {
	const goroutines, rounds = 16, 1000
	b := NewBudget(BudgetConfig{Ratio: 0.1, MinPerSecond: 5, Window: 2 * s})
	var granted, deposited atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range rounds {
				now := t0.Add(time.Duration(i)*ms + time.Duration(g)*time.Microsecond)
				b.Deposit(now)
				deposited.Add(1)
				if b.Withdraw(now) {
					granted.Add(1)
				}
				if tok := b.Tokens(now); tok < 0 {
					t.Errorf("Tokens = %v, want >= 0", tok)
				}
			}
		})
	}
	wg.Wait()
	elapsed := (rounds*ms + goroutines*time.Microsecond).Seconds()
	limit := 5*2 + 0.1*float64(deposited.Load()) + 5*elapsed
	if float64(granted.Load()) > limit+1e-6 {
		t.Errorf("granted %d withdrawals, want at most %v", granted.Load(), limit)
	}
}

func TestBudgetAllocs(t *testing.T) {
	b := NewBudget(BudgetConfig{})
	now := t0
	n := testing.AllocsPerRun(100, func() {
		now = now.Add(ms)
		b.Deposit(now)
		b.Withdraw(now)
		b.Tokens(now)
	})
	if n != 0 {
		t.Errorf("Deposit+Withdraw+Tokens allocate %v times, want 0", n)
	}
}

func BenchmarkBudgetWithdraw(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		bu := NewBudget(BudgetConfig{})
		now := t0
		b.ReportAllocs()
		for b.Loop() {
			now = now.Add(time.Microsecond)
			bu.Withdraw(now)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		bu := NewBudget(BudgetConfig{})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			now := t0
			for pb.Next() {
				now = now.Add(time.Microsecond)
				bu.Withdraw(now)
			}
		})
	})
}

// A budget on a fake clock counted from the zero Time, 1960 or 1970 refills
// and decays as one on today's clock does.
func TestBudgetOfAnyEra(t *testing.T) {
	for _, t0 := range []time.Time{{}, time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC), time.Unix(0, 0), time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)} {
		var b Budget
		for b.Withdraw(t0) {
		}
		after5s := b.Tokens(t0.Add(5 * time.Second))
		b.Deposit(t0.Add(5 * time.Second))
		after1h := b.Tokens(t0.Add(time.Hour))
		if math.Abs(after5s-5) > 1e-6 || math.Abs(after1h-10) > 1e-6 {
			t.Errorf("from %v: %.3f tokens 5 s after emptying, %.3f an hour later; want 5 and 10", t0, after5s, after1h)
		}
	}
}
