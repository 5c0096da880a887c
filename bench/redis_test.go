package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/internal/redistest"
	"github.com/polite-go/polite/redisstore"
)

// BenchmarkRedisAdmit: 64 concurrent callers deciding admissions for hosts
// through one Redis on loopback: polite's Redis store (one Lua script per
// decision: block, pause, breaker, in-flight lease, token) against
// go-redis/redis_rate (one GCRA script per decision, rate only), in the
// same run. Each sub-benchmark reports decisions/s and the added latency
// per decision (p50, p99). Hosts: one hot host, and 1,000 hosts at random.
func BenchmarkRedisAdmit(b *testing.B) {
	addr := redistest.Start(b)
	for _, hosts := range []int{1, 1000} {
		keys := make([]string, hosts)
		for i := range keys {
			keys[i] = fmt.Sprintf("h%04d.example", i)
		}
		b.Run(fmt.Sprintf("polite/hosts=%d", hosts), func(b *testing.B) {
			client := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 64})
			defer client.Close()
			reg := &polite.Registry{Limits: polite.Limits{Rate: 1e9, Burst: 1 << 20, Concurrency: 1 << 20}}
			s, err := redisstore.New(client, reg, redisstore.Options{Prefix: fmt.Sprintf("b%d:", hosts)})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			hs := make([]*polite.Host, hosts)
			for i, k := range keys {
				hs[i] = reg.Get(k)
			}
			runRedis(b, func(i int) bool {
				h := hs[i%hosts]
				a := s.Admit(h, polite.Query{Now: time.Now()})
				s.Release(h, a.Lease)
				return a.Granted
			})
		})
		b.Run(fmt.Sprintf("redis_rate/hosts=%d", hosts), func(b *testing.B) {
			client := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64})
			defer client.Close()
			l := redis_rate.NewLimiter(client)
			limit := redis_rate.Limit{Rate: 1 << 20, Burst: 1 << 20, Period: time.Second}
			ctx := context.Background()
			runRedis(b, func(i int) bool {
				r, err := l.Allow(ctx, keys[i%hosts], limit)
				return err == nil && r.Allowed == 1
			})
		})
	}
}

// runRedis calls decide from 64 goroutines and reports decisions/s and the
// latency percentiles of one decision. Every decision must admit.
func runRedis(b *testing.B, decide func(i int) bool) {
	b.SetParallelism(32) // 64 callers on 2 cores
	var mu sync.Mutex
	var lat []time.Duration
	var denied int
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		mine := make([]time.Duration, 0, 1024)
		no := 0
		for i := 0; pb.Next(); i++ {
			t0 := time.Now()
			if !decide(i) {
				no++
			}
			mine = append(mine, time.Since(t0))
		}
		mu.Lock()
		lat = append(lat, mine...)
		denied += no
		mu.Unlock()
	})
	el := time.Since(start)
	b.StopTimer()
	if denied > 0 {
		b.Fatalf("%d decisions refused or failed; every one should admit", denied)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(len(lat))/el.Seconds(), "decisions/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
