package testbed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Server puts many hosts behind loopback listeners (or an in-memory Network)
// and routes each request to its host by the hostname in the Host header, or,
// when hosts have their own addresses (StartPerHostIP), by the address the
// connection came in on. Unknown hosts get 404.
//
// It only ever listens on, and its transports only ever dial, loopback
// addresses. A Server is safe for concurrent use.
type Server struct {
	hosts  []*Host
	byName map[string]*Host
	byAddr atomic.Pointer[map[string]*Host] // per-host addresses, set once by StartPerHostIP
	log    atomic.Pointer[AccessLog]

	mu         sync.Mutex // guards the fields below
	started    bool
	srv        *http.Server
	addr       string           // the shared listener's address
	hostAddr   map[*Host]string // each host's own address (StartPerHostIP)
	mem        *Network         // StartInMemory
	transports []*http.Transport
}

// NewServer returns a server for hosts, started (their clocks run from now)
// but not yet listening. It panics if a config is invalid, has no Name, or two
// share a name (compared case-insensitively).
func NewServer(hosts ...HostConfig) *Server {
	s := &Server{byName: make(map[string]*Host, len(hosts))}
	for _, c := range hosts {
		name := strings.ToLower(c.Name)
		if name == "" {
			panic("testbed: NewServer: a host has no Name")
		}
		if _, dup := s.byName[name]; dup {
			panic(fmt.Sprintf("testbed: NewServer: two hosts named %q", name))
		}
		c.Name = name
		h := NewHost(c)
		s.hosts = append(s.hosts, h)
		s.byName[name] = h
	}
	return s
}

// Host returns the host named name, or nil.
func (s *Server) Host(name string) *Host { return s.byName[strings.ToLower(name)] }

// Hosts returns the hosts in the order given to NewServer.
func (s *Server) Hosts() []*Host { return append([]*Host(nil), s.hosts...) }

// ServeHTTP routes r to its host. It works without Start too, for use in
// front of another listener (httptest.NewServer(s)).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if l := s.log.Load(); l != nil {
		serveLogged(l, w, r, s.serve)
		return
	}
	s.serve(w, r)
}

// SetAccessLog makes the server record every request in l from now on; nil
// stops recording.
func (s *Server) SetAccessLog(l *AccessLog) { s.log.Store(l) }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if h := s.route(r); h != nil {
		h.ServeHTTP(w, r)
		return
	}
	writeText(w, http.StatusNotFound, "testbed: no host "+r.Host+"\n")
}

func (s *Server) route(r *http.Request) *Host {
	if h, ok := s.byName[strings.ToLower(hostname(r.Host))]; ok {
		return h
	}
	if m := s.byAddr.Load(); m != nil {
		if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			return (*m)[a.String()]
		}
	}
	return nil
}

// hostname strips the port from a host[:port], keeping IPv6 literals intact.
func hostname(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

var errStarted = errors.New("testbed: server already started")

// Start serves every host on one listener at 127.0.0.1 on a free port. URL
// gives each host's URL, which the server's Client reaches without DNS.
func (s *Server) Start() error { return s.StartAt("127.0.0.1:0") }

// StartAt is Start on a given loopback address, such as "127.0.0.1:8080" or
// "[::1]:0". It refuses any address that is not loopback.
func (s *Server) StartAt(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("testbed: listen %q: %w", addr, err)
	}
	if host != "localhost" {
		if ip, err := netip.ParseAddr(host); err != nil || !ip.IsLoopback() {
			return fmt.Errorf("testbed: listen %q: not a loopback address", addr)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errStarted
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("testbed: %w", err)
	}
	if ip := ln.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() { // "localhost" resolved oddly
		ln.Close()
		return fmt.Errorf("testbed: listen %q: got non-loopback %v", addr, ip)
	}
	s.started = true
	s.beprecise()
	s.addr = ln.Addr().String()
	s.srv = newHTTPServer(s)
	go s.srv.Serve(ln)
	return nil
}

// StartPerHostIP gives each host a listener of its own, at its own loopback
// address (127.0.0.2, 127.0.0.3, … on free ports), so that URL's addresses work
// from any client, another process included, and clients that key hosts by
// IP see distinct hosts. Linux routes all of 127.0.0.0/8 to the loopback
// interface; elsewhere only 127.0.0.1 may exist and this returns an error.
func (s *Server) StartPerHostIP() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errStarted
	}
	var lns []net.Listener
	byAddr := make(map[string]*Host, len(s.hosts))
	hostAddr := make(map[*Host]string, len(s.hosts))
	n := uint32(1)
	for _, h := range s.hosts {
		n++
		for n&0xff == 0 || n&0xff == 0xff {
			n++
		}
		ip := netip.AddrFrom4([4]byte{127, byte(n >> 16), byte(n >> 8), byte(n)})
		ln, err := net.Listen("tcp", netip.AddrPortFrom(ip, 0).String())
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return fmt.Errorf("testbed: per-host loopback address for %q: %w", h.Name(), err)
		}
		lns = append(lns, ln)
		a := ln.Addr().String()
		byAddr[a] = h
		hostAddr[h] = a
	}
	s.started = true
	s.beprecise()
	s.hostAddr = hostAddr
	s.byAddr.Store(&byAddr)
	s.srv = newHTTPServer(s)
	for _, ln := range lns {
		go s.srv.Serve(ln)
	}
	return nil
}

// beprecise has every host end its waits with a kernel sleep (see
// preciseTail): on sockets the server runs in real time, never in a
// synctest bubble, whose fake clock a kernel sleep would not wait for.
func (s *Server) beprecise() {
	for _, h := range s.hosts {
		h.RealTime()
	}
}

// StartInMemory serves the hosts over an in-memory Network instead of
// sockets, for tests inside a testing/synctest bubble (call it, and
// NewServer, inside the bubble). Client and Transport dial that network.
func (s *Server) StartInMemory() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		panic(errStarted)
	}
	s.started = true
	s.mem = &Network{}
	s.mem.Serve(s)
}

func newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: time.Minute}
}

// Addr returns the shared listener's address after Start or StartAt, else "".
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// URL returns the base URL of the host named name, without a trailing slash:
// "http://127.0.0.5:41234" after StartPerHostIP, else "http://" + name, which
// the server's Client and Transport route to it without DNS. It returns "" for
// an unknown name.
func (s *Server) URL(name string) string {
	h := s.Host(name)
	if h == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.hostAddr[h]; ok {
		return "http://" + a
	}
	return "http://" + h.Name()
}

// URLs returns URL for every host, in the order given to NewServer.
func (s *Server) URLs() []string {
	out := make([]string, len(s.hosts))
	for i, h := range s.hosts {
		out[i] = s.URL(h.Name())
	}
	return out
}

// Transport returns a new HTTP transport whose dialer sends every host name
// of the server to its listener (any port), and loopback IP addresses
// through; it refuses every other address. The global resolver is untouched.
// Close closes its idle connections.
func (s *Server) Transport() *http.Transport {
	t := newTransport(s.dial)
	s.mu.Lock()
	s.transports = append(s.transports, t)
	s.mu.Unlock()
	return t
}

// Client returns a new HTTP client using a new Transport.
func (s *Server) Client() *http.Client { return &http.Client{Transport: s.Transport()} }

func (s *Server) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("testbed: dial %q: %w", addr, err)
	}
	h := s.Host(host)
	s.mu.Lock()
	mem, shared, own := s.mem, s.addr, s.hostAddr[h]
	s.mu.Unlock()
	target := addr
	switch ip, err := netip.ParseAddr(host); {
	case h == nil && (err != nil || !ip.IsLoopback()):
		return nil, fmt.Errorf("testbed: dial %q: not a host of this testbed", addr)
	case h == nil, mem != nil:
		// A loopback address, or any address in memory: as is.
	case shared != "":
		target = shared
	case own != "":
		target = own
	default:
		return nil, fmt.Errorf("testbed: dial %q: server not started", addr)
	}
	if mem != nil {
		return mem.DialContext(ctx, "tcp", target)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", target)
}

// Close stops serving, closes every connection and listener, and the idle
// connections of the transports it handed out. Requests still running see
// their context canceled.
func (s *Server) Close() {
	s.mu.Lock()
	srv, mem, ts := s.srv, s.mem, s.transports
	s.transports = nil
	s.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
	if mem != nil {
		mem.Close()
	}
	for _, t := range ts {
		t.CloseIdleConnections()
	}
}
