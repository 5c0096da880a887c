package redisstore_test

import (
	"context"
	"encoding/json"
	"log"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/polite-go/polite/redisstore"
)

// A worker of a fleet crawl: lease URLs, fetch them, commit the results.
// Any number of such processes share the frontier; a killed one's leases
// come back after LeaseTTL.
func ExampleFrontier() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer client.Close()
	f, err := redisstore.NewFrontier(client, redisstore.FrontierOptions{
		Prefix:   "polite:crawl1:",
		LeaseTTL: time.Minute,
		HostGap:  time.Second,
	})
	if err != nil {
		log.Fatal(err)
	}
	// Seeds: enqueueing them from every worker is fine, each URL is added once.
	if _, err := f.Enqueue(ctx, []redisstore.Entry{{URL: "https://example.com/"}}); err != nil {
		log.Fatal(err)
	}
	for {
		ls, err := f.Lease(ctx, "worker-1", 20)
		if err != nil {
			log.Fatal(err)
		}
		if len(ls) == 0 {
			if done, err := f.Finished(ctx); err != nil || done {
				break
			}
			time.Sleep(time.Second) // nothing due yet
			continue
		}
		var cs []redisstore.Commit
		for _, l := range ls {
			resp, err := http.Get(l.URL) // a polite client in a real worker
			outcome := "error"
			if err == nil {
				outcome = resp.Status
				resp.Body.Close()
			}
			rec, _ := json.Marshal(map[string]string{"url": l.URL, "outcome": outcome})
			cs = append(cs, redisstore.Commit{Lease: l, Outcome: outcome, Record: rec, Worker: "worker-1"})
		}
		if _, err := f.Commit(ctx, cs); err != nil { // refused ones were fetched by another worker too
			log.Fatal(err)
		}
	}
}

// Link discovery in a fleet (issue 35): the worker given the list shares
// its scope roots and enqueues its seeds; every worker enqueues the links
// it finds one level deeper, naming the page, and the frontier keeps each
// URL once.
func ExampleFrontier_AddRoots() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer client.Close()
	f, err := redisstore.NewFrontier(client, redisstore.FrontierOptions{Prefix: "polite:crawl1:"})
	if err != nil {
		log.Fatal(err)
	}
	// The worker with the list.
	if err := f.AddRoots(ctx, []string{"https://example.com/docs/"}); err != nil {
		log.Fatal(err)
	}
	if _, err := f.Enqueue(ctx, []redisstore.Entry{{URL: "https://example.com/docs/"}}); err != nil {
		log.Fatal(err)
	}
	// A worker that joins without one.
	roots, err := f.Roots(ctx)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("following links under %q", roots)
	// A page leased and fetched: its links in scope, one level deeper.
	ls, err := f.Lease(ctx, "worker-2", 1)
	if err != nil || len(ls) == 0 {
		log.Fatal(err)
	}
	page := ls[0]
	links := []string{"https://example.com/docs/intro"} // parsed from the page
	var es []redisstore.Entry
	for _, u := range links {
		es = append(es, redisstore.Entry{URL: u, Depth: page.Depth + 1, FoundOn: page.URL})
	}
	if _, err := f.Enqueue(ctx, es); err != nil {
		log.Fatal(err)
	}
}
