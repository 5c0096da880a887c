package bucket

import (
	"math"
	"runtime"
	"testing"
)

// The tests here run something in the window between a take's load and its
// atomic add (testHookBeforeAdd) and compare the bucket with one where the
// same thing happened before the take: the add must never come out cheaper.

// hookOnce runs f the next time a take reaches its add, once.
func hookOnce(t *testing.T, f func(b *Bucket)) {
	t.Helper()
	testHookBeforeAdd = func(b *Bucket) {
		testHookBeforeAdd = nil // what f does may take too
		f(b)
	}
	t.Cleanup(func() { testHookBeforeAdd = nil })
}

// inDebt returns a bucket at 1000/s, burst 20, with 5 tokens taken at 0: its
// state lies ahead of now, with room, so the next take adds.
func inDebt() *Bucket {
	b := New(1000, 20)
	b.AllowN(at(0), 5)
	return b
}

func sameTokens(t *testing.T, got, want *Bucket) {
	t.Helper()
	g, w := got.Tokens(at(0)), want.Tokens(at(0))
	if math.Abs(g-w) > 1e-9 {
		t.Errorf("tokens after the take = %v, want %v (as if the interloper came first)", g, w)
	}
}

func notCheaper(t *testing.T, got, want *Bucket) {
	t.Helper()
	g, w := got.Tokens(at(0)), want.Tokens(at(0))
	if g > w+1e-9 {
		t.Errorf("tokens after the take = %v, more than %v (as if the interloper came first)", g, w)
	}
}

func TestAddAfterSettingsChange(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(b *Bucket)
		// dearer: the take keeps the old, higher cost it added (a refund
		// could race a reset, as a refusal's could)
		dearer bool
	}{
		{name: "rate cut", set: func(b *Bucket) { b.SetRate(at(0), 10) }},
		{name: "rate rise", set: func(b *Bucket) { b.SetRate(at(0), 5000) }, dearer: true},
		{name: "burst cut", set: func(b *Bucket) { b.SetBurst(at(0), 8) }},
		{name: "smooth", set: func(b *Bucket) { b.SetSmooth(at(0), true, 1) }},
		{name: "rate Inf", set: func(b *Bucket) { b.SetRate(at(0), Inf) }},
		{name: "rate 0", set: func(b *Bucket) { b.SetRate(at(0), 0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := inDebt()
			tc.set(want)
			wantOK := want.AllowN(at(0), 1)

			b := inDebt()
			hookOnce(t, tc.set)
			if ok := b.AllowN(at(0), 1); ok != wantOK {
				t.Errorf("AllowN = %v, want %v", ok, wantOK)
			}
			if testHookBeforeAdd != nil {
				t.Fatal("the take never reached its add")
			}
			if tc.dearer {
				notCheaper(t, b, want)
			} else {
				sameTokens(t, b, want)
			}
		})
	}
}

// Tokens given back between the load and the add leave the state behind
// now: the take is charged from now, as a swap would have been.
func TestAddAfterGiveBack(t *testing.T) {
	want := inDebt()
	want.giveBack(7) // 5 taken, 7 given back: full since 2 ms ago
	want.AllowN(at(0), 1)

	b := inDebt()
	hookOnce(t, func(b *Bucket) { b.giveBack(7) })
	if !b.AllowN(at(0), 1) {
		t.Fatal("AllowN = false, want true")
	}
	sameTokens(t, b, want)
	if got := b.Tokens(at(0)); math.Abs(got-19) > 1e-9 {
		t.Errorf("tokens = %v, want 19", got)
	}
}

// An add that lands on a frozen state is wiped by the setter's store, and
// the take starts over: it is counted once, after the setter.
func TestAddOnFrozenState(t *testing.T) {
	b := inDebt()
	hookOnce(t, func(b *Bucket) {
		saved := b.full.Load()
		b.full.Store(frozen)
		go func() { // the setter, publishing once the add has landed
			for b.full.Load() == frozen {
				runtime.Gosched()
			}
			b.full.Store(saved)
		}()
	})
	if !b.AllowN(at(0), 1) {
		t.Fatal("AllowN = false, want true")
	}
	if got := b.Tokens(at(0)); math.Abs(got-14) > 1e-9 {
		t.Errorf("tokens = %v, want 14 (5 and 1 taken from 20)", got)
	}
}

// Takes that come between the load and the add can use up the room the
// load saw: the take is refused and its cost stays charged, one token the
// bucket loses rather than a refund that could race a reset.
func TestAddRefusedKeepsCharge(t *testing.T) {
	b := inDebt()
	hookOnce(t, func(b *Bucket) {
		if !b.AllowN(at(0), 15) { // the last 15 tokens
			t.Error("the interloper's take was refused")
		}
	})
	if b.AllowN(at(0), 1) {
		t.Error("AllowN = true after the bucket was emptied, want false")
	}
	if got := b.Tokens(at(0)); math.Abs(got+1) > 1e-9 {
		t.Errorf("tokens = %v, want -1: the refused take stays charged", got)
	}
}

// Near the edge a take swaps instead: a refusal there charges nothing.
func TestNearEdgeSwaps(t *testing.T) {
	b := New(1000, 20)
	b.AllowN(at(0), 15) // 5 left: fewer than addMargin more takes
	testHookBeforeAdd = func(*Bucket) { t.Error("a take near the edge added") }
	t.Cleanup(func() { testHookBeforeAdd = nil })
	for range 5 {
		if !b.AllowN(at(0), 1) {
			t.Fatal("AllowN = false with tokens left")
		}
	}
	if b.AllowN(at(0), 1) {
		t.Error("AllowN = true on an empty bucket")
	}
	if got := b.Tokens(at(0)); got != 0 {
		t.Errorf("tokens = %v, want 0: a refused swap charges nothing", got)
	}
}
