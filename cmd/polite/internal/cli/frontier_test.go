package cli

import (
	"testing"

	"github.com/polite-go/polite/crawl"
	"github.com/polite-go/polite/redisstore"
)

// The adapter passes lanes by number: the two packages must number them
// alike.
func TestLanesNumberedAlike(t *testing.T) {
	for _, l := range []crawl.Lane{crawl.LaneNormal, crawl.LaneInteractive, crawl.LaneBulk} {
		if got := redisstore.Lane(l).String(); got != l.String() {
			t.Errorf("crawl lane %d is %q, redisstore's %q", l, l, got)
		}
	}
}
