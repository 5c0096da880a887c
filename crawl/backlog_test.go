package crawl

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"
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

// A body over --max-body, or of unknown length, was read into a
// bytes.Buffer that doubled past the cap: at a 10 MiB cap each worker kept
// a 16 MiB buffer and held 24 MiB while it grew (issue 29, item 14). The
// buffer never passes the cap, and one announced longer gets the cap at
// once. The buffers are seen by the reader: each Read gets the free end of
// the buffer, so its capacity is the bytes read before plus len(p).
func TestReadUpToStaysUnderCap(t *testing.T) {
	const limit = 5 << 20 // just above a power of two, as 10 MiB is
	for _, c := range []struct {
		name     string
		n        int64 // announced length
		body     int   // bytes sent
		maxAlloc int64 // bytes of buffers allocated at most, growing included
	}{
		{"unknown length, longer", -1, 6 << 20, 3 * limit},
		{"unknown length, shorter", -1, 3 << 20, 3 * (3 << 20)},
		{"announced longer", 6 << 20, 6 << 20, limit},
		{"announced, fits", 1 << 20, 1 << 20, 1 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &capReader{r: iotest.HalfReader(bytes.NewReader(make([]byte, c.body)))}
			body, err := readUpTo(r, c.n, limit)
			want := min(int64(c.body), limit)
			if err != nil || int64(len(body)) != want {
				t.Fatalf("readUpTo = %d bytes, %v; want %d", len(body), err, want)
			}
			var alloc, most int64
			for _, c := range r.caps {
				alloc += c
				most = max(most, c)
			}
			if cap(body) > limit || most > limit {
				t.Errorf("buffers up to %d bytes, the body's %d; want none over the cap %d", most, cap(body), limit)
			}
			if alloc > c.maxAlloc {
				t.Errorf("buffers of %d bytes in all (%v), want at most %d", alloc, r.caps, c.maxAlloc)
			}
		})
	}
}

// capReader notes the capacity of each buffer its Reads fill: the bytes
// read before plus len(p), as readUpTo hands it the free end of its buffer.
type capReader struct {
	r    io.Reader
	n    int64
	caps []int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if k := c.n + int64(len(p)); len(c.caps) == 0 || c.caps[len(c.caps)-1] != k {
		c.caps = append(c.caps, k)
	}
	k, err := c.r.Read(p)
	c.n += int64(k)
	return k, err
}
