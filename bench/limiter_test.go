package bench

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/polite-go/polite/bucket"
	"go.uber.org/ratelimit"
	"golang.org/x/time/rate"
)

// One limiter, every call admitted. The rate is finite and the burst huge
// (2^40 tokens at 1e9/s) so both limiters run their full arithmetic on the
// admitting path without refilling: now is read once, outside the loop,
// because time.Now alone costs about 50 ns on these machines and would
// dominate what is measured.
const (
	singleRate  = 1e9
	singleBurst = 1 << 40
)

func BenchmarkAllowN(b *testing.B) {
	b.Run("polite", func(b *testing.B) {
		l := bucket.New(singleRate, singleBurst)
		now := time.Now()
		denied := 0
		b.ReportAllocs()
		for b.Loop() {
			if !l.AllowN(now, 1) {
				denied++
			}
		}
		checkAdmitted(b, int64(denied))
	})
	b.Run("xrate", func(b *testing.B) {
		l := rate.NewLimiter(singleRate, singleBurst)
		now := time.Now()
		denied := 0
		b.ReportAllocs()
		for b.Loop() {
			if !l.AllowN(now, 1) {
				denied++
			}
		}
		checkAdmitted(b, int64(denied))
	})
}

// BenchmarkAllowNParallel is BenchmarkAllowN with every goroutine on the one
// limiter: polite's compare-and-swap against x/time/rate's mutex.
func BenchmarkAllowNParallel(b *testing.B) {
	b.Run("polite", func(b *testing.B) {
		l := bucket.New(singleRate, singleBurst)
		now := time.Now()
		var denied atomic.Int64
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			n := int64(0)
			for pb.Next() {
				if !l.AllowN(now, 1) {
					n++
				}
			}
			denied.Add(n)
		})
		checkAdmitted(b, denied.Load())
	})
	b.Run("xrate", func(b *testing.B) {
		l := rate.NewLimiter(singleRate, singleBurst)
		now := time.Now()
		var denied atomic.Int64
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			n := int64(0)
			for pb.Next() {
				if !l.AllowN(now, 1) {
					n++
				}
			}
			denied.Add(n)
		})
		checkAdmitted(b, denied.Load())
	})
}

// BenchmarkTake is for reference only, not like-for-like with
// BenchmarkAllowN: go.uber.org/ratelimit has only a blocking Take that reads
// the clock itself, so every call here includes a time.Now. At 1e9/s without
// slack a Take never has to sleep. polite and xrate run their short forms
// Allow, which read the clock too, so the three rows here share that cost;
// uber still differs in kind (it waits where the others refuse).
func BenchmarkTake(b *testing.B) {
	b.Run("uber", func(b *testing.B) {
		l := ratelimit.New(1e9, ratelimit.WithoutSlack)
		b.ReportAllocs()
		for b.Loop() {
			l.Take()
		}
	})
	b.Run("polite", func(b *testing.B) {
		l := bucket.New(singleRate, singleBurst)
		denied := 0
		b.ReportAllocs()
		for b.Loop() {
			if !l.Allow() {
				denied++
			}
		}
		checkAdmitted(b, int64(denied))
	})
	b.Run("xrate", func(b *testing.B) {
		l := rate.NewLimiter(singleRate, singleBurst)
		denied := 0
		b.ReportAllocs()
		for b.Loop() {
			if !l.Allow() {
				denied++
			}
		}
		checkAdmitted(b, int64(denied))
	})
}

func BenchmarkTakeParallel(b *testing.B) {
	b.Run("uber", func(b *testing.B) {
		l := ratelimit.New(1e9, ratelimit.WithoutSlack)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				l.Take()
			}
		})
	})
	b.Run("polite", func(b *testing.B) {
		l := bucket.New(singleRate, singleBurst)
		var denied atomic.Int64
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			n := int64(0)
			for pb.Next() {
				if !l.Allow() {
					n++
				}
			}
			denied.Add(n)
		})
		checkAdmitted(b, denied.Load())
	})
	b.Run("xrate", func(b *testing.B) {
		l := rate.NewLimiter(singleRate, singleBurst)
		var denied atomic.Int64
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			n := int64(0)
			for pb.Next() {
				if !l.Allow() {
					n++
				}
			}
			denied.Add(n)
		})
		checkAdmitted(b, denied.Load())
	})
}

// checkAdmitted fails a benchmark that left the admitting path: a refusal
// takes a different, shorter path and would flatter the limiter.
func checkAdmitted(b *testing.B, denied int64) {
	b.Helper()
	if denied != 0 {
		b.Fatalf("%d of %d calls refused, want all admitted", denied, b.N)
	}
}
