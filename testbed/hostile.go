package testbed

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
)

// Hostile is a host that misbehaves in one fixed way on every request, for
// tests that a client facing it still ends, stays bounded and follows
// nothing unsafe (issue 17): a 503 forever, a Retry-After of centuries, a
// RateLimit window of a day, a redirect that injects credentials. Serve it
// with httptest.NewServer or a Network; it counts the requests it gets per
// path, so a test can say how often the host was hit.
//
// Set the fields before serving; a Hostile is safe for concurrent use.
type Hostile struct {
	// Status is every answer's status; 200 when zero.
	Status int
	// Header is set on every answer (robots.txt's too, unless Robots is
	// set).
	Header http.Header
	// Body is every answer's body.
	Body string
	// Location, when set, is sent as the Location field (with Status 302
	// when Status is zero).
	Location string
	// Robots, when set, is the body of /robots.txt, answered 200 and
	// plainly; otherwise /robots.txt gets 404, so robots.txt allows
	// everything and the hostile answer is only the pages'.
	Robots string
	// Reason, when set, is the status line's reason phrase, written as it
	// is: escape sequences, megabytes, whatever a server may send (net/http
	// writes only the standard phrases). The answer then goes out on the
	// hijacked connection (HTTP/1 only), which is closed after it.
	Reason string

	mu    sync.Mutex // guards count, auth
	count map[string]int
	auth  []string
}

// ServeHTTP answers r with the Hostile's fixed answer.
func (h *Hostile) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	if h.count == nil {
		h.count = map[string]int{}
	}
	h.count[r.URL.Path]++
	if a := r.Header.Get("Authorization"); a != "" {
		h.auth = append(h.auth, a)
	}
	h.mu.Unlock()
	if r.URL.Path == "/robots.txt" {
		if h.Robots == "" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(h.Robots))
		return
	}
	for k, vs := range h.Header {
		w.Header()[k] = append([]string(nil), vs...)
	}
	status := h.Status
	if h.Location != "" {
		w.Header().Set("Location", h.Location)
		if status == 0 {
			status = http.StatusFound
		}
	}
	if status == 0 {
		status = http.StatusOK
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(h.Body)))
	if h.Reason != "" {
		h.writeRaw(w, status)
		return
	}
	w.WriteHeader(status)
	w.Write([]byte(h.Body))
}

// writeRaw writes the answer with the Hostile's own reason phrase on w's
// hijacked connection and closes it.
func (h *Hostile) writeRaw(w http.ResponseWriter, status int) {
	header := w.Header().Clone()
	header.Set("Connection", "close")
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("testbed: Hostile.Reason needs an HTTP/1 connection to hijack")
	}
	conn, bw, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprintf(bw, "HTTP/1.1 %03d %s\r\n", status, h.Reason)
	header.Write(bw)
	bw.WriteString("\r\n")
	bw.WriteString(h.Body)
	bw.Flush()
}

// Count returns how many requests the host got for path ("" for all paths
// but /robots.txt).
func (h *Hostile) Count(path string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if path != "" {
		return h.count[path]
	}
	n := 0
	for p, c := range h.count {
		if p != "/robots.txt" {
			n += c
		}
	}
	return n
}

// Authorizations returns the Authorization fields the host was sent, in
// order.
func (h *Hostile) Authorizations() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.auth...)
}
