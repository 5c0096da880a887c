package inflight

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestNeverAboveLimit: 1,000 goroutines against a limit of 3 never see a
// fourth holder, and (each holding a while, in fake time) reach three.
func TestNeverAboveLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New(3)
		var holders, peak atomic.Int32
		var wg sync.WaitGroup
		for range 1000 {
			wg.Go(func() {
				if err := g.Acquire(context.Background()); err != nil {
					t.Error(err)
					return
				}
				n := holders.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				if n > 3 {
					t.Errorf("%d holders, want at most 3", n)
				}
				time.Sleep(time.Millisecond)
				holders.Add(-1)
				g.Release()
			})
		}
		wg.Wait()
		if p := peak.Load(); p != 3 {
			t.Errorf("peak holders %d, want 3", p)
		}
		if !g.Idle() {
			t.Errorf("after all released: InFlight %d, Waiting %d; want idle", g.InFlight(), g.Waiting())
		}
	})
}

// TestFIFO queues waiters one at a time and checks they are served in order.
func TestFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New(1)
		if !g.TryAcquire() {
			t.Fatal("TryAcquire on an empty gate = false")
		}
		var order []int
		var mu sync.Mutex
		const n = 50
		for i := range n {
			go func() {
				if err := g.Acquire(context.Background()); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				g.Release()
			}()
			synctest.Wait() // i is queued before i+1 arrives
		}
		if got := g.Waiting(); got != n {
			t.Fatalf("Waiting() = %d, want %d", got, n)
		}
		if g.TryAcquire() {
			t.Fatal("TryAcquire while others wait = true, want false (no barging)")
		}
		g.Release()
		synctest.Wait()
		for i, v := range order {
			if v != i {
				t.Fatalf("served order %v, want 0..%d in order", order, n-1)
			}
		}
		if len(order) != n {
			t.Fatalf("served %d, want %d", len(order), n)
		}
	})
}

func TestAcquireCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New(1)
		g.TryAcquire()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		err := g.Acquire(ctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Acquire = %v, want DeadlineExceeded", err)
		}
		if d := time.Since(start); d != time.Second {
			t.Errorf("Acquire returned after %v, want 1s", d)
		}
		if got := g.Waiting(); got != 0 {
			t.Errorf("Waiting() after cancel = %d, want 0", got)
		}
		// A cancelled waiter in the middle of the queue does not block the one behind.
		ctx2, cancel2 := context.WithCancel(context.Background())
		got := make(chan int, 2)
		go func() {
			if g.Acquire(ctx2) == nil {
				got <- 1
			}
		}()
		synctest.Wait()
		go func() {
			if g.Acquire(context.Background()) == nil {
				got <- 2
			}
		}()
		synctest.Wait()
		cancel2()
		synctest.Wait()
		g.Release()
		if v := <-got; v != 2 {
			t.Errorf("slot went to waiter %d, want 2", v)
		}
		g.Release()
		if !g.Idle() {
			t.Errorf("gate not idle at the end: held %d waiting %d", g.InFlight(), g.Waiting())
		}
	})
}

func TestSetLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New(1)
		g.TryAcquire()
		var admitted atomic.Int32
		for range 4 {
			go func() {
				if g.Acquire(context.Background()) == nil {
					admitted.Add(1)
				}
			}()
		}
		synctest.Wait()
		g.SetLimit(3) // two more slots: two waiters in at once
		synctest.Wait()
		if got := admitted.Load(); got != 2 {
			t.Errorf("after SetLimit(3): admitted %d, want 2", got)
		}
		g.SetLimit(1) // three held, limit one: releases drain the excess first
		g.Release()
		g.Release()
		synctest.Wait()
		if got := admitted.Load(); got != 2 {
			t.Errorf("after lowering to 1 and two releases: admitted %d, want still 2", got)
		}
		g.Release()
		synctest.Wait()
		if got := admitted.Load(); got != 3 {
			t.Errorf("after the third release: admitted %d, want 3", got)
		}
		if g.InFlight() != 1 || g.Waiting() != 1 {
			t.Errorf("InFlight %d Waiting %d, want 1 and 1", g.InFlight(), g.Waiting())
		}
		g.SetLimit(Max + 10)
		synctest.Wait()
		if got, lim := admitted.Load(), g.Limit(); got != 4 || lim != Max {
			t.Errorf("after SetLimit(Max+10): admitted %d limit %d, want 4 and %d", got, lim, Max)
		}
	})
}

func TestZeroLimit(t *testing.T) {
	var g Gate
	if g.TryAcquire() {
		t.Error("zero Gate TryAcquire = true, want false")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.Acquire(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire on zero Gate with cancelled ctx = %v", err)
	}
}

func TestReleaseWithoutAcquirePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Release on an idle Gate did not panic")
		}
	}()
	New(1).Release()
}

func BenchmarkAcquireRelease(b *testing.B) {
	g := New(Max)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_ = g.Acquire(ctx)
		g.Release()
	}
}

func BenchmarkAcquireReleaseParallel(b *testing.B) {
	g := New(Max)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = g.Acquire(ctx)
			g.Release()
		}
	})
}

// BenchmarkContended has 8× more goroutines than slots, so most go through
// the queue.
func BenchmarkContended(b *testing.B) {
	g := New(2)
	ctx := context.Background()
	b.SetParallelism(8)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = g.Acquire(ctx)
			g.Release()
		}
	})
}
