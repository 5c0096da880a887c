package proxy

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/polite-go/polite"
)

// echo serves a TCP echo at addr on n.
func echo(t *testing.T, n *memNet, addr string) {
	l := n.listen(t, addr)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
}

// openTunnel sends CONNECT target to the proxy on n and returns the
// connection and the answer's status line.
func openTunnel(t *testing.T, n *memNet, target string) (net.Conn, *http.Response) {
	t.Helper()
	c, err := n.dial(t.Context(), "tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	return &prefixConn{Conn: c, r: br}, resp
}

// Tunnel opens to a host are paced by its rate: four at once, at 2/s with
// a burst of 1, reach the origin 500 ms apart; bytes then flow both ways.
func TestTunnelsPaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		echo(t, n, "origin.test:443")
		s := setup(t, n, fast(polite.Limits{Rate: 2, Burst: 1, Concurrency: 8}), nil)
		start := time.Now()
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() {
				c, resp := openTunnel(t, n, "origin.test:443")
				defer c.Close()
				if resp.StatusCode != 200 {
					t.Errorf("tunnel %d: %d", i, resp.StatusCode)
					return
				}
				msg := fmt.Sprintf("ping %d\n", i)
				io.WriteString(c, msg)
				got, _ := bufio.NewReader(c).ReadString('\n')
				if got != msg {
					t.Errorf("tunnel %d echoed %q", i, got)
				}
			})
		}
		wg.Wait()
		dials := n.dialsTo("origin.test:443")
		if len(dials) != 4 {
			t.Fatalf("%d dials to the origin, want 4", len(dials))
		}
		for i, at := range dials {
			if want := time.Duration(i) * 500 * time.Millisecond; at.Sub(start) != want {
				t.Errorf("tunnel %d opened at %v, want %v", i, at.Sub(start), want)
			}
		}
		if s.Stats().Tunnels.Load() != 4 {
			t.Errorf("Stats.Tunnels %d", s.Stats().Tunnels.Load())
		}
	})
}

// At most TunnelCap tunnels to a host are open at once: another waits for
// one to close, and past the max wait is answered 429.
func TestTunnelCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		echo(t, n, "origin.test:443")
		setup(t, n, fast(polite.Limits{}), func(s *Server) { s.TunnelCap = 1; s.MaxWait = 2 * time.Second })
		first, resp := openTunnel(t, n, "origin.test:443")
		if resp.StatusCode != 200 {
			t.Fatalf("first tunnel: %d", resp.StatusCode)
		}
		at := time.Now()
		c, resp := openTunnel(t, n, "origin.test:443")
		c.Close()
		if resp.StatusCode != http.StatusTooManyRequests || time.Since(at) != 2*time.Second ||
			!strings.Contains(resp.Header.Get("Proxy-Status"), "connection_limit_reached") {
			t.Errorf("second tunnel: %d after %v (%q), want 429 connection_limit_reached after 2s", resp.StatusCode, time.Since(at), resp.Header.Get("Proxy-Status"))
		}
		// One waiting when the first closes gets its place.
		done := make(chan int)
		go func() {
			c, resp := openTunnel(t, n, "origin.test:443")
			c.Close()
			done <- resp.StatusCode
		}()
		time.Sleep(time.Second)
		first.Close()
		if st := <-done; st != 200 {
			t.Errorf("tunnel after the first closed: %d", st)
		}
	})
}

// A CONNECT to a port that is not a number, or no port, is refused.
func TestConnectBadTarget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		setup(t, n, fast(polite.Limits{}), nil)
		for _, target := range []string{"origin.test", "origin.test:https", "origin.test:0", ":443"} {
			c, resp := openTunnel(t, n, target)
			c.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("CONNECT %s: %d, want 400", target, resp.StatusCode)
			}
		}
	})
}

// tlsOrigin serves h over TLS at addr on n with a certificate from its
// own CA, returned for clients to trust.
func tlsOrigin(t *testing.T, n *memNet, addr, host string, h http.Handler) *x509.CertPool {
	ca, err := NewCA(filepath.Join(t.TempDir(), "origin-ca"))
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.leaf(host)
	if err != nil {
		t.Fatal(err)
	}
	l := n.listen(t, addr)
	srv := &http.Server{Handler: h, TLSConfig: &tls.Config{Certificates: []tls.Certificate{*cert}}}
	go srv.ServeTLS(l, "", "")
	t.Cleanup(func() { srv.Close(); l.Close() })
	pool := x509.NewCertPool()
	pool.AddCert(ca.Certificate())
	return pool
}

// interceptAll serves a proxy over tr on n intercepting every host with a
// new CA, and returns a client of it that trusts the CA when trust is set.
func interceptAll(t *testing.T, n *memNet, tr *polite.Transport, trust bool) (*Server, *http.Client) {
	ca, err := NewCA(filepath.Join(t.TempDir(), "ca"))
	if err != nil {
		t.Fatal(err)
	}
	s := setup(t, n, tr, func(s *Server) {
		s.CA = ca
		s.Intercept = func(string) bool { return true }
	})
	roots := x509.NewCertPool()
	if trust {
		roots.AddCert(ca.Certificate())
	}
	c := n.client(proxyAddr)
	c.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: roots}
	t.Cleanup(c.CloseIdleConnections)
	return s, c
}

// Intercepted hosts get request-level politeness over HTTPS: the client
// trusts polite's CA, polite verifies the origin, and each request is
// paced by the host's rate.
func TestIntercept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		var mu sync.Mutex
		var seen []string
		originCAs := tlsOrigin(t, n, "origin.test:443", "origin.test", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, r.Host+r.URL.Path+" "+r.Header.Get("Polite-Priority"))
			mu.Unlock()
			fmt.Fprint(w, "secret "+r.URL.Path)
		}))
		ca, err := NewCA(filepath.Join(t.TempDir(), "ca"))
		if err != nil {
			t.Fatal(err)
		}
		base := &http.Transport{DialContext: n.dial, TLSClientConfig: &tls.Config{RootCAs: originCAs}}
		tr := fast(polite.Limits{Rate: 1, Burst: 1})
		tr.Base = base
		s := setup(t, n, tr, func(s *Server) {
			s.CA = ca
			s.Intercept = func(h string) bool { return h == "origin.test" }
		})
		clientCAs := x509.NewCertPool()
		clientCAs.AddCert(ca.Certificate())
		c := n.client(proxyAddr)
		c.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: clientCAs}
		defer c.CloseIdleConnections()
		start := time.Now()
		for i := range 3 {
			r := get(t, c, fmt.Sprintf("https://origin.test/p%d", i), "Polite-Priority", "bulk")
			if b := body(t, r); r.StatusCode != 200 || b != fmt.Sprintf("secret /p%d", i) {
				t.Fatalf("request %d: %d %q", i, r.StatusCode, b)
			}
			if want := time.Duration(i) * time.Second; time.Since(start) != want {
				t.Errorf("request %d answered at %v, want %v (paced at 1/s)", i, time.Since(start), want)
			}
		}
		mu.Lock()
		if len(seen) != 3 || seen[0] != "origin.test/p0 " {
			t.Errorf("origin saw %q: want 3 requests to origin.test, without Polite-*", seen)
		}
		mu.Unlock()
		if s.Stats().Intercepted.Load() != 1 {
			t.Errorf("Stats.Intercepted %d, want 1 (one tunnel, kept alive)", s.Stats().Intercepted.Load())
		}
	})
}

// polite verifies an intercepted origin's certificate: one it does not
// trust is answered 502 tls_certificate_error, and nothing is sent.
func TestInterceptVerifiesOrigin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		tlsOrigin(t, n, "origin.test:443", "origin.test", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			t.Error("a request reached an origin polite should not trust")
		}))
		_, c := interceptAll(t, n, fast(polite.Limits{}), true)
		r := get(t, c, "https://origin.test/", "Polite-No-Retry", "1")
		body(t, r)
		if r.StatusCode != http.StatusBadGateway || !strings.Contains(r.Header.Get("Proxy-Status"), "tls_certificate_error") {
			t.Errorf("got %d %q, want 502 tls_certificate_error", r.StatusCode, r.Header.Get("Proxy-Status"))
		}
	})
}

// A client that does not trust polite's CA fails its handshake: the
// proxy never pretends to be a host to it.
func TestInterceptUntrustedByClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		tlsOrigin(t, n, "origin.test:443", "origin.test", http.NotFoundHandler())
		_, c := interceptAll(t, n, fast(polite.Limits{}), false)
		if _, err := c.Get("https://origin.test/"); err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("a client not trusting the CA got %v, want a certificate error", err)
		}
	})
}

// NewCA never overwrites a CA, keeps its key private, and signs
// certificates for names and addresses that verify against it.
func TestCA(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	ca, err := NewCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewCA(dir); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("second NewCA: %v, want ErrCAExists", err)
	}
	fi, err := os.Stat(filepath.Join(dir, CAKeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, %v: want 0600", fi.Mode(), err)
	}
	again, err := LoadCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Certificate().Equal(ca.Certificate()) {
		t.Error("LoadCA read another certificate")
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Certificate())
	for _, host := range []string{"example.com", "127.0.0.1", "::1"} {
		c, err := again.leaf(host)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: roots}); err != nil {
			t.Errorf("%s: %v", host, err)
		}
		if c2, _ := again.leaf(host); c2 != c {
			t.Errorf("%s: certificate not kept", host)
		}
	}
	if _, err := LoadCA(t.TempDir()); err == nil || !strings.Contains(err.Error(), "polite proxy ca init") {
		t.Errorf("LoadCA of an empty dir: %v, want a hint to make one", err)
	}
}
