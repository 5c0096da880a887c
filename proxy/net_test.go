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

	"github.com/polite-go/polite/testbed"
)

// memNet routes dials by address to in-memory networks (testbed.Network,
// one listener each), so that a whole proxy (client, http.Server, tunnels,
// origins) runs inside a synctest bubble, on its fake clock.
type memNet struct {
	mu    sync.Mutex
	nets  map[string]*testbed.Network
	dials []dialed // every dial, in order
}

type dialed struct {
	addr string
	at   time.Time
}

func newMemNet() *memNet { return &memNet{nets: map[string]*testbed.Network{}} }

// listen returns the listener at addr ("host:port"); Close of the test's
// network (serve's cleanup, or the caller's) ends it.
func (n *memNet) listen(t *testing.T, addr string) net.Listener {
	n.mu.Lock()
	nw := n.nets[addr]
	if nw == nil {
		nw = &testbed.Network{}
		n.nets[addr] = nw
		t.Cleanup(func() { nw.Close() })
	}
	n.mu.Unlock()
	return nw.Listen()
}

// dial connects to the listener at addr, or is refused.
func (n *memNet) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	n.mu.Lock()
	nw := n.nets[addr]
	n.dials = append(n.dials, dialed{addr, time.Now()})
	n.mu.Unlock()
	if nw == nil {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	}
	return nw.DialContext(ctx, network, addr)
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

// serve runs h at addr until the test ends.
func (n *memNet) serve(t *testing.T, addr string, h http.Handler) {
	l := n.listen(t, addr)
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
}

// client is an HTTP client of the memNet whose requests go through the
// proxy at proxyAddr.
func (n *memNet) client(proxyAddr string) *http.Client {
	pu := &url.URL{Scheme: "http", Host: proxyAddr}
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu), DialContext: n.dial}}
}
