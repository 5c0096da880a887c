package testbed

import (
	"math"
	"time"
)

// nano is one token in the bucket's fixed-point unit (a nanotoken).
const nano = 1_000_000_000

// bucket is a host's hidden capacity: a token bucket refilled lazily from the
// time of the last event (two numbers, no timers).
//
// Tokens are fixed point, in nanotokens, so that the refill over an elapsed
// duration is elapsed-nanoseconds × rate: exact for an integral rate. A host at
// 10 req/s therefore admits exactly one request per 100 ms, never 0.99999 of
// one, and the testbed's counts are truth rather than float noise.
//
// bucket is not safe for concurrent use; Host guards it with its mutex.
type bucket struct {
	rate   float64 // tokens per second; 0 means unlimited
	burst  int64   // capacity in whole tokens, ≥ 1
	tokens int64   // nanotokens; negative while requests wait for borrowed tokens (NoThrottle)
	last   time.Time
}

func newBucket(rate float64, burst int, now time.Time) bucket {
	return bucket{rate: rate, burst: int64(burst), tokens: int64(burst) * nano, last: now}
}

// refill adds the tokens earned since b.last, up to the burst.
func (b *bucket) refill(now time.Time) {
	if !now.After(b.last) {
		return
	}
	elapsed := now.Sub(b.last)
	b.last = now
	full := b.burst * nano
	if b.rate == 0 || b.tokens >= full {
		return
	}
	// Floor: never grant a token early. For an integral rate the product is an
	// integer already (exact below 2^53, and larger values fill the bucket).
	add := math.Floor(float64(elapsed) * b.rate)
	if add >= float64(full-b.tokens) {
		b.tokens = full
		return
	}
	b.tokens += int64(add)
}

// set switches to a new rate and burst at now. Tokens carry over, clamped to
// the new burst; a bucket leaving the unlimited state starts full.
func (b *bucket) set(now time.Time, rate float64, burst int) {
	b.refill(now)
	if b.rate == 0 && rate > 0 {
		b.tokens = int64(burst) * nano
	}
	b.rate, b.burst = rate, int64(burst)
	if full := b.burst * nano; b.tokens > full {
		b.tokens = full
	}
	if now.After(b.last) {
		b.last = now
	}
}

// take takes one token at now if a whole one is available.
func (b *bucket) take(now time.Time) bool {
	b.refill(now)
	if b.rate == 0 {
		return true
	}
	if b.tokens >= nano {
		b.tokens -= nano
		return true
	}
	return false
}

// deficit reports how many nanotokens are missing for one whole token at now
// (0 when a token is available or the bucket is unlimited).
func (b *bucket) deficit(now time.Time) int64 {
	b.refill(now)
	if b.rate == 0 || b.tokens >= nano {
		return 0
	}
	return nano - b.tokens
}

// borrow takes one token at now even if it is not there yet, and returns the
// nanotokens owed: the request's token arrives once they have been refilled.
func (b *bucket) borrow(now time.Time) int64 {
	b.refill(now)
	if b.rate == 0 {
		return 0
	}
	b.tokens -= nano
	if b.tokens >= 0 {
		return 0
	}
	return -b.tokens
}

// remaining is the number of whole tokens left at now (0 when in debt).
func (b *bucket) remaining() int64 {
	if b.tokens <= 0 {
		return 0
	}
	return b.tokens / nano
}

// untilFull is how long the bucket needs to refill completely at its current
// rate.
func (b *bucket) untilFull() time.Duration {
	if b.rate == 0 {
		return 0
	}
	missing := b.burst*nano - b.tokens
	if missing <= 0 {
		return 0
	}
	return time.Duration(math.Ceil(float64(missing) / b.rate))
}

// refillTime is how long it takes to earn deficit nanotokens starting at rate,
// honouring the capacity changes still to come: changes[i] takes effect at
// start+changes[i].at. A change to unlimited makes the token available at once.
// Burst changes cannot shorten the wait: a bucket short of one token is below
// every burst.
func refillTime(now time.Time, deficit int64, rate float64, start time.Time, changes []change) time.Duration {
	if deficit <= 0 {
		return 0
	}
	t := now
	d := float64(deficit)
	for _, c := range changes {
		if rate == 0 {
			return t.Sub(now)
		}
		need := time.Duration(math.Ceil(d / rate))
		at := start.Add(c.at)
		if !at.Before(t.Add(need)) {
			break
		}
		if at.After(t) {
			d -= float64(at.Sub(t)) * rate
			t = at
		}
		rate = c.rate
	}
	if rate == 0 {
		return t.Sub(now)
	}
	return t.Add(time.Duration(math.Ceil(d / rate))).Sub(now)
}

// change is a capacity in force from at (since the host started) until the
// next change: the initial capacity, the Schedule's steps and SetCapacity calls.
type change struct {
	at    time.Duration
	rate  float64
	burst int
}
