package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"
)

// memNet is an in-memory network of net.Pipe connections, so that a
// whole proxy (client, http.Server, tunnels) runs inside a synctest
// bubble, on its fake clock.
type memNet struct {
	mu    sync.Mutex
	lns   map[string]*memListener
	dials []dialed // every dial, in order
}

type dialed struct {
	addr string
	at   time.Time
}

func newMemNet() *memNet { return &memNet{lns: map[string]*memListener{}} }

// listen makes a listener at addr ("host:port").
func (n *memNet) listen(addr string) *memListener {
	n.mu.Lock()
	defer n.mu.Unlock()
	l := &memListener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
	n.lns[addr] = l
	return l
}

// dial connects to the listener at addr.
func (n *memNet) dial(ctx context.Context, _, addr string) (net.Conn, error) {
	n.mu.Lock()
	l := n.lns[addr]
	n.dials = append(n.dials, dialed{addr, time.Now()})
	n.mu.Unlock()
	if l == nil {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	}
	c, s := net.Pipe()
	select {
	case l.conns <- &addrConn{Conn: s, local: l.addr, remote: "127.0.0.1:40000"}:
		return &addrConn{Conn: c, local: "127.0.0.1:40000", remote: addr}, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (n *memNet) dialsTo(addr string) []time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	var ts []time.Time
	for _, d := range n.dials {
		if d.addr == addr {
			ts = append(ts, d.at)
		}
	}
	return ts
}

type memListener struct {
	addr  string
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
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

func (l *memListener) Addr() net.Addr { return memAddr(l.addr) }

type memAddr string

func (a memAddr) Network() string { return "tcp" }
func (a memAddr) String() string  { return string(a) }

// addrConn gives a pipe the addresses a TCP connection has: the server
// reads RemoteAddr to tell a loopback client.
type addrConn struct {
	net.Conn
	local, remote string
}

func (c *addrConn) LocalAddr() net.Addr  { return memAddr(c.local) }
func (c *addrConn) RemoteAddr() net.Addr { return memAddr(c.remote) }

// serve runs h on a listener at addr until the test ends.
func (n *memNet) serve(t *testing.T, addr string, h http.Handler) {
	l := n.listen(addr)
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close(); l.Close() })
}

// client is an HTTP client of the memNet whose requests go through the
// proxy at proxyAddr.
func (n *memNet) client(proxyAddr string) *http.Client {
	pu := &url.URL{Scheme: "http", Host: proxyAddr}
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu), DialContext: n.dial}}
}
