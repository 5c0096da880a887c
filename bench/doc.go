// Package bench puts polite's primitives side by side with peer rate
// limiters in one benchmark run. It holds no library code; see README.md.
//
// It is its own module so that the peers (golang.org/x/time/rate,
// go.uber.org/ratelimit, github.com/sethvargo/go-limiter) never enter the
// dependencies of github.com/polite-go/polite.
package bench
