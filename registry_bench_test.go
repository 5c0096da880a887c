package polite

import (
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"
)

func hostKeys(n int) []string {
	keys := make([]string, n)
	var buf [32]byte
	for i := range keys {
		keys[i] = string(hostKeyInto(buf[:0], i))
	}
	return keys
}

// hostKeyInto appends "h%07d.example" to dst. Benchmarks build each key in a
// reused buffer, as a crawler holds a freshly parsed URL: reading it from a
// slice of a million strings would add two cache misses that belong to the
// benchmark, not to the registry.
func hostKeyInto(dst []byte, i int) []byte {
	dst = append(dst, 'h')
	for d := 1_000_000; d > 0; d /= 10 {
		dst = append(dst, byte('0'+i/d%10))
	}
	return append(dst, ".example"...)
}

func bytesKey(b []byte) string { return unsafe.String(&b[0], len(b)) }

// BenchmarkRegistryGetAllow: get a random one of 1,000,000 hosts, take a
// token, give the host back. The random indexes are drawn ahead so the
// generator stays off the measured path.
func BenchmarkRegistryGetAllow(b *testing.B) {
	keys := hostKeys(1_000_000)
	r := &Registry{Limits: Limits{Rate: 1e6, Burst: 1 << 20}}
	now := time.Now()
	for _, k := range keys {
		h := r.Get(k)
		h.bucket.AllowN(now, 1) // a used host; unused ones are idle and get evicted
		r.Put(h)
	}
	if r.Len() != len(keys) {
		b.Fatalf("registry holds %d hosts, want %d", r.Len(), len(keys))
	}
	idx := make([]int32, 1<<20)
	for i := range idx {
		idx[i] = rand.Int32N(int32(len(keys)))
	}
	b.ReportAllocs()
	var buf [32]byte
	i := 0
	for b.Loop() {
		h := r.Get(bytesKey(hostKeyInto(buf[:0], int(idx[i&(len(idx)-1)]))))
		h.bucket.AllowN(now, 1)
		r.Put(h)
		i++
	}
}

func BenchmarkRegistryGetAllowParallel(b *testing.B) {
	keys := hostKeys(1_000_000)
	r := &Registry{Limits: Limits{Rate: 1e6, Burst: 1 << 20}}
	now := time.Now()
	for _, k := range keys {
		h := r.Get(k)
		h.bucket.AllowN(now, 1) // a used host; unused ones are idle and get evicted
		r.Put(h)
	}
	if r.Len() != len(keys) {
		b.Fatalf("registry holds %d hosts, want %d", r.Len(), len(keys))
	}
	idx := make([]int32, 1<<20)
	for i := range idx {
		idx[i] = rand.Int32N(int32(len(keys)))
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var buf [32]byte
		i := rand.IntN(len(idx))
		for pb.Next() {
			h := r.Get(bytesKey(hostKeyInto(buf[:0], int(idx[i&(len(idx)-1)]))))
			h.bucket.AllowN(now, 1)
			r.Put(h)
			i++
		}
	})
}

// BenchmarkRegistryHot: one host, every goroutine.
func BenchmarkRegistryHotParallel(b *testing.B) {
	r := &Registry{Limits: Limits{Rate: 1e9, Burst: 1 << 30}}
	now := time.Now()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			h := r.Get("hot.example")
			h.bucket.AllowN(now, 1)
			r.Put(h)
		}
	})
}
