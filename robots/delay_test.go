package robots

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseCrawlDelay(t *testing.T) {
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"10", 10 * time.Second, true},
		{"0", 0, true},
		{"0.5", 500 * time.Millisecond, true},
		{".25", 250 * time.Millisecond, true},
		{"2.", 2 * time.Second, true},
		{"007", 7 * time.Second, true},
		{"1.0000000001", time.Second, true},
		{"99999999999999999999999", math.MaxInt64, true},
		{"1" + strings.Repeat("0", 400), math.MaxInt64, true},
		{"-1", 0, false},
		{"-0.5", 0, false},
		{"+1", 0, false},
		{"", 0, false},
		{".", 0, false},
		{"1.2.3", 0, false},
		{"10s", 0, false},
		{"1e3", 0, false},
		{"0x10", 0, false},
		{"NaN", 0, false},
		{"Inf", 0, false},
		{"infinity", 0, false},
		{"ten", 0, false},
		{"1,5", 0, false},
		{"1_000", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseCrawlDelay(tt.in)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("parseCrawlDelay(%q) = %v, %v, want %v, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestParseRequestRate(t *testing.T) {
	tests := []struct {
		in      string
		wantN   int
		wantPer time.Duration
		wantOK  bool
	}{
		{"1/5", 1, 5 * time.Second, true},
		{"1/5s", 1, 5 * time.Second, true},
		{"1/5S", 1, 5 * time.Second, true},
		{"3/10m", 3, 10 * time.Minute, true},
		{"1/1h", 1, time.Hour, true},
		{"2/0.5", 2, 500 * time.Millisecond, true},
		{"1/10s 0600-0845", 1, 10 * time.Second, true},
		{"1/0", 0, 0, false},
		{"0/5", 0, 0, false},
		{"-1/5", 0, 0, false},
		{"1/-5", 0, 0, false},
		{"1.5/5", 0, 0, false},
		{"1/", 0, 0, false},
		{"/5", 0, 0, false},
		{"5", 0, 0, false},
		{"1/5d", 0, 0, false},
		{"1/s", 0, 0, false},
		{"1/NaN", 0, 0, false},
		{"1 / 5", 0, 0, false},
		{"99999999999999999999/5", 0, 0, false},
	}
	for _, tt := range tests {
		n, per, ok := parseRequestRate(tt.in)
		if n != tt.wantN || per != tt.wantPer || ok != tt.wantOK {
			t.Errorf("parseRequestRate(%q) = %d, %v, %v, want %d, %v, %v",
				tt.in, n, per, ok, tt.wantN, tt.wantPer, tt.wantOK)
		}
	}
}

func TestDelayPolicy(t *testing.T) {
	tests := []struct {
		name   string
		file   string
		policy DelayPolicy
		want   time.Duration
	}{
		{"crawl-delay", "User-agent: *\nCrawl-delay: 2\n", DelayPolicy{}, 2 * time.Second},
		{"fractional", "User-agent: *\nCrawl-delay: 0.25\n", DelayPolicy{}, 250 * time.Millisecond},
		{"zero is a delay of zero", "User-agent: *\nCrawl-delay: 0\n", DelayPolicy{Default: time.Second}, 0},
		{"absent: default", "User-agent: *\nDisallow: /x\n", DelayPolicy{Default: 3 * time.Second}, 3 * time.Second},
		{"absent: zero default", "User-agent: *\nDisallow: /x\n", DelayPolicy{}, 0},
		{"no group: default", "", DelayPolicy{Default: time.Second}, time.Second},
		{"negative ignored", "User-agent: *\nCrawl-delay: -5\n", DelayPolicy{Default: time.Second}, time.Second},
		{"garbage ignored", "User-agent: *\nCrawl-delay: soon\n", DelayPolicy{Default: time.Second}, time.Second},
		{"NaN ignored", "User-agent: *\nCrawl-delay: NaN\n", DelayPolicy{}, 0},
		{"capped at default max", "User-agent: *\nCrawl-delay: 3600\n", DelayPolicy{}, DefaultMaxDelay},
		{"capped at max", "User-agent: *\nCrawl-delay: 30\n", DelayPolicy{Max: 10 * time.Second}, 10 * time.Second},
		{"huge capped", "User-agent: *\nCrawl-delay: 1e999999\nCrawl-delay: 999999999999999999999\n", DelayPolicy{}, DefaultMaxDelay},
		{"default capped", "", DelayPolicy{Max: time.Second, Default: 5 * time.Second}, time.Second},
		{"negative default", "", DelayPolicy{Default: -time.Second}, 0},
		{"negative max means default max", "User-agent: *\nCrawl-delay: 100\n", DelayPolicy{Max: -1}, DefaultMaxDelay},
		{"request-rate", "User-agent: *\nRequest-rate: 1/5\n", DelayPolicy{}, 5 * time.Second},
		{"request-rate n", "User-agent: *\nRequest-rate: 4/1m\n", DelayPolicy{}, 15 * time.Second},
		{"larger of both (rate)", "User-agent: *\nCrawl-delay: 1\nRequest-rate: 1/5\n", DelayPolicy{}, 5 * time.Second},
		{"larger of both (delay)", "User-agent: *\nCrawl-delay: 10\nRequest-rate: 1/5\n", DelayPolicy{}, 10 * time.Second},
		{"garbage rate, valid delay", "User-agent: *\nCrawl-delay: 1\nRequest-rate: fast\n", DelayPolicy{}, time.Second},
		{"largest of repeated lines", "User-agent: *\nCrawl-delay: 1\nCrawl-delay: 4\nCrawl-delay: 2\n", DelayPolicy{}, 4 * time.Second},
		{"slowest of merged groups", "User-agent: *\nCrawl-delay: 1\n\nUser-agent: other\nDisallow:\n\nUser-agent: *\nCrawl-delay: 3\n", DelayPolicy{}, 3 * time.Second},
		{"outside a group ignored", "Crawl-delay: 5\nUser-agent: *\nDisallow: /\n", DelayPolicy{}, 0},
		{"case and typos", "USER-AGENT: *\ncrawldelay: 2\n", DelayPolicy{}, 2 * time.Second},
		{"comment after value", "User-agent: *\nCrawl-delay: 2 # be nice\n", DelayPolicy{}, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := Parse([]byte(tt.file)).Group("polite/1.0")
			if got := tt.policy.Delay(g); got != tt.want {
				t.Errorf("%+v.Delay(group of %q) = %v, want %v", tt.policy, tt.file, got, tt.want)
			}
		})
	}
}

func TestGroupDelays(t *testing.T) {
	const file = "User-agent: a\nCrawl-delay: 1.5\nRequest-rate: 2/10s\n\nUser-agent: b\nDisallow: /\n"
	r := Parse([]byte(file))
	if d, ok := r.Group("a").CrawlDelay(); d != 1500*time.Millisecond || !ok {
		t.Errorf("Group(a).CrawlDelay() = %v, %v, want 1.5s, true", d, ok)
	}
	if n, per, ok := r.Group("a").RequestRate(); n != 2 || per != 10*time.Second || !ok {
		t.Errorf("Group(a).RequestRate() = %d, %v, %v, want 2, 10s, true", n, per, ok)
	}
	if d, ok := r.Group("b").CrawlDelay(); d != 0 || ok {
		t.Errorf("Group(b).CrawlDelay() = %v, %v, want 0, false", d, ok)
	}
	if n, per, ok := r.Group("c").RequestRate(); n != 0 || per != 0 || ok {
		t.Errorf("Group(c).RequestRate() = %d, %v, %v, want 0, 0, false", n, per, ok)
	}
}
