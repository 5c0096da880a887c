package politeness

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/adaptive"
	"github.com/polite-go/polite/bucket"
	"github.com/polite-go/polite/inflight"
	"github.com/polite-go/polite/retry"
)

// newClientTransport is the seam between the benchmark and the client under
// test: it wraps base (which reaches the testbed) in polite.Transport with
// one Rater per host from p, as a user would configure it, but for the
// rate's start and the in-flight cap, which the Rater and concurrency set.
func newClientTransport(base http.RoundTripper, p Policy, concurrency int, bare bool, trace *tracer) http.RoundTripper {
	if bare {
		return &standIn{base: base, policy: p, concurrency: concurrency, trace: trace}
	}
	return &polite.Transport{
		Base:         base,
		Limits:       polite.Limits{Burst: 1, Concurrency: concurrency},
		IgnoreRobots: true,
		NewRater: func(key string, _ polite.Limits) adaptive.Rater {
			return &traced{Rater: p.NewRater(key, time.Now()), host: key, trace: trace}
		},
	}
}

// traced records the rates a Rater answers; its Rate, SetMax and
// Concurrency pass through.
type traced struct {
	adaptive.Rater
	host  string
	trace *tracer
	mu    sync.Mutex // guards last
	last  float64
}

func (r *traced) Observe(now time.Time, s adaptive.Signal) float64 {
	rate := r.Rater.Observe(now, s)
	r.mu.Lock()
	changed := rate != r.last
	r.last = rate
	r.mu.Unlock()
	if changed {
		r.trace.rate(r.host, now, rate)
	}
	return rate
}

func (r *traced) Rate() float64 {
	rate := 1.0
	if rr, ok := r.Rater.(adaptive.CurrentRater); ok {
		rate = rr.Rate()
	}
	r.trace.rate(r.host, time.Now(), rate)
	return rate
}

func (r *traced) SetMax(v float64) {
	if m, ok := r.Rater.(adaptive.CeilingRater); ok {
		m.SetMax(v)
	}
}

func (r *traced) Concurrency() int {
	if c, ok := r.Rater.(adaptive.ConcurrencyRater); ok {
		return c.Concurrency()
	}
	return math.MaxInt
}

// standIn is the least Transport that drives a Rater (Options.Bare): per
// host a concurrency gate, then a token bucket (burst 1) whose rate the
// Rater sets after every attempt; a throttle drains the bucket and a
// Retry-After pauses the host. No retries, no breaker, no backoff pauses:
// the policy alone. Requests waiting for a token look again whenever the
// rate changes.
type standIn struct {
	base        http.RoundTripper
	policy      Policy
	concurrency int
	trace       *tracer

	mu    sync.Mutex // guards hosts
	hosts map[string]*hostLimiter
}

type hostLimiter struct {
	name   string
	bucket *bucket.Bucket
	gate   *inflight.Gate
	rater  adaptive.Rater
	conc   adaptive.ConcurrencyRater // nil when the Rater has none

	mu      sync.Mutex // guards rate, until, changed
	rate    float64
	until   time.Time     // paused until
	changed chan struct{} // closed when the rate changes
}

func (t *standIn) host(name string) *hostLimiter {
	t.mu.Lock()
	defer t.mu.Unlock()
	if h := t.hosts[name]; h != nil {
		return h
	}
	if t.hosts == nil {
		t.hosts = make(map[string]*hostLimiter)
	}
	r := t.policy.NewRater(name, time.Now())
	rate := 1.0
	if rr, ok := r.(adaptive.CurrentRater); ok {
		rate = rr.Rate()
	}
	h := &hostLimiter{
		name:    name,
		bucket:  bucket.New(rate, 1),
		gate:    inflight.New(t.concurrency),
		rater:   r,
		rate:    rate,
		changed: make(chan struct{}),
	}
	if c, ok := r.(adaptive.ConcurrencyRater); ok {
		h.conc = c
		h.gate.SetLimit(min(c.Concurrency(), t.concurrency))
	}
	t.hosts[name] = h
	t.trace.rate(name, time.Now(), rate)
	return h
}

func (t *standIn) RoundTrip(req *http.Request) (*http.Response, error) {
	h := t.host(strings.ToLower(req.URL.Hostname()))
	ctx := req.Context()
	if err := h.pause(ctx); err != nil {
		return nil, err
	}
	if err := h.gate.Acquire(ctx); err != nil {
		return nil, err
	}
	defer h.gate.Release()
	if err := h.token(ctx); err != nil {
		return nil, err
	}
	// A Retry-After may have come while this request waited: honour it
	// before sending, not only before queueing.
	if err := h.pause(ctx); err != nil {
		return nil, err
	}
	start := time.Now()
	resp, err := t.base.RoundTrip(req)
	now := time.Now()
	s := classify(resp, err, now.Sub(start), now)
	if ctx.Err() != nil {
		s = adaptive.Signal{Kind: adaptive.Neutral} // the caller gave up: nothing about the host
	}
	t.observe(h, now, s)
	return resp, err
}

func (t *standIn) observe(h *hostLimiter, now time.Time, s adaptive.Signal) {
	rate := h.rater.Observe(now, s)
	h.mu.Lock()
	changed := rate != h.rate
	h.rate = rate
	if changed {
		close(h.changed)
		h.changed = make(chan struct{})
	}
	if s.Kind == adaptive.Throttle && s.Wait > 0 {
		h.until = later(h.until, now.Add(s.Wait))
	}
	h.mu.Unlock()
	if changed {
		h.bucket.SetRate(now, rate)
		t.trace.rate(h.name, now, rate)
	}
	if s.Kind == adaptive.Throttle {
		h.bucket.Drain(now)
	}
	if h.conc != nil {
		h.gate.SetLimit(min(max(h.conc.Concurrency(), 1), t.concurrency))
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// token waits for a token of the bucket. Unlike Bucket.Wait, it holds no
// reservation while it waits, and looks again whenever the rate changes: a
// raised rate takes effect for requests already waiting, and a cut one holds
// them back.
func (h *hostLimiter) token(ctx context.Context) error {
	for {
		now := time.Now()
		if h.bucket.AllowN(now, 1) {
			return nil
		}
		h.mu.Lock()
		changed, rate := h.changed, h.rate
		h.mu.Unlock()
		d := time.Second
		if rate > 0 {
			// Round up, a little past the instant: waking a hair early
			// would cost another round.
			need := 1 - h.bucket.Tokens(now)
			d = time.Duration(math.Ceil(need/rate*1e9)) + time.Microsecond
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-changed:
			t.Stop()
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// pause waits while the host is paused by a Retry-After.
func (h *hostLimiter) pause(ctx context.Context) error {
	for {
		h.mu.Lock()
		d := time.Until(h.until)
		h.mu.Unlock()
		if d <= 0 {
			return nil
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// classify turns one attempt into a Signal, as polite.Transport does.
func classify(resp *http.Response, err error, lat time.Duration, now time.Time) adaptive.Signal {
	if err != nil {
		switch {
		case errors.Is(err, context.Canceled):
			return adaptive.Signal{Kind: adaptive.Neutral}
		case errors.Is(err, context.DeadlineExceeded), isTimeout(err):
			return adaptive.Signal{Kind: adaptive.Overload}
		}
		return adaptive.Signal{Kind: adaptive.Failure}
	}
	s := adaptive.Signal{Latency: lat}
	switch c := resp.StatusCode; {
	case resp.Header.Get("Cf-Mitigated") != "":
		s.Kind = adaptive.Neutral // a soft block wants a stop, not a slower rate
	case c < 400:
		s.Kind = adaptive.OK
	case c == http.StatusTooManyRequests || c == http.StatusServiceUnavailable:
		s.Kind = adaptive.Throttle
		if d, ok := retry.ParseAfter(resp.Header, now); ok {
			s.Wait = d
		}
	case c == http.StatusRequestTimeout || c == http.StatusGatewayTimeout:
		s.Kind = adaptive.Overload
	case c >= 500:
		s.Kind = adaptive.Failure
	default:
		s.Kind = adaptive.Neutral
	}
	return s
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
