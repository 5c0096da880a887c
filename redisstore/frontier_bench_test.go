package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// crawlURLs returns n URLs over hosts hosts, about 50 bytes each.
func crawlURLs(from, n, hosts int) []Entry {
	es := make([]Entry, n)
	for i := range es {
		k := from + i
		h := fmt.Sprintf("www.site%d.example.com", k%hosts)
		es[i] = Entry{URL: fmt.Sprintf("https://%s/articles/%d.html", h, k), Host: h}
	}
	return es
}

func usedMemory(t testing.TB, c redis.UniversalClient) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Fatal("no used_memory in INFO memory")
	return 0
}

// found makes es discovered links (issue 35): at depth 1, found on pages
// of about 50 bytes, 20 links a page (each to another host, so each a
// group of its own in the enqueue script: its slowest case).
func found(es []Entry) []Entry {
	for i := range es {
		es[i].Depth = 1
		es[i].FoundOn = fmt.Sprintf("https://www.site%d.example.com/articles/%d.html", i/20%2000, 1_000_000+i/20)
	}
	return es
}

// Redis's memory per pending URL, dedupe included, stays within 200
// bytes: 200,000 URLs of about 50 bytes, over 2,000 hosts and over one.
// A discovered URL costs its depth and page found on more (logged, and
// bounded by 200 bytes and that page's length).
func TestFrontierMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("enqueues 600,000 URLs")
	}
	for _, tc := range []struct {
		hosts int
		found bool
	}{{2000, false}, {1, false}, {2000, true}} {
		name := fmt.Sprint(tc.hosts, "hosts")
		if tc.found {
			name += "/found"
		}
		t.Run(name, func(t *testing.T) {
			f, _, c := newFrontier(t, FrontierOptions{})
			before := usedMemory(t, c)
			const n = 200_000
			limit := 200.0
			start := time.Now()
			for i := 0; i < n; i += 10_000 {
				es := crawlURLs(i, 10_000, tc.hosts)
				if tc.found {
					es = found(es)
					limit = 200 + float64(len(es[0].FoundOn))
				}
				mustEnqueue(t, f, es)
			}
			took := time.Since(start)
			per := float64(usedMemory(t, c)-before) / n
			t.Logf("%d URLs over %d hosts: %.0f bytes each, enqueued at %.0f/s", n, tc.hosts, per, n/took.Seconds())
			if per > limit {
				t.Errorf("%.0f bytes per pending URL, want at most %.0f", per, limit)
			}
		})
	}
}

// BenchmarkFrontierEnqueue enqueues in batches of 10,000 new URLs from
// one caller; RunParallel callers share the Redis.
func BenchmarkFrontierEnqueue(b *testing.B) {
	f, _, _ := newFrontier(b, FrontierOptions{})
	const batch = 10_000
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i += batch {
		if _, err := f.Enqueue(context.Background(), crawlURLs(i, min(batch, b.N-i), 2000)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "urls/s")
}

// BenchmarkFrontierLeaseCommit leases 50 URLs at a time and commits them.
func BenchmarkFrontierLeaseCommit(b *testing.B) {
	f, _, _ := newFrontier(b, FrontierOptions{PerHost: 5})
	for i := 0; i < b.N+50; i += 10_000 {
		mustEnqueue(b, f, crawlURLs(i, 10_000, 2000))
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for done := 0; done < b.N; {
		ls := mustLease(b, f, "w", 50)
		mustCommit(b, f, "w", "ok", ls...)
		done += len(ls)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "urls/s")
}

// BenchmarkFrontierEnqueueParallel: several enqueuers at once, each its
// own batches of 1,000 new URLs.
func BenchmarkFrontierEnqueueParallel(b *testing.B) {
	f, _, _ := newFrontier(b, FrontierOptions{})
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(next.Add(1000)) - 1000
			if _, err := f.Enqueue(context.Background(), crawlURLs(i, 1000, 2000)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)*1000/time.Since(start).Seconds(), "urls/s")
}
