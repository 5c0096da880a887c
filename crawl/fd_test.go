package crawl

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
)

func TestNamedEMFILE(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("socket", syscall.EMFILE)}
	other := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, c := range []struct {
		name  string
		err   error
		named bool
	}{
		{"dial EMFILE", dial, true},
		{"system ENFILE", fmt.Errorf("open x: %w", syscall.ENFILE), true},
		{"refused", other, false},
		{"named already", namedEMFILE(dial), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := namedEMFILE(c.err)
			msg := got.Error()
			if c.named != strings.HasPrefix(msg, "too many open files: raise ulimit -n or lower --workers: ") ||
				strings.Count(msg, "raise ulimit") > 1 || !errors.Is(got, c.err) {
				t.Errorf("namedEMFILE(%v) = %q, named %v", c.err, msg, c.named)
			}
		})
	}
	if got := namedFileErr(other); got != error(other) {
		t.Errorf("namedFileErr(%v) with descriptors to spare = %v, want it unchanged", other, got)
	}
}

func TestIdleConns(t *testing.T) {
	for _, c := range []struct {
		limit, workers, want int
	}{
		{0, 64, maxIdleConns},         // unknown: the cap alone
		{1024, 64, 1024 - 64 - 2*64},  // Debian's default soft limit
		{256, 32, 256 - 64 - 2*32},    // the test's child
		{128, 64, 1},                  // workers alone exceed it: one, not net/http's no cap
		{1 << 20, 64, maxIdleConns},   // systemd's hard limit
		{4096, 512, 4096 - 64 - 1024}, // many workers
	} {
		if got := idleConns(c.limit, c.workers); got != c.want {
			t.Errorf("idleConns(%d, %d) = %d, want %d", c.limit, c.workers, got, c.want)
		}
	}
}

// tail is the last n bytes of b.
func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func TestConnBudget(t *testing.T) {
	for _, c := range []struct {
		limit, workers, want int
	}{
		{0, 64, maxIdleConns + 64},
		{1024, 64, 1024 - 64 - 64},
		{256, 32, 256 - 64 - 32},
		{128, 96, 96}, // never fewer than the requests in flight
	} {
		if got := connBudget(c.limit, c.workers); got != c.want {
			t.Errorf("connBudget(%d, %d) = %d, want %d", c.limit, c.workers, got, c.want)
		}
	}
}
