package polite

import (
	"sync/atomic"
	"time"
)

// hostExt is the state a host gains once the Transport has heard from it.
// Hosts that were only ever allowed through carry none, which keeps an idle
// Host small.
type hostExt struct {
	pauseUntil atomic.Int64 // unix ns before which no request goes; 0 = none
}

// idle reports whether nothing in x needs the host kept.
func (x *hostExt) idle(now time.Time) bool {
	return x.pauseUntil.Load() <= now.UnixNano()
}
