package adaptive

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The latency statistics kept in order as answers come and go are those of
// sorting the history afresh, as the meter once did on every answer.
func TestLatenciesMatchSortedHistory(t *testing.T) {
	for _, tc := range []struct {
		name string
		draw func(r *rand.Rand, i int) int64
	}{
		{"constant", func(*rand.Rand, int) int64 { return int64(20 * ms) }},
		{"jitter", func(r *rand.Rand, _ int) int64 {
			if r.IntN(50) == 0 {
				return int64(300 * ms)
			}
			return int64(80+r.IntN(41)) * int64(ms)
		}},
		{"ties", func(r *rand.Rand, _ int) int64 { return int64(r.IntN(4)) * int64(ms) }},
		{"rising", func(_ *rand.Rand, i int) int64 { return int64(i) * int64(ms) }},
		{"falling", func(_ *rand.Rand, i int) int64 { return int64(10000-i) * int64(ms) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, 4))
			var l latencies
			var hist []int64
			at := int64(0)
			for i := range 2000 {
				d := tc.draw(r, i)
				l.add(d)
				hist = append(hist, d)
				if r.IntN(3) == 0 {
					continue // several answers between two updates
				}
				at += int64(r.IntN(200)) * int64(ms)
				l.update(at)
				all := slices.Sorted(slices.Values(hist[max(len(hist)-latRing, 0):]))
				rec := slices.Sorted(slices.Values(hist[max(len(hist)-latRecent, 0):]))
				k, n := len(all), len(rec)
				if p95, spread, med := all[(k*95-1)/100], all[k*3/4]-all[k/4], rec[n/2]; l.p95 != p95 || l.spread != spread || l.med != med {
					t.Fatalf("after %d answers: p95, spread, median = %v, %v, %v, want %v, %v, %v", i+1,
						time.Duration(l.p95), time.Duration(l.spread), time.Duration(l.med),
						time.Duration(p95), time.Duration(spread), time.Duration(med))
				}
			}
		})
	}
}
