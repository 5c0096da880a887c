package fleetscale

import (
	"testing"
	"time"
)

func TestMeasure(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms ...int) []time.Time {
		var out []time.Time
		for _, m := range ms {
			out = append(out, t0.Add(time.Duration(m)*time.Millisecond))
		}
		return out
	}
	tests := []struct {
		name     string
		arrivals []time.Time
		rate     float64
		burst    int
		window   int
		slack    time.Duration
	}{
		{"spaced", at(0, 100, 200, 300), 10, 1, 4, 0},
		{"burst then spaced", at(0, 0, 100, 200), 10, 2, 4, 0},
		{"too close", at(0, 50), 10, 1, 2, 50 * time.Millisecond},
		{"eleven in a second", at(0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1000), 10, 1, 12, 100 * time.Millisecond},
		{"unsorted", at(200, 0, 100), 10, 1, 3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := Measure(tt.arrivals, tt.rate, tt.burst)
			if e.Window != tt.window || e.Slack != tt.slack {
				t.Errorf("Measure = window %d slack %v, want %d %v", e.Window, e.Slack, tt.window, tt.slack)
			}
		})
	}
}
