package proxy

// Hostile input and abuse: what reaches the origin, and what the client
// gets, when the client (or the origin) does not play by the rules. Tests
// that pin a defect not yet fixed are skipped with "defect: ..." and say
// what is wanted instead.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/polite-go/polite"
)

// originLog records what an origin's http.Server made of each request it
// read: method, request target, Host, the framing and the body.
type originLog struct {
	mu   sync.Mutex
	reqs []seenReq
}

type seenReq struct {
	method, target, host string
	header               http.Header
	te                   []string
	cl                   int64
	body                 string
	bodyErr              error
}

func (l *originLog) all() []seenReq {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]seenReq(nil), l.reqs...)
}

func (l *originLog) targets() []string {
	var ts []string
	for _, r := range l.all() {
		ts = append(ts, r.method+" "+r.target)
	}
	return ts
}

// recordingOrigin serves at addr on n, recording each request and
// answering "ok TARGET".
func recordingOrigin(t *testing.T, n *memNet, addr string) *originLog {
	l := &originLog{}
	n.serve(t, addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		l.mu.Lock()
		l.reqs = append(l.reqs, seenReq{method: r.Method, target: r.RequestURI, host: r.Host, header: r.Header.Clone(),
			te: r.TransferEncoding, cl: r.ContentLength, body: string(b), bodyErr: err})
		l.mu.Unlock()
		fmt.Fprint(w, "ok "+r.RequestURI)
	}))
	return l
}

// rawResp is one answer read off a raw connection.
type rawResp struct {
	at      time.Time // when its header was read
	status  int
	header  http.Header
	body    string
	bodyErr error
}

// rawExchange writes raw on a new connection to the proxy on n and reads
// every answer until the proxy closes the connection (closed) or sends
// nothing for 10 s.
func rawExchange(t *testing.T, n *memNet, raw string) (resps []rawResp, closed bool) {
	t.Helper()
	c, err := n.dial(t.Context(), "tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go io.WriteString(c, raw)
	br := bufio.NewReader(c)
	for {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		at := time.Now()
		if err != nil {
			var ne net.Error
			return resps, !(errors.As(err, &ne) && ne.Timeout())
		}
		b, berr := io.ReadAll(resp.Body)
		resp.Body.Close()
		resps = append(resps, rawResp{at: at, status: resp.StatusCode, header: resp.Header, body: string(b), bodyErr: berr})
		if berr != nil {
			return resps, true
		}
	}
}

func statuses(rs []rawResp) []int {
	var s []int
	for _, r := range rs {
		s = append(s, r.status)
	}
	return s
}

// Malformed request lines and targets are answered by the proxy (or by
// net/http under it) with a 4xx and never reach the origin.
func TestHostileRequestLines(t *testing.T) {
	for _, c := range []struct {
		name, raw string
		status    int
		says      string // in Proxy-Status, when the proxy itself answers
	}{
		{"garbage", "hello there\r\n\r\n", 400, ""},
		{"HTTP/0.9", "GET /\r\n\r\n", 400, ""},
		{"HTTP/0.9 absolute", "GET http://origin.test/x\r\n\r\n", 400, ""},
		{"origin form", "GET /x HTTP/1.1\r\nHost: origin.test\r\n\r\n", 400, "absolute form"},
		{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400, "absolute form"},
		{"space in target", "GET http://origin.test/a b HTTP/1.1\r\nHost: origin.test\r\n\r\n", 400, ""},
		{"control byte in target", "GET http://origin.test/a\x01b HTTP/1.1\r\nHost: origin.test\r\n\r\n", 400, ""},
		{"method not a token", "FOO(BAR) http://origin.test/ HTTP/1.1\r\nHost: origin.test\r\n\r\n", 400, ""},
		{"websocket scheme", "GET ws://origin.test/ HTTP/1.1\r\nHost: origin.test\r\n\r\n", 400, "scheme \\\"ws\\\""},
		{"ftp scheme", "GET ftp://origin.test/ HTTP/1.1\r\nHost: origin.test\r\n\r\n", 400, "scheme \\\"ftp\\\""},
		{"port not a number", "GET http://origin.test:abc/ HTTP/1.1\r\nHost: origin.test\r\n\r\n", 400, ""},
		{"IPv6 without brackets", "GET http://::1/x HTTP/1.1\r\nHost: x\r\n\r\n", 400, ""},
		{"two Host fields", "GET http://origin.test/ HTTP/1.1\r\nHost: origin.test\r\nHost: other.test\r\n\r\n", 400, ""},
		{"encoded CRLF in host", "GET http://origin.test%0d%0aX:1/ HTTP/1.1\r\nHost: x\r\n\r\n", 400, ""},
		{"header name with space", "GET http://origin.test/ HTTP/1.1\r\nHost: origin.test\r\nX A: 1\r\n\r\n", 400, ""},
		{"NUL in a field", "GET http://origin.test/ HTTP/1.1\r\nHost: origin.test\r\nX-A: a\x00b\r\n\r\n", 400, ""},
		{"bare CR in a field", "GET http://origin.test/ HTTP/1.1\r\nHost: origin.test\r\nX-A: 1\rX-B: 2\r\n\r\n", 400, ""},
		{"CONNECT absolute form", "CONNECT http://origin.test/ HTTP/1.1\r\nHost: origin.test\r\n\r\n", 400, "HOST:PORT"},
		{"CONNECT no port", "CONNECT origin.test HTTP/1.1\r\nHost: origin.test\r\n\r\n", 400, "HOST:PORT"},
		{"CONNECT port 0", "CONNECT origin.test:0 HTTP/1.1\r\nHost: origin.test\r\n\r\n", 400, "HOST:PORT"},
		{"CONNECT port too big", "CONNECT origin.test:65536 HTTP/1.1\r\nHost: origin.test\r\n\r\n", 400, "HOST:PORT"},
		{"CONNECT empty host", "CONNECT :443 HTTP/1.1\r\nHost: x\r\n\r\n", 400, "HOST:PORT"},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := newMemNet()
				ol := recordingOrigin(t, n, "origin.test:80")
				echo(t, n, "origin.test:443")
				setup(t, n, fast(polite.Limits{}), nil)
				rs, closed := rawExchange(t, n, c.raw)
				if len(rs) != 1 || rs[0].status != c.status || !closed {
					t.Fatalf("answers %v (closed %v), want one %d then the connection closed", statuses(rs), closed, c.status)
				}
				if ps := rs[0].header.Get("Proxy-Status"); c.says != "" && !strings.Contains(ps, c.says) {
					t.Errorf("Proxy-Status %q, want it to say %q", ps, c.says)
				}
				if got := ol.targets(); len(got) != 0 {
					t.Errorf("origin saw %q, want nothing", got)
				}
				if d := n.dialsTo("origin.test:443"); len(d) != 0 {
					t.Errorf("%d tunnels dialed, want none", len(d))
				}
			})
		})
	}
}

// What the origin sees of odd but valid targets: the URL's authority wins
// over the Host field; URL credentials are never turned into an
// Authorization field (only the client's own goes upstream); obs-fold and
// bare LF lines are normalised; an encoded CRLF stays encoded.
func TestHostileTargetsUpstream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		ol := recordingOrigin(t, n, "origin.test:80")
		setup(t, n, fast(polite.Limits{}), nil)
		rs, _ := rawExchange(t, n, ""+
			"GET http://user:pass@origin.test/creds HTTP/1.1\r\nHost: origin.test\r\n\r\n"+
			"GET http://user:pass@origin.test/own HTTP/1.1\r\nHost: origin.test\r\nAuthorization: Basic Y2xpZW50OnNlY3JldA==\r\n\r\n"+
			"GET http://origin.test/host HTTP/1.1\r\nHost: evil.test\r\n\r\n"+
			"GET http://origin.test/fold HTTP/1.1\r\nHost: origin.test\r\nX-A: one\r\n Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\nabcd"+
			"GET http://origin.test/lf HTTP/1.1\nHost: origin.test\nX-B: 1\n\n"+
			"GET http://origin.test/a%0d%0aX-Inj:%201 HTTP/1.1\r\nHost: origin.test\r\n\r\n")
		if len(rs) != 6 {
			t.Fatalf("answers %v, want 6", statuses(rs))
		}
		for i, r := range rs {
			if r.status != 200 {
				t.Errorf("answer %d: %d %q", i, r.status, r.body)
			}
		}
		got := ol.all()
		if len(got) != 6 {
			t.Fatalf("origin saw %q, want 6 requests", ol.targets())
		}
		if a := got[0].header.Get("Authorization"); a != "" {
			t.Errorf("URL credentials sent upstream as Authorization %q", a)
		}
		if a := got[1].header.Get("Authorization"); a != "Basic Y2xpZW50OnNlY3JldA==" {
			t.Errorf("the client's own Authorization upstream as %q", a)
		}
		if got[2].host != "origin.test" {
			t.Errorf("Host upstream %q, want the URL's authority origin.test", got[2].host)
		}
		if f := got[3]; f.header.Get("X-A") != "one Transfer-Encoding: chunked" || f.te != nil || f.cl != 4 || f.body != "abcd" {
			t.Errorf("obs-fold: X-A %q, TE %q, CL %d, body %q: want the fold joined, Content-Length framing", f.header.Get("X-A"), f.te, f.cl, f.body)
		}
		if got[4].header.Get("X-B") != "1" {
			t.Errorf("bare LF request: X-B %q", got[4].header.Get("X-B"))
		}
		if got[5].target != "/a%0d%0aX-Inj:%201" || got[5].header.Get("X-Inj") != "" {
			t.Errorf("encoded CRLF: target %q, X-Inj %q", got[5].target, got[5].header.Get("X-Inj"))
		}
	})
}

// Request smuggling shapes: the origin sees each request with the framing
// the proxy read it with, and never a request the proxy did not read as
// one; framing the proxy cannot trust is refused and the connection
// closed, and nothing after it is served.
func TestHostileFraming(t *testing.T) {
	for _, c := range []struct {
		name, raw string
		status    []int
		closed    bool
		origin    []string // method and target of what the origin saw
		body      string   // of the origin's first request
	}{
		{"duplicate Content-Length differing",
			"POST http://origin.test/a HTTP/1.1\r\nHost: origin.test\r\nContent-Length: 4\r\nContent-Length: 40\r\n\r\nabcdGET http://origin.test/b HTTP/1.1\r\nHost: origin.test\r\n\r\n",
			[]int{400}, true, nil, ""},
		{"Content-Length list",
			"POST http://origin.test/a HTTP/1.1\r\nHost: origin.test\r\nContent-Length: 4, 4\r\n\r\nabcd",
			[]int{400}, true, nil, ""},
		{"Content-Length signed",
			"POST http://origin.test/a HTTP/1.1\r\nHost: origin.test\r\nContent-Length: +4\r\n\r\nabcd",
			[]int{400}, true, nil, ""},
		{"Content-Length negative",
			"POST http://origin.test/a HTTP/1.1\r\nHost: origin.test\r\nContent-Length: -1\r\n\r\nabcd",
			[]int{400}, true, nil, ""},
		{"Content-Length overflowing",
			"POST http://origin.test/a HTTP/1.1\r\nHost: origin.test\r\nContent-Length: 99999999999999999999999\r\n\r\nabcd",
			[]int{400}, true, nil, ""},
		{"Transfer-Encoding chunked, identity",
			"POST http://origin.test/a HTTP/1.1\r\nHost: origin.test\r\nTransfer-Encoding: chunked, identity\r\n\r\n4\r\nabcd\r\n0\r\n\r\n",
			[]int{501}, true, nil, ""},
		{"Transfer-Encoding twice",
			"POST http://origin.test/a HTTP/1.1\r\nHost: origin.test\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n0\r\n\r\n",
			[]int{501}, true, nil, ""},
		{"Transfer-Encoding gzip, chunked",
			"POST http://origin.test/a HTTP/1.1\r\nHost: origin.test\r\nTransfer-Encoding: gzip, chunked\r\n\r\n4\r\nabcd\r\n0\r\n\r\n",
			[]int{501}, true, nil, ""},
		{"Transfer-Encoding with space before colon",
			"POST http://origin.test/a HTTP/1.1\r\nHost: origin.test\r\nTransfer-Encoding : chunked\r\n\r\n4\r\nabcd\r\n0\r\n\r\n",
			[]int{400}, true, nil, ""},
		{"Transfer-Encoding and Content-Length: chunked wins, CL not forwarded",
			"POST http://origin.test/a HTTP/1.1\r\nHost: origin.test\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
			[]int{200}, true, []string{"POST /a"}, "hello"}, // closed: RFC 9112 §6.1
		{"chunk extension and trailer fields",
			"POST http://origin.test/a HTTP/1.1\r\nHost: origin.test\r\nTransfer-Encoding: chunked\r\n\r\n4;x=y\r\nabcd\r\n0\r\nContent-Length: 50\r\n\r\n",
			[]int{200}, true, []string{"POST /a"}, "abcd"}, // closed: every chunked request ends its connection
		{"request in a GET's body stays body",
			"GET http://origin.test/a HTTP/1.1\r\nHost: origin.test\r\nContent-Length: 41\r\n\r\nGET http://origin.test/inner HTTP/1.1\r\n\r\n",
			[]int{200}, false, []string{"GET /a"}, "GET http://origin.test/inner HTTP/1.1\r\n\r\n"},
		{"pipelined after an origin-form request",
			"GET http://origin.test/a HTTP/1.1\r\nHost: origin.test\r\n\r\nGET /b HTTP/1.1\r\nHost: origin.test\r\n\r\nGET http://origin.test/c HTTP/1.1\r\nHost: origin.test\r\n\r\n",
			[]int{200, 400}, true, []string{"GET /a"}, ""},
		{"pipelined after a bad option",
			"GET http://origin.test/a HTTP/1.1\r\nHost: origin.test\r\nPolite-Cost: lots\r\n\r\nGET http://origin.test/b HTTP/1.1\r\nHost: origin.test\r\n\r\n",
			[]int{400}, true, nil, ""},
		{"pipelined after a loop",
			"GET http://origin.test/a HTTP/1.1\r\nHost: origin.test\r\nVia: 1.1 polite\r\n\r\nGET http://origin.test/b HTTP/1.1\r\nHost: origin.test\r\n\r\n",
			[]int{508}, true, nil, ""},
		{"hop-by-hop Connection naming framing and Host",
			"POST http://origin.test/a HTTP/1.1\r\nHost: origin.test\r\nConnection: Content-Length, Host, Transfer-Encoding\r\nContent-Length: 4\r\n\r\nabcd",
			[]int{200}, false, []string{"POST /a"}, "abcd"},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := newMemNet()
				ol := recordingOrigin(t, n, "origin.test:80")
				setup(t, n, fast(polite.Limits{}), nil)
				rs, closed := rawExchange(t, n, c.raw)
				if fmt.Sprint(statuses(rs)) != fmt.Sprint(c.status) || closed != c.closed {
					t.Errorf("answers %v (closed %v), want %v (closed %v)", statuses(rs), closed, c.status, c.closed)
				}
				got := ol.all()
				if fmt.Sprint(ol.targets()) != fmt.Sprint(c.origin) {
					t.Fatalf("origin saw %q, want %q", ol.targets(), c.origin)
				}
				if len(got) > 0 {
					if got[0].body != c.body || got[0].bodyErr != nil {
						t.Errorf("origin's body %q (%v), want %q", got[0].body, got[0].bodyErr, c.body)
					}
					if cl := got[0].header.Get("Content-Length"); got[0].te != nil && cl != "" {
						t.Errorf("origin got Transfer-Encoding %q with Content-Length %q", got[0].te, cl)
					}
				}
			})
		})
	}
}

// A chunked body the proxy cannot parse must end the client's connection:
// what follows the bad chunk is body, never another request.
func TestHostileBadChunkNotSpliced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		ol := recordingOrigin(t, n, "origin.test:80")
		setup(t, n, fast(polite.Limits{}), nil)
		rs, closed := rawExchange(t, n, "POST http://origin.test/a HTTP/1.1\r\nHost: origin.test\r\nTransfer-Encoding: chunked\r\n\r\n"+
			"zz\r\nGET http://origin.test/SPLICED HTTP/1.1\r\nHost: origin.test\r\n\r\n")
		for _, r := range ol.all() {
			if r.target == "/SPLICED" {
				t.Errorf("origin saw the body as a request: %q", ol.targets())
			}
		}
		if len(rs) != 1 || rs[0].status != http.StatusBadRequest || !closed {
			t.Errorf("answers %v (closed %v), want one 400 and the connection closed", statuses(rs), closed)
		}
		if len(rs) > 0 && !strings.Contains(rs[0].header.Get("Proxy-Status"), "http_request_error") {
			t.Errorf("Proxy-Status %q, want http_request_error (the client's framing)", rs[0].header.Get("Proxy-Status"))
		}
	})
}

// What stays true of a malformed chunked body today: the origin never
// gets the bytes after the bad chunk as its request's body, and the
// client gets an error answer for it.
func TestHostileBadChunkAnswered(t *testing.T) {
	for _, chunk := range []string{"zz\r\nabcd\r\n0\r\n\r\n", "-4\r\nabcd\r\n0\r\n\r\n", "ffffffffffffffffff\r\nabcd\r\n0\r\n\r\n", "4\nabcd\n0\n\n"} {
		synctest.Test(t, func(t *testing.T) {
			n := newMemNet()
			ol := recordingOrigin(t, n, "origin.test:80")
			setup(t, n, fast(polite.Limits{}), nil)
			rs, _ := rawExchange(t, n, "POST http://origin.test/a HTTP/1.1\r\nHost: origin.test\r\nTransfer-Encoding: chunked\r\n\r\n"+chunk)
			if len(rs) == 0 || rs[0].status < 400 {
				t.Errorf("chunk %q: answers %v, want an error first", chunk, statuses(rs))
			}
			for _, r := range ol.all() {
				if r.bodyErr == nil && r.body != "" {
					t.Errorf("chunk %q: origin read a whole body %q", chunk, r.body)
				}
			}
		})
	}
}

// RFC 9112 §6.1: a server that reads a request with both Transfer-Encoding
// and Content-Length MUST close the connection after answering it.
func TestHostileTEAndCLCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		ol := recordingOrigin(t, n, "origin.test:80")
		setup(t, n, fast(polite.Limits{}), nil)
		rs, closed := rawExchange(t, n, "POST http://origin.test/a HTTP/1.1\r\nHost: origin.test\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"+
			"GET http://origin.test/smuggled HTTP/1.1\r\nHost: origin.test\r\n\r\n")
		if len(rs) != 1 || !closed {
			t.Errorf("answers %v (closed %v), want one, then the connection closed", statuses(rs), closed)
		}
		if got := ol.targets(); len(got) != 1 {
			t.Errorf("origin saw %q, want only POST /a", got)
		}
	})
}

// logBuf is a concurrency-safe buffer for a server's ErrorLog.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A request with a body the proxy answers itself, without reading the
// body (its origin refused, its host held it past the max wait), leaves
// the connection good for the next request.
func TestHostileUnreadBodyKeepsConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		ol := recordingOrigin(t, n, "origin.test:80")
		tr := fast(polite.Limits{})
		tr.Base = &http.Transport{DialContext: n.dial}
		s := &Server{Transport: tr, Dial: n.dial}
		var errLog logBuf
		l := n.listen(t, proxyAddr)
		srv := &http.Server{Handler: s, ErrorLog: log.New(&errLog, "", 0)}
		go srv.Serve(l)
		defer func() { srv.Close(); l.Close() }()
		rs, _ := rawExchange(t, n, "POST http://nowhere.test/a HTTP/1.1\r\nHost: nowhere.test\r\nPolite-No-Retry: 1\r\nContent-Length: 5\r\n\r\nhello"+
			"GET http://origin.test/next HTTP/1.1\r\nHost: origin.test\r\n\r\n")
		if fmt.Sprint(statuses(rs)) != "[502 200]" {
			t.Errorf("answers %v, want [502 200]: the refused POST, then the next request", statuses(rs))
		}
		if got := ol.targets(); fmt.Sprint(got) != "[GET /next]" {
			t.Errorf("origin saw %q", got)
		}
		if strings.Contains(errLog.String(), "panic") {
			t.Errorf("the server panicked:\n%s", errLog.String())
		}
	})
}

// An origin answering 101 (a WebSocket upgrade through a plain request)
// must not keep its host's slot: the next request to the host is served.
func TestHostileUpgradeFreesSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		n.serve(t, "origin.test:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/ws" {
				fmt.Fprint(w, "ok")
				return
			}
			c, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
			time.Sleep(time.Second)
			c.Close()
		}))
		setup(t, n, fast(polite.Limits{Concurrency: 1}), func(s *Server) { s.MaxWait = 5 * time.Second })
		c := n.client(proxyAddr)
		defer c.CloseIdleConnections()
		r := get(t, c, "http://origin.test/ws", "Connection", "Upgrade", "Upgrade", "websocket")
		body(t, r)
		if r.StatusCode != http.StatusSwitchingProtocols {
			t.Logf("upgrade answered %d %q", r.StatusCode, r.Header.Get("Proxy-Status"))
		}
		time.Sleep(2 * time.Second) // the origin has hung up
		r = get(t, c, "http://origin.test/after")
		if b := body(t, r); r.StatusCode != 200 {
			t.Errorf("next request: %d %q, want 200: the upgrade kept the host's only slot", r.StatusCode, b)
		}
	})
}

// The origin's 101 that the client did not ask for is refused (502), and
// refusing it does not keep the host's slot.
func TestHostileUnaskedUpgradeFreesSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		n.serve(t, "origin.test:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/ws" {
				fmt.Fprint(w, "ok")
				return
			}
			c, _, _ := http.NewResponseController(w).Hijack()
			io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
			time.Sleep(time.Second)
			c.Close()
		}))
		setup(t, n, fast(polite.Limits{Concurrency: 1}), func(s *Server) { s.MaxWait = 5 * time.Second })
		c := n.client(proxyAddr)
		defer c.CloseIdleConnections()
		r := get(t, c, "http://origin.test/ws")
		body(t, r)
		if r.StatusCode != http.StatusBadGateway {
			t.Errorf("unasked 101: %d, want 502", r.StatusCode)
		}
		time.Sleep(2 * time.Second)
		r = get(t, c, "http://origin.test/after")
		if b := body(t, r); r.StatusCode != 200 {
			t.Errorf("next request: %d %q, want 200", r.StatusCode, b)
		}
	})
}

// Targets whose host or port can never be reached are the client's error:
// 400 at once, not 502 proxy_internal_error, nor dialed and retried.
func TestHostileBadTargetIs400(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		setup(t, n, fast(polite.Limits{}), nil)
		for _, target := range []string{
			"http://origin.test:99999/", "http://origin.test:0/", "http://[fe80::1%25eth0]/",
			"http://:80/", "http://a..b/", "http://xn--/", "http://" + strings.Repeat("a", 64) + ".test/",
		} {
			at := time.Now()
			rs, _ := rawExchange(t, n, "GET "+target+" HTTP/1.1\r\nHost: x\r\n\r\n")
			if len(rs) == 0 || rs[0].status != http.StatusBadRequest || rs[0].at != at ||
				!strings.Contains(rs[0].header.Get("Proxy-Status"), "http_request_error") {
				t.Errorf("%s: answers %v, want 400 http_request_error at once", target, statuses(rs))
			} else if len(rs) > 0 {
				t.Logf("%s: %d after %v", target, rs[0].status, rs[0].at.Sub(at))
			}
		}
		if d := n.dialsTo("origin.test:0"); len(d) != 0 {
			t.Errorf("port 0 dialed %d times", len(d))
		}
	})
}

// A CONNECT's target is authority-form only (RFC 9110 §9.3.6): a path or
// user info is refused, not silently dropped.
func TestHostileConnectTargetForm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		echo(t, n, "origin.test:443")
		setup(t, n, fast(polite.Limits{}), nil)
		for _, target := range []string{"origin.test:443/path", "user@origin.test:443"} {
			c, err := n.dial(t.Context(), "tcp", proxyAddr)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: origin.test:443\r\n\r\n", target)
			resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
			c.Close()
			if err != nil || resp.StatusCode != http.StatusBadRequest {
				t.Errorf("CONNECT %s: %v %v, want 400", target, resp, err)
			}
		}
		if d := n.dialsTo("origin.test:443"); len(d) != 0 {
			t.Errorf("%d tunnels dialed", len(d))
		}
	})
}

// A CONNECT goes to its request target, never to its Host field.
func TestHostileConnectHostField(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		echo(t, n, "origin.test:443")
		echo(t, n, "other.test:443")
		setup(t, n, fast(polite.Limits{}), nil)
		c, err := n.dial(t.Context(), "tcp", proxyAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprint(c, "CONNECT origin.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("CONNECT: %v %v", resp, err)
		}
		if len(n.dialsTo("origin.test:443")) != 1 || len(n.dialsTo("other.test:443")) != 0 {
			t.Errorf("dials: origin %d, other %d; want the target's only", len(n.dialsTo("origin.test:443")), len(n.dialsTo("other.test:443")))
		}
	})
}

// Inside an intercepted tunnel, requests reach the tunnel's host only: a
// CONNECT is refused, and an absolute-form request naming another host
// goes to the tunnel's.
func TestHostileInsideIntercept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		var mu sync.Mutex
		var seen []string
		originCAs := tlsOrigin(t, n, "origin.test:443", "origin.test", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, r.Host+" "+r.RequestURI)
			mu.Unlock()
			fmt.Fprint(w, "ok")
		}))
		tr := fast(polite.Limits{})
		tr.Base = &http.Transport{DialContext: n.dial, TLSClientConfig: &tls.Config{RootCAs: originCAs}}
		ca, err := NewCA(t.TempDir() + "/ca")
		if err != nil {
			t.Fatal(err)
		}
		setup(t, n, tr, func(s *Server) {
			s.CA = ca
			s.Intercept = func(h string) bool { return h == "origin.test" }
		})
		c, resp := openTunnel(t, n, "origin.test:443")
		defer c.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("CONNECT: %d", resp.StatusCode)
		}
		roots := x509.NewCertPool()
		roots.AddCert(ca.Certificate())
		tc := tls.Client(c, &tls.Config{ServerName: "origin.test", RootCAs: roots})
		br := bufio.NewReader(tc)
		ask := func(raw string) *http.Response {
			t.Helper()
			if _, err := io.WriteString(tc, raw); err != nil {
				t.Fatal(err)
			}
			r, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, r.Body)
			r.Body.Close()
			return r
		}
		if r := ask("GET http://other.test/abs HTTP/1.1\r\nHost: other.test\r\n\r\n"); r.StatusCode != 200 {
			t.Errorf("absolute form inside the tunnel: %d", r.StatusCode)
		}
		if r := ask("GET /rel HTTP/1.1\r\nHost: other.test\r\n\r\n"); r.StatusCode != 200 {
			t.Errorf("origin form inside the tunnel: %d", r.StatusCode)
		}
		if r := ask("CONNECT other.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n"); r.StatusCode != http.StatusBadRequest ||
			!strings.Contains(r.Header.Get("Proxy-Status"), "inside an intercepted tunnel") {
			t.Errorf("CONNECT inside the tunnel: %d %q, want 400", r.StatusCode, r.Header.Get("Proxy-Status"))
		}
		mu.Lock()
		defer mu.Unlock()
		if fmt.Sprint(seen) != "[origin.test /abs origin.test /rel]" {
			t.Errorf("origin saw %q, want both at origin.test", seen)
		}
	})
}

// Polite-* fields and the proxy user name with odd values: a 4xx naming
// the input, never a panic, never a request upstream.
func TestHostileOptions(t *testing.T) {
	var upstream atomic.Int32
	tr := fast(polite.Limits{Rate: 10, Burst: 5})
	tr.Base = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		upstream.Add(1)
		return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
	})
	s := &Server{Transport: tr}
	basic := func(user string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(user)) }
	for _, c := range []struct {
		name string
		hdr  [][2]string
		says string
	}{
		{"cost negative", [][2]string{{"Polite-Cost", "-1"}}, `Polite-Cost "-1"`},
		{"cost zero", [][2]string{{"Polite-Cost", "0"}}, `Polite-Cost "0"`},
		{"cost over the cap", [][2]string{{"Polite-Cost", "1001"}}, `Polite-Cost "1001"`},
		{"cost huge", [][2]string{{"Polite-Cost", "99999999999999999999999"}}, `Polite-Cost "99999999999999999999999"`},
		{"cost float", [][2]string{{"Polite-Cost", "1e3"}}, `Polite-Cost "1e3"`},
		{"cost fullwidth digit", [][2]string{{"Polite-Cost", "５"}}, `Polite-Cost`},
		{"cost empty", [][2]string{{"Polite-Cost", ""}}, `Polite-Cost ""`},
		{"priority unknown", [][2]string{{"Polite-Priority", "urgent"}}, `Polite-Priority "urgent"`},
		{"priority unicode", [][2]string{{"Polite-Priority", "bülk"}}, `Polite-Priority`},
		{"no-retry unknown", [][2]string{{"Polite-No-Retry", "maybe"}}, `Polite-No-Retry "maybe"`},
		{"max-wait negative", [][2]string{{"Polite-Max-Wait", "-1s"}}, `must not be negative`},
		{"max-wait negative seconds", [][2]string{{"Polite-Max-Wait", "-5"}}, `must not be negative`},
		{"max-wait word", [][2]string{{"Polite-Max-Wait", "soon"}}, `Polite-Max-Wait "soon"`},
		{"max-wait NaN", [][2]string{{"Polite-Max-Wait", "NaN"}}, `Polite-Max-Wait "NaN"`},
		{"unknown option", [][2]string{{"Polite-Colour", "red"}}, `unknown option "colour"`},
		{"empty option name", [][2]string{{"Polite-", "1"}}, `unknown option ""`},
		{"repeated, last bad", [][2]string{{"Polite-Cost", "2"}, {"Polite-Cost", "lots"}}, `Polite-Cost "lots"`},
		{"auth not Basic", [][2]string{{"Proxy-Authorization", "Bearer abc"}}, `scheme "Bearer"`},
		{"auth not base64", [][2]string{{"Proxy-Authorization", "Basic %%%"}}, `not base64`},
		{"auth no colon", [][2]string{{"Proxy-Authorization", basic("alice")}}, `no colon`},
		{"auth scheme only", [][2]string{{"Proxy-Authorization", "Basic"}}, `a space and the credentials`},
		{"user name option bad", [][2]string{{"Proxy-Authorization", basic("alice,cost=0:x")}}, `proxy user name option cost "0"`},
		{"user name not key=value", [][2]string{{"Proxy-Authorization", basic("alice,bulk:x")}}, `"bulk" is not key=value`},
		{"user name empty key", [][2]string{{"Proxy-Authorization", basic("alice,=1:x")}}, `unknown option ""`},
		{"user name unicode option", [][2]string{{"Proxy-Authorization", basic("ålice,prïority=bulk:x")}}, `unknown option "prïority"`},
	} {
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader("GET http://origin.test/ HTTP/1.1\r\nHost: origin.test\r\n\r\n")))
		if err != nil {
			t.Fatal(err)
		}
		req.RemoteAddr = "127.0.0.1:1"
		for _, h := range c.hdr {
			req.Header.Add(h[0], h[1])
		}
		w := newRecorder()
		s.ServeHTTP(w, req)
		r := w.result()
		ps := r.Header.Get("Proxy-Status")
		if r.StatusCode != http.StatusBadRequest || !strings.Contains(w.body.String(), c.says) || !strings.Contains(ps, "error=http_request_error") {
			t.Errorf("%s: %d %q (Proxy-Status %q), want 400 saying %q", c.name, r.StatusCode, w.body.String(), ps, c.says)
		}
		if r.Header.Get("Connection") != "close" {
			t.Errorf("%s: a 400 without Connection: close", c.name)
		}
	}
	if n := upstream.Load(); n != 0 {
		t.Errorf("%d requests went upstream", n)
	}
}

// Odd values that are valid are taken: repeated fields (the last wins),
// spaces, case, a max wait longer than the Server's (cut to it).
func TestHostileOptionsTaken(t *testing.T) {
	for _, c := range []struct {
		hdr  http.Header
		want options
	}{
		{http.Header{"Polite-Cost": {"lots", "2"}}, options{cost: 2}},
		{http.Header{"Polite-Cost": {" 7 "}}, options{cost: 7}},
		{http.Header{"Polite-Cost": {"+5"}}, options{cost: 5}},
		{http.Header{"Polite-Priority": {"BULK"}}, options{priority: polite.Background}},
		{http.Header{"Polite-No-Retry": {"Yes"}}, options{noRetry: true}},
		{http.Header{"Polite-Max-Wait": {"5"}}, options{maxWait: 5 * time.Second, maxWaitSet: true}},
		{http.Header{"Polite-Max-Wait": {"1h"}}, options{maxWait: time.Hour, maxWaitSet: true}},
		{http.Header{"Polite-Max-Wait": {"0"}}, options{maxWaitSet: true}},
		// The proxy's own answer fields, echoed back by a client, are no
		// options.
		{http.Header{"Polite-Waited-Ms": {"5"}, "Polite-Next-Request-In": {"x"}}, options{}},
	} {
		var o options
		if err := o.fromHeader(c.hdr); err != nil || o != c.want {
			t.Errorf("%v: %+v, %v; want %+v", c.hdr, o, err, c.want)
		}
	}
}

// A whole number of seconds too large for a Duration must not wrap round
// to a short wait or to a "negative" one.
func TestHostileMaxWaitOverflow(t *testing.T) {
	for _, v := range []string{"10000000000", "18446744074", "9223372036854775807"} {
		var o options
		err := o.set("max-wait", v, "Polite-Max-Wait")
		if err == nil && o.maxWait < time.Hour {
			t.Errorf("%s: taken as %v", v, o.maxWait)
		}
		if err != nil && strings.Contains(err.Error(), "negative") {
			t.Errorf("%s: %v", v, err)
		}
	}
}

// A malformed Proxy-Authorization is refused without repeating the
// credentials it may hold: not in the answer, not in the log.
func TestHostileAuthNotEchoed(t *testing.T) {
	var logb logBuf
	s := &Server{Transport: fast(polite.Limits{}), Logger: slog.New(slog.NewTextHandler(&logb, nil))}
	secret := base64.StdEncoding.EncodeToString([]byte("user:s3cret"))
	for _, v := range []string{secret, "Basic\t" + secret, "Digest" + secret} {
		req, _ := http.NewRequest(http.MethodGet, "http://origin.test/", nil)
		req.RemoteAddr = "127.0.0.1:1"
		req.Header.Set("Proxy-Authorization", v)
		w := newRecorder()
		s.ServeHTTP(w, req)
		if w.status != http.StatusBadRequest {
			t.Errorf("%q: %d, want 400", v, w.status)
		}
		if strings.Contains(w.body.String(), secret) || strings.Contains(w.h.Get("Proxy-Status"), secret) {
			t.Errorf("%q: the answer repeats the credentials: %q", v, w.body.String())
		}
	}
	if strings.Contains(logb.String(), secret) {
		t.Errorf("the log repeats the credentials:\n%s", logb.String())
	}
}

// Who may use the proxy, by the client's address as the server reports it:
// loopback in any spelling is served without Auth, anything else (or an
// address that does not parse) is refused 403, credentials or not; with
// Auth every client, loopback too, needs them.
func TestHostileRemoteAddrs(t *testing.T) {
	tr := fast(polite.Limits{})
	tr.Base = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}, Request: r, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}, nil
	})
	do := func(s *Server, method, remote, auth string) int {
		u := "http://origin.test/"
		if method == http.MethodConnect {
			u = "//origin.test:443"
		}
		req := httptest.NewRequest(method, u, nil)
		if method == http.MethodConnect {
			req.Host = "origin.test:443"
		}
		req.RemoteAddr = remote
		if auth != "" {
			req.Header.Set("Proxy-Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(auth)))
		}
		w := newRecorder()
		s.ServeHTTP(w, req)
		return w.status
	}
	open := &Server{Transport: tr}
	for _, c := range []struct {
		remote string
		want   int
	}{
		{"127.0.0.1:5000", 200},
		{"127.0.0.2:5000", 200},
		{"127.255.255.254:1", 200},
		{"[::1]:5000", 200},
		{"[::ffff:127.0.0.1]:5000", 200},
		{"192.0.2.7:5000", 403},
		{"10.0.0.1:5000", 403},
		{"169.254.169.254:80", 403},
		{"[::ffff:192.0.2.7]:5000", 403},
		{"[fe80::1%eth0]:5000", 403},
		{"0.0.0.0:5000", 403},
		{"[::]:5000", 403},
		{"", 403},
		{"127.0.0.1", 403}, // no port: does not parse
		{"localhost:5000", 403},
		{"garbage", 403},
	} {
		if got := do(open, http.MethodGet, c.remote, ""); got != c.want {
			t.Errorf("GET from %q: %d, want %d", c.remote, got, c.want)
		}
		if c.want == 403 {
			if got := do(open, http.MethodGet, c.remote, "alice:s3cret"); got != 403 {
				t.Errorf("GET from %q with credentials, no Auth: %d, want 403", c.remote, got)
			}
			if got := do(open, http.MethodConnect, c.remote, ""); got != 403 {
				t.Errorf("CONNECT from %q: %d, want 403", c.remote, got)
			}
		}
	}
	authed := &Server{Transport: tr, Auth: BasicAuth("alice", "s3cret")}
	for _, c := range []struct {
		remote, auth string
		want         int
	}{
		{"127.0.0.1:1", "", 407},
		{"192.0.2.7:1", "", 407},
		{"192.0.2.7:1", "alice:wrong", 407},
		{"192.0.2.7:1", "alice:s3cret:extra", 407},
		{"192.0.2.7:1", "Alice:s3cret", 407},
		{"192.0.2.7:1", ":s3cret", 407},
		{"192.0.2.7:1", "priority=bulk:s3cret", 407},
		{"192.0.2.7:1", "alice,priority=bulk:s3cret", 200},
	} {
		if got := do(authed, http.MethodGet, c.remote, c.auth); got != c.want {
			t.Errorf("GET from %s as %q: %d, want %d", c.remote, c.auth, got, c.want)
		}
	}
	if got := do(authed, http.MethodConnect, "192.0.2.7:1", ""); got != 407 {
		t.Errorf("CONNECT without credentials: %d, want 407", got)
	}
}

// publicProxy serves, on a real loopback listener, a proxy whose upstream
// requests and tunnels dial through polite.PublicDialer, as the CLI's do
// without --allow-private.
func publicProxy(t *testing.T, robots bool) string {
	tr := fast(polite.Limits{})
	tr.IgnoreRobots = !robots
	base := &http.Transport{DialContext: polite.PublicDialer(nil).DialContext}
	tr.Base = base
	s := &Server{Transport: tr, Dial: polite.PublicDialer(nil).DialContext, MaxWait: 5 * time.Second}
	ts := httptest.NewServer(s)
	t.Cleanup(func() { ts.Close(); base.CloseIdleConnections() })
	return ts.Listener.Addr().String()
}

// countingOrigin is a real loopback origin that counts the connections it
// accepts.
func countingOrigin(t *testing.T) (port string, conns *atomic.Int32) {
	conns = new(atomic.Int32)
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "reached") }))
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	_, port, _ = net.SplitHostPort(ts.Listener.Addr().String())
	return port, conns
}

// sendRaw writes raw to addr and returns the first answer.
func sendRaw(t *testing.T, addr, raw string) *http.Response {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	method := http.MethodGet
	if strings.HasPrefix(raw, "CONNECT") {
		method = http.MethodConnect
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// nonPublicTargets are host:port spellings of addresses the proxy must not
// reach without --allow-private; the loopback ones name the counting
// origin's port, so a connection would show.
func nonPublicTargets(port string) []string {
	return []string{
		"127.0.0.1:" + port,
		"localhost:" + port,
		"[::1]:" + port,
		"[::ffff:127.0.0.1]:" + port,
		"10.1.2.3:80",
		"169.254.169.254:80",
		"[::ffff:a9fe:a9fe]:80",
		"0.0.0.0:" + port,
	}
}

// Without --allow-private, plain requests and tunnels to non-public
// addresses are refused 403 destination_ip_prohibited, and no connection
// is made (robots.txt off: see TestHostileNonPublicWithRobots).
func TestHostileNonPublic(t *testing.T) {
	port, conns := countingOrigin(t)
	addr := publicProxy(t, false)
	for _, target := range nonPublicTargets(port) {
		for _, raw := range []string{
			"GET http://" + target + "/latest/meta-data/ HTTP/1.1\r\nHost: " + target + "\r\nPolite-No-Retry: 1\r\n\r\n",
			"CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n",
		} {
			resp := sendRaw(t, addr, raw)
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.Header.Get("Proxy-Status"), "error=destination_ip_prohibited") {
				t.Errorf("%s: %d %q, want 403 destination_ip_prohibited", strings.Fields(raw)[0]+" "+target, resp.StatusCode, resp.Header.Get("Proxy-Status"))
			}
		}
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("the loopback origin accepted %d connections, want none", n)
	}
}

// With robots.txt on (the CLI's default) a non-public destination is
// still the answer's reason: 403 destination_ip_prohibited, not 503
// "robots.txt could not be fetched" with a Retry-After.
func TestHostileNonPublicWithRobots(t *testing.T) {
	port, conns := countingOrigin(t)
	addr := publicProxy(t, true)
	for _, target := range nonPublicTargets(port) {
		resp := sendRaw(t, addr, "GET http://"+target+"/ HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.Header.Get("Proxy-Status"), "error=destination_ip_prohibited") || resp.Header.Get("Retry-After") != "" {
			t.Errorf("GET %s: %d %q (Retry-After %q), want 403 destination_ip_prohibited", target, resp.StatusCode, resp.Header.Get("Proxy-Status"), resp.Header.Get("Retry-After"))
		}
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("the loopback origin accepted %d connections, want none", n)
	}
}

// What holds with robots.txt on: no connection to a non-public address,
// and a refusal.
func TestHostileNonPublicWithRobotsNoConnection(t *testing.T) {
	port, conns := countingOrigin(t)
	addr := publicProxy(t, true)
	for _, target := range nonPublicTargets(port) {
		resp := sendRaw(t, addr, "GET http://"+target+"/ HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 400 || strings.Contains(string(b), "reached") {
			t.Errorf("GET %s: %d %q", target, resp.StatusCode, b)
		}
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("the loopback origin accepted %d connections, want none", n)
	}
}

// A request to the proxy's own address (allowed private) comes back once
// and stops: the looped request is refused, nothing repeats.
func TestHostileLoopToSelf(t *testing.T) {
	var calls atomic.Int32
	tr := fast(polite.Limits{})
	base := &http.Transport{}
	tr.Base = base
	s := &Server{Transport: tr}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		s.ServeHTTP(w, r)
	}))
	defer ts.Close()
	defer base.CloseIdleConnections()
	self := ts.Listener.Addr().String()
	for _, path := range []string{"/", "/robots.txt"} {
		resp := sendRaw(t, self, "GET http://"+self+path+" HTTP/1.1\r\nHost: "+self+"\r\n\r\n")
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("GET %s on itself: %d, want a refusal", path, resp.StatusCode)
		}
	}
	if n := calls.Load(); n > 4 {
		t.Errorf("the proxy was asked %d times for 2 requests: it loops", n)
	}
}

// Many idle client connections (no byte sent) do not keep a new client
// from being served.
func TestHostileIdleConnections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		recordingOrigin(t, n, "origin.test:80")
		setup(t, n, fast(polite.Limits{}), nil)
		var idle []net.Conn
		for range 200 {
			c, err := n.dial(t.Context(), "tcp", proxyAddr)
			if err != nil {
				t.Fatal(err)
			}
			idle = append(idle, c)
		}
		c := n.client(proxyAddr)
		defer c.CloseIdleConnections()
		at := time.Now()
		r := get(t, c, "http://origin.test/fresh")
		if b := body(t, r); r.StatusCode != 200 || time.Since(at) != 0 {
			t.Errorf("fresh client beside 200 idle ones: %d %q after %v", r.StatusCode, b, time.Since(at))
		}
		for _, c := range idle {
			c.Close()
		}
	})
}

// Many clients that hang up while their requests wait for a host's token
// give their places back: the next client is admitted when the token
// comes, and the origin never sees the gone ones.
func TestHostileManyClientsGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		ol := recordingOrigin(t, n, "origin.test:80")
		setup(t, n, fast(polite.Limits{Rate: 1, Burst: 1, Concurrency: 8}), nil)
		c := n.client(proxyAddr)
		defer c.CloseIdleConnections()
		start := time.Now()
		body(t, get(t, c, "http://origin.test/first"))
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for i := range 50 {
			wg.Go(func() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://origin.test/gone%d", i), nil)
				if resp, err := c.Do(req); err == nil {
					resp.Body.Close()
					t.Errorf("gone request %d answered %d", i, resp.StatusCode)
				}
			})
		}
		time.Sleep(300 * time.Millisecond)
		cancel()
		wg.Wait()
		synctest.Wait()
		r := get(t, c, "http://origin.test/next")
		body(t, r)
		if r.StatusCode != 200 || time.Since(start) != time.Second {
			t.Errorf("next client: %d at %v, want 200 at 1s", r.StatusCode, time.Since(start))
		}
		if got := ol.targets(); fmt.Sprint(got) != "[GET /first GET /next]" {
			t.Errorf("origin saw %q", got)
		}
	})
}

// A tunnel left idle is closed after tunnelIdle, and its place under the
// host's tunnel cap is given back.
func TestHostileIdleTunnel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		echo(t, n, "origin.test:443")
		setup(t, n, fast(polite.Limits{}), func(s *Server) { s.TunnelCap = 1; s.MaxWait = time.Second })
		c, resp := openTunnel(t, n, "origin.test:443")
		defer c.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("CONNECT: %d", resp.StatusCode)
		}
		at := time.Now()
		closed := make(chan time.Duration)
		go func() {
			io.Copy(io.Discard, c)
			closed <- time.Since(at)
		}()
		if d := <-closed; d != tunnelIdle {
			t.Errorf("idle tunnel closed after %v, want %v", d, tunnelIdle)
		}
		c2, resp := openTunnel(t, n, "origin.test:443")
		c2.Close()
		if resp.StatusCode != 200 {
			t.Errorf("tunnel after the idle one closed: %d", resp.StatusCode)
		}
	})
}

// A client that sends its body slowly, or stops, must not hold its host's
// slot for ever.
func TestHostileStalledUploadReleasesSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		recordingOrigin(t, n, "origin.test:80")
		setup(t, n, fast(polite.Limits{Concurrency: 1}), func(s *Server) { s.MaxWait = time.Second })
		stalled, err := n.dial(t.Context(), "tcp", proxyAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer stalled.Close()
		go io.WriteString(stalled, "POST http://origin.test/up HTTP/1.1\r\nHost: origin.test\r\nContent-Length: 1000\r\n\r\nabc")
		go io.Copy(io.Discard, stalled)
		time.Sleep(10 * time.Minute)
		c := n.client(proxyAddr)
		defer c.CloseIdleConnections()
		r := get(t, c, "http://origin.test/other")
		if b := body(t, r); r.StatusCode != 200 {
			t.Errorf("another client after 10 min of a stalled upload: %d %q", r.StatusCode, b)
		}
	})
}

// The response side: what an origin's malformed or odd answer becomes.
func TestHostileResponses(t *testing.T) {
	rawOrigin := func(resp string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			c, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			io.WriteString(c, resp)
			c.Close()
		}
	}
	for _, c := range []struct {
		name, resp string
		check      func(t *testing.T, rs []rawResp)
	}{
		{"malformed status", "HTTP/1.1 2OO OK\r\nContent-Length: 2\r\n\r\nhi", func(t *testing.T, rs []rawResp) {
			if rs[0].status != http.StatusBadGateway || rs[0].header.Get("Proxy-Status") == "" {
				t.Errorf("%d %v, want 502 with Proxy-Status", rs[0].status, rs[0].header)
			}
		}},
		{"not HTTP", "this is not http\r\n\r\n", func(t *testing.T, rs []rawResp) {
			if rs[0].status != http.StatusBadGateway {
				t.Errorf("%d, want 502", rs[0].status)
			}
		}},
		{"body shorter than Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this", func(t *testing.T, rs []rawResp) {
			// A short body of known length is still in the server's
			// buffer when the copy fails: the connection is dropped with
			// no answer. Either way never a clean end.
			if len(rs) > 0 && (rs[0].status != 200 || rs[0].body != "only this" || rs[0].bodyErr == nil) {
				t.Errorf("%d %q (%v), want no answer, or 200 and the short body cut off with an error, never a clean end", rs[0].status, rs[0].body, rs[0].bodyErr)
			}
		}},
		{"1xx before the answer", "HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", func(t *testing.T, rs []rawResp) {
			if len(rs) < 2 || rs[0].status != 103 || rs[0].header.Get("Link") != "</s.css>" || rs[1].status != 200 || rs[1].body != "ok" {
				t.Errorf("answers %v, want 103 with Link, then 200 ok", statuses(rs))
			}
		}},
		{"chunked and Content-Length", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n2\r\nok\r\n0\r\n\r\n", func(t *testing.T, rs []rawResp) {
			if rs[0].status != 200 || rs[0].body != "ok" || rs[0].header.Get("Content-Length") != "" {
				t.Errorf("%d %q CL %q, want 200 ok without Content-Length", rs[0].status, rs[0].body, rs[0].header.Get("Content-Length"))
			}
		}},
		{"bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nok\r\n0\r\n\r\n", func(t *testing.T, rs []rawResp) {
			if len(rs) > 0 && rs[0].status == 200 && rs[0].bodyErr == nil {
				t.Errorf("a broken body passed on as a clean 200 %q", rs[0].body)
			}
		}},
		{"Polite fields from the origin", "HTTP/1.1 200 OK\r\nPolite-Waited-Ms: 99999\r\nPolite-Next-Request-In: 1\r\nContent-Length: 2\r\n\r\nok", func(t *testing.T, rs []rawResp) {
			if w := rs[0].header.Get("Polite-Waited-Ms"); w != "0" || rs[0].header.Get("Polite-Next-Request-In") != "" {
				t.Errorf("Polite-Waited-Ms %q, Polite-Next-Request-In %q: the origin's own must not pass", w, rs[0].header.Get("Polite-Next-Request-In"))
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := newMemNet()
				n.serve(t, "origin.test:80", rawOrigin(c.resp))
				setup(t, n, fast(polite.Limits{}), nil)
				rs, _ := rawExchange(t, n, "GET http://origin.test/ HTTP/1.1\r\nHost: origin.test\r\nPolite-No-Retry: 1\r\n\r\n")
				if len(rs) == 0 {
					if c.name != "bad chunk size" && c.name != "body shorter than Content-Length" {
						t.Fatalf("no answer")
					}
					return // the connection aborted: fine for a broken body
				}
				c.check(t, rs)
			})
		})
	}
}

// An origin's malformed answer is an HTTP protocol error (RFC 9209), not
// the proxy's own internal error.
func TestHostileMalformedResponseType(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		n.serve(t, "origin.test:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, _, _ := http.NewResponseController(w).Hijack()
			io.WriteString(c, "HTTP/1.1 2OO OK\r\nContent-Length: 2\r\n\r\nhi")
			c.Close()
		}))
		setup(t, n, fast(polite.Limits{}), nil)
		rs, _ := rawExchange(t, n, "GET http://origin.test/ HTTP/1.1\r\nHost: origin.test\r\nPolite-No-Retry: 1\r\n\r\n")
		if len(rs) == 0 || !strings.Contains(rs[0].header.Get("Proxy-Status"), "error=http_protocol_error") || strings.Contains(rs[0].body, "polite: polite:") {
			t.Errorf("answers %v: %v", statuses(rs), rs)
		}
	})
}

// An origin that never answers is bounded by the upstream's response
// header timeout (the CLI's --timeout): 504 http_response_timeout.
func TestHostileOriginNeverAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		stop := make(chan struct{})
		n.serve(t, "origin.test:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-stop:
			case <-r.Context().Done():
			}
		}))
		defer close(stop)
		tr := fast(polite.Limits{})
		base := &http.Transport{DialContext: n.dial, ResponseHeaderTimeout: 5 * time.Second}
		tr.Base = base
		setup(t, n, tr, nil)
		defer base.CloseIdleConnections()
		c := n.client(proxyAddr)
		defer c.CloseIdleConnections()
		at := time.Now()
		r := get(t, c, "http://origin.test/never", "Polite-No-Retry", "1")
		body(t, r)
		if r.StatusCode != http.StatusGatewayTimeout || time.Since(at) != 5*time.Second ||
			!strings.Contains(r.Header.Get("Proxy-Status"), "error=http_response_timeout") {
			t.Errorf("%d after %v (%q), want 504 http_response_timeout after 5s", r.StatusCode, time.Since(at), r.Header.Get("Proxy-Status"))
		}
	})
}

// OPTIONS * is answered by net/http itself (200, no body) and never goes
// upstream; an absolute-form OPTIONS goes to its origin.
func TestHostileAsteriskForm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		ol := recordingOrigin(t, n, "origin.test:80")
		setup(t, n, fast(polite.Limits{}), nil)
		rs, _ := rawExchange(t, n, "OPTIONS * HTTP/1.1\r\nHost: origin.test\r\n\r\nOPTIONS http://origin.test HTTP/1.1\r\nHost: origin.test\r\n\r\n")
		if fmt.Sprint(statuses(rs)) != "[200 200]" {
			t.Errorf("answers %v, want [200 200]", statuses(rs))
		}
		if got := ol.targets(); fmt.Sprint(got) != "[OPTIONS /]" {
			t.Errorf("origin saw %q, want only the absolute-form OPTIONS", got)
		}
	})
}

// A fragment is no part of a request target (RFC 9112 §3.2): a '#' in one
// is refused, not sent on as part of the path.
func TestHostileFragmentInTarget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		ol := recordingOrigin(t, n, "origin.test:80")
		setup(t, n, fast(polite.Limits{}), nil)
		rs, _ := rawExchange(t, n, "GET http://origin.test/a#frag HTTP/1.1\r\nHost: origin.test\r\n\r\n")
		for _, r := range ol.all() {
			if strings.Contains(r.target, "frag") {
				t.Errorf("origin saw %q", r.target)
			}
		}
		if len(rs) != 1 || (rs[0].status != 400 && len(ol.all()) != 1) {
			t.Errorf("answers %v", statuses(rs))
		}
	})
}

// One host is one budget however its port is spelled: "origin.test",
// "origin.test:80" and "origin.test:080" (which dials port 80) share a
// key, for plain requests and for tunnels alike.
func TestHostilePortSpellingsShareKey(t *testing.T) {
	tr := fast(polite.Limits{})
	key := func(u string) string {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		k, err := tr.KeyOf(req)
		if err != nil {
			return "error: " + err.Error()
		}
		return k
	}
	want := key("http://origin.test/")
	for _, u := range []string{"http://origin.test:80/", "http://origin.test:080/", "http://origin.test:0080/", "http://origin.test:00080/"} {
		if k := key(u); k != want {
			t.Errorf("%s: key %q, want %q", u, k, want)
		}
	}
	want = key("https://origin.test/")
	if k := key("https://origin.test:0443/"); k != want {
		t.Errorf("https://origin.test:0443/: key %q, want %q", k, want)
	}
}

// CONNECTs that wait for a host's tunnel place and hang up give nothing
// away: once the open tunnel closes the next CONNECT gets its place at
// once, and none of the gone ones was dialed.
func TestHostileConnectWaitersGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		echo(t, n, "origin.test:443")
		setup(t, n, fast(polite.Limits{}), func(s *Server) { s.TunnelCap = 1; s.MaxWait = time.Minute })
		first, resp := openTunnel(t, n, "origin.test:443")
		if resp.StatusCode != 200 {
			t.Fatalf("first tunnel: %d", resp.StatusCode)
		}
		var waiting []net.Conn
		for range 20 {
			c, err := n.dial(t.Context(), "tcp", proxyAddr)
			if err != nil {
				t.Fatal(err)
			}
			go io.WriteString(c, "CONNECT origin.test:443 HTTP/1.1\r\nHost: origin.test:443\r\n\r\n")
			waiting = append(waiting, c)
		}
		time.Sleep(time.Second)
		for _, c := range waiting {
			c.Close()
		}
		synctest.Wait()
		first.Close()
		synctest.Wait()
		at := time.Now()
		c, resp := openTunnel(t, n, "origin.test:443")
		c.Close()
		if resp.StatusCode != 200 || time.Since(at) != 0 {
			t.Errorf("next tunnel: %d after %v, want 200 at once", resp.StatusCode, time.Since(at))
		}
		if d := n.dialsTo("origin.test:443"); len(d) != 2 {
			t.Errorf("%d tunnels dialed, want 2 (never a gone one)", len(d))
		}
	})
}

// A client that stops reading its answer must not hold its host's slot
// for ever.
func TestHostileStalledDownloadReleasesSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		n.serve(t, "origin.test:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/big" {
				w.Header().Set("Content-Length", fmt.Sprint(4<<20))
				w.Write(bytes.Repeat([]byte("x"), 4<<20))
				return
			}
			fmt.Fprint(w, "ok")
		}))
		setup(t, n, fast(polite.Limits{Concurrency: 1}), func(s *Server) {
			s.MaxWait = time.Second
			// ReverseProxy's flushing writer (FlushInterval -1) takes a
			// sync.Mutex from a timer while a Write that holds it is
			// blocked on the stalled client: a goroutine blocked on a
			// mutex stops the bubble's clock, and the test would hang.
			// Without it (and with a Content-Length) the write blocks
			// durably. It has no bearing on the slot being held.
			s.init()
			s.rp.FlushInterval = 0
		})
		stalled, err := n.dial(t.Context(), "tcp", proxyAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer stalled.Close()
		io.WriteString(stalled, "GET http://origin.test/big HTTP/1.1\r\nHost: origin.test\r\n\r\n")
		if _, err := http.ReadResponse(bufio.NewReader(stalled), nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Minute)
		c := n.client(proxyAddr)
		defer c.CloseIdleConnections()
		r := get(t, c, "http://origin.test/other")
		if b := body(t, r); r.StatusCode != 200 {
			t.Errorf("another client after 10 min of a stalled download: %d %q", r.StatusCode, b)
		}
	})
}
