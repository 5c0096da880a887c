package proxy

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polite-go/polite"
)

// DefaultMaxWait is how long a request over its host's budget is held
// before it is answered 429 or 503, when Server.MaxWait is zero.
const DefaultMaxWait = 60 * time.Second

// DefaultTunnelCap is how many CONNECT tunnels to one host may be open at
// once, when Server.TunnelCap is zero.
const DefaultTunnelCap = 8

// Server is a forward proxy whose upstream requests go through a polite
// Transport. It is an http.Handler: serve it with an http.Server (Serve
// sets the timeouts a proxy wants). Fields must not change once it serves.
type Server struct {
	// Transport sends every upstream request and paces every tunnel.
	// Required.
	Transport *polite.Transport

	// MaxWait is how long a request over its host's budget is held before
	// it is answered 429 or 503. If zero, DefaultMaxWait; if negative, a
	// request that would wait is answered at once.
	MaxWait time.Duration

	// Auth, when set, is asked for every request's Proxy-Authorization
	// (Basic) account and password; a request without credentials it
	// accepts is answered 407. When nil, only loopback clients are
	// served.
	Auth func(account, password string) bool

	// Dial opens CONNECT tunnels to host:port. If nil, a net.Dialer's.
	// It is where tunnels are kept from addresses they must not reach.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// TunnelCap is how many tunnels to one host (not intercepted) may be
	// open at once; more wait, within MaxWait. If zero, DefaultTunnelCap.
	TunnelCap int

	// Intercept says which CONNECT hosts (a name or an address, no port)
	// the proxy ends TLS for, with certificates CA signs. If nil, none.
	Intercept func(host string) bool
	// CA signs the certificates of intercepted hosts. Required with
	// Intercept.
	CA *CA

	// Logger, when set, receives a record of each request the proxy
	// answers itself (refused, held too long, failed upstream) at Info,
	// and of its own faults at Warn. Query strings are not logged.
	Logger *slog.Logger

	once    sync.Once
	rp      *httputil.ReverseProxy
	tunnels tunnels
	stats   Stats
}

// Stats counts what a Server did, for its owner's summary.
type Stats struct {
	Requests    atomic.Int64 // plain and intercepted requests
	Held        atomic.Int64 // answered 429/503 by the proxy after MaxWait
	Refused     atomic.Int64 // refused by the proxy for another reason
	Tunnels     atomic.Int64 // CONNECT tunnels opened, paced by the connection only
	Intercepted atomic.Int64 // CONNECT tunnels intercepted, their requests counted in Requests
}

// Stats returns the Server's counters.
func (s *Server) Stats() *Stats { return &s.stats }

// via is the proxy's pseudonym in Via and Proxy-Status fields.
const via = "polite"

func (s *Server) init() {
	s.once.Do(func() {
		if s.MaxWait <= 0 {
			s.MaxWait = DefaultMaxWait
		}
		if s.TunnelCap <= 0 {
			s.TunnelCap = DefaultTunnelCap
		}
		s.tunnels.m = map[string]*tunnelHost{}
		s.rp = &httputil.ReverseProxy{
			Rewrite:        rewrite,
			Transport:      roundTripper{s},
			ErrorHandler:   s.upstreamError,
			ModifyResponse: modifyResponse,
			// ReverseProxy flushes what streams (SSE, a body of unknown
			// length) at once by itself; a body of known length goes
			// through the server's buffer, no flush per write.
			FlushInterval: 0,
			ErrorLog:      log.New(io.Discard, "", 0), // its errors reach upstreamError
		}
	})
}

// ServeHTTP serves one proxy request: CONNECT or an absolute-form request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.init()
	var o options
	if !s.admitClient(w, r, &o) {
		return
	}
	if err := o.fromHeader(r.Header); err != nil {
		s.refuse(w, r, http.StatusBadRequest, "http_request_error", err.Error())
		return
	}
	if r.Method == http.MethodConnect {
		// Authority form only (RFC 9110 §9.3.6): net/http would drop a
		// path or user info and tunnel anyway.
		if strings.ContainsAny(r.RequestURI, "/@?#") {
			s.refuse(w, r, http.StatusBadRequest, "http_request_error",
				"polite proxy: CONNECT wants HOST:PORT alone, not "+strconv.Quote(target(r)))
			return
		}
		s.connect(w, r, o)
		return
	}
	if r.ProtoMajor == 1 && r.ProtoMinor == 0 && r.Header.Get("Transfer-Encoding") != "" {
		// HTTP/1.0 has no chunked framing: net/http would ignore it and
		// read the body as the next request.
		w.Header().Set("Connection", "close")
		s.refuse(w, r, http.StatusBadRequest, "http_request_error", "polite proxy: Transfer-Encoding in an HTTP/1.0 request")
		return
	}
	if strings.IndexByte(r.RequestURI, '#') >= 0 {
		s.refuse(w, r, http.StatusBadRequest, "http_request_error", "polite proxy: a request target carries no fragment (#)")
		return
	}
	if !r.URL.IsAbs() || r.URL.Host == "" {
		s.refuse(w, r, http.StatusBadRequest, "http_request_error",
			"polite proxy: a request through a proxy names its whole URL (absolute form, \"GET http://host/path\"); point the client's http_proxy at this address")
		return
	}
	if r.URL.Scheme != "http" && r.URL.Scheme != "https" {
		s.refuse(w, r, http.StatusBadRequest, "http_request_error",
			fmt.Sprintf("polite proxy: scheme %q not supported (want http or https)", r.URL.Scheme))
		return
	}
	if err := checkName(r.URL.Hostname()); err != nil {
		s.refuse(w, r, http.StatusBadRequest, "http_request_error", "polite proxy: target "+strconv.Quote(target(r))+": "+err.Error())
		return
	}
	if _, err := s.Transport.KeyOf(r); err != nil {
		// A host or port no connection can reach (no host, a bad label,
		// port 0, a zoned address): the client's error, not ours.
		s.refuse(w, r, http.StatusBadRequest, "http_request_error", "polite proxy: target "+strconv.Quote(target(r))+": "+strings.TrimPrefix(err.Error(), "polite: "))
		return
	}
	s.forward(w, r, o)
}

// admitClient checks who is asking, reading the proxy user name's options
// into o; it answers and returns false when the client may not use the
// proxy.
func (s *Server) admitClient(w http.ResponseWriter, r *http.Request, o *options) bool {
	user, pass, ok, err := credentials(r.Header)
	if err != nil {
		s.refuse(w, r, http.StatusBadRequest, "http_request_error", err.Error())
		return false
	}
	if ok {
		account, err := o.fromUser(user)
		if err != nil {
			s.refuse(w, r, http.StatusBadRequest, "http_request_error", err.Error())
			return false
		}
		user = account
	}
	if s.Auth != nil {
		if !ok || !s.Auth(user, pass) {
			w.Header().Set("Proxy-Authenticate", `Basic realm="polite proxy"`)
			s.refuse(w, r, http.StatusProxyAuthRequired, "http_request_denied", "polite proxy: proxy credentials wanted (Proxy-Authorization: Basic)")
			return false
		}
		return true
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil || !ap.Addr().Unmap().IsLoopback() {
		s.refuse(w, r, http.StatusForbidden, "http_request_denied", "polite proxy: serves loopback clients only unless it asks for credentials")
		return false
	}
	return true
}

// BasicAuth returns an Auth accepting exactly this account and password,
// compared in constant time.
func BasicAuth(account, password string) func(string, string) bool {
	return func(a, p string) bool {
		ok := subtle.ConstantTimeCompare([]byte(a), []byte(account))
		ok &= subtle.ConstantTimeCompare([]byte(p), []byte(password))
		return ok == 1
	}
}

// optsKey is the context key of a request's options and record.
type optsKey struct{}

// exchange is one request through the proxy: its terms and what became
// of them.
type exchange struct {
	opts   options
	start  time.Time
	waited atomic.Int64 // ns held before the first attempt; -1 until sent
	body   *clientBody  // the request's body when it streams; nil otherwise
}

// forward sends r upstream through the Transport and copies the answer
// back.
func (s *Server) forward(w http.ResponseWriter, r *http.Request, o options) {
	s.stats.Requests.Add(1)
	if loops(r.Header) {
		s.refuse(w, r, http.StatusLoopDetected, "proxy_loop_detected", "polite proxy: the request came through this proxy already (Via)")
		return
	}
	o.maxWait = s.maxWait(o)
	rc := http.NewResponseController(w)
	if err := bufferBody(r, rc); err != nil {
		s.refuse(w, r, http.StatusBadRequest, "http_request_error", "polite proxy: reading the request body: "+err.Error())
		return
	}
	// An answer may start before the request body ends (an upload the
	// origin answers as it reads): neither side waits for the other.
	rc.EnableFullDuplex()
	x := &exchange{opts: o, start: time.Now()}
	x.waited.Store(-1)
	if r.Body != nil && r.Body != http.NoBody && r.GetBody == nil {
		// A body that streams: each read bounded, its failure known.
		x.body = &clientBody{ReadCloser: r.Body, rc: rc}
		r.Body = x.body
	}
	if len(r.TransferEncoding) > 0 {
		// Chunked framing from the client: whatever comes of it, the
		// connection ends with this answer (RFC 9112 §6.1 asks it where
		// a Content-Length came too, which net/http does not show).
		w.Header().Set("Connection", "close")
	}
	ctx := context.WithValue(r.Context(), optsKey{}, x)
	s.rp.ServeHTTP(idleWriter{ResponseWriter: w, rc: rc}, r.WithContext(ctx))
}

// clientBody is a request body that streams from the client: every read
// must come within writeIdle (a stalled upload gives its host's slot
// back), and a read that fails (bad chunked framing, a timeout) is kept,
// to be answered as the client's error with the connection closed.
type clientBody struct {
	io.ReadCloser
	rc  *http.ResponseController
	mu  sync.Mutex
	err error
}

func (b *clientBody) Read(p []byte) (int, error) {
	b.rc.SetReadDeadline(time.Now().Add(writeIdle))
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		b.mu.Lock()
		b.err = err
		b.mu.Unlock()
	}
	return n, err
}

// failed returns the error a read of the body met, if any.
func (b *clientBody) failed() error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// maxBuffered is the largest request body read whole before its request
// waits for its host.
const maxBuffered = 64 << 10

// bodyReadTimeout bounds reading a body that is buffered.
const bodyReadTimeout = 30 * time.Second

// bufferBody reads r's body when its length is known and small (up to
// maxBuffered), before the request waits for its host: net/http sees a
// client hang up only once its body has been read, so a request whose
// client left is then dropped instead of sent; and a body kept can be
// sent again, so a PUT is retried like a GET. A larger body, or one of
// unknown length (chunked: it may be a stream the client writes as it
// reads the answer), streams, and its request is sent even if its client
// leaves while it waits.
func bufferBody(r *http.Request, rc *http.ResponseController) error {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength <= 0 || r.ContentLength > maxBuffered {
		return nil
	}
	rc.SetReadDeadline(time.Now().Add(bodyReadTimeout))
	defer rc.SetReadDeadline(time.Time{})
	b := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(r.Body, b); err != nil {
		return err
	}
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return nil
}

// writeIdle bounds each write of an answer to a client: one that stops
// reading without closing gives its host's slot back then.
const writeIdle = 2 * time.Minute

// idleWriter is a ResponseWriter whose every write must go through within
// writeIdle.
type idleWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
}

func (w idleWriter) Write(p []byte) (int, error) {
	w.rc.SetWriteDeadline(time.Now().Add(writeIdle))
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController (ReverseProxy's flushes) reach the
// server's writer.
func (w idleWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// checkName refuses a host name DNS cannot carry: a label over 63 bytes,
// or a name over 253. Addresses pass.
func checkName(host string) error {
	if _, err := netip.ParseAddr(host); err == nil {
		return nil
	}
	if len(strings.TrimSuffix(host, ".")) > 253 {
		return errors.New("host name longer than 253 bytes")
	}
	for label := range strings.SplitSeq(host, ".") {
		if len(label) > 63 {
			return fmt.Errorf("host name label %.16q… longer than 63 bytes", label)
		}
	}
	return nil
}

// maxWait is how long a request with terms o is held at most: the max
// wait it named, up to the Server's.
func (s *Server) maxWait(o options) time.Duration {
	limit := max(s.MaxWait, 0)
	if o.maxWaitSet {
		return min(o.maxWait, limit)
	}
	return limit
}

// rewrite makes the upstream request: the client's, with the target's
// authority as its Host, without the proxy's own fields (ReverseProxy has
// removed the hop-by-hop ones), and with this proxy in Via.
func rewrite(pr *httputil.ProxyRequest) {
	pr.Out.Host = ""
	stripPolite(pr.Out.Header)
	// Upgrade is hop-by-hop, and this proxy relays no switched protocol
	// (a WebSocket holds its host's slot for good): the request goes on
	// without it, as through any proxy that does not upgrade, and the
	// client gets the origin's answer to a plain request. WebSockets go
	// through a CONNECT tunnel.
	if pr.Out.Header.Get("Upgrade") != "" {
		pr.Out.Header.Del("Upgrade")
		pr.Out.Header.Del("Connection")
	}
	pr.Out.Header.Add("Via", pr.In.Proto[strings.IndexByte(pr.In.Proto, '/')+1:]+" "+via)
}

// modifyResponse marks the answer with this proxy and how long it held
// the request.
func modifyResponse(resp *http.Response) error {
	stripPolite(resp.Header)
	resp.Header.Add("Via", resp.Proto[strings.IndexByte(resp.Proto, '/')+1:]+" "+via)
	if x, ok := resp.Request.Context().Value(optsKey{}).(*exchange); ok {
		if ns := x.waited.Load(); ns >= 0 {
			resp.Header.Set("Polite-Waited-Ms", strconv.FormatInt(ns/1e6, 10))
		}
	}
	return nil
}

// loops reports whether h's Via names this proxy: a request sent to
// itself.
func loops(h http.Header) bool {
	for _, v := range h.Values("Via") {
		for part := range strings.SplitSeq(v, ",") {
			f := strings.Fields(part)
			if len(f) >= 2 && f[1] == via {
				return true
			}
		}
	}
	return false
}

// refuse answers r itself with status, a Proxy-Status field naming the
// RFC 9209 error type and detail, and detail as a plain-text body.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, status int, errType, detail string) {
	s.stats.Refused.Add(1)
	s.answer(w, r, verdict{status: status, errType: errType, detail: detail})
}

// answer writes the proxy's own answer v.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, v verdict) {
	h := w.Header()
	h.Set("Proxy-Status", proxyStatus(v.errType, v.detail, v.received))
	if v.retryAfter > 0 {
		// Retry-After counts whole seconds, at least one; the exact wait
		// goes in Polite-Next-Request-In (milliseconds).
		secs := max(int64((v.retryAfter+time.Second-1)/time.Second), 1)
		h.Set("Retry-After", strconv.FormatInt(secs, 10))
		h.Set("Polite-Next-Request-In", strconv.FormatInt(v.retryAfter.Milliseconds(), 10))
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	if v.status == http.StatusBadRequest || v.status == http.StatusLoopDetected {
		h.Set("Connection", "close")
	}
	w.WriteHeader(v.status)
	fmt.Fprintln(w, v.detail)
	if s.Logger != nil {
		s.Logger.LogAttrs(r.Context(), slog.LevelInfo, "polite proxy: answered",
			slog.Int("status", v.status), slog.String("method", r.Method), slog.String("target", target(r)),
			slog.String("error", v.errType), slog.String("detail", v.detail))
	}
}

// target is r's target for a log: scheme, host and path, no query.
func target(r *http.Request) string {
	if r.Method == http.MethodConnect {
		return r.Host
	}
	u := *r.URL
	u.RawQuery, u.User, u.Fragment = "", nil, ""
	return u.String()
}

// proxyStatus is a Proxy-Status field value (RFC 9209): this proxy, the
// error type, the status the origin last answered (0: none), and the
// detail as a structured-field string.
func proxyStatus(errType, detail string, received int) string {
	var b strings.Builder
	b.WriteString(via)
	b.WriteString("; error=")
	b.WriteString(errType)
	if received > 0 {
		b.WriteString("; received-status=")
		b.WriteString(strconv.Itoa(received))
	}
	if detail != "" {
		b.WriteString(`; details="`)
		for _, c := range []byte(detail) {
			switch {
			case c == '"' || c == '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c < 0x20 || c > 0x7e:
				b.WriteByte('?') // sf-string is printable ASCII only
			default:
				b.WriteByte(c)
			}
		}
		b.WriteByte('"')
	}
	return b.String()
}

// roundTripper sends a proxied request through the Server's Transport,
// holding it at most its max wait before its first attempt.
type roundTripper struct{ s *Server }

func (rt roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	s := rt.s
	x, _ := req.Context().Value(optsKey{}).(*exchange)
	if x == nil {
		x = &exchange{start: time.Now(), opts: options{maxWait: s.maxWait(options{})}}
		x.waited.Store(-1)
	}
	key, err := s.Transport.KeyOf(req)
	if err != nil {
		return nil, err
	}
	// A wait known now to outlast the max wait is not sat through.
	if d, why := s.Transport.Ready(key, time.Now()); why != "" && d > x.opts.maxWait-time.Since(x.start) {
		return nil, &heldError{Host: key, Reason: why, After: d}
	}
	ctx, cancel := context.WithCancelCause(req.Context())
	w := &waiter{x: x, cancel: cancel, deadline: x.start.Add(x.opts.maxWait), key: key}
	ctx = polite.WithObserver(x.opts.context(ctx), w)
	if x.opts.maxWait > 0 {
		w.timer = time.AfterFunc(x.opts.maxWait, w.expire)
	} else {
		w.expired = true // held not at all: stopped at its first wait
	}
	resp, err := s.Transport.RoundTrip(req.WithContext(ctx))
	if w.timer != nil {
		w.timer.Stop()
	}
	if err != nil {
		cancel(nil)
		if h := w.heldErr(); h != nil {
			// What the host's state says now is the best Retry-After:
			// the last wait's end is a poll's, not the token's.
			if d, why := s.Transport.Ready(key, time.Now()); why != "" && why != polite.ReasonBlock {
				h.Reason, h.After = why, d
			}
			return nil, h
		}
		return nil, err
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		// Asked for no upgrade (rewrite takes it out), an origin that
		// switches anyway is not followed: its connection is closed, and
		// with it the host's slot.
		resp.Body.Close()
		cancel(nil)
		return nil, errSwitched
	}
	// The body is read after RoundTrip returns: the context lives until
	// it is closed.
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// waiter follows one request's events to hold it no longer than its max
// wait: past the deadline, a request waiting for its host is cancelled
// and answered by the proxy; one already on the wire is left alone.
type waiter struct {
	x        *exchange
	key      string
	cancel   context.CancelCauseFunc
	deadline time.Time
	timer    *time.Timer

	mu      sync.Mutex
	state   int // waiting, sending or answered
	expired bool
	held    *heldError
	why     polite.Reason // the last wait's reason
	until   time.Time     // and its end
	status  int           // the last attempt's status (0: none, or no answer)
}

// A request's states, as its events tell them: only a waiting one is
// stopped at its deadline. One answered is between its attempt and what
// follows (the store hears the outcome; a retry's wait, or the answer
// going back): its deadline passing then stops it only at its next wait.
const (
	waiting = iota
	sending
	answered
)

var _ polite.Observer = (*waiter)(nil)

// heldError is a request the proxy stopped holding: its host will not
// admit it within the max wait.
type heldError struct {
	Host   string
	Reason polite.Reason
	After  time.Duration // when it may be admitted, as far as is known
	Status int           // the last attempt's status, when one was sent (a retry's wait)
}

func (e *heldError) Error() string {
	return fmt.Sprintf("polite proxy: host %q not ready within the request's max wait (%s; next in %v)", e.Host, e.Reason, e.After.Round(time.Millisecond))
}

// Observe is called synchronously by the Transport for each of the
// request's events.
func (w *waiter) Observe(e polite.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch e.Kind {
	case polite.EventSend:
		w.state = sending
		if e.Attempt == 1 {
			w.x.waited.Store(int64(e.Time.Sub(w.x.start)))
		}
	case polite.EventAttempt:
		w.state, w.status = answered, e.Status
	case polite.EventWait:
		w.state = waiting
		w.why, w.until = e.Reason, e.Time.Add(e.Delay)
		// A wait known to outlast the deadline is not sat through.
		if w.expired || (e.Delay > 0 && w.until.After(w.deadline)) {
			w.stop(e.Time)
		}
	}
}

// expire is the deadline's timer.
func (w *waiter) expire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.expired = true
	if w.state == waiting {
		w.stop(time.Now())
	}
}

// stop cancels the request's wait. Called with mu held, maybe from the
// Transport's own goroutine (Observe): it asks the Transport nothing.
func (w *waiter) stop(now time.Time) {
	if w.held != nil {
		return
	}
	why, after := w.why, w.until.Sub(now)
	if why == "" {
		why = polite.ReasonSlot
	}
	w.held = &heldError{Host: w.key, Reason: why, After: max(after, 0), Status: w.status}
	w.cancel(w.held)
}

func (w *waiter) heldErr() *heldError {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.held
}

// cancelBody ends a request's context when its body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelCauseFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel(nil)
	return err
}
