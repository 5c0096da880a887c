package breaker_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/polite-go/polite/breaker"
)

func Example() {
	now := time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC)
	b := breaker.New(breaker.Config{
		Threshold: 3,
		OpenDelay: 10 * time.Second,
		Jitter:    -1, // none, for a deterministic example
	})

	// Three failures in a row open the breaker.
	for range 3 {
		if err := b.Allow(now); err == nil {
			if tr := b.Record(now, false); tr.Changed() {
				fmt.Println("breaker", tr.To, "for", tr.Until.Sub(now))
			}
		}
	}

	// Requests now fail fast.
	err := b.Allow(now.Add(time.Second))
	var oe *breaker.OpenError
	if errors.Is(err, breaker.ErrOpen) && errors.As(err, &oe) {
		fmt.Println("refused; retry in", oe.Until.Sub(now.Add(time.Second)))
	}

	// After the delay one probe goes; the others keep waiting.
	now = now.Add(10 * time.Second)
	fmt.Println("probe:", b.Allow(now))
	fmt.Println("other:", b.Allow(now))
	tr := b.Record(now, true)
	fmt.Println("breaker", tr.To, "after", tr.From)
	// Output:
	// breaker open for 10s
	// refused; retry in 9s
	// probe: <nil>
	// other: breaker: open until 2026-03-01T12:00:20Z
	// breaker closed after half-open
}
