package crawl

import (
	"context"
	"crypto/sha256"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"sync"
	"time"
)

// robotsFetch is a robots.txt fetch to keep in the WARC files.
type robotsFetch struct {
	url  string
	at   time.Time
	kept *kept
}

// KeepRobots records a robots.txt fetch in the job's WARC files (with
// --bodies warc; otherwise it does nothing): resp is the answer, body what
// was read of it. Set it as the Transport's robots.Cache Record while the
// job runs; fetches that end outside Run are not kept. Archives keep
// robots.txt next to the pages it let through.
func (j *Job) KeepRobots(resp *http.Response, body []byte) {
	if j.opts.Bodies != BodiesWARC || resp == nil || resp.Request == nil || resp.Request.URL == nil {
		return
	}
	k := keep(resp, body, false, sha256.Sum256(body), remoteIP(resp.Request.Context()))
	rf := &robotsFetch{url: resp.Request.URL.String(), at: time.Now(), kept: k}
	j.robotsMu.RLock()
	defer j.robotsMu.RUnlock()
	if j.robotsOpen {
		j.commits <- commitMsg{robots: rf}
	}
}

// openRobots lets KeepRobots send to the committer (open) or stops it, before
// the commits channel closes.
func (j *Job) openRobots(open bool) {
	j.robotsMu.Lock()
	j.robotsOpen = open
	j.robotsMu.Unlock()
}

// ipKey is the context key under which withRemoteIP keeps its *remoteAddr.
type ipKey struct{}

// remoteAddr is the server address a request went to, with the trace
// that notes it: one allocation for both. A robots.txt fetch runs in a
// goroutine of its own with the context (and trace) of the request that
// needed it, so the address is guarded by a mutex; an atomic pointer to
// it cost an allocation per connection got (issue 34, part 2).
type remoteAddr struct {
	mu sync.Mutex // guards ip
	ip netip.Addr
	// trace's GotConn is gotConn.
	trace httptrace.ClientTrace
}

func (r *remoteAddr) get() netip.Addr {
	if r == nil {
		return netip.Addr{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ip
}

func (r *remoteAddr) gotConn(info httptrace.GotConnInfo) {
	if info.Conn == nil {
		return
	}
	if a, ok := info.Conn.RemoteAddr().(*net.TCPAddr); ok {
		ip := a.AddrPort().Addr().Unmap()
		r.mu.Lock()
		r.ip = ip
		r.mu.Unlock()
	}
}

// withRemoteIP returns ctx with a trace that notes the address of the
// server each request on it was sent to, for WARC-IP-Address.
func withRemoteIP(ctx context.Context) (context.Context, *remoteAddr) {
	ra := &remoteAddr{}
	ra.trace.GotConn = ra.gotConn
	ctx = context.WithValue(ctx, ipKey{}, ra)
	return httptrace.WithClientTrace(ctx, &ra.trace), ra
}

// remoteIP returns the address withRemoteIP noted on ctx, the zero Addr when
// none.
func remoteIP(ctx context.Context) netip.Addr {
	if ra, ok := ctx.Value(ipKey{}).(*remoteAddr); ok && ra != nil {
		return ra.get()
	}
	return netip.Addr{}
}
