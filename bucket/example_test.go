package bucket_test

import (
	"fmt"
	"time"

	"github.com/polite-go/polite/bucket"
)

func Example() {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	b := bucket.New(2, 3) // 2 req/s, bursts of 3

	for i := range 4 {
		fmt.Printf("request %d at +0s: %v\n", i, b.AllowN(now, 1))
	}
	later := now.Add(500 * time.Millisecond)
	fmt.Printf("request at +0.5s: %v\n", b.AllowN(later, 1))

	// A 429 from the host: drain, and the next token is 1/rate away.
	b.Drain(later)
	r, _ := b.ReserveN(later, 1)
	fmt.Println("after a drain, wait", r.DelayFrom(later))
	// Output:
	// request 0 at +0s: true
	// request 1 at +0s: true
	// request 2 at +0s: true
	// request 3 at +0s: false
	// request at +0.5s: true
	// after a drain, wait 500ms
}

func ExampleNewSmooth() {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	b := bucket.NewSmooth(4) // one request every 250 ms, never a burst
	for _, d := range []time.Duration{0, 100, 250, 260, 500} {
		t := now.Add(d * time.Millisecond)
		fmt.Printf("+%3dms %v\n", d, b.AllowN(t, 1))
	}
	// Output:
	// +  0ms true
	// +100ms false
	// +250ms true
	// +260ms false
	// +500ms true
}
