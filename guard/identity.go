package guard

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// Proxy headers the guard can read the client's address from.
const (
	HeaderXForwardedFor = "X-Forwarded-For"
	HeaderForwarded     = "Forwarded" // RFC 7239
)

// trust resolves a request's client address. With no trusted proxies it is
// the TCP peer. With some, and only when the peer is one of them, it is the
// rightmost address of the proxy header (every line of it, in order) that
// is not a trusted proxy: each proxy appends the peer it saw, so everything
// left of that address was written by the client and proves nothing.
type trust struct {
	proxies []netip.Prefix
	header  string // canonical header name; "" with no proxies
	forward bool   // header is Forwarded (RFC 7239), else X-Forwarded-For
	v4, v6  int    // prefix lengths an address is grouped by
}

// newTrust checks the trust configuration. Anything that could make the
// identity depend on what a client writes, or that reads two ways, fails
// here rather than at request time.
func newTrust(c *Config) (trust, error) {
	t := trust{v4: c.IPv4Prefix, v6: c.IPv6Prefix}
	if t.v4 == 0 {
		t.v4 = 32
	}
	if t.v6 == 0 {
		t.v6 = 64
	}
	if t.v4 < 8 || t.v4 > 32 {
		return trust{}, fmt.Errorf("guard: IPv4Prefix %d: want 8 to 32", c.IPv4Prefix)
	}
	if t.v6 < 16 || t.v6 > 128 {
		return trust{}, fmt.Errorf("guard: IPv6Prefix %d: want 16 to 128 (64 groups one subscriber's subnet)", c.IPv6Prefix)
	}
	for _, s := range c.TrustedProxies {
		p, err := parseTrusted(s)
		if err != nil {
			return trust{}, err
		}
		t.proxies = append(t.proxies, p)
	}
	switch h := http.CanonicalHeaderKey(strings.TrimSpace(c.ProxyHeader)); {
	case len(t.proxies) == 0 && h != "":
		return trust{}, fmt.Errorf("guard: ProxyHeader %q without TrustedProxies: the header would be the client's word", c.ProxyHeader)
	case len(t.proxies) == 0:
	case h == "" || h == HeaderXForwardedFor:
		t.header = HeaderXForwardedFor
	case h == HeaderForwarded:
		t.header, t.forward = HeaderForwarded, true
	default:
		return trust{}, fmt.Errorf("guard: ProxyHeader %q: want %q or %q (single-address headers such as X-Real-IP cannot be checked hop by hop)",
			c.ProxyHeader, HeaderXForwardedFor, HeaderForwarded)
	}
	if c.UserHeader != "" || c.TenantHeader != "" {
		if len(t.proxies) == 0 {
			return trust{}, errors.New("guard: UserHeader/TenantHeader without TrustedProxies: any client could name any user")
		}
		if c.Identify != nil {
			return trust{}, errors.New("guard: both Identify and UserHeader/TenantHeader set: say which names the user")
		}
	}
	return t, nil
}

// parseTrusted reads one TrustedProxies entry: an address or a CIDR.
func parseTrusted(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	var p netip.Prefix
	var err error
	if strings.Contains(s, "/") {
		p, err = netip.ParsePrefix(s)
	} else {
		var a netip.Addr
		if a, err = netip.ParseAddr(s); err == nil {
			if a.Zone() != "" {
				return netip.Prefix{}, fmt.Errorf("guard: TrustedProxies %q: a zone names no network", s)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
	}
	switch {
	case err != nil:
		return netip.Prefix{}, fmt.Errorf("guard: TrustedProxies %q: not an address or CIDR: %v", s, err)
	case p != p.Masked():
		return netip.Prefix{}, fmt.Errorf("guard: TrustedProxies %q: host bits set (did you mean %s?)", s, p.Masked())
	case p.Bits() == 0:
		return netip.Prefix{}, fmt.Errorf("guard: TrustedProxies %q: trusts every address, so any client could forge its identity", s)
	}
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p, nil
}

// Trusted reports whether a is one of the Config's TrustedProxies, the
// peers whose proxy header the guard reads. A server in front of the
// guard that counts connections per client address (polite guard's
// --max-conns-per-ip) leaves them out: one proxy carries many clients.
func (g *Guard) Trusted(a netip.Addr) bool { return g.trust.trusted(canonical(a)) }

// trusted reports whether a is a trusted proxy.
func (t *trust) trusted(a netip.Addr) bool {
	for _, p := range t.proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// peer returns the TCP peer of r.
func peer(r *http.Request) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		return canonical(ap.Addr()), true
	}
	if a, err := netip.ParseAddr(r.RemoteAddr); err == nil {
		return canonical(a), true
	}
	return netip.Addr{}, false
}

// canonical folds the spellings of one address into one: IPv4-mapped IPv6
// to IPv4, without a zone.
func canonical(a netip.Addr) netip.Addr { return a.Unmap().WithZone("") }

// client returns r's client address, and whether r came through a trusted
// proxy (its peer is one).
func (t *trust) client(r *http.Request) (a netip.Addr, proxied, ok bool) {
	p, ok := peer(r)
	if !ok {
		return netip.Addr{}, false, false
	}
	if t.header == "" || !t.trusted(p) {
		return p, false, true
	}
	lines := r.Header[t.header]
	// Walk right to left over every line, last line first. The last
	// trusted address seen stands in when the chain ends in one (the
	// request started inside the trusted network) or in garbage (a proxy
	// wrote something that is no address: nothing left of it counts).
	last := p
	for i := len(lines) - 1; i >= 0; i-- {
		s := lines[i]
		for len(s) > 0 {
			var elem string
			s, elem = lastElement(s)
			a, ok := t.hop(elem)
			if !ok {
				return last, true, true
			}
			if !t.trusted(a) {
				return a, true, true
			}
			last = a
		}
	}
	return last, true, true
}

// hop reads one element of the proxy header as an address.
func (t *trust) hop(elem string) (netip.Addr, bool) {
	if t.forward {
		return forwardedFor(elem)
	}
	return hostAddr(trimOWS(elem))
}

// lastElement splits the rightmost comma-separated element off s,
// respecting quoted strings (Forwarded: for="[2001:db8::1]:80").
func lastElement(s string) (rest, elem string) {
	inQuote := false
	for i := len(s) - 1; i >= 0; i-- {
		switch s[i] {
		case '"':
			if i == 0 || s[i-1] != '\\' {
				inQuote = !inQuote
			}
		case ',':
			if !inQuote {
				return s[:i], s[i+1:]
			}
		}
	}
	return "", s
}

// forwardedFor returns the address of a Forwarded element's for= parameter
// (RFC 7239 section 4). "unknown" and obfuscated identifiers are no address.
func forwardedFor(elem string) (netip.Addr, bool) {
	for len(elem) > 0 {
		var pair string
		if i := strings.IndexByte(elem, ';'); i >= 0 {
			pair, elem = elem[:i], elem[i+1:]
		} else {
			pair, elem = elem, ""
		}
		pair = trimOWS(pair)
		eq := strings.IndexByte(pair, '=')
		if eq < 0 || !strings.EqualFold(trimOWS(pair[:eq]), "for") {
			continue
		}
		v := trimOWS(pair[eq+1:])
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1]
			if strings.IndexByte(v, '\\') >= 0 {
				return netip.Addr{}, false // no address needs an escape
			}
		}
		return hostAddr(v)
	}
	return netip.Addr{}, false
}

// hostAddr reads an address with an optional port: 192.0.2.1,
// 192.0.2.1:80, 2001:db8::1, [2001:db8::1] or [2001:db8::1]:80.
func hostAddr(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(s); err == nil {
		return canonical(a), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return canonical(ap.Addr()), true
	}
	if len(s) > 2 && s[0] == '[' && s[len(s)-1] == ']' {
		if a, err := netip.ParseAddr(s[1 : len(s)-1]); err == nil && a.Is6() {
			return canonical(a), true
		}
	}
	return netip.Addr{}, false
}

func trimOWS(s string) string { return strings.Trim(s, " \t") }

// appendAddrKey appends a's identity key: the address grouped by its
// family's prefix (2001:db8:1:2::/64), or the address alone at /32 and /128.
func (t *trust) appendAddrKey(b []byte, a netip.Addr) []byte {
	bits := t.v4
	if a.Is6() {
		bits = t.v6
	}
	if bits == a.BitLen() {
		return a.AppendTo(b)
	}
	p, _ := a.Prefix(bits)
	return p.AppendTo(b)
}
