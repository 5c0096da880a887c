package crawl

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/polite-go/polite"
)

// TestPaceHoldsOddRates: a job held at a fixed rate sends at that rate,
// whether or not it divides a second evenly (a job at 19.9/s sent 99 pages
// in 10 s of the fake clock, 7.3/s sent 36: each token was read a few
// nanoseconds early and the request put off a whole poll).
func TestPaceHoldsOddRates(t *testing.T) {
	for _, rate := range []float64{20, 19.9, 7.3, 3.7} {
		t.Run(fmt.Sprint(rate), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var list strings.Builder
				for i := range 1000 {
					fmt.Fprintf(&list, "http://a.test/%d\n", i)
				}
				rc := &pageLog{}
				tr := &polite.Transport{Base: rc, IgnoreRobots: true, Limits: polite.Limits{Rate: rate, Burst: 1, Concurrency: 4}}
				j := loadJob(t, t.TempDir(), list.String(), Options{Transport: tr, Bodies: BodiesNone})
				defer j.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if _, err := j.Run(ctx, nil); err != nil {
					t.Fatal(err)
				}
				rc.mu.Lock()
				n := len(rc.paths)
				rc.mu.Unlock()
				// The fake clock has no lateness; the order goroutines run
				// in (under -race, say) may still cost a token or two at
				// the start or the end. The defect halved it.
				if want := int(rate * 10); n < want*97/100-1 || n > want+1 {
					t.Errorf("%d pages in 10 s at %v/s, want %d (at least %d)", n, rate, want, want*97/100-1)
				}
			})
		})
	}
}
