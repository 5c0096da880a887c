package crawl

import (
	"testing"
	"testing/synctest"
)

// With WARC on, finished bodies queued for the committer by count only
// (4×workers+1024 of them): 200 endless-body URLs at 64 in flight peaked at
// 4.1 GB (issue 17, defect 3). The queue is bounded by bytes: a worker
// whose body would go over waits for the committer.
func TestBacklogBoundedByBytes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := &Job{commits: make(chan commitMsg, 100), backlog: newByteSem(4 << 20)}
		body := make([]byte, 1<<20)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := range 10 {
				j.finish(&item{id: int64(i)}, &Result{}, &kept{body: body})
			}
		}()
		synctest.Wait()
		if n := len(j.commits); n != 4 {
			t.Errorf("%d bodies of 1 MiB queued under a 4 MiB bound, want 4", n)
		}
		// The committer's releases let the rest through.
		for range 10 {
			m := <-j.commits
			j.backlog.release(m.size)
		}
		<-done
		// A body bigger than the bound goes alone.
		j.finish(&item{}, &Result{}, &kept{body: make([]byte, 5<<20)})
		if m := <-j.commits; m.size != 5<<20 {
			t.Errorf("a 5 MiB body counted %d bytes", m.size)
		}
	})
}
