package crawl

import "sync"

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
