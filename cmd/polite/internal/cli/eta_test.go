package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/polite-go/polite/crawl"
)

// An ETA that waits on a host's timer says so: a blocked host's re-check
// read "<1s" and then jumped (issue 33, item 15).
func TestETASaysWhatItWaitsFor(t *testing.T) {
	for _, tc := range []struct {
		slow crawl.Slowest
		want string
	}{
		{crawl.Slowest{Host: "waf.test", Left: 7, Rate: 10, ETA: 20*time.Second + 700*time.Millisecond, Held: 20 * time.Second, HeldBy: "block re-check"},
			"21s (slowest: waf.test, 7 left at 10.0/s, after its block re-check in 20s)"},
		{crawl.Slowest{Host: "a.test", Left: 1, Rate: 2, ETA: 900 * time.Millisecond, Held: 400 * time.Millisecond, HeldBy: "pause"},
			"<1s (slowest: a.test, 1 left at 2.0/s, after its pause in <1s)"},
		{crawl.Slowest{Host: "b.test", Left: 4, Rate: 2, ETA: 2 * time.Second}, "2s (slowest: b.test, 4 left at 2.0/s)"},
	} {
		if got := estimateLeft(tc.slow.Left, 0, tc.slow, true).String(); !strings.Contains(got, tc.want) {
			t.Errorf("ETA of %+v = %q, want %q", tc.slow, got, tc.want)
		}
	}
}
