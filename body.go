package polite

import (
	"bytes"
	"io"
	"net/http"
	"sync"
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

// peekBody reads up to MaxPeek bytes of b and returns them with a body that
// replays them ahead of the rest.
func peekBody(b io.ReadCloser) ([]byte, io.ReadCloser) {
	pooled := peekPool.Get().(*[MaxPeek]byte)
	n, err := io.ReadFull(b, pooled[:])
	buf := bytes.Clone(pooled[:n]) // only what was read outlives the call
	peekPool.Put(pooled)
	pb := &peekedBody{head: bytes.NewReader(buf), rest: b}
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		pb.err = err
	}
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		pb.eof = true
	}
	return buf, pb
}

var peekPool = sync.Pool{New: func() any { return new([MaxPeek]byte) }}

type peekedBody struct {
	head *bytes.Reader
	rest io.ReadCloser
	err  error // from the peek, returned after head
	eof  bool  // rest was exhausted by the peek
}

func (p *peekedBody) Read(b []byte) (int, error) {
	if p.head.Len() > 0 {
		return p.head.Read(b)
	}
	if p.err != nil {
		return 0, p.err
	}
	if p.eof {
		return 0, io.EOF
	}
	return p.rest.Read(b)
}

func (p *peekedBody) Close() error { return p.rest.Close() }

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
