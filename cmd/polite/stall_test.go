package main_test

import (
	"sync"
	"time"
)

// The rate checks compare arrival times at the test's servers with the
// bound the client keeps at its own admission times. Between the two lie
// the scheduling delays of two processes: on an idle machine a millisecond
// or two, beside a CPU hog (or a loaded `make test`) tens of milliseconds,
// enough to land two requests sent 50 ms apart within 25 ms of each other
// (issue 17, defect 13: TestLimitsHold failed so, once). The binary runs in
// a process of its own, in real time, so the test cannot move into a
// synctest bubble; instead it measures the delays the machine shows while
// it runs and grants the checks that much slack, and no more.

// stallTick is how often the watcher wakes.
const stallTick = 2 * time.Millisecond

// stall is how late the watcher woke at one instant.
type stall struct {
	at   time.Time
	late time.Duration
}

var stalls struct {
	mu   sync.Mutex // guards list
	list []stall    // the wake-ups later than 1 ms, in order
}

// watchStalls records, until the process ends, every wake-up of a
// goroutine sleeping stallTick that comes more than a millisecond late.
func watchStalls() {
	go func() {
		for {
			t0 := time.Now()
			time.Sleep(stallTick)
			if late := time.Since(t0) - stallTick; late > time.Millisecond {
				stalls.mu.Lock()
				stalls.list = append(stalls.list, stall{t0, late})
				stalls.mu.Unlock()
			}
		}
	}()
}

// worstStall returns the longest scheduling delay seen between from and to.
func worstStall(from, to time.Time) time.Duration {
	stalls.mu.Lock()
	defer stalls.mu.Unlock()
	var worst time.Duration
	for _, s := range stalls.list {
		if !s.at.Before(from) && !s.at.After(to) {
			worst = max(worst, s.late)
		}
	}
	return worst
}
