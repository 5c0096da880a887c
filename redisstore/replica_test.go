package redisstore

import (
	"math"
	"testing"
	"time"

	"github.com/polite-go/polite/adaptive"
)

// FuzzHear: a log entry read back from Redis is outside input. Whatever
// it holds, hearing it never panics, and the controller's rate stays a
// finite rate within its bounds; a malformed entry is skipped.
func FuzzHear(f *testing.F) {
	for _, e := range []string{
		"1795700000000000 0 10000 0 1", "1795700000000000 1 2000 1000000 0", "1795700000000000 m 8",
		"1795700000000000 m 0", "1795700000000000 3 0 0 0", "x 0 1 2 3", "1795700000000000 9 1 1 1",
		"1795700000000000 0 -5 -5 1", "1795700000000000 m NaN", "1795700000000000 m -Inf", "", " ",
		"99999999999999999999 0 1 1 1", "1795700000000000 0 99999999999999999 0 0",
	} {
		f.Add(e)
	}
	var s Store
	f.Fuzz(func(t *testing.T, e string) {
		cfg := adaptive.Config{Max: 200}
		c := adaptive.New(cfg, time.UnixMicro(1795700000000000))
		for range 3 {
			s.hear(c, e)
		}
		s.hear(c, "1795700001000000 0 10000 0 0")
		r := c.Rate()
		if math.IsNaN(r) || math.IsInf(r, 0) || r < adaptive.DefaultMin || r > cfg.Max {
			t.Fatalf("after %q the rate is %v, want within [%v, %v]", e, r, adaptive.DefaultMin, cfg.Max)
		}
		if n := c.Concurrency(); n < 1 {
			t.Fatalf("after %q the cap is %d", e, n)
		}
	})
}
