//go:build !(linux || darwin)

package testbed

import "time"

// kernelSleeps reports whether kernelSleep is a kernel sleep here: not on
// this system, where hosts wait on Go's timers alone.
const kernelSleeps = false

func kernelSleep(d time.Duration) { time.Sleep(d) }
