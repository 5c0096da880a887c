package retry

import (
	"math"
	"sync"
	"testing"
	"time"
)

const ms = time.Millisecond

// below1 is the largest float64 below 1.
var below1 = math.Nextafter(1, 0)

func TestBackoffDelay(t *testing.T) {
	huge := time.Duration(math.MaxInt64)
	tests := []struct {
		name    string
		b       Backoff
		attempt int
		prev    time.Duration
		r       float64
		want    time.Duration
	}{
		// Full jitter: r·min(Cap, Base·2^(attempt-1)).
		{"full first r=0", Backoff{}, 1, 0, 0, 0},
		{"full first r=.5", Backoff{}, 1, 0, 0.5, 250 * ms},
		{"full second r=.5", Backoff{}, 2, 0, 0.5, 500 * ms},
		{"full fifth r=.5", Backoff{}, 5, 0, 0.5, 4 * time.Second},
		{"full capped r=.5", Backoff{}, 8, 0, 0.5, 30 * time.Second},
		{"full attempt 0 is 1", Backoff{}, 0, 0, 0.5, 250 * ms},
		{"full negative attempt is 1", Backoff{}, -7, 0, 0.5, 250 * ms},
		{"full huge attempt", Backoff{}, math.MaxInt, 0, 0.5, 30 * time.Second},
		{"full r below 1", Backoff{Base: time.Second, Cap: time.Second}, 1, 0, below1, time.Second - 1},
		{"full r=1 clamps", Backoff{Base: time.Second, Cap: time.Second}, 1, 0, 1, time.Second - 1},
		{"full r>1 clamps", Backoff{Base: time.Second, Cap: time.Second}, 1, 0, 7, time.Second - 1},
		{"full r<0 clamps", Backoff{}, 3, 0, -1, 0},
		{"full r NaN", Backoff{}, 3, 0, math.NaN(), 0},
		{"full huge cap", Backoff{Base: time.Second, Cap: huge}, math.MaxInt, 0, below1, huge - 1023},
		{"full huge base", Backoff{Base: huge, Cap: huge}, 2, 0, 0.5, 1 << 62},
		{"custom", Backoff{Base: 100 * ms, Cap: 10 * time.Second}, 4, 0, 0.25, 200 * ms},
		{"negative base and cap", Backoff{Base: -1, Cap: -1}, 1, 0, 0.5, 250 * ms},
		{"cap below base", Backoff{Base: time.Second, Cap: 300 * ms}, 1, 0, 0.5, 150 * ms},
		{"unknown jitter is full", Backoff{Jitter: 42}, 1, 0, 0.5, 250 * ms},

		// Equal jitter: ceiling/2 + r·ceiling/2.
		{"equal r=0", Backoff{Jitter: Equal}, 1, 0, 0, 250 * ms},
		{"equal r=.5", Backoff{Jitter: Equal}, 3, 0, 0.5, 1500 * ms},
		{"equal r below 1", Backoff{Jitter: Equal, Base: time.Second}, 1, 0, below1, time.Second - 1},
		{"equal capped", Backoff{Jitter: Equal}, 100, 0, 0, 30 * time.Second},
		{"equal huge", Backoff{Jitter: Equal, Base: huge, Cap: huge}, 1, 0, below1, huge - 512},

		// Decorrelated: min(Cap, Base + r·(3·prev - Base)), prev at least Base.
		{"decorrelated first r=0", Backoff{Jitter: Decorrelated}, 1, 0, 0, 500 * ms},
		{"decorrelated first r=.5", Backoff{Jitter: Decorrelated}, 1, 0, 0.5, 1000 * ms},
		{"decorrelated grows from prev", Backoff{Jitter: Decorrelated}, 2, 10 * time.Second, 0.5, 15250 * ms},
		{"decorrelated capped", Backoff{Jitter: Decorrelated}, 3, 50 * time.Second, 0.9, 60 * time.Second},
		{"decorrelated prev huge", Backoff{Jitter: Decorrelated, Cap: huge}, 3, huge, below1, huge},
		{"decorrelated ignores attempt", Backoff{Jitter: Decorrelated}, 99, 0, 0, 500 * ms},

		// No jitter: the ceiling itself.
		{"none first", Backoff{Jitter: NoJitter}, 1, 0, 0.9, 500 * ms},
		{"none third", Backoff{Jitter: NoJitter}, 3, 0, 0.9, 2 * time.Second},
		{"none capped", Backoff{Jitter: NoJitter}, 1000, 0, 0, 60 * time.Second},
		{"none huge cap", Backoff{Jitter: NoJitter, Base: time.Nanosecond, Cap: huge}, 63, 0, 0, 1 << 62},
		{"none huge cap saturates", Backoff{Jitter: NoJitter, Base: time.Nanosecond, Cap: huge}, 64, 0, 0, huge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.b.Delay(tt.attempt, tt.prev, tt.r); got != tt.want {
				t.Errorf("%+v.Delay(%d, %v, %v) = %v, want %v", tt.b, tt.attempt, tt.prev, tt.r, got, tt.want)
			}
		})
	}
}

// TestBackoffBounds sweeps attempts and draws: every delay lies within its
// schedule's bounds and grows with r.
func TestBackoffBounds(t *testing.T) {
	for _, j := range []Jitter{Full, Equal, Decorrelated, NoJitter} {
		b := Backoff{Base: 100 * ms, Cap: 5 * time.Second, Jitter: j}
		t.Run(j.String(), func(t *testing.T) {
			var prev time.Duration
			for attempt := 1; attempt <= 70; attempt++ {
				ceil := ceiling(b.Base, b.Cap, attempt)
				last := time.Duration(-1)
				for i := 0; i <= 100; i++ {
					r := float64(i) / 101
					d := b.Delay(attempt, prev, r)
					lo, hi := time.Duration(0), ceil
					switch j {
					case Equal:
						lo = ceil / 2
					case Decorrelated:
						lo, hi = b.Base, b.Cap
					case NoJitter:
						lo = ceil
					}
					if d < lo || d > hi {
						t.Fatalf("Delay(%d, %v, %v) = %v, want in [%v, %v]", attempt, prev, r, d, lo, hi)
					}
					if d < last {
						t.Fatalf("Delay(%d, %v, %v) = %v, below %v for a smaller r", attempt, prev, r, d, last)
					}
					last = d
				}
				prev = b.Delay(attempt, prev, 0.5)
			}
		})
	}
}

func TestBackoffNext(t *testing.T) {
	b := Backoff{Base: 10 * ms, Cap: time.Second}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			seen := map[time.Duration]bool{}
			for attempt := 1; attempt <= 200; attempt++ {
				d := b.Next(attempt, 0)
				if d < 0 || d > ceiling(b.Base, b.Cap, attempt) {
					t.Errorf("Next(%d, 0) = %v, out of [0, %v]", attempt, d, ceiling(b.Base, b.Cap, attempt))
				}
				seen[d] = true
			}
			if len(seen) < 100 {
				t.Errorf("Next drew %d distinct delays in 200 tries, want jitter", len(seen))
			}
		})
	}
	wg.Wait()
}

func TestJitterString(t *testing.T) {
	for j, want := range map[Jitter]string{Full: "full", Equal: "equal", Decorrelated: "decorrelated", NoJitter: "none", 9: "Jitter(9)"} {
		if got := j.String(); got != want {
			t.Errorf("Jitter(%d).String() = %q, want %q", int(j), got, want)
		}
	}
}

func BenchmarkBackoffNext(b *testing.B) {
	for _, j := range []Jitter{Full, Decorrelated} {
		bo := Backoff{Jitter: j}
		b.Run(j.String(), func(b *testing.B) {
			b.ReportAllocs()
			var prev time.Duration
			for b.Loop() {
				prev = bo.Next(5, prev)
			}
		})
	}
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				Backoff{}.Next(5, 0)
			}
		})
	})
}
