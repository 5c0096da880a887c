package retry_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/polite-go/polite/retry"
)

func ExampleParseAfter() {
	now := time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC)

	// The server's clock is a minute behind ours; its Date says so, and the
	// wait is measured on its clock.
	h := http.Header{}
	h.Set("Date", "Sun, 01 Mar 2026 11:59:00 GMT")
	h.Set("Retry-After", "Sun, 01 Mar 2026 11:59:30 GMT")
	d, ok := retry.ParseAfter(h, now)
	fmt.Println(d, ok)

	h.Set("Retry-After", "120")
	d, ok = retry.ParseAfter(h, now)
	fmt.Println(d, ok)

	// Garbage: fall back to backoff.
	h.Set("Retry-After", "soon")
	_, ok = retry.ParseAfter(h, now)
	fmt.Println(ok)
	// Output:
	// 30s true
	// 2m0s true
	// false
}

func ExampleParseRateLimit() {
	now := time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC)
	h := http.Header{}
	h.Set("RateLimit-Policy", `"permin";q=50;w=60, "perhr";q=1000;w=3600`)
	h.Set("RateLimit", `"permin";r=40;t=20, "perhr";r=0;t=1800`)

	q, ok := retry.ParseRateLimit(h, now)
	fmt.Println(ok, q.Policy, q.Remaining, q.Reset)
	if rate, ok := q.Rate(); ok {
		fmt.Printf("at most %.2f requests per second\n", rate)
	}
	// Output:
	// true perhr 0 30m0s
	// at most 0.28 requests per second
}

func ExampleBackoff_Delay() {
	b := retry.Backoff{Base: 100 * time.Millisecond, Cap: time.Second}
	// Delay is pure: the caller supplies the random draw. Here the largest
	// draw shows each retry's ceiling; Next draws a real one.
	for attempt := 1; attempt <= 5; attempt++ {
		fmt.Println(attempt, b.Delay(attempt, 0, 0.999).Round(time.Millisecond))
	}
	// Output:
	// 1 100ms
	// 2 200ms
	// 3 400ms
	// 4 799ms
	// 5 999ms
}

func ExampleBudget() {
	now := time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC)
	// No floor, to show the ratio alone: one retry per five requests.
	b := retry.NewBudget(retry.BudgetConfig{Ratio: 0.2, MinPerSecond: -1})

	sent := 0
	for range 20 {
		b.Deposit(now) // an original request, which fails
		if b.Withdraw(now) {
			sent++ // a retry the budget pays for
		}
	}
	fmt.Println("retries:", sent)
	// Output:
	// retries: 4
}
