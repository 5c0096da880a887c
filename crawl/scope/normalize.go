package scope

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"unicode"

	"github.com/polite-go/polite"
)

// NormOptions tune Normalize. The zero value keeps every query parameter in
// the order given.
type NormOptions struct {
	// StripParams are query parameter names removed from the query: exact
	// names ("fbclid"), or a prefix when the entry ends in '*' ("utm_*").
	// A name is compared case-sensitively, after its percent-encoding is
	// normalised ("utm%5Fsource" is "utm_source"). Nil strips nothing; use
	// DefaultStripParams for the usual trackers.
	StripParams []string
	// SortQuery sorts the query's parameters by name, keeping the order of
	// parameters with equal names. Off by default: the order can matter to
	// the server.
	SortQuery bool
}

// DefaultStripParams are the tracking parameters a crawl usually strips:
// Google Analytics campaign tags (utm_*), click ids of Facebook, Google
// Ads, Microsoft Ads and Yandex (fbclid, gclid, msclkid, yclid), Mailchimp
// campaign and member ids (mc_cid, mc_eid) and Google's cross-domain
// linker (_ga). They name a visit, not a page. Session ids (PHPSESSID,
// jsessionid, sid) are not in the list: some sites need them to serve the
// page at all, so stripping them is a choice to make per crawl.
var DefaultStripParams = []string{"utm_*", "fbclid", "gclid", "msclkid", "mc_cid", "mc_eid", "_ga", "yclid"}

// The common refusals are sentinels, so that Check allocates nothing for
// the mailto: and javascript: links every page has.
var (
	errScheme = errors.New("not an absolute http or https URL")
	errNoHost = errors.New("no host")
)

// Normalize returns the form of raw that a crawl deduplicates by, or an
// error naming raw and what is wrong with it. The package documentation
// lists the rules. Normalize is idempotent, and a URL already in normal
// form is returned as it is, without allocating when it is at most 512
// bytes long and its host is not an IDN.
func Normalize(raw string, o NormOptions) (string, error) {
	n, err := normalize(raw, &o)
	if err != nil {
		return "", fmt.Errorf("scope: URL %s: %w", quote(raw), err)
	}
	return n, nil
}

// quote quotes s for an error message, cut to its first 200 bytes: a
// discovered link is outside input and can be megabytes long.
func quote(s string) string {
	const max = 200
	if len(s) > max {
		return fmt.Sprintf("%q…", s[:max])
	}
	return fmt.Sprintf("%q", s)
}

func normalize(raw string, o *NormOptions) (string, error) {
	var buf [512]byte // on the stack: most URLs are shorter
	b, err := appendNormal(buf[:0], raw, o)
	if err != nil {
		return "", err
	}
	if string(b) == raw {
		return raw, nil
	}
	return string(b), nil
}

// appendNormal appends the normal form of raw to b.
func appendNormal(b []byte, raw string, o *NormOptions) ([]byte, error) {
	// As browsers do (WHATWG URL §4.4): leading and trailing spaces and
	// controls are dropped, and tabs and newlines removed anywhere; an href
	// split over lines means the URL without the line breaks.
	s := strings.TrimFunc(raw, func(r rune) bool { return r <= ' ' || unicode.IsSpace(r) })
	if strings.ContainsAny(s, "\t\n\r") {
		c := make([]byte, 0, len(s))
		for i := 0; i < len(s); i++ {
			if s[i] != '\t' && s[i] != '\n' && s[i] != '\r' {
				c = append(c, s[i]) // bytewise: invalid UTF-8 stays as it is
			}
		}
		s = string(c)
	}

	colon := strings.IndexByte(s, ':')
	if colon <= 0 {
		return nil, errScheme
	}
	// The lengths keep EqualFold to ASCII: it folds "ſ" (U+017F) to "s".
	def := 0
	switch scheme := s[:colon]; {
	case len(scheme) == 4 && strings.EqualFold(scheme, "http"):
		b, def = append(b, "http://"...), 80
	case len(scheme) == 5 && strings.EqualFold(scheme, "https"):
		b, def = append(b, "https://"...), 443
	default:
		return nil, errScheme
	}
	s = s[colon+1:]
	// "http:\\host" is "http://host" to a browser; "http:host" and
	// "http:/host" are refused.
	if len(s) < 2 || !isSlash(s[0]) || !isSlash(s[1]) {
		return nil, errNoHost
	}
	s = s[2:]

	end := len(s)
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '/' || c == '\\' || c == '?' || c == '#' {
			end = i
			break
		}
	}
	auth := s[:end]
	s = s[end:]
	// Credentials in a discovered link are never kept.
	if at := strings.LastIndexByte(auth, '@'); at >= 0 {
		auth = auth[at+1:]
	}
	var err error
	if b, err = appendAuthority(b, auth, def); err != nil {
		return nil, err
	}

	if i := strings.IndexByte(s, '#'); i >= 0 {
		s = s[:i]
	}
	path, query, hasQuery := strings.Cut(s, "?")

	ps := len(b)
	var bad string
	if b, bad = appendEscaped(b, path, cPath); bad != "" {
		return nil, fmt.Errorf("bad percent-escape %q in the path", bad)
	}
	switch {
	case len(b) == ps:
		b = append(b, '/')
	case hasDotSegment(b[ps:]):
		b = b[:ps+removeDots(b[ps:])]
	}

	if !hasQuery {
		return b, nil
	}
	b = append(b, '?')
	qs := len(b)
	if b, bad = appendEscaped(b, query, cQuery); bad != "" {
		return nil, fmt.Errorf("bad percent-escape %q in the query", bad)
	}
	b = b[:qs+compactQuery(b[qs:], o.StripParams)]
	if o.SortQuery {
		sortQuery(b[qs:])
	}
	if len(b) == qs {
		b = b[:qs-1] // "?" alone
	}
	return b, nil
}

func isSlash(c byte) bool { return c == '/' || c == '\\' }

// Character classes of RFC 3986 Appendix A.
const (
	cUnreserved = 1 << iota // ALPHA DIGIT - . _ ~
	cPath                   // left as is in a path: pchar and '/'
	cQuery                  // left as is in a query: pchar, '/' and '?'
	cHex
)

var class = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~", byte(c)) >= 0 {
			t[c] |= cUnreserved | cPath | cQuery
		}
		if strings.IndexByte("!$&'()*+,;=:@/", byte(c)) >= 0 { // sub-delims, ':', '@', '/'
			t[c] |= cPath | cQuery
		}
		if '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' {
			t[c] |= cHex
		}
	}
	t['?'] |= cQuery
	return t
}()

const upperHex = "0123456789ABCDEF"

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// appendEscaped appends s to b with its percent-encoding normalised (RFC
// 3986 §6.2.2): an escaped unreserved character decoded, the hex digits of
// the other escapes in upper case, and every byte not of class keep
// escaped. In a path (class cPath) a backslash is a '/', as in a browser.
// An escape that is not '%' and two hex digits is returned as bad.
func appendEscaped(b []byte, s string, keep uint8) (_ []byte, bad string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%':
			if i+2 >= len(s) || class[s[i+1]]&cHex == 0 || class[s[i+2]]&cHex == 0 {
				return b, s[i:min(i+3, len(s))]
			}
			v := unhex(s[i+1])<<4 | unhex(s[i+2])
			if class[v]&cUnreserved != 0 {
				b = append(b, v)
			} else {
				b = append(b, '%', upperHex[v>>4], upperHex[v&15])
			}
			i += 2
		case class[c]&keep != 0:
			b = append(b, c)
		case c == '\\' && keep == cPath:
			b = append(b, '/')
		default:
			b = append(b, '%', upperHex[c>>4], upperHex[c&15])
		}
	}
	return b, ""
}

// hasDotSegment reports whether the path p has a "." or ".." segment.
func hasDotSegment(p []byte) bool {
	for i := 0; i < len(p); i++ {
		if p[i] != '.' || i > 0 && p[i-1] != '/' {
			continue
		}
		j := i + 1
		if j < len(p) && p[j] == '.' {
			j++
		}
		if j == len(p) || p[j] == '/' {
			return true
		}
	}
	return false
}

// removeDots removes, in place, the dot segments of the absolute path p,
// as RFC 3986 §5.2.4 does, and returns the length of what is left. Unlike
// path.Clean it keeps empty segments ("a//b"). It gives what redisstore's
// removeDots gives (a test checks), without allocating: the output is
// written behind the segment being read.
func removeDots(p []byte) int {
	w, n := 1, 0 // p[:w] is "/" and the n segments kept, joined by '/'
	push := func(seg []byte) {
		if n > 0 {
			p[w] = '/'
			w++
		}
		w += copy(p[w:], seg)
		n++
	}
	for r := 1; ; {
		e := r
		for e < len(p) && p[e] != '/' {
			e++
		}
		seg, last := p[r:e], e == len(p)
		switch {
		case len(seg) == 1 && seg[0] == '.':
			if last {
				push(nil)
			}
		case len(seg) == 2 && seg[0] == '.' && seg[1] == '.':
			switch n {
			case 0:
			case 1:
				w, n = 1, 0
			default:
				w, n = bytes.LastIndexByte(p[:w], '/'), n-1
			}
			if last {
				push(nil)
			}
		default:
			push(seg)
		}
		if last {
			return w
		}
		r = e + 1
	}
}

// compactQuery drops, in place, the empty parameters of the normalised
// query q ("a=1&&b=2") and those whose names strip matches, and returns the
// length of what is left. Parameters are separated by '&' only: ';' is part
// of a name or value, as in WHATWG URLSearchParams.
func compactQuery(q []byte, strip []string) int {
	w := 0
	for r := 0; r <= len(q); {
		e := r
		for e < len(q) && q[e] != '&' {
			e++
		}
		if p := q[r:e]; len(p) > 0 && !stripped(paramName(p), strip) {
			if w > 0 {
				q[w] = '&'
				w++
			}
			w += copy(q[w:], p)
		}
		r = e + 1
	}
	return w
}

func paramName(p []byte) []byte {
	for i, c := range p {
		if c == '=' {
			return p[:i]
		}
	}
	return p
}

func stripped(name []byte, strip []string) bool {
	for _, s := range strip {
		if n := len(s) - 1; n >= 0 && s[n] == '*' {
			if len(name) >= n && string(name[:n]) == s[:n] {
				return true
			}
		} else if string(name) == s {
			return true
		}
	}
	return false
}

// sortQuery sorts, in place, the parameters of the compacted query q by
// name, stably.
func sortQuery(q []byte) {
	if len(q) == 0 {
		return
	}
	ps := strings.Split(string(q), "&")
	if len(ps) < 2 {
		return
	}
	slices.SortStableFunc(ps, func(a, b string) int {
		return strings.Compare(nameOf(a), nameOf(b))
	})
	w := 0
	for i, p := range ps {
		if i > 0 {
			q[w] = '&'
			w++
		}
		w += copy(q[w:], p)
	}
}

func nameOf(p string) string {
	n, _, _ := strings.Cut(p, "=")
	return n
}

// appendAuthority appends the normal form of host[:port] to b: see the
// package documentation. def is the scheme's default port, dropped; 0 drops
// none.
func appendAuthority(b []byte, auth string, def int) ([]byte, error) {
	var host, port string
	if strings.HasPrefix(auth, "[") {
		j := strings.IndexByte(auth, ']')
		if j < 0 {
			return nil, fmt.Errorf("host %q: no closing ']'", auth)
		}
		host, port = auth[1:j], auth[j+1:]
		if port != "" {
			if port[0] != ':' {
				return nil, fmt.Errorf("host %q: text after ']'", auth)
			}
			port = port[1:]
		}
		if strings.IndexByte(host, '%') >= 0 {
			// A zone names an interface of the machine that reads the
			// link; from a page on the web it means nothing or an attempt
			// on the crawler's own network.
			return nil, fmt.Errorf("host %q: IPv6 zones are refused", auth)
		}
		ip, err := netip.ParseAddr(host)
		if err != nil || !ip.Is6() {
			return nil, fmt.Errorf("host %q: not an IPv6 address", auth)
		}
		if ip = ip.Unmap(); ip.Is4() {
			b = ip.AppendTo(b)
		} else {
			b = append(b, '[')
			b = ip.AppendTo(b)
			b = append(b, ']')
		}
	} else {
		host = auth
		if i := strings.LastIndexByte(auth, ':'); i >= 0 {
			host, port = auth[:i], auth[i+1:]
		}
		if host == "" {
			return nil, errNoHost
		}
		if canonicalName(host) {
			b = append(b, host...)
		} else if h, ok := appendLower(b, host); ok {
			b = h
		} else {
			h, err := normalizeHost(host)
			if err != nil {
				return nil, err
			}
			b = append(b, h...)
		}
	}

	if port == "" {
		return b, nil
	}
	for i := 0; i < len(port); i++ {
		if port[i] < '0' || port[i] > '9' {
			return nil, fmt.Errorf("bad port %q", port)
		}
	}
	// "080" is port 80: one host, one URL (polite.HostKey does the same).
	for len(port) > 1 && port[0] == '0' {
		port = port[1:]
	}
	n := 0
	for i := 0; i < len(port) && n <= 65535; i++ {
		n = n*10 + int(port[i]-'0')
	}
	if n < 1 || n > 65535 {
		return nil, fmt.Errorf("bad port %q", port)
	}
	if n == def {
		return b, nil
	}
	b = append(b, ':')
	return append(b, port...), nil
}

// appendLower appends host to b in lower case and without its trailing
// dot, and reports whether that is a canonical name (canonicalName): a
// host in upper case then needs neither IDNA nor an allocation.
func appendLower(b []byte, host string) ([]byte, bool) {
	start := len(b)
	for i := 0; i < len(host); i++ {
		c := host[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	if len(b) > start && b[len(b)-1] == '.' {
		b = b[:len(b)-1]
	}
	return b, canonicalName(b[start:])
}

// canonicalName reports whether host is already a canonical DNS name: only
// [a-z0-9-.], labels that do not start or end with '-', no empty label, no
// trailing dot, no "xn--" label (those go through IDNA validation). It is
// polite.CanonicalHost's fast path, on bytes too, so that a URL already
// normal is read without an allocation; the rest is CanonicalHost's.
func canonicalName[T string | []byte](host T) bool {
	if len(host) == 0 || len(host) > 253 {
		return false
	}
	start := 0
	for i := 0; i <= len(host); i++ {
		if i == len(host) || host[i] == '.' {
			n := i - start
			if n == 0 || n > 63 || host[start] == '-' || host[i-1] == '-' {
				return false
			}
			if n >= 4 && host[start+2] == '-' && host[start+3] == '-' {
				return false
			}
			start = i + 1
			continue
		}
		c := host[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// normalizeHost returns a name or IPv4 address (not in brackets) in the
// form polite.HostKey gives it: percent-escapes decoded (as browsers do),
// the trailing dot dropped, IDNA to ASCII, lower case.
func normalizeHost(host string) (string, error) {
	h := host
	if strings.IndexByte(h, '%') >= 0 {
		var b []byte
		for i := 0; i < len(h); i++ {
			if h[i] != '%' {
				b = append(b, h[i])
				continue
			}
			if i+2 >= len(h) || class[h[i+1]]&cHex == 0 || class[h[i+2]]&cHex == 0 {
				return "", fmt.Errorf("host %q: bad percent-escape %q", host, h[i:min(i+3, len(h))])
			}
			b = append(b, unhex(h[i+1])<<4|unhex(h[i+2]))
			i += 2
		}
		h = string(b)
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		if !ip.Is4() {
			return "", fmt.Errorf("host %q: an IPv6 address must be in brackets", host)
		}
		return ip.String(), nil
	}
	h = strings.TrimSuffix(h, ".")
	if h == "" || strings.HasSuffix(h, ".") {
		return "", fmt.Errorf("host %q: empty label", host)
	}
	if l := strings.ToLower(h); canonicalName(l) {
		return l, nil
	}
	a, err := polite.CanonicalHost(h)
	if err != nil {
		return "", fmt.Errorf("host %q: %w", host, err)
	}
	return a, nil
}
