package bucket

import (
	"context"
	"testing"
	"time"
)

// The benchmarks pass an explicit now: time.Now costs about as much as the
// whole AllowN, so it stays off the measured path.

// A burst of 2^32 tokens keeps every call on the admitting path (a CAS).
func BenchmarkAllowN(b *testing.B) {
	bk := New(1e9, 1<<32)
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		bk.AllowN(now, 1)
	}
}

func BenchmarkAllowNRefusing(b *testing.B) {
	bk := New(1, 1)
	now := time.Now()
	bk.AllowN(now, 1)
	b.ReportAllocs()
	for b.Loop() {
		bk.AllowN(now, 1)
	}
}

func BenchmarkAllowNParallel(b *testing.B) {
	bk := New(1e9, 1<<32)
	now := time.Now()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			bk.AllowN(now, 1)
		}
	})
}

func BenchmarkWaitNoDelay(b *testing.B) {
	bk := New(Inf, 1)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_ = bk.WaitN(ctx, 1)
	}
}

func BenchmarkTokens(b *testing.B) {
	bk := New(10, 10)
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		bk.Tokens(now)
	}
}
