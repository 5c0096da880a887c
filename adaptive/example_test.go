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
