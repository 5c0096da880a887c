package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/polite-go/polite"
)

// A fetch connects only to public addresses unless --allow-private (issue
// 17, defect 6): a URL list, or a robots.txt that redirects, must not make
// polite reach 169.254.169.254 or a service on the private network. The
// check runs at dial time on the resolved address (polite.PublicDialer).
// Loopback stays reachable on the ports of loopback URLs the list itself
// names (http://127.0.0.1:8080/, http://localhost:8080/), so the testbed
// and local tests work without the flag, and nothing else on the machine
// is reachable through them.

// loopbackPorts records the ports of the list's loopback URLs as the list
// is read. It is safe for concurrent use.
type loopbackPorts struct {
	mu    sync.Mutex // guards ports
	ports map[uint16]bool
}

// tap returns r, recording the loopback ports of the URL lines read
// through it.
func (l *loopbackPorts) tap(r io.Reader) io.Reader { return &tapReader{r: r, l: l} }

// maxTapLine is the longest line the tap looks at; a longer one is no URL
// the job fetches (see --max-url-len) and is skipped.
const maxTapLine = 64 << 10

// tapReader passes a list through, handing each whole line to l.
type tapReader struct {
	r    io.Reader
	l    *loopbackPorts
	line []byte // the current line's start, when it spans reads
	skip bool   // the current line is too long: skip to its end
}

func (t *tapReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	data := p[:n]
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		if !t.skip {
			t.line = append(t.line, data[:i]...)
			t.l.line(t.line)
		}
		t.line, t.skip = t.line[:0], false
		data = data[i+1:]
	}
	if !t.skip {
		t.line = append(t.line, data...)
		if len(t.line) > maxTapLine {
			t.line, t.skip = t.line[:0], true
		}
	}
	if err != nil && !t.skip && len(t.line) > 0 {
		t.l.line(t.line)
		t.line = t.line[:0]
	}
	return n, err
}

func (l *loopbackPorts) line(b []byte) {
	s := string(bytes.TrimSpace(b))
	if strings.HasPrefix(s, "{") {
		// A JSON line of the list names its URL (crawl.ReadLines).
		var j struct {
			URL string `json:"url"`
		}
		if json.Unmarshal([]byte(s), &j) != nil {
			return
		}
		s = j.URL
	}
	if !strings.Contains(s, "://") {
		return
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return
	}
	host := strings.ToLower(u.Hostname())
	a, err := netip.ParseAddr(host)
	if !(host == "localhost" || strings.HasSuffix(host, ".localhost") || err == nil && a.Unmap().IsLoopback()) {
		return
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if strings.EqualFold(u.Scheme, "https") {
			port = "443"
		}
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return
	}
	l.mu.Lock()
	if l.ports == nil {
		l.ports = map[uint16]bool{}
	}
	l.ports[uint16(p)] = true
	l.mu.Unlock()
}

func (l *loopbackPorts) has(p uint16) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ports[p]
}

// publicOnly makes base connect only to public addresses, the list's
// loopback ports, and the addresses also admits (those --resolve and
// --connect-to name).
func publicOnly(base *http.Transport, l *loopbackPorts, also func(netip.AddrPort) bool) {
	base.DialContext = polite.PublicDialer(func(ap netip.AddrPort) bool {
		return ap.Addr().IsLoopback() && l.has(ap.Port()) || also(ap)
	}).DialContext
}
