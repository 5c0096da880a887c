package guard

import (
	"fmt"
	"math"
	"time"
)

// Limit is one level's budget: a token bucket that refills at Rate tokens
// per second up to Burst tokens. A request of cost n takes n tokens from
// every level in play, or from none.
type Limit struct {
	// Rate is tokens per second. Zero leaves the level out (for the
	// identity level, zero means DefaultRate).
	Rate float64
	// Burst is the bucket's capacity in tokens; ceil(Rate) (at least 1)
	// if zero. A request costing more than Burst can never pass.
	Burst int
	// Name is the policy's name in the RateLimit fields and in the 429's
	// violated-policies; "identity", "tenant" or "global" if empty.
	Name string
}

// Defaults for the identity level of a zero Config.
const (
	DefaultRate  = 10.0
	DefaultBurst = 20
)

// limit is a Limit compiled for the arithmetic. It is the GCRA form of
// bucket.Bucket (see gcra): interval is the span one token covers, in ns,
// rounded up so a limit may run a hair slow, never fast; tau the span a
// full bucket covers.
type limit struct {
	Limit
	interval int64 // ns per token: ceil(1e9/Rate)
	tau      int64 // Burst*interval
	window   int64 // the RateLimit-Policy w: ceil(Burst/Rate) seconds, at least 1
	quota    int64 // the RateLimit-Policy q: floor(Rate*window), at least Burst
}

// compile checks l and fills its defaults; level names it in errors.
func compile(l Limit, level string) (limit, error) {
	switch {
	case math.IsNaN(l.Rate) || math.IsInf(l.Rate, 0) || l.Rate < 0:
		return limit{}, fmt.Errorf("guard: %s rate %v: must be a positive number of tokens per second", level, l.Rate)
	case l.Rate > 0 && l.Rate < minRate:
		return limit{}, fmt.Errorf("guard: %s rate %v: below the least rate kept exactly (%v/s)", level, l.Rate, minRate)
	case l.Rate > maxRate:
		return limit{}, fmt.Errorf("guard: %s rate %v: above %v/s, which is no limit", level, l.Rate, maxRate)
	case l.Burst < 0:
		return limit{}, fmt.Errorf("guard: %s burst %d: must be at least 1", level, l.Burst)
	case l.Burst > maxBurst:
		return limit{}, fmt.Errorf("guard: %s burst %d: at most %d", level, l.Burst, maxBurst)
	case !validName(l.Name):
		return limit{}, fmt.Errorf("guard: %s name %q: want 1-64 characters of a-z, 0-9, '-', '_', '.'", level, l.Name)
	}
	if l.Name == "" {
		l.Name = level
	}
	if l.Burst == 0 {
		l.Burst = max(1, int(math.Ceil(l.Rate)))
	}
	c := limit{Limit: l}
	if l.Rate > 0 {
		c.interval = int64(math.Ceil(1e9 / l.Rate))
		c.tau = int64(l.Burst) * c.interval
		c.window = max(1, int64(math.Ceil(float64(l.Burst)/l.Rate)))
		c.quota = max(int64(l.Burst), int64(math.Floor(l.Rate*float64(c.window)+1e-9)))
	}
	return c, nil
}

// Bounds that keep every sum of spans inside an int64 of nanoseconds.
const (
	minRate  = 1e-6 // one token per about 11.6 days, as bucket.MinRate
	maxRate  = 1e9  // one token per ns
	maxBurst = 1 << 20
)

func validName(s string) bool {
	if len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// gcra is the whole admission arithmetic of one level, the same as
// bucket.Bucket's (its takeN): the state is the instant the bucket is full
// again, tat ("theoretical arrival time"), here given relative to now as
// debt = max(tat-now, 0). Taking cost tokens moves it to debt+cost*interval,
// allowed when that lies no further than tau ahead. It returns the new debt
// and, when refused, how long until the tokens would be there.
//
// The Redis script runs the same lines in microseconds (guard.lua in
// redisstore); TestGCRAMatchesBucket checks them against bucket.Bucket.
func gcra(debt, cost, interval, tau int64) (next, wait int64, ok bool) {
	next = debt + cost*interval
	if next <= tau {
		return next, 0, true
	}
	return debt, next - tau, false
}

// tokens is what a level of the given burst holds at a debt:
// floor(burst - debt/interval), never below zero.
func tokens(burst int, debt, interval int64) int64 {
	if interval <= 0 {
		return 0
	}
	r := int64(burst) - (max(debt, 0)+interval-1)/interval
	return max(r, 0)
}

// nextToken is how long until a level holds one more token than at debt,
// in whole seconds rounded up; 0 when it is full.
func nextToken(debt, interval int64) int64 {
	if debt <= 0 || interval <= 0 {
		return 0
	}
	// Tokens held are burst - debt/interval; the next whole one is there
	// when debt falls to the multiple of interval just below it.
	return ceilSeconds(debt - (debt-1)/interval*interval)
}

// ceilSeconds rounds a span in ns up to whole seconds.
func ceilSeconds(ns int64) int64 {
	if ns <= 0 {
		return 0
	}
	return (ns + int64(time.Second) - 1) / int64(time.Second)
}
