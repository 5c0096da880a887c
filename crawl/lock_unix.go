//go:build unix

package crawl

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockDir takes an exclusive lock on path, so that two processes never run
// one job. The lock goes with the process, however it ends.
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("crawl: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("crawl: %s: another polite process has this job open", path)
		}
		return nil, fmt.Errorf("crawl: locking %s: %w", path, err)
	}
	return f, nil
}
