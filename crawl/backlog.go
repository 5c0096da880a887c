package crawl

import (
	"io"
	"sync"
)

// byteSem bounds the bytes of finished bodies waiting for the committer
// (issue 17, defect 3: bounded by count only, 200 endless-body URLs at 64
// in flight queued 4.1 GB). acquire blocks a worker while the bytes queued
// would go over the bound, except that one body always fits when nothing
// is queued; the committer releases each body's bytes once its batch is
// written. Waiting is on a channel, so a synctest bubble sees it blocked.
// A byteSem is safe for concurrent use.
type byteSem struct {
	mu   sync.Mutex // guards used, wake
	used int64
	max  int64
	wake chan struct{} // closed (and replaced) when bytes are released
}

func newByteSem(max int64) *byteSem {
	return &byteSem{max: max, wake: make(chan struct{})}
}

func (s *byteSem) acquire(n int64) {
	for {
		s.mu.Lock()
		if s.used == 0 || s.used+n <= s.max {
			s.used += n
			s.mu.Unlock()
			return
		}
		w := s.wake
		s.mu.Unlock()
		<-w
	}
}

func (s *byteSem) release(n int64) {
	if n == 0 {
		return
	}
	s.mu.Lock()
	s.used -= n
	close(s.wake)
	s.wake = make(chan struct{})
	s.mu.Unlock()
}

// size is the bytes a kept response holds in memory: its buffers'
// capacity, which for a body read without a Content-Length is up to twice
// its length.
func (k *kept) size() int64 {
	if k == nil {
		return 0
	}
	return int64(cap(k.body) + cap(k.reqHead) + cap(k.respHead))
}

// firstRead is the buffer readCapped starts with for a body of unknown
// length: most pages fit.
const firstRead = 4 << 10

// readCapped reads r to its end, or to limit bytes, into one buffer that
// never grows past limit (issue 29, item 14): a body announced longer than
// limit (n > limit) gets limit bytes at once; one of unknown length (n < 0)
// starts at firstRead and doubles, its last step to limit exactly. A
// bytes.Buffer doubled past it: a 10 MiB cap kept 16 MiB buffers, and
// held 24 MiB while it grew, per worker.
func readCapped(r io.Reader, n, limit int64) ([]byte, error) {
	size := min(firstRead, limit)
	if n > limit {
		size = limit
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) >= limit {
				return buf, nil
			}
			grown := make([]byte, len(buf), min(2*int64(cap(buf)), limit))
			copy(grown, buf)
			buf = grown
		}
		k, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
