package testbed

import (
	"fmt"
	"time"
)

// DemoHosts returns the hosts of `polite demo`: one of each behaviour, so a
// crawl of a few hundred URLs over them shows every mechanism within a minute.
//
//	fast.test    50 req/s, burst 25, 20 ms: plenty of room
//	slow.test    5 req/s, burst 2, 100 ms: a small host
//	drop.test    50 req/s until 6 s, then 10 req/s: capacity drops mid-run
//	retry.test   10 req/s, 429 with Retry-After (seconds) and RateLimit headers
//	busy.test    5 req/s, 503 with Retry-After as an HTTP-date
//	waf.test     soft-blocks every page after the first 20 (403 challenge)
//	robots.test  robots.txt disallowing /private/ with Crawl-delay: 1
//	knee.test    no 429s: 2 servers × 100 ms (20 req/s), latency climbs beyond
func DemoHosts() []HostConfig {
	return []HostConfig{
		{Name: "fast.test", Rate: 50, Burst: 25, Latency: 20 * time.Millisecond, RetryAfter: RetryAfterSeconds},
		{Name: "slow.test", Rate: 5, Burst: 2, Latency: 100 * time.Millisecond, RetryAfter: RetryAfterSeconds},
		{
			Name: "drop.test", Rate: 50, Burst: 25, Latency: 20 * time.Millisecond, RetryAfter: RetryAfterSeconds,
			Schedule: []Step{{At: 6 * time.Second, Rate: 10, Burst: 5}},
		},
		{
			Name: "retry.test", Rate: 10, Burst: 5, Latency: 30 * time.Millisecond,
			RetryAfter: RetryAfterSeconds, RateLimitHeaders: RateLimitBoth,
		},
		{Name: "busy.test", Rate: 5, Burst: 5, Status: 503, RetryAfter: RetryAfterDate, Latency: 50 * time.Millisecond},
		{Name: "waf.test", Rate: 20, Burst: 10, Latency: 30 * time.Millisecond, SoftBlock: SoftBlock{After: 20}},
		{
			Name: "robots.test", Rate: 20, Burst: 10, Latency: 20 * time.Millisecond,
			Robots: "User-agent: *\nDisallow: /private/\nCrawl-delay: 1\n",
		},
		{Name: "knee.test", NoThrottle: true, Servers: 2, Latency: 100 * time.Millisecond, Jitter: 0.2},
	}
}

// Scenario is a named set of hosts the politeness benchmark runs a policy
// against for Duration. It is plain data: the benchmark, the tests and
// `polite demo` share it.
type Scenario struct {
	// Name identifies the scenario, such as "step-down".
	Name string
	// About says in one line what the scenario tests.
	About string
	// Duration is how long a run lasts.
	Duration time.Duration
	// Hosts are the scenario's hosts; their capacity is in Rate and Schedule
	// (or Servers/Latency under NoThrottle), and server-side truth in each
	// Host's Timeline.
	Hosts []HostConfig
	// Concurrency is the client's cap on requests in flight per host when
	// it is part of the shape: a knee read through one request in flight
	// is not the knee read through sixteen. Zero leaves it to the
	// benchmark.
	Concurrency int
}

// Scenarios returns the politeness benchmark's standard scenarios, modelled on
// Vector's adaptive-concurrency simulations (constant link, defers at high
// rate, drops at high concurrency, shallow knee, jittery link):
//
//	steady          20 req/s, 429 without Retry-After
//	step-down       50 → 10 req/s at 15 s
//	step-up         10 → 50 req/s at 15 s
//	latency-knee    no 429s: 4 servers × 100 ms = 40 req/s, queue unbounded
//	shallow-knee    no 429s: latency rises with concurrency (Slowdown) before 10 servers queue
//	retry-after     10 req/s, 429 with honest Retry-After
//	jittery         25 req/s behind a 50–150 ms latency that is noise, not load
//	concurrency-cap 5 servers × 100 ms, no queue: 503 beyond 5 in flight
//	knee-…          knee shapes, no 429s unless a bucket says so (issue 34): the
//	                knee's rate, the unloaded latency (0.5 to 200 ms), the
//	                client's in-flight cap (1 to 16) and the queue's slope,
//	                each named in the scenario's name (see kneeScenarios)
//	mixed-20        20 hosts from 2 to 100 req/s at once
//
// Buckets hold half a second of capacity (Burst = Rate/2), a common shape for
// a server that tolerates small bursts.
func Scenarios() []Scenario {
	const ms = time.Millisecond
	return append(append([]Scenario{
		{
			Name: "steady", About: "constant capacity of 20 req/s; 429 without Retry-After",
			Duration: 60 * time.Second,
			Hosts:    []HostConfig{{Name: "steady.test", Rate: 20, Burst: 10, Latency: 50 * ms}},
		},
		{
			Name: "step-down", About: "capacity drops from 50 to 10 req/s at 15 s",
			Duration: 45 * time.Second,
			Hosts: []HostConfig{{
				Name: "down.test", Rate: 50, Burst: 25, Latency: 50 * ms,
				Schedule: []Step{{At: 15 * time.Second, Rate: 10, Burst: 5}},
			}},
		},
		{
			Name: "step-up", About: "capacity rises from 10 to 50 req/s at 15 s",
			Duration: 45 * time.Second,
			Hosts: []HostConfig{{
				Name: "up.test", Rate: 10, Burst: 5, Latency: 50 * ms,
				Schedule: []Step{{At: 15 * time.Second, Rate: 50, Burst: 25}},
			}},
		},
		{
			Name: "latency-knee", About: "no 429s: 4 servers × 100 ms (40 req/s); beyond, the queue and latency grow",
			Duration: 60 * time.Second,
			Hosts: []HostConfig{{
				Name: "knee.test", NoThrottle: true, Servers: 4, Latency: 100 * ms, Jitter: 0.1,
			}},
		},
		{
			Name: "shallow-knee", About: "no 429s: 10 servers whose service slows from 100 to 145 ms as they fill (69 req/s)",
			Duration: 60 * time.Second,
			Hosts: []HostConfig{{
				Name: "shallow.test", NoThrottle: true, Servers: 10, Latency: 100 * ms, Slowdown: 0.05, Jitter: 0.1,
			}},
		},
		{
			Name: "retry-after", About: "10 req/s; 429 with an honest Retry-After in seconds",
			Duration: 60 * time.Second,
			Hosts: []HostConfig{{
				Name: "retry.test", Rate: 10, Burst: 5, Latency: 50 * ms, RetryAfter: RetryAfterSeconds,
			}},
		},
		{
			Name: "jittery", About: "25 req/s with 50-150 ms latency that is noise, not load",
			Duration: 60 * time.Second,
			Hosts: []HostConfig{{
				Name: "jitter.test", Rate: 25, Burst: 12, Latency: 100 * ms, Jitter: 0.5,
			}},
		},
		{
			Name: "concurrency-cap", About: "5 servers × 100 ms and no queue: 503 beyond 5 in flight (50 req/s)",
			Duration: 60 * time.Second,
			Hosts: []HostConfig{{
				Name: "cap.test", Servers: 5, MaxQueue: -1, Latency: 100 * ms,
			}},
		},
	}, kneeScenarios()...), Scenario{
		Name: "mixed-20", About: "20 hosts of mixed capacities (2 to 100 req/s) at once",
		Duration: 60 * time.Second,
		Hosts:    mixedHosts(20),
	})
}

// kneeScenarios are the knee shapes (issue 34): one host each, whose
// latency alone (or a bucket behind the knee) says when the client asks
// too much. A name reads wait or fifo (the queue's slope: a request
// waiting waits 1/rate per request ahead, as behind nginx's limit_req, or
// the service time over the servers per request ahead), the knee's rate
// or servers, the unloaded latency, and the client's in-flight cap.
func kneeScenarios() []Scenario {
	const ms = time.Millisecond
	return []Scenario{
		{
			Name: "knee-wait15-10ms-c8", About: "no 429s: a queue forms at 15 req/s (67 ms per request ahead), 10 ms unloaded; 8 in flight",
			Duration: 30 * time.Second, Concurrency: 8,
			Hosts: []HostConfig{{Name: "wait15.test", NoThrottle: true, Rate: 15, Latency: 10 * ms, Jitter: 0.1}},
		},
		{
			Name: "knee-wait50-0.5ms-c16", About: "no 429s: a queue forms at 50 req/s (20 ms per request ahead), 0.5 ms unloaded; 16 in flight",
			Duration: 30 * time.Second, Concurrency: 16,
			Hosts: []HostConfig{{Name: "wait50.test", NoThrottle: true, Rate: 50, Latency: 500 * time.Microsecond, Jitter: 0.1}},
		},
		{
			Name: "knee-wait20-20ms-c1", About: "no 429s: a queue forms at 20 req/s, 20 ms unloaded; one request in flight",
			Duration: 30 * time.Second, Concurrency: 1,
			Hosts: []HostConfig{{Name: "wait20.test", NoThrottle: true, Rate: 20, Latency: 20 * ms, Jitter: 0.1}},
		},
		{
			Name: "knee-fifo2-200ms-c4", About: "no 429s: 2 servers × 200 ms (10 req/s), a FIFO queue beyond; 4 in flight",
			Duration: 30 * time.Second, Concurrency: 4,
			Hosts: []HostConfig{{Name: "fifo2.test", NoThrottle: true, Servers: 2, Latency: 200 * ms, Jitter: 0.1}},
		},
		{
			Name: "knee-fifo2-50ms-b50", About: "2 servers × 50 ms (40 req/s) with a FIFO queue, behind a 50 req/s bucket (burst 10, 429); 8 in flight",
			Duration: 30 * time.Second, Concurrency: 8,
			Hosts: []HostConfig{{Name: "fifo2b.test", Rate: 50, Burst: 10, Servers: 2, Latency: 50 * ms, Jitter: 0.1}},
		},
	}
}

// mixedHosts returns n hosts cycling through capacities, latencies and
// rejection styles: mixed-01.test, mixed-02.test, ...
func mixedHosts(n int) []HostConfig {
	rates := []float64{2, 5, 10, 20, 50, 100, 8, 30, 3, 15}
	lats := []time.Duration{20, 50, 100, 30, 80}
	out := make([]HostConfig, n)
	for i := range out {
		r := rates[i%len(rates)]
		c := HostConfig{
			Name:    fmt.Sprintf("mixed-%02d.test", i+1),
			Rate:    r,
			Burst:   max(int(r/2), 1),
			Latency: lats[i%len(lats)] * time.Millisecond,
		}
		switch i % 4 {
		case 1:
			c.RetryAfter = RetryAfterSeconds
		case 2:
			c.Status, c.RetryAfter = 503, RetryAfterDate
		case 3:
			c.RateLimitHeaders = RateLimitBoth
		}
		out[i] = c
	}
	return out
}
