package crawl

import (
	"testing"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/breaker"
)

// TestSlowBecause: the live display's reason a host is held back.
func TestSlowBecause(t *testing.T) {
	now := time.Date(2026, 11, 23, 22, 0, 0, 0, time.UTC)
	later := now.Add(1500 * time.Millisecond)
	for _, tc := range []struct {
		name string
		st   polite.HostState
		want string
	}{
		{"idle", polite.HostState{Rate: 5, Concurrency: 4}, ""},
		{"blocked", polite.HostState{Blocked: "captcha", PausedUntil: later}, "blocked: captcha"},
		{"retry-after", polite.HostState{PausedUntil: later, PauseWhy: polite.ReasonRetryAfter, Breaker: breaker.Open}, "paused 1.5s (server's Retry-After)"},
		{"reset", polite.HostState{PausedUntil: later, PauseWhy: polite.ReasonRateLimit}, "paused 1.5s (server's RateLimit reset)"},
		{"backoff", polite.HostState{PausedUntil: later, PauseWhy: polite.ReasonBackoff}, "paused 1.5s (backoff after failures)"},
		{"breaker", polite.HostState{Breaker: breaker.Open}, "breaker open"},
		{"half-open", polite.HostState{Breaker: breaker.HalfOpen}, "breaker probing"},
		{"cap", polite.HostState{InFlight: 4, Concurrency: 4, NextToken: later}, "in-flight cap (4)"},
		{"crawl-delay", polite.HostState{Rate: 0.5, Ceiling: 0.5, CeilingWhy: polite.ReasonCrawlDelay, NextToken: later, Concurrency: 4}, "robots.txt Crawl-delay (0.5/s)"},
		{"ratelimit", polite.HostState{Rate: 3, Ceiling: 3, CeilingWhy: polite.ReasonRateLimit, NextToken: later, Concurrency: 4}, "server's RateLimit header (3/s)"},
		{"ceiling", polite.HostState{Rate: 0.5, Ceiling: 0.5, NextToken: later, Concurrency: 4}, "crawl-delay/RateLimit ceiling (0.5/s)"},
		{"rule", polite.HostState{Rate: 1, Rule: "fragile.example", NextToken: later, Concurrency: 4}, "rate 1/s (rule fragile.example)"},
		{"rate", polite.HostState{Rate: 2, Ceiling: 10, NextToken: later, Concurrency: 4}, "rate 2/s"},
	} {
		if got := slowBecause(tc.st, now); got != tc.want {
			t.Errorf("%s: slowBecause = %q, want %q", tc.name, got, tc.want)
		}
	}
}
