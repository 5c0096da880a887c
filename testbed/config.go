package testbed

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"time"
)

// HostConfig describes one simulated host. The zero value is a host with no
// limits at all: it answers every request at once with a 1 KiB page. Each
// field documents its zero value. HostConfig is plain data (durations, numbers
// and strings) so it can be decoded from a config file and shared between the
// benchmark and the demo.
type HostConfig struct {
	// Name is the host's name, such as "fast.test". A Server routes requests
	// to the host by the hostname in the request's Host header. Required by
	// NewServer; a bare Host may leave it empty.
	Name string

	// Rate is the hidden capacity in requests per second: the refill rate of
	// the host's server-side token bucket. Zero means unlimited.
	Rate float64
	// Burst is the bucket's size in requests; the bucket starts full. Zero
	// means 1 (requests must be spaced 1/Rate apart).
	Burst int
	// Schedule changes Rate and Burst mid-run, at offsets since the host
	// started (steps up and down). Steps apply in order of At.
	Schedule []Step

	// Status is the answer to a request beyond capacity. Zero means 429 Too
	// Many Requests; 503 Service Unavailable is the other common choice.
	Status int
	// RetryAfter says whether rejections carry a Retry-After header, and in
	// which form. The value is honest: the time until the bucket has a token
	// again (future Schedule steps included), rounded up to whole seconds.
	// Zero (RetryAfterNone) sends none.
	RetryAfter RetryAfter
	// RateLimitHeaders adds the bucket's state to every answer that consulted
	// it (admitted or rejected): the IETF RateLimit / RateLimit-Policy fields,
	// the X-RateLimit-* trio, or both. Zero (RateLimitNone) sends none.
	RateLimitHeaders RateLimitHeaders
	// NoThrottle makes the host never answer Status: a request beyond Rate
	// waits for its token instead, so latency is the only signal and the
	// queue grows. MaxQueue still sheds when set.
	NoThrottle bool

	// Latency is the base service time of a page: what a request costs once a
	// server is free. Zero means answer at once.
	Latency time.Duration
	// Servers is the number of requests served at the same time; more wait in
	// a FIFO queue, so latency stays at Latency below Servers/Latency req/s
	// and climbs as arrivals approach it (the knee). Zero means unlimited
	// servers: latency never grows with load.
	Servers int
	// MaxQueue bounds the requests waiting (for a server, or for a token under
	// NoThrottle); a request that would wait beyond it is shed with 503.
	// Zero means unbounded; negative means no queue at all (shed whenever it
	// would have to wait).
	MaxQueue int
	// Slowdown makes service slower the more requests are served at once, as
	// a shared database or CPU does: a service time is Latency × (1 +
	// Slowdown × n), n being the requests already in service when it starts.
	// Latency then rises gently with concurrency before any queue forms (a
	// shallow knee). Zero means none.
	Slowdown float64
	// Jitter spreads each service time uniformly over Latency × [1-Jitter,
	// 1+Jitter]; the mean stays Latency. Zero means none; at most 1.
	Jitter float64
	// Seed seeds the host's random source (math/rand/v2 PCG) used by Jitter,
	// TimeoutProb and SoftBlock.Prob. Zero means a seed derived from Name, so
	// runs are reproducible either way.
	Seed uint64

	// TimeoutProb is the probability that a page request hangs: it takes its
	// token, then never answers, until the client gives up (its context ends
	// or the connection closes). 1 makes every page hang. Zero means never.
	TimeoutProb float64

	// SoftBlock answers WAF challenge pages instead of content. The zero value
	// never blocks.
	SoftBlock SoftBlock

	// Robots is the body served at /robots.txt (text/plain). Empty means
	// /robots.txt answers 404. robots.txt requests go through the bucket and
	// the queue like pages, but are never soft-blocked nor hung.
	Robots string

	// BodySize is the exact size in bytes of each page (text/html). The body is
	// a deterministic function of Name and the request URI, so its sha256 is
	// stable across runs. Zero means 1024.
	BodySize int

	// Content, when set, answers every admitted request in place of the
	// generated pages, Robots and /status/NNN: a Website's hosts set it
	// (Website.HostConfigs). It sits behind everything else, so its answers
	// (304s included) take tokens like any page. Not part of a config file.
	Content http.Handler `json:"-" toml:"-"`
}

// Step is a change of capacity at a moment of a host's run.
type Step struct {
	// At is the offset since the host started at which the step applies.
	At time.Duration
	// Rate is the new refill rate in requests per second; zero means
	// unlimited.
	Rate float64
	// Burst is the new bucket size; zero means 1. Tokens carry over, clamped
	// to the new size.
	Burst int
}

// SoftBlock configures challenge pages such as a WAF or bot manager answers:
// status Status, header "cf-mitigated: challenge" and an HTML body titled
// "Just a moment...". Any of Always, After, Prob and Paths triggers a
// block. Soft blocks are decided before capacity: a blocked request takes no
// token.
type SoftBlock struct {
	// Always blocks every page request.
	Always bool
	// After blocks every page request after the first After (counting every
	// page request the host received). Zero means no such limit.
	After int
	// Prob blocks each page request independently with this probability.
	Prob float64
	// Paths blocks every page request whose path starts with one of these
	// prefixes, as a WAF rule on one part of a site does ("/search").
	Paths []string
	// Status of the challenge answer: 403, 503 or even 200. Zero means 403.
	Status int
}

func (s SoftBlock) enabled() bool { return s.Always || s.After > 0 || s.Prob > 0 || len(s.Paths) > 0 }

// RetryAfter is the form of the Retry-After header on rejections.
type RetryAfter string

// Retry-After forms (RFC 9110, section 10.2.3).
const (
	RetryAfterNone    RetryAfter = ""        // no header ("none" is accepted too)
	RetryAfterSeconds RetryAfter = "seconds" // delay-seconds, e.g. "3"
	RetryAfterDate    RetryAfter = "date"    // HTTP-date, e.g. "Sun, 06 Nov 1994 08:49:40 GMT"
)

// RateLimitHeaders selects which rate-limit header fields a host sends.
type RateLimitHeaders string

// Rate-limit header sets. For a bucket of size B and rate R holding r whole
// tokens that refills completely in t seconds (rounded up), with the window
// w = ceil(B/R) (at least 1 s) and the policy q = floor(R×w) (at least 1),
// what the bucket admits over a window sustained, burst aside:
//
//	RateLimit-Policy: "default";q=q;w=w
//	RateLimit: "default";r=r;t=t
//	X-RateLimit-Limit: q
//	X-RateLimit-Remaining: r
//	X-RateLimit-Reset: t          (delta seconds, not a Unix time)
const (
	RateLimitNone  RateLimitHeaders = ""      // none ("none" is accepted too)
	RateLimitDraft RateLimitHeaders = "draft" // RateLimit and RateLimit-Policy (draft-ietf-httpapi-ratelimit-headers)
	RateLimitX     RateLimitHeaders = "x"     // X-RateLimit-Limit, -Remaining, -Reset
	RateLimitBoth  RateLimitHeaders = "both"  // all of the above
)

const defaultBodySize = 1024

// Validate reports every problem with c, joined, each naming its field.
func (c HostConfig) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("testbed: host %q: "+format, append([]any{c.Name}, args...)...))
	}
	for _, r := range c.Name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-') {
			bad("Name has %q; want letters, digits, dots and hyphens", r)
			break
		}
	}
	if !validRate(c.Rate) {
		bad("Rate %v: want a finite rate ≥ 0", c.Rate)
	}
	if c.Burst < 0 {
		bad("Burst %d: want ≥ 0", c.Burst)
	}
	for i, s := range c.Schedule {
		if s.At < 0 || !validRate(s.Rate) || s.Burst < 0 {
			bad("Schedule[%d] = %+v: want At ≥ 0, a finite Rate ≥ 0, Burst ≥ 0", i, s)
		}
	}
	if c.Status != 0 && (c.Status < 400 || c.Status > 599) {
		bad("Status %d: want 4xx or 5xx", c.Status)
	}
	switch c.RetryAfter {
	case RetryAfterNone, "none", RetryAfterSeconds, RetryAfterDate:
	default:
		bad("RetryAfter %q: want %q, %q or %q", c.RetryAfter, "none", RetryAfterSeconds, RetryAfterDate)
	}
	switch c.RateLimitHeaders {
	case RateLimitNone, "none", RateLimitDraft, RateLimitX, RateLimitBoth:
	default:
		bad("RateLimitHeaders %q: want %q, %q, %q or %q", c.RateLimitHeaders, "none", RateLimitDraft, RateLimitX, RateLimitBoth)
	}
	if c.Latency < 0 {
		bad("Latency %v: want ≥ 0", c.Latency)
	}
	if c.Servers < 0 {
		bad("Servers %d: want ≥ 0", c.Servers)
	}
	if !validRate(c.Slowdown) {
		bad("Slowdown %v: want a finite factor ≥ 0", c.Slowdown)
	}
	if !validProb(c.Jitter) {
		bad("Jitter %v: want 0 to 1", c.Jitter)
	}
	if !validProb(c.TimeoutProb) {
		bad("TimeoutProb %v: want 0 to 1", c.TimeoutProb)
	}
	if c.SoftBlock.After < 0 {
		bad("SoftBlock.After %d: want ≥ 0", c.SoftBlock.After)
	}
	if !validProb(c.SoftBlock.Prob) {
		bad("SoftBlock.Prob %v: want 0 to 1", c.SoftBlock.Prob)
	}
	if s := c.SoftBlock.Status; s != 0 && (s < 200 || s > 599) {
		bad("SoftBlock.Status %d: want 200 to 599", s)
	}
	if c.BodySize < 0 {
		bad("BodySize %d: want ≥ 0", c.BodySize)
	}
	return errors.Join(errs...)
}

func validRate(r float64) bool { return r >= 0 && !math.IsInf(r, 0) && !math.IsNaN(r) }
func validProb(p float64) bool { return p >= 0 && p <= 1 }

// withDefaults returns c with its zero values replaced by the documented
// defaults and the schedule sorted.
func (c HostConfig) withDefaults() HostConfig {
	if c.Burst == 0 {
		c.Burst = 1
	}
	if c.Status == 0 {
		c.Status = 429
	}
	if c.RetryAfter == "none" {
		c.RetryAfter = RetryAfterNone
	}
	if c.RateLimitHeaders == "none" {
		c.RateLimitHeaders = RateLimitNone
	}
	if c.Seed == 0 {
		h := fnv.New64a()
		h.Write([]byte(c.Name))
		c.Seed = h.Sum64()
	}
	if c.SoftBlock.Status == 0 {
		c.SoftBlock.Status = 403
	}
	if c.BodySize == 0 {
		c.BodySize = defaultBodySize
	}
	sched := make([]Step, len(c.Schedule))
	copy(sched, c.Schedule)
	for i := range sched {
		if sched[i].Burst == 0 {
			sched[i].Burst = 1
		}
	}
	// Insertion sort: schedules are short, and stable order keeps ties in the
	// order written.
	for i := 1; i < len(sched); i++ {
		for j := i; j > 0 && sched[j].At < sched[j-1].At; j-- {
			sched[j], sched[j-1] = sched[j-1], sched[j]
		}
	}
	c.Schedule = sched
	return c
}

// serviceRate is the request rate the host's servers sustain when all are
// busy, in requests per second; 0 means unlimited. Without servers, Slowdown
// alone bounds the rate by its limit 1/(Latency × Slowdown).
func (c HostConfig) serviceRate() float64 {
	l := c.Latency.Seconds()
	switch {
	case l == 0:
		return 0
	case c.Servers > 0:
		return float64(c.Servers) / (l * (1 + c.Slowdown*float64(c.Servers-1)))
	case c.Slowdown > 0:
		return 1 / (l * c.Slowdown)
	}
	return 0
}
