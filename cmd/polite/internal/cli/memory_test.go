package cli

import (
	"runtime/debug"
	"testing"
)

// A fetch runs under a soft memory limit of its bodies' formula (issue 29,
// item 14), unless GOMEMLIMIT says otherwise, and puts the one before back.
func TestLimitMemory(t *testing.T) {
	if got, want := softMemoryLimit(64, 10<<20), int64(64*10<<20+128<<20+256<<20); got != want {
		t.Errorf("softMemoryLimit(64, 10 MiB) = %d, want %d (1 GiB)", got, want)
	}
	t.Setenv("GOGC", "")
	before := debug.SetMemoryLimit(-1)
	percent := gcPercentNow()
	restore := limitMemory(8, 1<<20)
	if got := debug.SetMemoryLimit(-1); got != softMemoryLimit(8, 1<<20) {
		t.Errorf("limit %d during the fetch, want %d", got, softMemoryLimit(8, 1<<20))
	}
	if got := gcPercentNow(); got != gcPercent {
		t.Errorf("GOGC %d during the fetch, want %d", got, gcPercent)
	}
	restore()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("limit %d after, want %d back", got, before)
	}
	if got := gcPercentNow(); got != percent {
		t.Errorf("GOGC %d after, want %d back", got, percent)
	}
	t.Setenv("GOMEMLIMIT", "1GiB")
	t.Setenv("GOGC", "150")
	limitMemory(8, 1<<20)()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("with GOMEMLIMIT set: limit %d, want %d untouched", got, before)
	}
	restore = limitMemory(8, 1<<20)
	if got := gcPercentNow(); got != percent {
		t.Errorf("with GOGC set: GOGC %d, want %d untouched", got, percent)
	}
	restore()
}

// gcPercentNow returns the GOGC in force.
func gcPercentNow() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}
