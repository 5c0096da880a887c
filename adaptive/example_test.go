package adaptive_test

import (
	"fmt"
	"time"

	"github.com/polite-go/polite/adaptive"
)

// A Controller hears every attempt's outcome and answers with the rate.
func Example() {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := adaptive.New(adaptive.Config{Initial: 10}, start)

	// One second of answers, 50 ms each, paced at the rate: slow start.
	now := start
	for now.Sub(start) < time.Second {
		r := c.Observe(now, adaptive.Signal{Kind: adaptive.OK, Latency: 50 * time.Millisecond})
		now = now.Add(time.Duration(float64(time.Second) / r))
	}
	fmt.Printf("after 1 s: %.0f req/s\n", c.Rate())

	// The host throttles: one decrease...
	r := c.Observe(now, adaptive.Signal{Kind: adaptive.Throttle})
	fmt.Printf("throttled: %.0f req/s\n", r)

	// ...however many more answers of requests sent before it are throttled.
	for i := range 5 {
		now = now.Add(10 * time.Millisecond)
		r = c.Observe(now, adaptive.Signal{Kind: adaptive.Throttle, Latency: time.Duration(i+2) * 10 * time.Millisecond})
	}
	fmt.Printf("after the wave: %.0f req/s\n", r)
	// Output:
	// after 1 s: 39 req/s
	// throttled: 20 req/s
	// after the wave: 20 req/s
}

// SetMax keeps the rate under a ceiling, such as robots.txt's Crawl-delay.
func ExampleController_SetMax() {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := adaptive.New(adaptive.Config{Initial: 5}, start)
	c.SetMax(2) // Crawl-delay: 0.5
	fmt.Println(c.Observe(start.Add(time.Second), adaptive.Signal{Kind: adaptive.OK, Latency: 30 * time.Millisecond}))
	// Output: 2
}

// A fleet keeps replicas of one host's controller: each process hears the
// same calls, and one that joins late restores a snapshot and hears the
// rest. Every instant comes from a clock the fleet shares, in whole
// microseconds and without a monotonic reading, and the replica is made
// with the original's Config and start.
func ExampleController_MarshalBinary() {
	cfg := adaptive.Config{Initial: 10}
	start := time.UnixMicro(1_767_225_600_000_000) // the shared clock's reading at the host's first request
	c := adaptive.New(cfg, start)
	at := func(us int64) time.Time { return time.UnixMicro(1_767_225_600_000_000 + us) }
	for i := range int64(40) {
		c.Observe(at(i*50_000), adaptive.Signal{Kind: adaptive.OK, Latency: 40 * time.Millisecond})
	}
	snap, err := c.MarshalBinary()
	if err != nil {
		panic(err)
	}

	// In the process that joins late:
	replica := adaptive.New(cfg, start)
	if err := replica.UnmarshalBinary(snap); err != nil {
		panic(err)
	}
	for _, s := range []adaptive.Signal{{Kind: adaptive.Throttle}, {Kind: adaptive.OK, Latency: 40 * time.Millisecond}} {
		fmt.Printf("%v: original %.2f req/s, replica %.2f req/s\n", s.Kind, c.Observe(at(2_000_000), s), replica.Observe(at(2_000_000), s))
	}
	fmt.Println(len(snap), "bytes")
	// Output:
	// throttle: original 18.85 req/s, replica 18.85 req/s
	// ok: original 18.85 req/s, replica 18.85 req/s
	// 534 bytes
}
