package polite

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"
)

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// drainClose reads a little of a body we are done with, so its connection
// can be reused, and closes it.
func drainClose(b io.ReadCloser) {
	if b == nil {
		return
	}
	_, _ = io.CopyN(io.Discard, b, 64<<10)
	b.Close()
}

// peekBody reads up to MaxPeek bytes of b, for at most PeekTimeout, and
// returns them with a body that replays them ahead of the rest. A body that
// comes slower than that (a byte a second) must not hold RoundTrip for
// hours (issue 17, defect 11): the peek then returns what came so far, and
// the read-ahead goes on in the background, the returned body handing out
// its bytes as they come. size is the body's announced length (-1 when
// unknown): a body that fits is read into a buffer of its own size, kept
// as the peek, where others borrow a MaxPeek buffer from a pool and keep a
// copy of what they read (a crawl's every small HTML page is peeked: the
// copy and the pool's refills were 2 KB per page).
func peekBody(b io.ReadCloser, size int64) ([]byte, io.ReadCloser) {
	pb := &peekedBody{rest: b, ch: make(chan peekRead, 1)}
	if size >= 0 && size < MaxPeek {
		// One byte more than announced, so that the read-ahead sees the
		// end of the body rather than stop at a full buffer.
		pb.buf = make([]byte, size+1)
	} else {
		pb.pooled = peekPool.Get().(*[MaxPeek]byte)
		pb.buf = pb.pooled[:]
	}
	go pb.readAhead()
	tm := time.NewTimer(PeekTimeout)
	defer tm.Stop()
	for {
		select {
		case r, ok := <-pb.ch:
			if pb.take(r, ok) {
				continue
			}
			// All read ahead: keep only what was read.
			head := pb.buf[:pb.got:pb.got]
			if pb.pooled != nil {
				head = bytes.Clone(head)
				peekPool.Put(pb.pooled)
				pb.pooled = nil
			}
			pb.buf = nil
			pb.head = head
			return head, pb
		case <-tm.C:
			return pb.buf[:pb.got:pb.got], pb
		}
	}
}

var peekPool = sync.Pool{New: func() any { return new([MaxPeek]byte) }}

// peekRead is one read of the read-ahead: n more bytes in buf, or its end.
type peekRead struct {
	n   int
	err error
}

// peekedBody is a body whose first bytes (up to MaxPeek) are read ahead by
// readAhead, in its own goroutine, into buf. Read hands out what was read
// ahead, waiting for more while the read-ahead runs, then reads the rest.
// Like any body it is for one goroutine at a time.
type peekedBody struct {
	rest   io.ReadCloser
	buf    []byte         // read ahead into; nil once head holds it all
	pooled *[MaxPeek]byte // buf's array when it came from peekPool
	head   []byte         // all that was read ahead, when it ended in time
	ch     chan peekRead  // the read-ahead's progress; nil once it ended
	got    int            // bytes read ahead so far
	off    int            // bytes of them Read has returned
	err    error          // how the read-ahead ended, if not at a full buf
}

// readAhead reads the first len(buf) bytes of rest into buf, saying how
// far it got after each read. Only it writes buf[got:], and only until it
// closes ch.
func (p *peekedBody) readAhead() {
	defer close(p.ch)
	for got := 0; got < len(p.buf); {
		n, err := p.rest.Read(p.buf[got:])
		got += n
		if n > 0 || err != nil {
			p.ch <- peekRead{n: n, err: err}
		}
		if err != nil {
			return
		}
	}
}

// take records one message of the read-ahead, and reports whether it runs
// on.
func (p *peekedBody) take(r peekRead, ok bool) bool {
	if !ok {
		p.ch = nil
		return false
	}
	p.got += r.n
	if r.err != nil {
		p.err = r.err
	}
	return true
}

func (p *peekedBody) Read(b []byte) (int, error) {
	for {
		if p.off < p.got {
			var n int
			if p.head != nil {
				n = copy(b, p.head[p.off:])
			} else {
				n = copy(b, p.buf[p.off:p.got])
			}
			p.off += n
			return n, nil
		}
		if p.ch == nil {
			break
		}
		r, ok := <-p.ch
		p.take(r, ok)
	}
	if p.err != nil {
		return 0, p.err // io.EOF when the body was shorter than MaxPeek
	}
	return p.rest.Read(b)
}

// Close closes the body, which ends a read-ahead still running, and waits
// for it.
func (p *peekedBody) Close() error {
	err := p.rest.Close()
	if p.ch != nil {
		for range p.ch {
		}
		p.ch = nil
	}
	if p.buf != nil {
		if p.pooled != nil {
			peekPool.Put(p.pooled)
			p.pooled = nil
		}
		p.buf = nil
		p.got, p.off = 0, 0
		p.err = errors.New("polite: read on a closed body")
	}
	return err
}

// slotBody holds a request's slots and registry reference until the caller
// closes the body (or reads it to the end).
type slotBody struct {
	io.ReadCloser
	t     *Transport
	h     *Host
	lease uint64 // the store's in-flight lease, 0 for none
	once  sync.Once
}

func (b *slotBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.done()
	}
	return n, err
}

func (b *slotBody) Close() error {
	err := b.ReadCloser.Close()
	b.done()
	return err
}

func (b *slotBody) done() {
	b.once.Do(func() {
		b.t.releaseSlots(b.h, b.lease)
		b.t.reg.Put(b.h)
	})
}
