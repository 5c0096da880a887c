package polite

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polite-go/polite/bucket"
)

func TestRegistryRules(t *testing.T) {
	r := &Registry{
		Limits: Limits{Rate: 5},
		Rules: []Rule{
			{Pattern: "*", Limits: Limits{Concurrency: 4}},
			{Pattern: "*.example.com", Limits: Limits{Rate: 1}},
			{Pattern: "*.api.example.com", Limits: Limits{Rate: 50, Burst: 10}},
			{Pattern: "api.example.com", Limits: Limits{Rate: 20, Smooth: true}},
			{Pattern: "slow.test:8080", Limits: Limits{Rate: 0.5}},
		},
	}
	tests := []struct {
		key  string
		want Limits
	}{
		{"other.org", Limits{Rate: 5, Burst: DefaultBurst, Concurrency: 4}},
		{"www.example.com", Limits{Rate: 1, Burst: DefaultBurst, Concurrency: DefaultConcurrency}},
		{"a.b.example.com", Limits{Rate: 1, Burst: DefaultBurst, Concurrency: DefaultConcurrency}},
		{"v1.api.example.com", Limits{Rate: 50, Burst: 10, Concurrency: DefaultConcurrency}},
		{"api.example.com", Limits{Rate: 20, Burst: DefaultBurst, Concurrency: DefaultConcurrency, Smooth: true}},
		{"api.example.com:8443", Limits{Rate: 20, Burst: DefaultBurst, Concurrency: DefaultConcurrency, Smooth: true}},
		{"example.com", Limits{Rate: 5, Burst: DefaultBurst, Concurrency: 4}},
		{"slow.test:8080", Limits{Rate: 0.5, Burst: DefaultBurst, Concurrency: DefaultConcurrency}},
	}
	for _, tt := range tests {
		if got := r.LimitsFor(tt.key); got != tt.want {
			t.Errorf("LimitsFor(%q) = %+v, want %+v", tt.key, got, tt.want)
		}
	}
	h := r.Get("api.example.com")
	defer r.Put(h)
	if got := h.bucket.Rate(); got != 20 {
		t.Errorf("api.example.com bucket rate = %v, want 20", got)
	}
	if !h.bucket.Smooth() {
		t.Error("api.example.com bucket not smooth")
	}
	if got := h.gate.Limit(); got != DefaultConcurrency {
		t.Errorf("gate limit = %d, want %d", got, DefaultConcurrency)
	}
	if err := r.Check(); err != nil {
		t.Errorf("Check() = %v", err)
	}
	bad := &Registry{Rules: []Rule{{Pattern: "[a-"}}}
	if err := bad.Check(); err == nil {
		t.Error("Check() with pattern [a- = nil, want an error naming the rule")
	}
}

func TestRegistrySameHost(t *testing.T) {
	var r Registry
	a, b := r.Get("x.test"), r.Get("x.test")
	if a != b {
		t.Error("two Gets for one key returned different hosts")
	}
	r.Put(a)
	r.Put(b)
	if r.Len() != 1 {
		t.Errorf("Len() = %d, want 1", r.Len())
	}
}

// TestEvictionNeverGrantsMore: evicting and re-creating a host never gives it
// more than one full bucket, and busy hosts are never evicted.
func TestEvictionNeverGrantsMore(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &Registry{Limits: Limits{Rate: 1, Burst: 3}, IdleTimeout: time.Minute}
	r.now = func() time.Time { return now }

	h := r.Get("a.test")
	for range 3 {
		if !h.bucket.AllowN(now, 1) {
			t.Fatal("a fresh host refused its burst")
		}
	}
	r.Put(h)
	r.Sweep() // bucket empty: not idle
	if r.Len() != 1 {
		t.Fatalf("host with an empty bucket was evicted")
	}
	now = now.Add(3 * time.Second) // full again, but not for IdleTimeout
	r.Sweep()
	if r.Len() != 1 {
		t.Fatalf("host evicted before IdleTimeout")
	}
	held := r.Get("a.test") // referenced: never evicted
	now = now.Add(time.Hour)
	r.Sweep()
	if r.Len() != 1 {
		t.Fatalf("referenced host evicted")
	}
	if err := held.gate.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.Put(held)
	r.Sweep()
	if r.Len() != 1 {
		t.Fatalf("host with a request in flight evicted")
	}
	held.gate.Release()
	r.Sweep()
	if r.Len() != 0 || r.Evictions() != 1 {
		t.Fatalf("idle host not evicted: Len %d, Evictions %d", r.Len(), r.Evictions())
	}
	h2 := r.Get("a.test")
	defer r.Put(h2)
	n := 0
	for h2.bucket.AllowN(now, 1) {
		n++
	}
	if n != 3 {
		t.Errorf("re-created host granted %d at once, want exactly the burst 3", n)
	}
}

// TestRegistryBounded: a stream of distinct hosts, each used once, keeps the
// registry near the number active within IdleTimeout.
func TestRegistryBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &Registry{Limits: Limits{Rate: 100, Burst: 1}, IdleTimeout: time.Second}
	r.now = func() time.Time { return now }
	for i := range 200_000 {
		h := r.Get(fmt.Sprintf("h%d.test", i))
		h.bucket.AllowN(now, 1)
		r.Put(h)
		now = now.Add(100 * time.Microsecond) // 10,000 new hosts per second
	}
	// Active within a second: 10,000; sweeps happen at doublings, so at
	// most about 2× that plus the per-shard floor.
	if n := r.Len(); n > 40_000 {
		t.Errorf("Len() = %d after 200,000 one-shot hosts, want ≤ 40,000", n)
	}
}

func TestRegistryConcurrent(t *testing.T) {
	r := &Registry{Limits: Limits{Rate: bucket.Inf, Concurrency: 3}, IdleTimeout: time.Nanosecond}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 5000 {
				h := r.Get(fmt.Sprintf("h%d.test", (i*7+g)%300))
				if h.gate.TryAcquire() {
					if h.gate.InFlight() > 3 {
						t.Errorf("%s: %d in flight", h.Key(), h.gate.InFlight())
					}
					h.gate.Release()
				}
				r.Put(h)
				if i%1000 == 0 {
					r.Sweep()
				}
			}
		})
	}
	wg.Wait()
}

// TestHostFootprint measures the heap per idle host, its key included, and
// keeps it within 128 bytes for 16-byte keys (issue #2) and 160 for 64-byte
// ones (issue #12). Run with -v to see the figures.
func TestHostFootprint(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 200,000 hosts")
	}
	// The tables' load varies with the count (7/8 before growth, 7/16
	// after), so measure several counts and hold the mean to the target.
	for _, c := range []struct{ keyLen, max int }{{16, 128}, {64, 160}} {
		keyLen := c.keyLen
		pad := strings.Repeat("x", keyLen-16)
		total := 0.0
		counts := []int{100_000, 150_000, 200_000, 300_000}
		for _, n := range counts {
			keys := make([]string, n)
			for i := range keys {
				keys[i] = fmt.Sprintf("h%07d.example%s", i, pad)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			r := &Registry{}
			now := time.Now()
			for _, k := range keys {
				h := r.Get(k)
				h.bucket.AllowN(now, 1)
				r.Put(h)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			per := float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
			t.Logf("%d hosts: heap per idle host %.1f bytes, its %d-byte key included", n, per, len(keys[0]))
			total += per
			runtime.KeepAlive(r)
			runtime.KeepAlive(keys)
		}
		if mean := total / float64(len(counts)); mean > float64(c.max) {
			t.Errorf("%d-byte keys: mean heap per idle host = %.1f bytes, want ≤ %d", keyLen, mean, c.max)
		}
	}
}

// TestHostKeyLengths: a key of every length a Host keeps inline, and
// longer, comes back from Key, beside its rule (which shares a word with
// the key's length), and a second Get finds the Host by it.
func TestHostKeyLengths(t *testing.T) {
	r := &Registry{Rules: []Rule{{Pattern: "*.ruled", Limits: Limits{Rate: 7}}}}
	for _, n := range []int{0, 1, 15, 16, 17, 32, 33, 48, 49, 63, 64, 65, 254, 255, 256, 1000} {
		for _, suffix := range []string{"", ".ruled"} {
			key := strings.Repeat("k", max(n-len(suffix), 0)) + suffix
			h := r.Get(key)
			if got := h.Key(); got != key {
				t.Errorf("Get(%d-byte key).Key() = %q, want %q", len(key), got, key)
			}
			if got, want := h.rule(), int32(r.RuleIndex(key)); got != want {
				t.Errorf("Get(%q).rule() = %d, want %d", key, got, want)
			}
			if again := r.Get(key); again != h {
				t.Errorf("Get(%q) twice returned two hosts", key)
			} else {
				r.Put(again)
			}
			r.Put(h)
		}
	}
	if got := new(Host).Key(); got != "" {
		t.Errorf("zero Host's Key() = %q, want \"\"", got)
	}
}
