package redisstore_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/internal/redistest"
	"github.com/polite-go/polite/redisstore"
)

// TestWorkersShareOneRate: two Transports (two workers, each with its own
// registry) sharing a Redis store send to one host at its rate, not twice
// it, judged by the server's own arrival times. Redis keeps real time, so
// this runs in real time: about 3 s.
func TestWorkersShareOneRate(t *testing.T) {
	addr := redistest.Start(t)
	var mu sync.Mutex
	var arrivals []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		mu.Unlock()
		io.WriteString(w, "ok")
	}))
	defer srv.Close()

	const rate, burst, perWorker, workers = 20.0, 2, 30, 2
	calls := func() int64 {
		c := redis.NewClient(&redis.Options{Addr: addr})
		defer c.Close()
		return redisstore.ScriptCalls(t, c)
	}
	before := calls()
	var wg sync.WaitGroup
	for w := range workers {
		client := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		defer client.Close()
		tr := &polite.Transport{Limits: polite.Limits{Rate: rate, Burst: burst, Concurrency: 4}, IgnoreRobots: true}
		s, err := redisstore.New(client, tr.Registry(), redisstore.Options{Prefix: "fleet-test:"})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		tr.Store = s
		c := &http.Client{Transport: tr, Timeout: 30 * time.Second}
		for g := range 4 { // four goroutines per worker
			wg.Go(func() {
				for i := g; i < perWorker; i += 4 {
					resp, err := c.Get(fmt.Sprintf("%s/w%d/%d", srv.URL, w, i))
					if err != nil {
						t.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		}
	}
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	// Requests waiting for the host's rate take turns asking (polite's
	// asker): 4 waiting in each of 2 workers made 7.7 script calls per
	// request each asking on its own, 4.1 taking turns.
	perReq := float64(calls()-before) / float64(len(arrivals))
	t.Logf("%.1f script calls per request", perReq)
	if perReq > 6 {
		t.Errorf("%.1f script calls to Redis per request, want at most 6: the waiting requests should take turns", perReq)
	}
	if len(arrivals) != workers*perWorker {
		t.Fatalf("server saw %d requests, want %d", len(arrivals), workers*perWorker)
	}
	slices.SortFunc(arrivals, func(a, b time.Time) int { return a.Compare(b) })
	// Shared, the host's bucket holds burst tokens and earns rate per
	// second: n requests take at least (n-burst)/rate. Two buckets would
	// take half that.
	span := arrivals[len(arrivals)-1].Sub(arrivals[0])
	if least := time.Duration(float64(len(arrivals)-burst) / rate * float64(time.Second)); span < least*95/100 {
		t.Errorf("%d requests arrived within %v; one shared bucket needs at least %v", len(arrivals), span, least)
	}
	// No one-second window holds more than burst + rate (+10 % for the
	// lateness of a send after its reserved instant).
	for i, a := range arrivals {
		j, _ := slices.BinarySearchFunc(arrivals, a.Add(time.Second), func(x, t time.Time) int { return x.Compare(t) })
		if n, most := j-i, burst+int(rate*1.1); n > most {
			t.Errorf("%d requests arrived in the second from %v, want at most %d", n, a.Sub(arrivals[0]), most)
			break
		}
	}
}
