package bench

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/adaptive"
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
			s, hs, _ := politeStore(b, addr, redisstore.Options{Prefix: fmt.Sprintf("b%d:", hosts)}, keys, 1e9)
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
// politeStore returns a Redis store on addr with o (and its client), whose hosts (keys, in
// order) admit at rate (1e9: without a limit of their own; a burst and a
// cap that never refuse), closed when b ends.
func politeStore(b *testing.B, addr string, o redisstore.Options, keys []string, rate float64) (*redisstore.Store, []*polite.Host, *redis.Client) {
	client := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 64})
	b.Cleanup(func() { client.Close() })
	reg := &polite.Registry{Limits: polite.Limits{Rate: rate, Burst: 1 << 20, Concurrency: 1 << 20}}
	s, err := redisstore.New(client, reg, o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	hs := make([]*polite.Host, len(keys))
	for i, k := range keys {
		hs[i] = reg.Get(k)
	}
	return s, hs, client
}

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

// BenchmarkRedisRequest: 64 concurrent callers, each "request" what a
// Transport asks a fleet's store per attempt: Admit, Release and Report
// (OK, 3 ms latency), beside go-redis/redis_rate's Allow, in the same run
// on one Redis on loopback. polite runs with and without Options.Adaptive
// (polite's controller, Max raised so that it never refuses); hosts: one
// hot host, and 1,000 hosts drawn at random per request; and at 1,000
// hosts, polite-paced: each host at 900/s, a crawler's pace, where a
// token is due more than a millisecond after the last and no worker gets
// credit (redisstore's credit.go), so each admission is a script. Each
// sub-benchmark reports requests/s and Redis server CPU per request:
// cpu-µs/req from INFO cpu (the server process's user+sys time: command
// execution, Lua, parsing and socket I/O, so fewer round trips count) and
// cmd-µs/req from INFO commandstats (the usec of the scripts called from
// outside, EVAL*, plus any other top-level command: commands run inside a
// script are counted inside the script's usec too, so they are left out).
func BenchmarkRedisRequest(b *testing.B) {
	addr := redistest.Start(b)
	for _, hosts := range []int{1, 1000} {
		keys := make([]string, hosts)
		for i := range keys {
			keys[i] = fmt.Sprintf("h%04d.example", i)
		}
		for _, v := range []struct {
			name  string
			adapt bool
			rate  float64
		}{{"polite", false, 1e9}, {"polite-adaptive", true, 1e9}, {"polite-paced", false, 900}} {
			name, adapt := v.name, v.adapt
			if v.rate < 1e9 && hosts == 1 {
				continue // 64 callers would outrun one host's 900/s
			}
			b.Run(fmt.Sprintf("%s/hosts=%d", name, hosts), func(b *testing.B) {
				warns := &countWarns{}
				o := redisstore.Options{Prefix: fmt.Sprintf("r%d%s:", hosts, name), Logger: slog.New(warns)}
				if adapt {
					o.Adaptive = &adaptive.Config{Max: 1e9} // DefaultMax (1000/s) would refuse the hot host
				}
				s, hs, client := politeStore(b, addr, o, keys, v.rate)
				request := politeRequest(s, hs)
				if adapt {
					// The controller caps a host's requests in flight at
					// its unloaded latency times its rate, 2 until it has
					// heard a few answers: each host hears them first.
					for i := range hosts {
						for range 8 {
							request(i)
						}
					}
				}
				runRequests(b, client, hosts, request, warns.first)
				if st := s.Status(); st.Degraded || warns.n.Load() > 0 {
					b.Fatalf("the store degraded (%s): its numbers are the local store's", warns.first())
				}
			})
		}
		b.Run(fmt.Sprintf("redis_rate/hosts=%d", hosts), func(b *testing.B) {
			client := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64})
			defer client.Close()
			l := redis_rate.NewLimiter(client)
			limit := redis_rate.Limit{Rate: 1 << 20, Burst: 1 << 20, Period: time.Second}
			ctx := context.Background()
			runRequests(b, client, hosts, func(i int) bool {
				r, err := l.Allow(ctx, keys[i], limit)
				return err == nil && r.Allowed == 1
			}, func() string { return "" })
		})
	}
}

// politeRequest returns what a Transport asks a fleet's store s per
// attempt to host hs[i]: Admit, Release and Report (OK, 3 ms), and
// whether the admission was granted.
func politeRequest(s *redisstore.Store, hs []*polite.Host) func(i int) bool {
	return func(i int) bool {
		h, now := hs[i], time.Now()
		a := s.Admit(h, polite.Query{Now: now, First: true})
		if !a.Granted {
			return false
		}
		s.Release(h, a.Lease)
		s.Report(h, polite.Report{Now: now.Add(3 * time.Millisecond), Sent: now, Outcome: polite.OK,
			Status: 200, Latency: 3 * time.Millisecond, Attempt: 1, Spare: a.Spare})
		return true
	}
}

// runRequests calls do from 64 goroutines, each with a host index drawn at
// random from [0, hosts), and reports requests/s and the Redis server's
// CPU per request (see BenchmarkRedisRequest). Every request must be
// admitted; why says what degraded the store ("" if nothing did: a store
// degraded answers from its local one, which may refuse).
func runRequests(b *testing.B, c *redis.Client, hosts int, do func(i int) bool, why func() string) {
	b.SetParallelism(32) // 64 callers on 2 cores
	var seed atomic.Uint64
	var denied atomic.Int64
	c.ConfigResetStat(context.Background())
	before := serverCPU(b, c)
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(seed.Add(1), 7))
		for pb.Next() {
			if !do(rng.IntN(hosts)) {
				denied.Add(1)
			}
		}
	})
	el := time.Since(start)
	b.StopTimer()
	after := serverCPU(b, c)
	if os.Getenv("STATS") != "" {
		fmt.Println(b.N, c.Info(context.Background(), "commandstats").Val())
	}
	if n := denied.Load(); n > 0 {
		if w := why(); w != "" {
			b.Fatalf("%d requests refused or failed, the store degraded (%s); every one should be admitted", n, w)
		}
		b.Fatalf("%d requests refused or failed; every one should be admitted", n)
	}
	n := float64(b.N)
	b.ReportMetric(n/el.Seconds(), "requests/s")
	b.ReportMetric((after.cpu-before.cpu)/n, "cpu-µs/req")
	b.ReportMetric((after.cmd-before.cmd)/n, "cmd-µs/req")
}

// usage is the Redis server's CPU so far, in µs: cpu the process's
// (INFO cpu, used_cpu_user + used_cpu_sys), cmd the commands' called from
// outside a script (INFO commandstats).
type usage struct{ cpu, cmd float64 }

func serverCPU(b *testing.B, c *redis.Client) usage {
	ctx := context.Background()
	info, err := c.Info(ctx, "cpu", "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var u usage
	for line := range strings.SplitSeq(info, "\n") {
		line = strings.TrimSpace(line)
		name, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch {
		case name == "used_cpu_user" || name == "used_cpu_sys":
			f, _ := strconv.ParseFloat(val, 64)
			u.cpu += f * 1e6
		case strings.HasPrefix(name, "cmdstat_"):
			if scriptInner[strings.TrimPrefix(name, "cmdstat_")] {
				continue
			}
			for kv := range strings.SplitSeq(val, ",") {
				if us, ok := strings.CutPrefix(kv, "usec="); ok {
					f, _ := strconv.ParseFloat(us, 64)
					u.cmd += f
				}
			}
		}
	}
	return u
}

// scriptInner are the commands the scripts of both stores run inside
// (and nothing else calls in these benchmarks but INFO): their usec is in
// the script's already.
var scriptInner = map[string]bool{"hget": true, "hset": true, "hmget": true, "hdel": true, "pexpire": true,
	"zadd": true, "zrem": true, "zrange": true, "zcard": true, "zcount": true, "zremrangebyscore": true,
	"time": true, "get": true, "set": true, "del": true, "lpush": true, "ltrim": true, "llen": true,
	"lindex": true, "rpush": true, "lrange": true, "expire": true, "hgetall": true, "hincrby": true,
	"hsetnx": true, "incrby": true, "exists": true, "unlink": true, "pttl": true, "ttl": true}

// countWarns is a slog.Handler that counts the records at Warn and above
// (a store's "degraded"), keeps the first one's reason and drops the rest.
type countWarns struct {
	n      atomic.Int64
	reason atomic.Pointer[string]
}

func (c *countWarns) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (c *countWarns) Handle(_ context.Context, r slog.Record) error {
	c.n.Add(1)
	why := r.Message
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "reason" {
			why += ": " + a.Value.String()
		}
		return true
	})
	c.reason.CompareAndSwap(nil, &why)
	return nil
}
func (c *countWarns) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *countWarns) WithGroup(string) slog.Handler      { return c }

// first returns what the first warning said, or "" when none came.
func (c *countWarns) first() string {
	if p := c.reason.Load(); p != nil {
		return *p
	}
	return ""
}
