package inflight_test

import (
	"context"
	"fmt"

	"github.com/polite-go/polite/inflight"
)

func Example() {
	g := inflight.New(2) // at most two requests in flight to this host
	ctx := context.Background()

	_ = g.Acquire(ctx)
	_ = g.Acquire(ctx)
	fmt.Println("third slot free:", g.TryAcquire())

	g.SetLimit(3) // the adaptive controller raised the cap
	fmt.Println("third slot free after SetLimit(3):", g.TryAcquire())
	fmt.Println("in flight:", g.InFlight())
	for range 3 {
		g.Release()
	}
	fmt.Println("idle:", g.Idle())
	// Output:
	// third slot free: false
	// third slot free after SetLimit(3): true
	// in flight: 3
	// idle: true
}
