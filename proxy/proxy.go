package proxy

import (
	"context"
	"crypto/subtle"
	"fmt"
	"io"
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
	// it is answered 429 or 503. If zero, DefaultMaxWait.
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
			// A proxy must not sit on what streams (SSE, chunked):
			// ReverseProxy flushes those at once; the rest each write.
			FlushInterval: -1,
			ErrorLog:      nil,
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
		s.connect(w, r, o)
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
	held   *heldError   // set when the proxy gave up waiting
}

// forward sends r upstream through the Transport and copies the answer
// back.
func (s *Server) forward(w http.ResponseWriter, r *http.Request, o options) {
	s.stats.Requests.Add(1)
	if loops(r.Header) {
		s.refuse(w, r, http.StatusLoopDetected, "proxy_loop_detected", "polite proxy: the request came through this proxy already (Via)")
		return
	}
	if o.maxWait <= 0 || o.maxWait > s.MaxWait {
		o.maxWait = s.MaxWait
	}
	// An answer may start before the request body ends (an upload the
	// origin answers as it reads): neither side waits for the other.
	http.NewResponseController(w).EnableFullDuplex()
	x := &exchange{opts: o, start: time.Now()}
	x.waited.Store(-1)
	ctx := context.WithValue(r.Context(), optsKey{}, x)
	s.rp.ServeHTTP(w, r.WithContext(ctx))
}

// rewrite makes the upstream request: the client's, with the target's
// authority as its Host, without the proxy's own fields (ReverseProxy has
// removed the hop-by-hop ones), and with this proxy in Via.
func rewrite(pr *httputil.ProxyRequest) {
	pr.Out.Host = ""
	stripPolite(pr.Out.Header)
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
	s.answer(w, r, status, errType, detail, 0)
}

// answer writes the proxy's own answer; retryAfter > 0 (when the host
// may be asked again) adds Retry-After.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, status int, errType, detail string, retryAfter time.Duration) {
	h := w.Header()
	h.Set("Proxy-Status", proxyStatus(errType, detail))
	if retryAfter > 0 {
		// Retry-After counts whole seconds, at least one; the exact wait
		// goes in Polite-Next-Request-In (milliseconds).
		secs := max(int64((retryAfter+time.Second-1)/time.Second), 1)
		h.Set("Retry-After", strconv.FormatInt(secs, 10))
		h.Set("Polite-Next-Request-In", strconv.FormatInt(retryAfter.Milliseconds(), 10))
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	if status == http.StatusBadRequest || status == http.StatusLoopDetected {
		h.Set("Connection", "close")
	}
	w.WriteHeader(status)
	fmt.Fprintln(w, detail)
	if s.Logger != nil {
		s.Logger.LogAttrs(r.Context(), slog.LevelInfo, "polite proxy: answered",
			slog.Int("status", status), slog.String("method", r.Method), slog.String("target", target(r)),
			slog.String("error", errType), slog.String("detail", detail))
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
// error type, and the detail as a structured-field string.
func proxyStatus(errType, detail string) string {
	var b strings.Builder
	b.WriteString(via)
	b.WriteString("; error=")
	b.WriteString(errType)
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
		x = &exchange{start: time.Now(), opts: options{maxWait: s.MaxWait}}
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
	w.timer = time.AfterFunc(x.opts.maxWait, w.expire)
	resp, err := s.Transport.RoundTrip(req.WithContext(ctx))
	w.timer.Stop()
	if err != nil {
		cancel(nil)
		if h := w.heldErr(); h != nil {
			// What the host's state says now is the best Retry-After:
			// the last wait's end is a poll's, not the token's.
			if d, why := s.Transport.Ready(key, time.Now()); why != "" && why != polite.ReasonBlock {
				h.Reason, h.After = why, d
			}
			x.held = h
			return nil, h
		}
		return nil, err
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
	sending bool
	expired bool
	held    *heldError
	why     polite.Reason // the last wait's reason
	until   time.Time     // and its end
}

var _ polite.Observer = (*waiter)(nil)

// heldError is a request the proxy stopped holding: its host will not
// admit it within the max wait.
type heldError struct {
	Host   string
	Reason polite.Reason
	After  time.Duration // when it may be admitted, as far as is known
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
		w.sending = true
		if e.Attempt == 1 {
			w.x.waited.Store(int64(e.Time.Sub(w.x.start)))
		}
	case polite.EventAttempt:
		w.sending = false
	case polite.EventWait:
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
	if !w.sending {
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
	w.held = &heldError{Host: w.key, Reason: why, After: max(after, 0)}
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
