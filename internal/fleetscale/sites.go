package fleetscale

import (
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/polite-go/polite/testbed"
)

// Hit is one request as a site received it.
type Hit struct {
	At     time.Time // arrival, before the host's handler runs
	Path   string
	Status int
}

// Site is a testbed host that logs every request it receives.
type Site struct {
	Host *testbed.Host

	mu   sync.Mutex // guards hits
	hits []Hit
}

// Hits returns a copy of the site's log.
func (s *Site) Hits() []Hit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Hit(nil), s.hits...)
}

// Sites serves many testbed hosts on one loopback address, routed by the
// Host header (as `polite testbed --addr` does), and logs each request per
// host with its arrival time and status: the servers' own record a run is
// judged by. Workers reach it with --connect-to ::ADDR. Safe for
// concurrent use.
type Sites struct {
	Addr string // host:port on 127.0.0.1

	byName map[string]*Site
	srv    *http.Server
	// unknown counts requests for a host not served.
	mu      sync.Mutex // guards unknown
	unknown int
}

// Serve starts serving hosts; Close stops.
func Serve(hosts []testbed.HostConfig) (*Sites, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Sites{Addr: ln.Addr().String(), byName: make(map[string]*Site, len(hosts))}
	for _, h := range hosts {
		host := testbed.NewHost(h)
		host.RealTime() // on sockets: its 10 ms ± 50 % served as configured
		s.byName[h.Name] = &Site{Host: host}
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

// Site returns the host named name, nil if none.
func (s *Sites) Site(name string) *Site { return s.byName[name] }

// Unknown is how many requests named a host not served.
func (s *Sites) Unknown() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unknown
}

// Close stops serving at once.
func (s *Sites) Close() error { return s.srv.Close() }

func (s *Sites) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	name := r.Host
	if h, _, err := net.SplitHostPort(name); err == nil {
		name = h
	}
	site := s.byName[strings.ToLower(name)]
	if site == nil {
		s.mu.Lock()
		s.unknown++
		s.mu.Unlock()
		http.NotFound(w, r)
		return
	}
	sw := &statusWriter{ResponseWriter: w}
	site.Host.ServeHTTP(sw, r)
	site.mu.Lock()
	site.hits = append(site.hits, Hit{At: at, Path: r.URL.Path, Status: sw.status})
	site.mu.Unlock()
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(c int) {
	if w.status == 0 {
		w.status = c
	}
	w.ResponseWriter.WriteHeader(c)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}
