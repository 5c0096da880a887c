package testbed

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Request is one request as a Server saw it: an entry of its access log, so
// that tests judge a crawl by the server's view (Expectation.Check).
type Request struct {
	// Time is when the request arrived.
	Time time.Time
	// Host is the hostname of the Host header, lower case, without port.
	Host string
	// Method is the request's method.
	Method string
	// URI is the path and query requested, as sent.
	URI string
	// Status is the status answered: 200, 304, 404, a host's 429 …
	Status int
	// Bytes counts the body bytes written (0 for a 304).
	Bytes int64
	// Conditional says whether the request carried If-None-Match or
	// If-Modified-Since.
	Conditional bool
}

// String formats r as a line of the access log, without the newline: seven
// fields separated by single spaces, the time of arrival (RFC 3339 in UTC,
// with nanoseconds), host, method, URI, status, body bytes and "cond" for a
// conditional request or "-":
//
//	2026-11-27T00:21:16.123456789Z h00.site.test GET /d3/p11.html 304 0 cond
func (r Request) String() string {
	cond := "-"
	if r.Conditional {
		cond = "cond"
	}
	return r.Time.UTC().Format(time.RFC3339Nano) + " " + r.Host + " " + r.Method + " " + r.URI + " " +
		strconv.Itoa(r.Status) + " " + strconv.FormatInt(r.Bytes, 10) + " " + cond
}

// ParseRequest parses a line of the access log (Request.String).
func ParseRequest(line string) (Request, error) {
	f := strings.Split(strings.TrimRight(line, "\r\n"), " ")
	if len(f) != 7 {
		return Request{}, fmt.Errorf("testbed: access log line %q: want 7 fields, got %d", line, len(f))
	}
	t, err := time.Parse(time.RFC3339Nano, f[0])
	if err != nil {
		return Request{}, fmt.Errorf("testbed: access log line %q: %w", line, err)
	}
	status, err1 := strconv.Atoi(f[4])
	n, err2 := strconv.ParseInt(f[5], 10, 64)
	if err1 != nil || err2 != nil || (f[6] != "cond" && f[6] != "-") {
		return Request{}, fmt.Errorf("testbed: access log line %q: bad status, bytes or conditional", line)
	}
	return Request{Time: t, Host: f[1], Method: f[2], URI: f[3], Status: status, Bytes: n, Conditional: f[6] == "cond"}, nil
}

// AccessLog records every request a Server receives, whatever host it names
// (unknown ones too) and however it ends: one Request each, written to Out as
// a line (Request.String) and, with Keep, kept in memory for Requests. Lines
// are written as requests end, so times of arrival may be slightly out of
// order. Set it with Server.SetAccessLog. An AccessLog is safe for
// concurrent use.
type AccessLog struct {
	// Out receives a line per request. Nil means none. A write error stops
	// the writing; Err returns it.
	Out io.Writer
	// Keep keeps every Request in memory for Requests.
	Keep bool

	mu   sync.Mutex // guards reqs, err
	reqs []Request
	err  error
}

// Requests returns the requests kept so far, in the order they ended.
func (l *AccessLog) Requests() []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Request(nil), l.reqs...)
}

// Err returns the first error writing to Out, or nil.
func (l *AccessLog) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

func (l *AccessLog) add(r Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.Keep {
		l.reqs = append(l.reqs, r)
	}
	if l.Out != nil && l.err == nil {
		_, l.err = io.WriteString(l.Out, r.String()+"\n")
	}
}

// logWriter records the status and body size of an answer.
type logWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *logWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *logWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *logWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// serveLogged serves r with next and records it in l.
func serveLogged(l *AccessLog, w http.ResponseWriter, r *http.Request, next func(http.ResponseWriter, *http.Request)) {
	arrival := time.Now()
	lw := &logWriter{ResponseWriter: w}
	next(lw, r)
	if lw.status == 0 {
		lw.status = http.StatusOK
	}
	l.add(Request{
		Time:        arrival,
		Host:        strings.ToLower(hostname(r.Host)),
		Method:      r.Method,
		URI:         r.URL.RequestURI(),
		Status:      lw.status,
		Bytes:       lw.bytes,
		Conditional: r.Header.Get("If-None-Match") != "" || r.Header.Get("If-Modified-Since") != "",
	})
}
