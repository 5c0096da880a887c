package links

import (
	"bytes"
	"net/url"
	"strings"
)

// hasOtherScheme reports whether v starts with a scheme other than http or
// https (RFC 3986 §3.1).
func hasOtherScheme(v []byte) bool {
	for i, c := range v {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case c == ':' && i > 0:
			s := v[:i]
			return !equalFold(s, "http") && !equalFold(s, "https")
		default:
			return false
		}
	}
	return false
}

// status is the outcome of resolving a reference.
type status uint8

const (
	resolved status = iota
	dropped         // another scheme: not counted
	bad             // does not parse or has no host: counted in Page.Bad
)

// baseURL is a base URL, with the parts the fast path of resolve needs.
type baseURL struct {
	u *url.URL
	// fast is false when resolve must always take net/url's way: the
	// base is no http(s) URL with a host.
	fast   bool
	prefix string // scheme://userinfo@host
	path   []byte // escaped path
	dir    []byte // path up to its last '/'
	query  string // the raw query, with '?' when there is one
}

func newBase(u *url.URL) baseURL {
	b := baseURL{u: u}
	if !fetchable(u) {
		return b
	}
	b.prefix = (&url.URL{Scheme: u.Scheme, User: u.User, Host: u.Host}).String()
	b.path = []byte(u.EscapedPath())
	b.dir = b.path[:bytes.LastIndexByte(b.path, '/')+1]
	if u.RawQuery != "" { // net/url drops a bare '?' of the base
		b.query = "?" + escapeQuery(u.RawQuery)
	}
	b.fast = true
	return b
}

// String formats the base without its fragment.
func (b *baseURL) String() string {
	u := b.u
	if u.Fragment == "" && u.RawFragment == "" {
		return u.String()
	}
	v := *u
	v.Fragment, v.RawFragment = "", ""
	return v.String()
}

// resolve resolves ref against b (RFC 3986 §5.2) and formats the result
// without its fragment, percent-encoding in the query what a browser
// would. It takes net/url's way, which allocates half a dozen times, unless
// ref is simple enough for fastResolve; out is its scratch buffer.
func (b *baseURL) resolve(ref []byte, out *[]byte) (string, status) {
	if b.fast {
		if s, ok := b.fastResolve(ref, out); ok {
			return s, resolved
		}
	}
	return b.slowResolve(ref)
}

// slowResolve is resolve by net/url.
func (b *baseURL) slowResolve(ref []byte) (string, status) {
	if i := bytes.IndexByte(ref, '#'); i >= 0 {
		// The fragment is dropped: a bad escape in it ("x#%") does not
		// make the link bad.
		ref = ref[:i]
	}
	r, err := url.Parse(string(ref))
	if err != nil {
		return "", bad
	}
	if r.Scheme != "" && r.Scheme != "http" && r.Scheme != "https" {
		return "", dropped
	}
	if r.Host == "" && len(ref) >= 2 && ref[0] == '/' && ref[1] == '/' {
		// "//" or "///x": an empty authority, no host to fetch from
		// (net/url would resolve "//" to the page itself).
		return "", bad
	}
	u := b.u.ResolveReference(r)
	if !fetchable(u) {
		return "", bad
	}
	u.Fragment, u.RawFragment = "", ""
	u.RawQuery = escapeQuery(u.RawQuery)
	s := u.String()
	if _, err := url.Parse(s); err != nil {
		// net/url reads some references it cannot write back:
		// "//::" becomes "https://::", an invalid port.
		return "", bad
	}
	return s, resolved
}

// fetchable reports whether u is an http(s) URL with a host, which rules
// out "http:x" and "http:///x". It also rules out the '<', '>' and '"'
// that net/url takes in a host name and browsers do not (WHATWG URL's
// forbidden host code points).
func fetchable(u *url.URL) bool {
	return u.Host != "" && u.Opaque == "" && (u.Scheme == "http" || u.Scheme == "https") &&
		!strings.ContainsAny(u.Host, "<>\"")
}

// plain marks the bytes that fastResolve copies as they are: the printable
// ASCII that net/url neither escapes in a path nor rejects, minus '%' in
// paths (checked apart), '\” (escaped in queries) and the delimiters
// '?' and '#'.
var plain = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range []byte("-._~!$&()*+,;=:@/[]") {
		t[c] = true
	}
	return t
}()

// fastResolve resolves the common references without net/url, with one
// allocation: relative references and absolute http(s) URLs with a plain
// host, made of plain bytes and valid percent-escapes. For those it gives
// what slowResolve gives (FuzzResolve checks this); for others it reports
// false.
func (b *baseURL) fastResolve(ref []byte, out *[]byte) (string, bool) {
	if i := bytes.IndexByte(ref, '#'); i >= 0 {
		ref = ref[:i]
	}
	path, query, hasQuery := bytes.Cut(ref, []byte("?"))
	for i := 0; i < len(path); i++ {
		if c := path[i]; !plain[c] && (c != '%' || i+2 >= len(path) || !isHex(path[i+1]) || !isHex(path[i+2])) {
			return "", false
		}
	}
	for _, c := range query {
		if !plain[c] && c != '%' && c != '?' {
			return "", false
		}
	}
	o := (*out)[:0]
	switch {
	case bytes.HasPrefix(path, []byte("http://")) || bytes.HasPrefix(path, []byte("https://")):
		// Absolute, with a host of letters, digits, dots and hyphens
		// and an optional port.
		s := bytes.Index(path, []byte("://")) + 3
		e := s
		for e < len(path) && (isAlnum(path[e]) || path[e] == '.' || path[e] == '-') {
			e++
		}
		if e == s {
			return "", false
		}
		if e < len(path) && path[e] == ':' {
			e++
			if e == len(path) || !isDigit(path[e]) {
				return "", false
			}
			for e < len(path) && isDigit(path[e]) {
				e++
			}
		}
		if e < len(path) && path[e] != '/' {
			return "", false
		}
		o = append(o, path[:e]...)
		o = appendPath(o, path[e:], nil)
	case bytes.HasPrefix(path, []byte("//")):
		return "", false
	default:
		if i := bytes.IndexAny(path, ":/"); i >= 0 && path[i] == ':' {
			return "", false // a scheme, or not a reference at all
		}
		o = append(o, b.prefix...)
		switch {
		case len(path) == 0:
			o = appendPath(o, b.path, nil)
			if !hasQuery {
				o = append(o, b.query...)
			}
		case path[0] == '/':
			o = appendPath(o, path, nil)
		default:
			o = appendPath(o, b.dir, path)
		}
	}
	if hasQuery {
		o = append(o, '?')
		o = append(o, query...)
	}
	*out = o
	return string(o), true
}

// appendPath appends to dst the path dir+ref with its dot segments
// removed: net/url's resolvePath (RFC 3986 §5.2.4 as Go does it), without
// allocating when dst has room.
func appendPath(dst, dir, ref []byte) []byte {
	if len(dir)+len(ref) == 0 {
		return dst
	}
	start := len(dst)
	dst = append(dst, '/')
	first := true
	var elem []byte
	// Walk the segments of dir+ref without joining them: dir is empty
	// or ends in '/', so a segment never spans the two.
	for _, part := range [2][]byte{dir, ref} {
		if len(part) == 0 {
			continue
		}
		if len(dir) > 0 && len(ref) > 0 && &part[0] == &dir[0] {
			part = part[:len(part)-1] // the '/' between them is the next Cut's
		}
		rest, found := part, true
		for found {
			elem, rest, found = bytes.Cut(rest, []byte("/"))
			switch {
			case len(elem) == 1 && elem[0] == '.':
				first = false
			case len(elem) == 2 && elem[0] == '.' && elem[1] == '.':
				if i := bytes.LastIndexByte(dst[start+1:], '/'); i >= 0 {
					dst = dst[:start+1+i]
				} else {
					dst = dst[:start+1]
				}
				first = len(dst) == start+1
			default:
				if !first {
					dst = append(dst, '/')
				}
				dst = append(dst, elem...)
				first = false
			}
		}
	}
	if len(elem) == 1 && elem[0] == '.' || len(elem) == 2 && elem[0] == '.' && elem[1] == '.' {
		dst = append(dst, '/')
	}
	// We wrote an initial '/', but we don't want two.
	if len(dst) > start+1 && dst[start+1] == '/' {
		copy(dst[start:], dst[start+1:])
		dst = dst[:len(dst)-1]
	}
	return dst
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isAlnum(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// escapeQuery percent-encodes the bytes of a query that a browser encodes
// (WHATWG URL's special-query percent-encode set: controls, space, '"',
// '#', '\”, '<', '>' and non-ASCII) and that would not survive a request
// line.
func escapeQuery(q string) string {
	n := 0
	for i := 0; i < len(q); i++ {
		if queryEscaped(q[i]) {
			n++
		}
	}
	if n == 0 {
		return q
	}
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len(q)+2*n)
	for i := 0; i < len(q); i++ {
		c := q[i]
		if queryEscaped(c) {
			b = append(b, '%', hex[c>>4], hex[c&15])
		} else {
			b = append(b, c)
		}
	}
	return string(b)
}

func queryEscaped(c byte) bool {
	return c <= ' ' || c >= 0x7f || c == '"' || c == '#' || c == '\'' || c == '<' || c == '>'
}
