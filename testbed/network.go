package testbed

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"time"
)

// Network is an in-memory network with one listener: every dial, whatever its
// address, connects to it. Its connections block only on channels and timers,
// so goroutines waiting on them are durably blocked in the testing/synctest
// sense and fake time can advance; a real socket never is. Create a Network
// inside the bubble that uses it. The zero value is ready to use; a Network is
// safe for concurrent use.
//
// Connections behave like TCP over loopback: buffered (64 KiB each way, then
// writes block), full duplex, with read and write deadlines, EOF after the
// peer closes.
type Network struct {
	mu         sync.Mutex // guards the fields below
	ln         *memListener
	srv        *http.Server
	transports []*http.Transport
	conns      map[*memConn]struct{}
	port       uint16
}

// Listen returns the network's listener, creating it on first use (or after
// it was closed). Every DialContext connects to it.
func (n *Network) Listen() net.Listener {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.listenLocked()
}

func (n *Network) listenLocked() *memListener {
	if n.ln == nil || n.ln.isClosed() {
		n.ln = &memListener{
			conns: make(chan net.Conn),
			done:  make(chan struct{}),
			addr:  netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 80),
		}
	}
	return n.ln
}

// errRefused is what a dial gets when nothing listens.
var errRefused = errors.New("connection refused")

// DialContext connects to the network's listener, whatever network and addr
// say. It has the signature of http.Transport.DialContext.
func (n *Network) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	n.mu.Lock()
	ln := n.ln
	n.port++
	if n.port < 10000 {
		n.port = 10000
	}
	local := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), n.port)
	n.mu.Unlock()
	opErr := func(err error) error {
		return &net.OpError{Op: "dial", Net: "tcp", Addr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 80)), Err: err}
	}
	if ln == nil {
		return nil, opErr(errRefused)
	}
	client, server := memPipe(local, ln.addr)
	// Both ends are complete and registered before the server end is handed
	// over: a Close, of the Network or by the server, may come at once.
	forget := func(c *memConn) {
		n.mu.Lock()
		delete(n.conns, c)
		n.mu.Unlock()
	}
	client.onClose, server.onClose = forget, forget
	n.mu.Lock()
	if n.conns == nil {
		n.conns = make(map[*memConn]struct{})
	}
	n.conns[client] = struct{}{}
	n.conns[server] = struct{}{}
	n.mu.Unlock()
	var err error
	select {
	case ln.conns <- server:
		return client, nil
	case <-ln.done:
		err = errRefused
	case <-ctx.Done():
		err = ctx.Err()
	}
	client.Close()
	server.Close()
	return nil, opErr(err)
}

// Serve serves h on the network's listener in a new goroutine until Close.
// It panics if the network already serves.
func (n *Network) Serve(h http.Handler) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.srv != nil {
		panic("testbed: Network.Serve called twice")
	}
	ln := n.listenLocked()
	n.srv = &http.Server{Handler: h}
	go n.srv.Serve(ln)
}

// Transport returns a new HTTP transport that dials the network. Close closes
// its idle connections.
func (n *Network) Transport() *http.Transport {
	t := newTransport(n.DialContext)
	n.mu.Lock()
	n.transports = append(n.transports, t)
	n.mu.Unlock()
	return t
}

// Client returns a new HTTP client using a new Transport.
func (n *Network) Client() *http.Client { return &http.Client{Transport: n.Transport()} }

// Close stops serving, closes the listener and every connection, and closes the
// idle connections of the transports it handed out, so that no goroutine of
// the network is left blocked: a synctest bubble can end. Requests still
// running see their context canceled. Close returns nil.
func (n *Network) Close() error {
	n.mu.Lock()
	srv, ln, ts := n.srv, n.ln, n.transports
	n.srv, n.transports = nil, nil
	conns := make([]*memConn, 0, len(n.conns))
	for c := range n.conns {
		conns = append(conns, c)
	}
	n.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
	if ln != nil {
		ln.Close()
	}
	for _, c := range conns {
		c.Close()
	}
	for _, t := range ts {
		t.CloseIdleConnections()
	}
	return nil
}

// newTransport returns the transport the testbed hands out: no proxy (a proxy
// from the environment would receive the made-up hostnames), no HTTP/2, and
// enough idle connections per host that a busy host keeps its connections.
func newTransport(dial func(context.Context, string, string) (net.Conn, error)) *http.Transport {
	return &http.Transport{
		DialContext:         dial,
		MaxIdleConnsPerHost: 256,
		DisableCompression:  true,
	}
}

// memListener is the listening end of a Network.
type memListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	addr  netip.AddrPort
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *memListener) isClosed() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

func (l *memListener) Addr() net.Addr { return net.TCPAddrFromAddrPort(l.addr) }

// pipeSize is how many bytes a direction buffers before writes block.
const pipeSize = 64 << 10

// memPipe returns the two ends of a connection between a and b.
func memPipe(a, b netip.AddrPort) (*memConn, *memConn) {
	ab, ba := newPipe(), newPipe()
	ca := &memConn{r: ba, w: ab, local: net.TCPAddrFromAddrPort(a), remote: net.TCPAddrFromAddrPort(b)}
	cb := &memConn{r: ab, w: ba, local: net.TCPAddrFromAddrPort(b), remote: net.TCPAddrFromAddrPort(a)}
	return ca, cb
}

// memConn is one end of an in-memory connection: it reads from r and writes to w.
type memConn struct {
	r, w          *pipe
	local, remote net.Addr
	once          sync.Once
	onClose       func(*memConn)
}

func (c *memConn) Read(b []byte) (int, error)  { return c.r.read(b) }
func (c *memConn) Write(b []byte) (int, error) { return c.w.write(b) }
func (c *memConn) LocalAddr() net.Addr         { return c.local }
func (c *memConn) RemoteAddr() net.Addr        { return c.remote }

// Close closes both directions: the peer reads EOF after the buffered data,
// and its writes fail.
func (c *memConn) Close() error {
	err := net.ErrClosed
	c.once.Do(func() {
		err = nil
		c.r.closeRead()
		c.w.closeWrite()
		if c.onClose != nil {
			c.onClose(c)
		}
	})
	return err
}

// CloseWrite shuts down the writing side, as net.TCPConn does.
func (c *memConn) CloseWrite() error {
	c.w.closeWrite()
	return nil
}

func (c *memConn) SetDeadline(t time.Time) error {
	c.r.rdl.set(t)
	c.w.wdl.set(t)
	return nil
}

func (c *memConn) SetReadDeadline(t time.Time) error  { c.r.rdl.set(t); return nil }
func (c *memConn) SetWriteDeadline(t time.Time) error { c.w.wdl.set(t); return nil }

// pipe is one direction of a connection: a bounded buffer with channels to
// wait on, so that waiting is durable blocking under synctest.
type pipe struct {
	mu       sync.Mutex // guards buf, rclosed, wclosed
	buf      []byte
	rclosed  bool // the reading end closed: writes fail
	wclosed  bool // the writing end closed: reads drain, then EOF
	readable chan struct{}
	writable chan struct{}
	rdl, wdl deadline
}

func newPipe() *pipe {
	return &pipe{readable: make(chan struct{}, 1), writable: make(chan struct{}, 1)}
}

// signal wakes a waiter on c, if any; a pending wake-up is enough.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (p *pipe) read(b []byte) (int, error) {
	for {
		if p.rdl.expired() {
			return 0, os.ErrDeadlineExceeded
		}
		p.mu.Lock()
		switch {
		case p.rclosed:
			p.mu.Unlock()
			return 0, net.ErrClosed
		case len(p.buf) > 0:
			n := copy(b, p.buf)
			p.buf = p.buf[n:]
			if len(p.buf) == 0 {
				p.buf = nil // drop the backing array
			} else {
				signal(p.readable)
			}
			p.mu.Unlock()
			signal(p.writable)
			return n, nil
		case p.wclosed:
			p.mu.Unlock()
			return 0, io.EOF
		}
		p.mu.Unlock()
		if len(b) == 0 {
			return 0, nil
		}
		select {
		case <-p.readable:
		case <-p.rdl.done():
		}
	}
}

func (p *pipe) write(b []byte) (int, error) {
	n := 0
	for {
		if p.wdl.expired() {
			return n, os.ErrDeadlineExceeded
		}
		p.mu.Lock()
		switch {
		case p.wclosed:
			p.mu.Unlock()
			return n, net.ErrClosed
		case p.rclosed:
			p.mu.Unlock()
			return n, io.ErrClosedPipe
		}
		if k := min(pipeSize-len(p.buf), len(b)); k > 0 {
			p.buf = append(p.buf, b[:k]...)
			b = b[k:]
			n += k
			p.mu.Unlock()
			signal(p.readable)
			if len(b) == 0 {
				return n, nil
			}
			continue
		}
		p.mu.Unlock()
		if len(b) == 0 {
			return n, nil
		}
		select {
		case <-p.writable:
		case <-p.wdl.done():
		}
	}
}

func (p *pipe) closeRead() {
	p.mu.Lock()
	p.rclosed = true
	p.buf = nil
	p.mu.Unlock()
	signal(p.readable)
	signal(p.writable)
}

func (p *pipe) closeWrite() {
	p.mu.Lock()
	p.wclosed = true
	p.mu.Unlock()
	signal(p.readable)
	signal(p.writable)
}

// deadline turns a settable deadline into a channel closed when it passes,
// with a timer rather than polling.
type deadline struct {
	mu    sync.Mutex // guards the fields below
	ch    chan struct{}
	timer *time.Timer
	gen   uint64 // set calls so far: which timer counts
	past  bool   // ch is closed
}

// done returns a channel closed once the deadline has passed.
func (d *deadline) done() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ch == nil {
		d.ch = make(chan struct{})
	}
	return d.ch
}

func (d *deadline) expired() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.past
}

func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	if d.past || d.ch == nil {
		d.ch, d.past = make(chan struct{}), false
	}
	if t.IsZero() {
		return
	}
	wait := time.Until(t)
	if wait <= 0 {
		close(d.ch)
		d.past = true
		return
	}
	// A timer stopped too late may already be waiting for mu: the
	// generation tells its callback it no longer counts.
	d.gen++
	ch, gen := d.ch, d.gen
	d.timer = time.AfterFunc(wait, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.gen == gen && d.ch == ch && !d.past {
			close(ch)
			d.past = true
		}
	})
}
