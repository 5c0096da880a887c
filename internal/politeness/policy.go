package politeness

import (
	"math"
	"sync"
	"time"

	"github.com/polite-go/polite/adaptive"
)

// Policy is a per-host rate policy under test. Every policy drives the same
// client (one Rater per host, told every attempt's outcome), so that the
// benchmark compares policies and nothing else.
type Policy struct {
	// Name identifies the policy in tables, such as "polite".
	Name string
	// About says in one line what the policy is.
	About string
	// NewRater returns the Rater for one host, created at now. A Rater may
	// also be an adaptive.CurrentRater (the rate before any answer) and an
	// adaptive.ConcurrencyRater (a cap on requests in flight to the host).
	NewRater func(host string, now time.Time) adaptive.Rater
}

// maxRate is the ceiling every policy shares: what "unlimited" means here.
const maxRate = 1000

// Ours is polite's own policy: adaptive.Controller with cfg.
func Ours(cfg adaptive.Config) Policy {
	return Policy{
		Name:  "polite",
		About: "adaptive.Controller: slow start, measured capacity, gentle probes, latency-led",
		NewRater: func(_ string, now time.Time) adaptive.Rater {
			return adaptive.New(cfg, now)
		},
	}
}

// Static is a fixed rate, the guess most clients configure.
func Static(rate float64) Policy {
	return Policy{
		Name:  "static-" + trimFloat(rate),
		About: "a fixed rate of " + trimFloat(rate) + " req/s per host, deaf to the host",
		NewRater: func(string, time.Time) adaptive.Rater {
			return staticRater(rate)
		},
	}
}

type staticRater float64

func (r staticRater) Observe(time.Time, adaptive.Signal) float64 { return float64(r) }
func (r staticRater) Rate() float64                              { return float64(r) }

// AIMD is textbook additive increase, multiplicative decrease on the rate:
// from 1 req/s, +1 req/s per second of successes (each OK adds 1/rate),
// halved on a throttle or overload, at most once per second. No slow start,
// no latency, no capacity learning: the baseline the issue measures against.
func AIMD() Policy {
	return Policy{
		Name:  "aimd",
		About: "plain AIMD: +1 req/s per second, ×0.5 on 429/503/timeout, one cut per 1 s window",
		NewRater: func(string, time.Time) adaptive.Rater {
			return &aimd{rate: 1}
		},
	}
}

type aimd struct {
	mu      sync.Mutex // guards rate, cutAt
	rate    float64
	cutAt   time.Time
	started bool
}

func (a *aimd) Rate() float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rate
}

func (a *aimd) Observe(now time.Time, s adaptive.Signal) float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch s.Kind {
	case adaptive.OK:
		a.rate += 1 / a.rate
	case adaptive.Throttle, adaptive.Overload:
		if !a.started || now.Sub(a.cutAt) >= time.Second {
			a.rate /= 2
			a.cutAt, a.started = now, true
		}
	}
	a.rate = min(max(a.rate, 0.1), maxRate)
	return a.rate
}

// AutoThrottle is Scrapy's AutoThrottle extension, re-implemented from its
// documented algorithm and scrapy/extensions/throttle.py, with Scrapy's
// defaults: the delay starts at AUTOTHROTTLE_START_DELAY (5 s); each response
// moves it to the mean of the old delay and latency/AUTOTHROTTLE_TARGET_
// CONCURRENCY (1.0), but never below that target delay; a non-200 response
// may never lower it; it stays within [DOWNLOAD_DELAY (0), AUTOTHROTTLE_MAX_
// DELAY (60 s)]. Requests without a response (timeouts, errors) do not reach
// it. CONCURRENT_REQUESTS_PER_DOMAIN (8) caps requests in flight.
// RANDOMIZE_DOWNLOAD_DELAY, which spreads each delay over 0.5–1.5×, is left
// out: it keeps the mean.
func AutoThrottle() Policy {
	return Policy{
		Name:  "autothrottle",
		About: "Scrapy AutoThrottle (re-implementation): delay ← mean(delay, latency/1), 8 in flight",
		NewRater: func(string, time.Time) adaptive.Rater {
			return &autoThrottle{delay: 5}
		},
	}
}

type autoThrottle struct {
	mu    sync.Mutex // guards delay
	delay float64    // seconds between requests
}

const (
	atTarget      = 1.0  // AUTOTHROTTLE_TARGET_CONCURRENCY
	atMinDelay    = 0.0  // DOWNLOAD_DELAY
	atMaxDelay    = 60.0 // AUTOTHROTTLE_MAX_DELAY
	atConcurrency = 8    // CONCURRENT_REQUESTS_PER_DOMAIN
)

func (a *autoThrottle) Concurrency() int { return atConcurrency }

func (a *autoThrottle) Rate() float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rateLocked()
}

func (a *autoThrottle) rateLocked() float64 {
	if a.delay <= 0 {
		return maxRate
	}
	return min(1/a.delay, maxRate)
}

func (a *autoThrottle) Observe(_ time.Time, s adaptive.Signal) float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s.Kind == adaptive.Neutral || s.Kind != adaptive.OK && s.Latency == 0 {
		// Scrapy hears responses only: a timeout or a connection error
		// never reaches the extension.
		return a.rateLocked()
	}
	target := s.Latency.Seconds() / atTarget
	d := (a.delay + target) / 2
	d = max(target, d)
	d = min(max(atMinDelay, d), atMaxDelay)
	if s.Kind != adaptive.OK && d <= a.delay {
		return a.rateLocked()
	}
	a.delay = d
	return a.rateLocked()
}

// AWSAdaptive is the client-side rate limiter of the AWS SDK for Go v2's
// "adaptive" retry mode (aws/retry/adaptive_ratelimit.go and
// adaptive_token_bucket.go), re-implemented here so that no peer enters the
// module: CUBIC on the send rate (beta 0.7, scale constant 0.4), a measured
// transmit rate smoothed 0.8 over half-second buckets, the new rate capped
// at twice the measured one and floored at 0.5 req/s, and no limit at all
// until the first throttle. The SDK's own token bucket (one second of burst)
// is replaced by the client's, as for every policy.
func AWSAdaptive() Policy {
	return Policy{
		Name:  "aws-adaptive",
		About: "AWS SDK for Go v2 adaptive retry mode's CUBIC rate limiter (re-implementation)",
		NewRater: func(_ string, now time.Time) adaptive.Rater {
			return newAWS(now)
		},
	}
}

type awsRater struct {
	mu sync.Mutex // guards every field

	smooth, beta, scale, minFill float64

	enabled        bool
	fillRate       float64
	calculatedRate float64
	measuredTxRate float64
	lastTxBucket   float64
	requestCount   int64
	lastMaxRate    float64
	lastThrottle   float64 // seconds
	timeWindow     float64
}

func awsSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func newAWS(now time.Time) *awsRater {
	return &awsRater{
		smooth: 0.8, beta: 0.7, scale: 0.4, minFill: 0.5,
		lastTxBucket: math.Floor(awsSeconds(now)),
		lastThrottle: awsSeconds(now),
	}
}

func (a *awsRater) Rate() float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rateLocked()
}

func (a *awsRater) rateLocked() float64 {
	if !a.enabled {
		return maxRate // the SDK sends unrestricted until the first throttle
	}
	return min(a.fillRate, maxRate)
}

// Observe is the SDK's Update(throttled), called for every attempt.
func (a *awsRater) Observe(now time.Time, s adaptive.Signal) float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s.Kind == adaptive.Neutral {
		return a.rateLocked()
	}
	t := awsSeconds(now)
	a.updateMeasuredRate(t)
	if s.Kind == adaptive.Throttle {
		rateToUse := a.measuredTxRate
		if a.enabled {
			rateToUse = min(a.measuredTxRate, a.fillRate)
		}
		a.lastMaxRate = rateToUse
		a.calculateTimeWindow()
		a.lastThrottle = t
		a.calculatedRate = rateToUse * a.beta
		a.enabled = true
	} else {
		a.calculateTimeWindow()
		dt := t - a.lastThrottle
		a.calculatedRate = a.scale*math.Pow(dt-a.timeWindow, 3) + a.lastMaxRate
	}
	newRate := min(a.calculatedRate, 2*a.measuredTxRate)
	a.fillRate = max(newRate, a.minFill)
	return a.rateLocked()
}

func (a *awsRater) calculateTimeWindow() {
	a.timeWindow = math.Cbrt(a.lastMaxRate * (1 - a.beta) / a.scale)
}

func (a *awsRater) updateMeasuredRate(t float64) {
	bucket := math.Floor(t*2) / 2
	a.requestCount++
	if bucket > a.lastTxBucket {
		current := float64(a.requestCount) / (bucket - a.lastTxBucket)
		a.measuredTxRate = current*a.smooth + a.measuredTxRate*(1-a.smooth)
		a.requestCount = 0
		a.lastTxBucket = bucket
	}
}

// Peers returns the policies the benchmark compares by default, ours first:
// polite, static 10 req/s, plain AIMD, Scrapy AutoThrottle and the AWS SDK's
// adaptive mode.
func Peers() []Policy {
	return []Policy{Ours(adaptive.Config{}), Static(10), AIMD(), AutoThrottle(), AWSAdaptive()}
}
