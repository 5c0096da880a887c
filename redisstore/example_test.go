package redisstore_test

import (
	"log"
	"net/http"

	"github.com/redis/go-redis/v9"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/adaptive"
	"github.com/polite-go/polite/redisstore"
)

// A worker of a fleet: its Transport keeps each host's budget in the Redis
// every worker shares, so the fleet as a whole sends each host its Limits,
// not once per worker.
func Example() {
	client := redis.NewClient(&redis.Options{
		Addr:       "127.0.0.1:6379",
		MaxRetries: -1, // a script whose reply was lost must not run twice
	})
	defer client.Close()

	tr := &polite.Transport{
		Limits:    polite.Limits{Rate: 5, Burst: 2, Concurrency: 4}, // the whole fleet's, per host
		UserAgent: "mycrawler/1.0 (+https://example.com/bot)",
	}
	s, err := redisstore.New(client, tr.Registry(), redisstore.Options{
		Prefix:       "polite:crawl1:",          // the fleet's name
		LocalOptions: tr.LocalOptions(),         // the same breaker, budget and backoff rules
		Outage:       redisstore.Local,          // Redis away: each worker takes its share
		Adaptive:     &adaptive.Config{Max: 20}, // polite's controller, shared by the fleet
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	tr.Store = s

	c := &http.Client{Transport: tr}
	_ = c // c.Get(...) as with any client
}
