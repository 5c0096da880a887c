package redisstore

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/breaker"
	"github.com/polite-go/polite/internal/redistest"
	"github.com/polite-go/polite/storetest"
)

var caseN atomic.Int64

// TestConformance runs the Store conformance suite against a real
// redis-server, the scripts following the suite's fake clock.
func TestConformance(t *testing.T) {
	addr := redistest.Start(t)
	storetest.Run(t, func(t *testing.T, c storetest.Config) (polite.Store, *polite.Registry) {
		// A pool as large as the suite's most concurrent case: go-redis
		// waits for a connection with timers from a package-wide pool,
		// which a synctest bubble must not share with another.
		client := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 128})
		t.Cleanup(func() { client.Close() })
		reg := &polite.Registry{Limits: c.Limits, IdleTimeout: c.IdleTimeout}
		s, err := New(client, reg, Options{
			Prefix:      fmt.Sprintf("t%d:", caseN.Add(1)),
			Breaker:     breaker.Config{Threshold: c.BreakerThreshold, OpenDelay: c.BreakerOpen, Jitter: -1},
			IdleTimeout: c.IdleTimeout,
			LeaseTTL:    c.LeaseTTL,
			CallerClock: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, reg
	})
}

func TestNewRefusesRetryingClient(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	if _, err := New(c, &polite.Registry{}, Options{}); err != ErrRetries {
		t.Errorf("New with a client that retries = %v, want ErrRetries", err)
	}
}
