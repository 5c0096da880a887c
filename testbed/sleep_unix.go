//go:build linux || darwin

package testbed

import (
	"syscall"
	"time"
)

// kernelSleeps reports whether kernelSleep is a kernel sleep here.
const kernelSleeps = true

// kernelSleep blocks the calling thread for d in the kernel, resuming
// after a signal, with no Go timer involved.
func kernelSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
