package proxy

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/bucket"
)

const proxyAddr = "127.0.0.1:8899"

// setup serves a proxy over tr on n at proxyAddr; tr's Base dials n.
func setup(t *testing.T, n *memNet, tr *polite.Transport, mod func(*Server)) *Server {
	base := &http.Transport{DialContext: n.dial}
	if tr.Base == nil {
		tr.Base = base
	}
	s := &Server{Transport: tr, Dial: n.dial}
	if mod != nil {
		mod(s)
	}
	n.serve(t, proxyAddr, s)
	t.Cleanup(base.CloseIdleConnections)
	return s
}

// fast is a Transport that limits nothing unless told.
func fast(l polite.Limits) *polite.Transport {
	if l.Rate == 0 {
		l.Rate = bucket.Inf
	}
	return &polite.Transport{IgnoreRobots: true, Limits: l}
}

// get sends a GET for u through the proxy with extra header fields.
func get(t *testing.T, c *http.Client, u string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A plain request goes upstream with the target's authority as its Host,
// this proxy in Via, and neither the proxy's own fields nor hop-by-hop
// ones; the answer comes back with Via and Polite-Waited-Ms.
func TestForward(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		got := make(chan *http.Request, 1)
		n.serve(t, "origin.test:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got <- r
			w.Header().Set("X-Origin", "yes")
			fmt.Fprint(w, "hello "+r.URL.RequestURI())
		}))
		setup(t, n, fast(polite.Limits{}), nil)
		c := n.client(proxyAddr)
		defer c.CloseIdleConnections()
		req, _ := http.NewRequest(http.MethodGet, "http://origin.test/a?b=c", nil)
		req.Header.Set("Polite-Priority", "bulk")
		req.Header.Set("Polite-Cost", "2")
		req.Header.Set("Connection", "X-Hop")
		req.Header.Set("X-Hop", "1")
		req.Header.Set("X-Keep", "1")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if b := body(t, resp); resp.StatusCode != 200 || b != "hello /a?b=c" {
			t.Fatalf("got %d %q", resp.StatusCode, b)
		}
		if resp.Header.Get("X-Origin") != "yes" || !strings.Contains(resp.Header.Get("Via"), "polite") || resp.Header.Get("Polite-Waited-Ms") != "0" {
			t.Errorf("answer's header %v: want the origin's fields, Via polite and Polite-Waited-Ms 0", resp.Header)
		}
		up := <-got
		if up.Host != "origin.test" {
			t.Errorf("upstream Host %q, want origin.test", up.Host)
		}
		if up.Header.Get("Via") != "1.1 polite" {
			t.Errorf("upstream Via %q", up.Header.Get("Via"))
		}
		for _, k := range []string{"Polite-Priority", "Polite-Cost", "X-Hop", "Proxy-Connection", "Proxy-Authorization"} {
			if v := up.Header.Get(k); v != "" {
				t.Errorf("upstream got %s: %q", k, v)
			}
		}
		if up.Header.Get("X-Keep") != "1" {
			t.Errorf("upstream lost X-Keep")
		}
	})
}

// A request over its host's rate is held while its wait fits the max
// wait, and answered 429 with Retry-After and Proxy-Status when it does
// not, at once when its wait is known to be longer.
func TestHeldThen429(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		var hits atomic.Int32
		n.serve(t, "origin.test:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
		}))
		setup(t, n, fast(polite.Limits{Rate: 1, Burst: 1, Concurrency: 4}), nil)
		c := n.client(proxyAddr)
		defer c.CloseIdleConnections()
		start := time.Now()
		body(t, get(t, c, "http://origin.test/1"))
		// The next token is 1 s away: a 2 s max wait holds the request.
		r := get(t, c, "http://origin.test/2", "Polite-Max-Wait", "2s")
		body(t, r)
		if r.StatusCode != 200 || time.Since(start) != time.Second || r.Header.Get("Polite-Waited-Ms") != "1000" {
			t.Fatalf("held request: %d after %v, Polite-Waited-Ms %q; want 200 after 1s, 1000", r.StatusCode, time.Since(start), r.Header.Get("Polite-Waited-Ms"))
		}
		// 500 ms is not enough for the next token (1 s away): answered
		// at once.
		at := time.Now()
		r = get(t, c, "http://origin.test/3", "Polite-Max-Wait", "500ms")
		body(t, r)
		if r.StatusCode != http.StatusTooManyRequests || time.Since(at) != 0 {
			t.Fatalf("got %d after %v, want 429 at once", r.StatusCode, time.Since(at))
		}
		if r.Header.Get("Retry-After") != "1" || r.Header.Get("Polite-Next-Request-In") != "1000" {
			t.Errorf("Retry-After %q, Polite-Next-Request-In %q: want 1 and 1000", r.Header.Get("Retry-After"), r.Header.Get("Polite-Next-Request-In"))
		}
		if ps := r.Header.Get("Proxy-Status"); !strings.HasPrefix(ps, "polite; error=http_request_denied; details=") || !strings.Contains(ps, "(rate)") {
			t.Errorf("Proxy-Status %q", ps)
		}
		if hits.Load() != 2 {
			t.Errorf("origin saw %d requests, want 2", hits.Load())
		}
	})
}

// Requests queued behind one another for a host's slot are held until
// the max wait, then answered 429; none reaches the origin beyond its cap.
func TestHeldForSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		release := make(chan struct{})
		n.serve(t, "origin.test:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-release
		}))
		s := setup(t, n, fast(polite.Limits{Concurrency: 1}), func(s *Server) { s.MaxWait = 3 * time.Second })
		c := n.client(proxyAddr)
		defer c.CloseIdleConnections()
		first := make(chan *http.Response)
		go func() { first <- get(t, c, "http://origin.test/slow") }()
		synctest.Wait()
		at := time.Now()
		r := get(t, c, "http://origin.test/2")
		body(t, r)
		if r.StatusCode != http.StatusTooManyRequests || time.Since(at) != 3*time.Second {
			t.Errorf("got %d after %v, want 429 after the max wait (3s)", r.StatusCode, time.Since(at))
		}
		if !strings.Contains(r.Header.Get("Proxy-Status"), "(concurrency)") {
			t.Errorf("Proxy-Status %q: want the reason, concurrency", r.Header.Get("Proxy-Status"))
		}
		close(release)
		body(t, <-first)
		if s.Stats().Held.Load() != 1 {
			t.Errorf("Stats.Held %d, want 1", s.Stats().Held.Load())
		}
	})
}

// An origin's 429 with a long Retry-After pauses the host: requests whose
// max wait is shorter are answered 503 at once, with the pause's end; the
// origin's own answer is passed through when polite does not retry.
func TestPausedHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		var hits atomic.Int32
		n.serve(t, "origin.test:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if hits.Add(1) == 1 {
				w.Header().Set("Retry-After", "30")
				w.Header().Set("X-Origin", "throttled")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
		}))
		setup(t, n, fast(polite.Limits{}), func(s *Server) { s.MaxWait = 10 * time.Second })
		c := n.client(proxyAddr)
		defer c.CloseIdleConnections()
		r := get(t, c, "http://origin.test/1", "Polite-No-Retry", "1")
		body(t, r)
		if r.StatusCode != http.StatusTooManyRequests || r.Header.Get("X-Origin") != "throttled" || r.Header.Get("Retry-After") != "30" {
			t.Fatalf("origin's 429 not passed through: %d %v", r.StatusCode, r.Header)
		}
		at := time.Now()
		r = get(t, c, "http://origin.test/2")
		body(t, r)
		if r.StatusCode != http.StatusServiceUnavailable || time.Since(at) != 0 {
			t.Fatalf("got %d after %v, want 503 at once", r.StatusCode, time.Since(at))
		}
		if ra, _ := strconv.Atoi(r.Header.Get("Retry-After")); ra != 30 {
			t.Errorf("Retry-After %q, want 30", r.Header.Get("Retry-After"))
		}
		if hits.Load() != 1 {
			t.Errorf("origin saw %d requests, want 1", hits.Load())
		}
		// Once the pause is over the host is asked again.
		time.Sleep(30 * time.Second)
		r = get(t, c, "http://origin.test/3")
		body(t, r)
		if r.StatusCode != 200 {
			t.Errorf("after the pause: %d", r.StatusCode)
		}
	})
}

// Retries happen inside the proxy: a 503 then a 200 reaches the client as
// the 200.
func TestRetriesInside(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		var hits atomic.Int32
		n.serve(t, "origin.test:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if hits.Add(1) == 1 {
				w.Header().Set("Retry-After", "2")
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			fmt.Fprint(w, "ok")
		}))
		setup(t, n, fast(polite.Limits{}), nil)
		c := n.client(proxyAddr)
		defer c.CloseIdleConnections()
		at := time.Now()
		r := get(t, c, "http://origin.test/1")
		if b := body(t, r); r.StatusCode != 200 || b != "ok" || time.Since(at) != 2*time.Second {
			t.Fatalf("got %d %q after %v, want 200 ok after the Retry-After (2s)", r.StatusCode, b, time.Since(at))
		}
	})
}

// A client that goes away while its request waits gives its place back:
// the next request is admitted when it would have been without it.
func TestClientGoneGivesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		var hits atomic.Int32
		n.serve(t, "origin.test:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
		}))
		setup(t, n, fast(polite.Limits{Rate: 1, Burst: 1}), nil)
		c := n.client(proxyAddr)
		defer c.CloseIdleConnections()
		start := time.Now()
		body(t, get(t, c, "http://origin.test/1"))
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://origin.test/gone", nil)
		done := make(chan error)
		go func() {
			_, err := c.Do(req)
			done <- err
		}()
		time.Sleep(300 * time.Millisecond)
		cancel()
		if err := <-done; err == nil {
			t.Fatal("the cancelled request got an answer")
		}
		synctest.Wait()
		r := get(t, c, "http://origin.test/3")
		body(t, r)
		if r.StatusCode != 200 || time.Since(start) != time.Second {
			t.Errorf("got %d at %v, want 200 at 1s (the token the gone client waited for)", r.StatusCode, time.Since(start))
		}
		if hits.Load() != 2 {
			t.Errorf("origin saw %d requests, want 2 (never the gone one)", hits.Load())
		}
	})
}

// Bodies stream both ways: the client reads the first part of an answer
// before the origin has written the rest, and the origin reads the first
// part of a request body before the client has sent the rest.
func TestStreaming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		more := make(chan struct{})
		n.serve(t, "origin.test:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.NewResponseController(w).EnableFullDuplex()
			br := bufio.NewReader(r.Body)
			line, _ := br.ReadString('\n')
			fmt.Fprint(w, "got "+line)
			http.NewResponseController(w).Flush()
			<-more
			rest, _ := io.ReadAll(br)
			fmt.Fprint(w, "then "+string(rest))
		}))
		setup(t, n, fast(polite.Limits{}), nil)
		c := n.client(proxyAddr)
		defer c.CloseIdleConnections()
		pr, pw := io.Pipe()
		req, _ := http.NewRequest(http.MethodPut, "http://origin.test/up", pr)
		go fmt.Fprint(pw, "one\n")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(resp.Body)
		if line, err := br.ReadString('\n'); err != nil || line != "got one\n" {
			t.Fatalf("first part %q, %v", line, err)
		}
		close(more)
		fmt.Fprint(pw, "two")
		pw.Close()
		rest, _ := io.ReadAll(br)
		resp.Body.Close()
		if string(rest) != "then two" {
			t.Errorf("rest %q", rest)
		}
	})
}

// Only loopback clients are served without Auth; with it, credentials are
// wanted, and the user name may carry options.
func TestWhoMayUse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := fast(polite.Limits{})
		tr.Base = roundTripFunc(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}, Request: r, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}, nil
		})
		s := &Server{Transport: tr}
		do := func(remote, auth string) *http.Response {
			req, _ := http.NewRequest(http.MethodGet, "http://origin.test/", nil)
			req.RemoteAddr = remote
			if auth != "" {
				req.Header.Set("Proxy-Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(auth)))
			}
			w := newRecorder()
			s.ServeHTTP(w, req)
			return w.result()
		}
		if r := do("192.0.2.7:5000", ""); r.StatusCode != http.StatusForbidden {
			t.Errorf("non-loopback client without Auth: %d, want 403", r.StatusCode)
		}
		if r := do("[::1]:5000", ""); r.StatusCode != 200 {
			t.Errorf("::1 client: %d, want 200", r.StatusCode)
		}
		if r := do("127.0.0.1:5000", "priority=sometimes:x"); r.StatusCode != http.StatusBadRequest {
			t.Errorf("bad user name option: %d, want 400", r.StatusCode)
		}
		s = &Server{Transport: tr, Auth: BasicAuth("alice", "s3cret")}
		if r := do("192.0.2.7:5000", ""); r.StatusCode != http.StatusProxyAuthRequired || r.Header.Get("Proxy-Authenticate") == "" {
			t.Errorf("no credentials: %d %v, want 407 with Proxy-Authenticate", r.StatusCode, r.Header)
		}
		if r := do("192.0.2.7:5000", "alice:wrong"); r.StatusCode != http.StatusProxyAuthRequired {
			t.Errorf("wrong password: %d, want 407", r.StatusCode)
		}
		if r := do("192.0.2.7:5000", "alice,priority=bulk,max-wait=5s:s3cret"); r.StatusCode != 200 {
			t.Errorf("right credentials with options: %d, want 200", r.StatusCode)
		}
	})
}

// Requests the proxy cannot serve get a 4xx that says why.
func TestBadRequests(t *testing.T) {
	tr := fast(polite.Limits{Rate: 10, Burst: 2})
	tr.Base = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
	})
	s := &Server{Transport: tr}
	for _, c := range []struct {
		name, target string
		hdr          []string
		status       int
		says         string
	}{
		{"origin form", "/index.html", nil, 400, "absolute form"},
		{"ftp", "ftp://origin.test/x", nil, 400, "scheme \"ftp\""},
		{"bad cost", "http://origin.test/", []string{"Polite-Cost", "lots"}, 400, "Polite-Cost \"lots\""},
		{"cost over burst", "http://origin.test/", []string{"Polite-Cost", "3"}, 400, "exceeds the host's burst"},
		{"unknown option", "http://origin.test/", []string{"Polite-Colour", "red"}, 400, "unknown option \"colour\""},
		{"bad max wait", "http://origin.test/", []string{"Polite-Max-Wait", "soon"}, 400, "Polite-Max-Wait"},
		{"loop", "http://origin.test/", []string{"Via", "1.1 other, 1.1 polite"}, 508, "through this proxy already"},
		{"bad auth", "http://origin.test/", []string{"Proxy-Authorization", "Bearer x"}, 400, "scheme \"Bearer\""},
	} {
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader("GET " + c.target + " HTTP/1.1\r\nHost: origin.test\r\n\r\n")))
		if err != nil {
			t.Fatal(c.name, err)
		}
		req.RemoteAddr = "127.0.0.1:1"
		for i := 0; i+1 < len(c.hdr); i += 2 {
			req.Header.Set(c.hdr[i], c.hdr[i+1])
		}
		w := newRecorder()
		s.ServeHTTP(w, req)
		r := w.result()
		if r.StatusCode != c.status || !strings.Contains(w.body.String(), c.says) || r.Header.Get("Proxy-Status") == "" {
			t.Errorf("%s: %d %q (Proxy-Status %q), want %d saying %q", c.name, r.StatusCode, w.body.String(), r.Header.Get("Proxy-Status"), c.status, c.says)
		}
	}
}

// Upstream failures map to RFC 9209 error types.
func TestUpstreamErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		setup(t, n, fast(polite.Limits{}), nil)
		c := n.client(proxyAddr)
		defer c.CloseIdleConnections()
		r := get(t, c, "http://nowhere.test/", "Polite-No-Retry", "1")
		body(t, r)
		if r.StatusCode != http.StatusBadGateway || !strings.Contains(r.Header.Get("Proxy-Status"), "error=") {
			t.Errorf("refused connection: %d %q", r.StatusCode, r.Header.Get("Proxy-Status"))
		}
	})
}

func TestProxyStatusEscapes(t *testing.T) {
	got := proxyStatus("http_request_denied", "a \"quoted\" \\ thing\nwith é", 503)
	want := `polite; error=http_request_denied; received-status=503; details="a \"quoted\" \\ thing?with ??"`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// recorder is a ResponseWriter in memory (httptest's needs no socket
// either, but this one lets a test read status and header as sent).
type recorder struct {
	mu     sync.Mutex
	h      http.Header
	status int
	body   strings.Builder
}

func newRecorder() *recorder { return &recorder{h: http.Header{}} }

func (r *recorder) Header() http.Header { return r.h }
func (r *recorder) WriteHeader(s int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status == 0 {
		r.status = s
	}
}
func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(200)
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.body.Write(p)
}
func (r *recorder) result() *http.Response {
	return &http.Response{StatusCode: r.status, Header: r.h}
}

// An origin that switches protocols is not followed: the client gets 502
// http_protocol_error, and the host's slot comes back (a kept 101 body
// held it for good). The Upgrade a client asks for is not passed on.
func TestUpgradeNotRelayed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		var upgrades atomic.Int32
		n.serve(t, "origin.test:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Upgrade") != "" {
				upgrades.Add(1)
			}
			if r.URL.Path == "/switch" {
				w.Header().Set("Connection", "Upgrade")
				w.Header().Set("Upgrade", "websocket")
				w.WriteHeader(http.StatusSwitchingProtocols)
				return
			}
			fmt.Fprint(w, "plain")
		}))
		setup(t, n, fast(polite.Limits{Concurrency: 1}), func(s *Server) { s.MaxWait = time.Second })
		c := n.client(proxyAddr)
		defer c.CloseIdleConnections()
		r := get(t, c, "http://origin.test/switch", "Polite-No-Retry", "1")
		body(t, r)
		if r.StatusCode != http.StatusBadGateway || !strings.Contains(r.Header.Get("Proxy-Status"), "http_protocol_error") {
			t.Errorf("an unasked 101: %d %q, want 502 http_protocol_error", r.StatusCode, r.Header.Get("Proxy-Status"))
		}
		r = get(t, c, "http://origin.test/ws", "Connection", "Upgrade", "Upgrade", "websocket")
		if b := body(t, r); r.StatusCode != 200 || b != "plain" {
			t.Errorf("after the 101, with the host's one slot: %d %q, want 200 plain", r.StatusCode, b)
		}
		if upgrades.Load() != 0 {
			t.Errorf("the origin was asked to upgrade %d times", upgrades.Load())
		}
	})
}

// The max wait's deadline passing after the origin answered (while the
// Transport still hears the outcome) does not cut the answer off.
func TestDeadlineAfterAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		n.serve(t, "origin.test:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(200 * time.Millisecond)
			fmt.Fprint(w, "late but whole")
		}))
		tr := fast(polite.Limits{})
		// Something slow between the attempt's answer and the end of
		// RoundTrip (a fleet store's report, say).
		tr.Observer = polite.ObserverFunc(func(e polite.Event) {
			if e.Kind == polite.EventDone {
				time.Sleep(150 * time.Millisecond)
			}
		})
		setup(t, n, tr, func(s *Server) { s.MaxWait = 300 * time.Millisecond })
		c := n.client(proxyAddr)
		defer c.CloseIdleConnections()
		r := get(t, c, "http://origin.test/")
		if b := body(t, r); r.StatusCode != 200 || b != "late but whole" {
			t.Errorf("got %d %q, want the whole answer", r.StatusCode, b)
		}
	})
}

// An origin's 503 whose Retry-After outlasts the max wait is answered
// 503 at once, saying what the origin answered (received-status), never
// as the proxy's own rate limit.
func TestHeldAfterAnAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		n.serve(t, "origin.test:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "5")
			w.WriteHeader(http.StatusServiceUnavailable)
		}))
		setup(t, n, fast(polite.Limits{}), func(s *Server) { s.MaxWait = 2 * time.Second })
		c := n.client(proxyAddr)
		defer c.CloseIdleConnections()
		at := time.Now()
		r := get(t, c, "http://origin.test/")
		body(t, r)
		ps := r.Header.Get("Proxy-Status")
		if r.StatusCode != http.StatusServiceUnavailable || time.Since(at) != 0 || !strings.Contains(ps, "received-status=503") || r.Header.Get("Retry-After") != "5" {
			t.Errorf("got %d after %v (%q, Retry-After %q), want 503 at once with received-status=503, Retry-After 5", r.StatusCode, time.Since(at), ps, r.Header.Get("Retry-After"))
		}
	})
}

// A request whose client left while it waited is not sent, body or not:
// a small body is read before the wait, so the hang-up is seen.
func TestClientGoneWithBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		var mu sync.Mutex
		var seen []string
		n.serve(t, "origin.test:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			seen = append(seen, r.Method+" "+r.URL.Path+" "+string(b))
			mu.Unlock()
		}))
		setup(t, n, fast(polite.Limits{Rate: 1, Burst: 1}), nil)
		c := n.client(proxyAddr)
		defer c.CloseIdleConnections()
		body(t, get(t, c, "http://origin.test/first"))
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://origin.test/gone", strings.NewReader("hello"))
		done := make(chan error)
		go func() {
			_, err := c.Do(req)
			done <- err
		}()
		time.Sleep(300 * time.Millisecond)
		cancel()
		<-done
		time.Sleep(2 * time.Second)
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != 1 {
			t.Errorf("origin saw %q, want only the first request", seen)
		}
	})
}

// A buffered body can be sent again: a PUT is retried like a GET.
func TestBufferedBodyRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		var hits atomic.Int32
		n.serve(t, "origin.test:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			if hits.Add(1) == 1 {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintf(w, "stored %s", b)
		}))
		setup(t, n, fast(polite.Limits{}), nil)
		c := n.client(proxyAddr)
		defer c.CloseIdleConnections()
		req, _ := http.NewRequest(http.MethodPut, "http://origin.test/doc", strings.NewReader("the body"))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if b := body(t, resp); resp.StatusCode != 200 || b != "stored the body" || hits.Load() != 2 {
			t.Errorf("got %d %q after %d attempts, want the retry's 200 with the body", resp.StatusCode, b, hits.Load())
		}
	})
}

// Polite-Max-Wait: 0 holds nothing: a request its host cannot take now is
// answered at once, one it can is sent. The proxy's own answer fields,
// echoed back by a client, are no options.
func TestMaxWaitZero(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		n.serve(t, "origin.test:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		setup(t, n, fast(polite.Limits{Rate: 1, Burst: 1}), nil)
		c := n.client(proxyAddr)
		defer c.CloseIdleConnections()
		r := get(t, c, "http://origin.test/1", "Polite-Max-Wait", "0", "Polite-Waited-Ms", "12")
		body(t, r)
		if r.StatusCode != 200 {
			t.Errorf("a ready host with max wait 0: %d, want 200", r.StatusCode)
		}
		at := time.Now()
		r = get(t, c, "http://origin.test/2", "Polite-Max-Wait", "0")
		body(t, r)
		if r.StatusCode != http.StatusTooManyRequests || time.Since(at) != 0 {
			t.Errorf("a host out of tokens with max wait 0: %d after %v, want 429 at once", r.StatusCode, time.Since(at))
		}
	})
}

// A client that stops reading an answer without closing gives its host's
// slot back once a write has waited writeIdle.
func TestStalledReaderGivesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		big := strings.Repeat("x", 4<<20)
		n.serve(t, "origin.test:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// A known length: a streamed body's flushes take a lock in
			// ReverseProxy that stops synctest's clock while a write is
			// stuck.
			w.Header().Set("Content-Length", strconv.Itoa(len(big)))
			fmt.Fprint(w, big)
		}))
		setup(t, n, fast(polite.Limits{Concurrency: 1}), func(s *Server) { s.MaxWait = 2 * writeIdle })
		stalled := n.client(proxyAddr)
		defer stalled.CloseIdleConnections()
		r := get(t, stalled, "http://origin.test/big")
		io.ReadFull(r.Body, make([]byte, 1024)) // then reads no more
		c := n.client(proxyAddr)
		defer c.CloseIdleConnections()
		at := time.Now()
		r2 := get(t, c, "http://origin.test/next")
		body(t, r2)
		if r2.StatusCode != 200 || time.Since(at) > writeIdle+time.Second {
			t.Errorf("next request: %d after %v, want 200 once the stalled write gave up (%v)", r2.StatusCode, time.Since(at), writeIdle)
		}
		r.Body.Close()
	})
}
