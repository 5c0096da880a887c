package nanos

import (
	"math"
	"testing"
	"testing/synctest"
	"time"
)

// Instants of one clock keep their differences and come back as the times
// they were, whether the clock is real, synctest's (year 2000), counted from
// the zero Time, or from the Unix epoch without a monotonic reading.
func TestDifferencesKept(t *testing.T) {
	check := func(t *testing.T, name string, t0 time.Time) {
		t.Helper()
		for _, d := range []time.Duration{0, 1, time.Millisecond, time.Hour, 24 * 365 * time.Hour} {
			t1 := t0.Add(d)
			if got := Of(t1) - Of(t0); got != int64(d) {
				t.Errorf("%s: Of(t0+%v) - Of(t0) = %v, want %v", name, d, time.Duration(got), d)
			}
			if back := Time(Of(t1), t0); !back.Equal(t1) {
				t.Errorf("%s: Time(Of(t0+%v), t0) = %v, want %v", name, d, back, t1)
			}
		}
	}
	check(t, "time.Now", time.Now())
	check(t, "zero Time", time.Time{})
	check(t, "Unix 0", time.Unix(0, 0))
	check(t, "year 1900", time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC))
	check(t, "year 200", time.Date(200, 1, 1, 0, 0, 0, 0, time.UTC))
	synctest.Test(t, func(t *testing.T) { check(t, "synctest", time.Now()) })
}

func TestAddSaturates(t *testing.T) {
	if got := Add(math.MaxInt64-1, time.Hour); got != math.MaxInt64 {
		t.Errorf("Add near the top = %d, want MaxInt64", got)
	}
	if got := Add(math.MinInt64+1, -time.Hour); got != math.MinInt64 {
		t.Errorf("Add near the bottom = %d, want MinInt64", got)
	}
	if got := Add(5, 3); got != 8 {
		t.Errorf("Add(5, 3) = %d", got)
	}
}

// Stamp never yields the 0 that means "none", even for the instant that
// is exactly 0 (the process's start, by its own reading), and keeps every
// other instant as Of gives it, negative ones included.
func TestStampNeverZero(t *testing.T) {
	if got := Stamp(epoch); got != 1 {
		t.Errorf("Stamp(epoch) = %d, want 1", got)
	}
	for _, tm := range []time.Time{epoch.Add(time.Second), epoch.Add(-time.Second), time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)} {
		if got, want := Stamp(tm), Of(tm); got != want {
			t.Errorf("Stamp(%v) = %d, want Of's %d", tm, got, want)
		}
	}
	if NonZero(0) != 1 || NonZero(-7) != -7 {
		t.Errorf("NonZero(0), NonZero(-7) = %d, %d, want 1, -7", NonZero(0), NonZero(-7))
	}
}
