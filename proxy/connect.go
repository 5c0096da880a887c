package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polite-go/polite"
)

// Tunnel timeouts: a tunnel with no bytes either way for tunnelIdle is
// closed (it holds one of its host's tunnel places); dialing and an
// intercepted client's TLS handshake are bounded too.
const (
	tunnelIdle       = 2 * time.Minute
	dialTimeout      = 30 * time.Second
	handshakeTimeout = 10 * time.Second
)

// connect serves a CONNECT request: a tunnel paced per host, or, for a
// host Intercept names, TLS ended here and each request inside proxied
// with request-level politeness.
func (s *Server) connect(w http.ResponseWriter, r *http.Request, o options) {
	host, port, err := net.SplitHostPort(r.Host)
	if p, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || p < 1 || p > 65535 {
		s.refuse(w, r, http.StatusBadRequest, "http_request_error", "polite proxy: CONNECT wants HOST:PORT, not "+strconv.Quote(r.Host))
		return
	}
	o.maxWait = s.maxWait(o)
	// The authority the tunnel's https URLs have: no port when it is
	// https's own, so a host's tunnels and its https requests share one
	// key.
	authority := r.Host
	if port == "443" {
		authority = host
		if strings.Contains(host, ":") {
			authority = "[" + host + "]"
		}
	}
	if s.Intercept != nil && s.Intercept(host) {
		if s.CA == nil {
			s.refuse(w, r, http.StatusInternalServerError, "proxy_configuration_error", "polite proxy: interception asked for without a CA")
			return
		}
		s.intercept(w, r, host, authority, o)
		return
	}
	s.tunnel(w, r, authority, o)
}

// tunnel opens a CONNECT tunnel once the host's rate has a token and a
// tunnel place is free, within the request's max wait.
func (s *Server) tunnel(w http.ResponseWriter, r *http.Request, authority string, o options) {
	key, err := s.Transport.KeyOf(&http.Request{Method: http.MethodGet, URL: &url.URL{Scheme: "https", Host: authority, Path: "/"}, Host: authority})
	if err != nil {
		s.refuse(w, r, http.StatusBadRequest, "http_request_error", "polite proxy: "+err.Error())
		return
	}
	start := time.Now()
	// A wait known now to outlast the max wait is not sat through.
	if d, why := s.Transport.Ready(key, start); why != "" && why != polite.ReasonBlock && (d > o.maxWait && why != polite.ReasonSlot || o.maxWait == 0) {
		s.stats.Held.Add(1)
		s.answer(w, r, classifyError(&heldError{Host: key, Reason: why, After: d}, start))
		return
	}
	// Held at most the max wait; not at all with none (a place or a
	// token not free now is answered at once).
	ctx, cancel := context.WithTimeout(r.Context(), o.maxWait)
	defer cancel()
	waitCtx := ctx
	if o.maxWait == 0 {
		waitCtx = r.Context() // Ready said the host is ready
	}
	release, err := s.tunnels.acquire(ctx, key, s.TunnelCap)
	if err != nil {
		s.tunnelHeld(w, r, key, err, true)
		return
	}
	defer release()
	if err := s.Transport.Wait(o.context(waitCtx), key); err != nil {
		s.tunnelHeld(w, r, key, err, false)
		return
	}
	waited := time.Since(start)
	dctx, dcancel := context.WithTimeout(r.Context(), dialTimeout)
	up, err := s.dial(dctx, r.Host)
	dcancel()
	if err != nil {
		s.upstreamError(w, r, err)
		return
	}
	defer up.Close()
	client, buf, err := hijack(w, "HTTP/1.1 200 Connection established\r\nPolite-Waited-Ms: "+strconv.FormatInt(waited.Milliseconds(), 10)+"\r\n\r\n")
	if err != nil {
		s.warn(r, "CONNECT: taking over the client's connection", err)
		return
	}
	defer client.Close()
	s.stats.Tunnels.Add(1)
	if n := buf.Reader.Buffered(); n > 0 {
		// Bytes the client sent before the 200 (a TLS ClientHello).
		b, _ := buf.Reader.Peek(n)
		if _, err := up.Write(b); err != nil {
			return
		}
	}
	pipe(client, up)
}

// tunnelHeld answers a CONNECT that waited for its host too long, or was
// refused by its gates.
func (s *Server) tunnelHeld(w http.ResponseWriter, r *http.Request, key string, err error, capped bool) {
	if r.Context().Err() != nil {
		return // the client went away
	}
	if errors.Is(err, context.DeadlineExceeded) {
		s.stats.Held.Add(1)
		if capped {
			s.answer(w, r, verdict{status: http.StatusTooManyRequests, errType: "connection_limit_reached",
				detail: "polite: host " + key + " has its tunnel cap open; none closed within the max wait", retryAfter: time.Second})
			return
		}
		d, why := s.Transport.Ready(key, time.Now())
		if why == "" {
			why = polite.ReasonSlot // freed just now: ask again
		}
		s.answer(w, r, classifyError(&heldError{Host: key, Reason: why, After: d}, time.Now()))
		return
	}
	s.upstreamError(w, r, err)
}

// dial opens a tunnel's upstream connection: through Dial, else a
// dialer that, like the Transport's, reaches only public addresses when
// the Transport is PublicOnly.
func (s *Server) dial(ctx context.Context, addr string) (net.Conn, error) {
	if s.Dial != nil {
		return s.Dial(ctx, "tcp", addr)
	}
	if s.Transport.PublicOnly {
		return polite.PublicDialer(nil).DialContext(ctx, "tcp", addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// hijack takes the client's connection over from the HTTP server and
// writes head on it.
func hijack(w http.ResponseWriter, head string) (net.Conn, *bufio.ReadWriter, error) {
	c, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, nil, err
	}
	c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, head); err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, buf, nil
}

// pipe copies between a and b both ways until both are done, or until
// neither has sent a byte for tunnelIdle.
func pipe(a, b net.Conn) {
	var last atomic.Int64 // unix ns of the last byte either way
	last.Store(time.Now().UnixNano())
	done := make(chan struct{}, 2)
	go func() { copyIdle(b, a, &last); done <- struct{}{} }()
	go func() { copyIdle(a, b, &last); done <- struct{}{} }()
	<-done
	<-done
}

// copyIdle copies src to dst, closing dst's write side at src's end (or
// both when it cannot half-close), and gives up once nothing has passed
// either way for tunnelIdle: a client that only reads a long download
// keeps its tunnel.
func copyIdle(dst, src net.Conn, last *atomic.Int64) {
	buf := make([]byte, 32<<10)
	for {
		src.SetReadDeadline(time.Unix(0, last.Load()).Add(tunnelIdle))
		n, err := src.Read(buf)
		if n > 0 {
			last.Store(time.Now().UnixNano())
			dst.SetWriteDeadline(time.Now().Add(tunnelIdle))
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			if isTimeout(err) && time.Since(time.Unix(0, last.Load())) < tunnelIdle {
				continue // the other way was busy meanwhile
			}
			break
		}
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
		return
	}
	dst.Close()
	src.Close()
}

// tunnels counts each host's open tunnels.
type tunnels struct {
	mu sync.Mutex
	m  map[string]*tunnelHost
}

type tunnelHost struct {
	open int
	wake chan struct{} // closed when a place frees
}

// acquire takes one of key's cap tunnel places, waiting within ctx.
func (t *tunnels) acquire(ctx context.Context, key string, cap int) (release func(), err error) {
	for {
		t.mu.Lock()
		th := t.m[key]
		if th == nil {
			th = &tunnelHost{wake: make(chan struct{})}
			t.m[key] = th
		}
		if th.open < cap {
			th.open++
			t.mu.Unlock()
			var once sync.Once
			return func() { once.Do(func() { t.release(key, th) }) }, nil
		}
		wake := th.wake
		t.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (t *tunnels) release(key string, th *tunnelHost) {
	t.mu.Lock()
	defer t.mu.Unlock()
	th.open--
	close(th.wake)
	th.wake = make(chan struct{})
	if th.open == 0 && t.m[key] == th {
		delete(t.m, key)
	}
}

// intercept answers a CONNECT itself, ends the client's TLS with a
// certificate for host, and serves the requests inside as https
// requests to authority.
func (s *Server) intercept(w http.ResponseWriter, r *http.Request, host, authority string, o options) {
	cert, err := s.CA.leaf(host)
	if err != nil {
		s.warn(r, "minting a certificate for "+host, err)
		s.refuse(w, r, http.StatusInternalServerError, "proxy_internal_error", "polite proxy: could not make a certificate for "+host)
		return
	}
	client, buf, err := hijack(w, "HTTP/1.1 200 Connection established\r\n\r\n")
	if err != nil {
		s.warn(r, "CONNECT: taking over the client's connection", err)
		return
	}
	s.stats.Intercepted.Add(1)
	var c net.Conn = client
	if buf.Reader.Buffered() > 0 {
		c = &prefixConn{Conn: client, r: io.MultiReader(buf.Reader, client)}
	}
	tc := tls.Server(c, &tls.Config{
		Certificates: []tls.Certificate{*cert},
		NextProtos:   []string{"http/1.1"},
		MinVersion:   tls.VersionTLS12,
	})
	tc.SetDeadline(time.Now().Add(handshakeTimeout))
	if err := tc.HandshakeContext(r.Context()); err != nil {
		// A client that does not trust the CA ends here: its own error
		// says so; ours says where.
		s.info(r, "intercepted TLS handshake with the client failed (does it trust polite's CA?)", err)
		tc.Close()
		return
	}
	tc.SetDeadline(time.Time{})
	remote := r.RemoteAddr
	inner := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.init()
			ro := o
			if err := ro.fromHeader(r.Header); err != nil {
				s.refuse(w, r, http.StatusBadRequest, "http_request_error", err.Error())
				return
			}
			if r.Method == http.MethodConnect {
				s.refuse(w, r, http.StatusBadRequest, "http_request_error", "polite proxy: CONNECT inside an intercepted tunnel")
				return
			}
			// The tunnel's target decides where a request goes, never
			// its Host field: an intercepted tunnel reaches only the
			// host it was opened for.
			r.URL.Scheme, r.URL.Host = "https", authority
			r.RemoteAddr = remote
			s.forward(w, r, ro)
		}),
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       tunnelIdle,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	inner.Serve(newOneConn(tc))
}

// prefixConn is a connection whose first bytes were read already.
type prefixConn struct {
	net.Conn
	r io.Reader
}

func (c *prefixConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// oneConn is a net.Listener that accepts one connection, then blocks
// until that connection is closed: an http.Server serves it to its end.
type oneConn struct {
	c    net.Conn
	once sync.Once
	done chan struct{}
	used bool
	mu   sync.Mutex
}

func newOneConn(c net.Conn) *oneConn { return &oneConn{c: c, done: make(chan struct{})} }

func (l *oneConn) Accept() (net.Conn, error) {
	l.mu.Lock()
	used := l.used
	l.used = true
	l.mu.Unlock()
	if !used {
		return &closeNotifyConn{Conn: l.c, l: l}, nil
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConn) Close() error   { l.closed(); return nil }
func (l *oneConn) Addr() net.Addr { return l.c.LocalAddr() }
func (l *oneConn) closed()        { l.once.Do(func() { close(l.done) }) }

type closeNotifyConn struct {
	net.Conn
	l *oneConn
}

func (c *closeNotifyConn) Close() error {
	err := c.Conn.Close()
	c.l.closed()
	return err
}

func (s *Server) warn(r *http.Request, what string, err error) {
	if s.Logger != nil {
		s.Logger.Warn("polite proxy: "+what, "target", target(r), "err", err)
	}
}

func (s *Server) info(r *http.Request, what string, err error) {
	if s.Logger != nil {
		s.Logger.Info("polite proxy: "+what, "target", target(r), "err", err)
	}
}
