package cli

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
)

// addrCap is a net.Listener that keeps at most max connections open per
// client address (IPv4 grouped by v4 bits, IPv6 by v6: one subscriber
// holds a /64). A connection over the cap is closed as soon as it is
// accepted, before a byte is read, so one address cannot take every file
// descriptor with idle keep-alive connections (issue 29: 1,014 from one
// address exhausted a 1,024-fd limit and other clients got no answer).
// Addresses exempt reports (trusted proxies, which carry many clients)
// are not counted. It is safe for concurrent use.
type addrCap struct {
	net.Listener
	max    int
	v4, v6 int
	exempt func(netip.Addr) bool

	mu   sync.Mutex // guards open
	open map[netip.Prefix]int

	refused atomic.Int64 // connections closed over the cap
}

func newAddrCap(ln net.Listener, max, v4, v6 int, exempt func(netip.Addr) bool) *addrCap {
	return &addrCap{Listener: ln, max: max, v4: v4, v6: v6, exempt: exempt, open: map[netip.Prefix]int{}}
}

// Accept returns the next connection within its address's cap.
func (l *addrCap) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key, ok := l.key(c.RemoteAddr())
		if !ok {
			return c, nil
		}
		l.mu.Lock()
		n := l.open[key]
		if n >= l.max {
			l.mu.Unlock()
			l.refused.Add(1)
			c.Close()
			continue
		}
		l.open[key] = n + 1
		l.mu.Unlock()
		return &cappedConn{Conn: c, l: l, key: key}, nil
	}
}

// key returns the group a's connections count in; false for an address
// not counted.
func (l *addrCap) key(a net.Addr) (netip.Prefix, bool) {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Prefix{}, false
	}
	ip, ok := netip.AddrFromSlice(ta.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ip = ip.Unmap()
	if l.exempt != nil && l.exempt(ip) {
		return netip.Prefix{}, false
	}
	bits := l.v4
	if ip.Is6() {
		bits = l.v6
	}
	p, err := ip.Prefix(bits)
	return p, err == nil
}

func (l *addrCap) release(key netip.Prefix) {
	l.mu.Lock()
	if n := l.open[key] - 1; n > 0 {
		l.open[key] = n
	} else {
		delete(l.open, key)
	}
	l.mu.Unlock()
}

// cappedConn gives its place back when closed.
type cappedConn struct {
	net.Conn
	l      *addrCap
	key    netip.Prefix
	closed atomic.Bool
}

func (c *cappedConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.l.release(c.key)
	}
	return c.Conn.Close()
}

// CloseWrite half-closes the connection as net/http does before it closes
// one whose request it could not read.
func (c *cappedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
