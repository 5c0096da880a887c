package testbed

import (
	"math"
	"testing"
	"time"
)

func TestBucket(t *testing.T) {
	t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	type step struct {
		at   time.Duration
		want bool
	}
	tests := []struct {
		name  string
		rate  float64
		burst int
		steps []step
	}{
		{"burst then refill", 10, 2, []step{{0, true}, {0, true}, {0, false}, {99 * ms, false}, {100 * ms, true}, {100 * ms, false}}},
		{"exact at 1/rate", 20, 1, []step{{0, true}, {50 * ms, true}, {100 * ms, true}, {149 * ms, false}, {150 * ms, true}}},
		{"capped at burst", 10, 2, []step{{0, true}, {10 * time.Second, true}, {10 * time.Second, true}, {10 * time.Second, false}}},
		{"non-integral rate", 3, 1, []step{{0, true}, {333 * ms, false}, {334 * ms, true}, {667 * ms, false}, {668 * ms, true}}},
		{"unlimited", 0, 1, []step{{0, true}, {0, true}, {0, true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBucket(tt.rate, tt.burst, t0)
			for i, s := range tt.steps {
				if got := b.take(t0.Add(s.at)); got != s.want {
					t.Fatalf("step %d: take(+%v) = %v, want %v", i, s.at, got, s.want)
				}
			}
		})
	}
}

// Ten requests per second for an hour at exactly 100 ms spacing: every one is
// admitted. A float bucket drifts here; the fixed-point one must not.
func TestBucketNoDrift(t *testing.T) {
	t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, rate := range []float64{10, 20, 50, 7} {
		b := newBucket(rate, 1, t0)
		gap := time.Duration(float64(time.Second) / rate)
		if time.Duration(float64(gap)*rate) != time.Second {
			gap++ // round the spacing up for rates whose period is not whole nanoseconds
		}
		for i := 0; i < 36000; i++ {
			if !b.take(t0.Add(time.Duration(i) * gap)) {
				t.Fatalf("rate %v: request %d at %v refused", rate, i, time.Duration(i)*gap)
			}
		}
	}
}

func TestBucketSet(t *testing.T) {
	t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	b := newBucket(10, 10, t0)
	for range 10 {
		b.take(t0)
	}
	b.set(t0.Add(500*time.Millisecond), 1, 2) // 5 tokens earned, clamped to 2
	if got := b.remaining(); got != 2 {
		t.Errorf("after step down: remaining() = %d, want 2", got)
	}
	b.set(t0.Add(500*time.Millisecond), 0, 1)
	b.set(t0.Add(time.Second), 5, 3) // leaving unlimited: full
	if got := b.remaining(); got != 3 {
		t.Errorf("after leaving unlimited: remaining() = %d, want 3", got)
	}
}

func TestRefillTime(t *testing.T) {
	t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	s := time.Second
	tests := []struct {
		name    string
		now     time.Duration
		deficit int64
		rate    float64
		changes []change
		want    time.Duration
	}{
		{"none missing", 0, 0, 10, nil, 0},
		{"one token at 10/s", 0, nano, 10, nil, 100 * time.Millisecond},
		{"step before ready", 1 * s, nano * 9 / 10, 0.1, []change{{at: 3 * s, rate: 10}}, 2*s + 70*time.Millisecond},
		{"step after ready", 0, nano, 1, []change{{at: 5 * s, rate: 100}}, s},
		{"step to unlimited", 0, nano, 0.1, []change{{at: 4 * s, rate: 0}}, 4 * s},
		{"two steps", 0, 2 * nano, 0.5, []change{{at: s, rate: 0.25}, {at: 2 * s, rate: 1}}, 2*s + 1250*time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := refillTime(t0.Add(tt.now), tt.deficit, tt.rate, t0, tt.changes)
			if got != tt.want {
				t.Errorf("refillTime = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFillCapacity(t *testing.T) {
	s := time.Second
	win := make([]Second, 4)
	for i := range win {
		win[i].Start = time.Duration(i) * s
	}
	changes := []change{{0, 50, 1}, {2500 * time.Millisecond, 10, 1}, {3 * s, 0, 1}}
	fillCapacity(win, changes, 0)
	want := []float64{50, 50, 30, 0}
	for i, w := range win {
		if w.Capacity != want[i] {
			t.Errorf("window %d: Capacity = %v, want %v", i, w.Capacity, want[i])
		}
	}
	fillCapacity(win, changes, 20) // servers cap the rate, and make "unlimited" 20
	want = []float64{20, 20, 15, 20}
	for i, w := range win {
		if w.Capacity != want[i] {
			t.Errorf("servers 20/s: window %d: Capacity = %v, want %v", i, w.Capacity, want[i])
		}
	}
}

func TestServiceRate(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		cfg  HostConfig
		want float64
	}{
		{HostConfig{}, 0},
		{HostConfig{Servers: 4}, 0},
		{HostConfig{Latency: 100 * ms}, 0},
		{HostConfig{Servers: 4, Latency: 100 * ms}, 40},
		{HostConfig{Servers: 10, Latency: 100 * ms, Slowdown: 0.05}, 10 / 0.145},
		{HostConfig{Latency: 100 * ms, Slowdown: 0.1}, 100},
	}
	for _, tt := range tests {
		if got := tt.cfg.serviceRate(); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("serviceRate(%+v) = %v, want %v", tt.cfg, got, tt.want)
		}
	}
}
