package polite

import (
	"time"

	"github.com/polite-go/polite/retry"
	"github.com/polite-go/polite/robots"
)

// Reading is what one Report asks of its host's state, worked out from the
// answer alone. A Store applies it to the state it keeps, in one atomic
// step; every Store reads reports the same way through ReadReport, so only
// the applying differs between the local store and a shared one.
type Reading struct {
	// Throttle: the host said "slow down" (429, or 503 with Retry-After).
	// It pauses the host for Pause (PauseWhy: its Retry-After, else
	// polite's backoff; no backoff with an adaptive rate, whose cut and
	// drained bucket already make the host wait) and drains its bucket.
	// Whether it counts against the breaker is the store's to say: a
	// throttle of a wave already counted does not.
	Throttle bool
	Pause    time.Duration
	PauseWhy Reason
	// Advertised is a sane Retry-After the host sent; GiveUp says it is
	// past the maximum, or the host blocked us: no retry.
	Advertised time.Duration
	GiveUp     bool
	// Failure and Success are what the attempt counts for the breaker when
	// it is not a throttle; neither for a neutral answer (a block, a
	// canceled request).
	Failure, Success bool
	// Block is the soft block's reason, "" for none.
	Block string
	// QuotaPause: the host's RateLimit quota is spent; it pauses the host
	// until the reset. Ceiling is the rate its RateLimit fields allow (0:
	// none stated).
	QuotaPause time.Duration
	Ceiling    float64
	// Retry: the report asks the retry budget for a retry, and its outcome
	// is worth one.
	Retry bool
}

// ReadOptions are what ReadReport needs of the store's configuration.
type ReadOptions struct {
	Backoff retry.Backoff
	// MaxRetryAfter is the longest Retry-After honoured by waiting; a
	// longer one gives up. Zero means DefaultMaxRetryAfter.
	MaxRetryAfter time.Duration
	// MaxSpacing caps the time between two requests a RateLimit ceiling
	// may ask for (see LocalOptions.MaxSpacing); robots.DefaultMaxDelay if
	// zero.
	MaxSpacing time.Duration
	// Adaptive: the host's rate is an adaptive controller's.
	Adaptive bool
}

// ReadReport reads r.
func ReadReport(r Report, o ReadOptions) Reading {
	var rd Reading
	now := r.Now
	switch r.Outcome {
	case Throttled:
		rd.Throttle = true
		d, ok := retry.ParseAfter(r.Header, now)
		switch {
		case ok:
			rd.Advertised, rd.PauseWhy = d, ReasonRetryAfter
			maxAfter := o.MaxRetryAfter
			if maxAfter <= 0 {
				maxAfter = DefaultMaxRetryAfter
			}
			rd.GiveUp = d > maxAfter
		case o.Adaptive:
			d, rd.PauseWhy = 0, ReasonBackoff
		default:
			// Unlike other failures, a throttle pauses the whole host
			// for the backoff: every request to it waits, not just this
			// one.
			d, rd.PauseWhy = o.Backoff.Next(r.Attempt, 0), ReasonBackoff
		}
		rd.Pause = d
	case Blocked:
		rd.Block, rd.GiveUp = r.Block, true
	case OK, ClientError:
		rd.Success = true
	default:
		rd.Failure = r.Outcome.failure()
	}
	if r.Header != nil && r.Outcome != Blocked && hasQuotaFields(r.Header) {
		readQuota(r, &rd)
		if rd.Ceiling > 0 {
			rd.Ceiling = max(rd.Ceiling, MinCeiling(o.MaxSpacing))
		}
	}
	rd.Retry = r.Retry && !rd.GiveUp && r.Outcome.retryable()
	return rd
}

// quotaPaceMin is the least time to a quota's reset over which readQuota
// spreads what is left of it.
const quotaPaceMin = 10 * time.Second

// readQuota paces the host from RateLimit / X-RateLimit fields: with no
// quota left it pauses the host until the reset, before a 429 comes; a
// stated limit per window caps the host's rate; without one, what is left of
// a long window's quota is spread over the time to its reset.
func readQuota(r Report, rd *Reading) {
	q, ok := retry.ParseRateLimit(r.Header, r.Now)
	if !ok {
		return
	}
	if q.Remaining == 0 && q.Reset > 0 {
		rd.QuotaPause = q.Reset
		return
	}
	// A stated policy (Limit per Window) is the host's sustainable rate.
	// Without one, a quota that resets only after a long wait (an hourly API
	// quota, say) is spread over the time to the reset. Remaining/Reset of
	// a short window is no ceiling: the quota comes back within seconds,
	// and a token-bucket server run near its capacity shows little left
	// nearly always, so reading it as one would pin the host far under
	// what it serves.
	ceiling, _ := q.Rate()
	if ceiling <= 0 && q.Remaining > 0 && q.Reset >= quotaPaceMin {
		ceiling = float64(q.Remaining) / q.Reset.Seconds()
	}
	rd.Ceiling = max(ceiling, 0)
}

// MinCeiling is the lowest RateLimit ceiling kept when requests may be at
// most spacing apart (robots.DefaultMaxDelay if spacing is zero or less).
func MinCeiling(spacing time.Duration) float64 {
	if spacing <= 0 {
		spacing = robots.DefaultMaxDelay
	}
	return 1 / spacing.Seconds()
}
