package adaptive

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The latency statistics kept in order as answers come and go are those of
// sorting the history afresh, as the meter once did on every answer (of the
// latencies as kept, in 16 bits: TestLatCode bounds what that loses).
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
				hist = append(hist, toLatCode(d).ns()) // as kept: 16 bits
				if r.IntN(3) == 0 {
					continue // several answers between two updates
				}
				at += int64(r.IntN(200)) * int64(ms)
				l.update(at)
				all := slices.Sorted(slices.Values(hist[max(len(hist)-latRing, 0):]))
				rec := slices.Sorted(slices.Values(hist[max(len(hist)-latRecent, 0):]))
				k, n := len(all), len(rec)
				if p95, med := all[(k*95-1)/100], rec[n/2]; l.p95.ns() != p95 || l.med.ns() != med {
					t.Fatalf("after %d answers: p95, median = %v, %v, want %v, %v", i+1,
						time.Duration(l.p95.ns()), time.Duration(l.med.ns()), time.Duration(p95), time.Duration(med))
				}
			}
		})
	}
}

// TestLatCode holds the 16-bit latencies to their promise: in order, exact
// to the microsecond up to 4,095 µs, within 1/4096 above, up to 35 minutes.
func TestLatCode(t *testing.T) {
	prev := toLatCode(0)
	for us := int64(0); us <= math.MaxInt32; us += 1 + us/1000 {
		c := toLatCode(us * 1000)
		if c < prev {
			t.Fatalf("%d µs: code %d below the previous latency's %d", us, c, prev)
		}
		prev = c
		got := c.ns() / 1000
		if us < latExact && got != us {
			t.Fatalf("%d µs comes back as %d", us, got)
		}
		if d := math.Abs(float64(got-us)) / float64(max(us, 1)); d > 1.0/4096 {
			t.Fatalf("%d µs comes back as %d: off by %.5f", us, got, d)
		}
	}
	if c := toLatCode(math.MaxInt64); c.ns() < int64(35*time.Minute) {
		t.Errorf("the longest latency comes back as %v", time.Duration(c.ns()))
	}
	if c := toLatCode(-5); c != 0 {
		t.Errorf("a negative latency is code %d, want 0", c)
	}
}

// The meter counts what a list of every answer would, over any last n
// slots, across gaps of any length, and saturates instead of wrapping.
func TestRateMeterMatchesAnswers(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var m rateMeter
	type answer struct {
		slot int64
		ok   bool
	}
	var all []answer
	at := int64(0)
	for i := range 20000 {
		switch r.IntN(50) {
		case 0:
			at += int64(r.IntN(3000)) * int64(time.Millisecond) // a gap, up to 3 s
		case 1:
			at += int64(r.IntN(1e6)) * int64(time.Second) // a long one: slot numbers far apart
		default:
			at += int64(r.IntN(40)) * int64(time.Millisecond)
		}
		ok := r.IntN(4) != 0
		m.add(at, ok)
		all = append(all, answer{at / slotSpan, ok})
		read := at + int64(r.IntN(300))*int64(time.Millisecond)
		for n := int64(1); n <= slotCount; n++ {
			cur := read / slotSpan
			want := 0
			for _, a := range all[max(len(all)-5000, 0):] {
				if a.ok && a.slot > cur-n && a.slot <= cur {
					want++
				}
			}
			span := max(min((n-1)*slotSpan+read%slotSpan, read), slotSpan)
			if got, w := m.okRateOver(read, n), float64(want)*1e9/float64(span); got != w {
				t.Fatalf("answer %d, last %d slots at %v: rate %v, want %v", i, n, time.Duration(read), got, w)
			}
		}
	}
	var full rateMeter
	for range 70000 {
		full.add(0, true)
	}
	if got := full.ok[0]; got != math.MaxUint16 {
		t.Errorf("70,000 answers in one slot count %d, want %d (saturated)", got, math.MaxUint16)
	}
}
