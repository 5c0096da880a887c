package bench

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/redisstore"
)

// TestRedisLoad is the load of instr.sh, which counts the instructions a
// redis-server under callgrind runs inside its scripts per request: a
// figure that, unlike requests/s or CPU time, does not move with the
// machine's load. It sends -load-n requests of BenchmarkRedisRequest's
// pattern (64 callers, each request polite's Admit, Release and Report,
// or redis_rate's Allow, hosts drawn at random from -load-hosts) to the
// Redis at -load-addr, and skips without it.
func TestRedisLoad(t *testing.T) {
	if *loadAddr == "" {
		t.Skip("the load of bench/instr.sh: run with -load-addr")
	}
	client := redis.NewClient(&redis.Options{Addr: *loadAddr, MaxRetries: -1, PoolSize: 64})
	defer client.Close()
	keys := make([]string, *loadHosts)
	for i := range keys {
		keys[i] = fmt.Sprintf("h%04d.example", i)
	}
	var do func(i int) bool
	switch *loadPeer {
	case "polite":
		reg := &polite.Registry{Limits: polite.Limits{Rate: 1e9, Burst: 1 << 20, Concurrency: 1 << 20}}
		// A callgrind'ed Redis runs some 50 times slower: no call may time out.
		s, err := redisstore.New(client, reg, redisstore.Options{Prefix: "instr:", Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		hs := make([]*polite.Host, len(keys))
		for i, k := range keys {
			hs[i] = reg.Get(k)
		}
		do = politeRequest(s, hs)
	case "redis_rate":
		l := redis_rate.NewLimiter(client)
		limit := redis_rate.Limit{Rate: 1 << 20, Burst: 1 << 20, Period: time.Second}
		do = func(i int) bool {
			r, err := l.Allow(context.Background(), keys[i], limit)
			return err == nil && r.Allowed == 1
		}
	default:
		t.Fatalf("-load-peer %q: want polite or redis_rate", *loadPeer)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	refused := 0
	for g := range 64 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range *loadN / 64 {
				if !do(rng.IntN(len(keys))) {
					mu.Lock()
					refused++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if refused > 0 {
		t.Fatalf("%d requests refused or failed; every one should be admitted", refused)
	}
}

var (
	loadAddr  = flag.String("load-addr", "", "TestRedisLoad: the Redis to load (host:port)")
	loadPeer  = flag.String("load-peer", "polite", "TestRedisLoad: polite or redis_rate")
	loadHosts = flag.Int("load-hosts", 1000, "TestRedisLoad: hosts drawn from")
	loadN     = flag.Int("load-n", 20000, "TestRedisLoad: requests (a multiple of 64)")
)
