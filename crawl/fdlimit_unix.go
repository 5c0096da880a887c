//go:build unix

package crawl

import "syscall"

// fdLimit is the process's file descriptor limit (RLIMIT_NOFILE's soft
// limit, which Go since 1.19 raises to the hard one at start), or 0 when
// it cannot be read or is unlimited.
func fdLimit() int {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil || l.Cur > 1<<30 { // RLIM_INFINITY is the largest
		return 0
	}
	return int(l.Cur)
}
