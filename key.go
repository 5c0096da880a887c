package polite

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

// KeyBy says what a request's per-host state is keyed by.
type KeyBy int

const (
	// KeyHost keys by hostname: lower-cased, IDNA to ASCII, trailing dot and
	// default port dropped ("WWW.Example.COM.:443" → "www.example.com"). A
	// non-default port stays part of the key.
	KeyHost KeyBy = iota
	// KeyDomain keys by registrable domain (eTLD+1 from the public suffix
	// list): a.example.co.uk and b.example.co.uk share "example.co.uk". IP
	// addresses, localhost and single-label names key as themselves.
	KeyDomain
	// KeyIP keys by the lowest address the hostname resolves to (the
	// same whatever order the resolver returns them in), so virtual hosts
	// on one server share a budget.
	KeyIP
)

// String returns "host", "domain" or "ip".
func (k KeyBy) String() string {
	switch k {
	case KeyHost:
		return "host"
	case KeyDomain:
		return "domain"
	case KeyIP:
		return "ip"
	}
	return fmt.Sprintf("KeyBy(%d)", int(k))
}

// ParseKeyBy parses "host", "domain" or "ip".
func ParseKeyBy(s string) (KeyBy, error) {
	switch strings.ToLower(s) {
	case "host", "":
		return KeyHost, nil
	case "domain":
		return KeyDomain, nil
	case "ip":
		return KeyIP, nil
	}
	return 0, fmt.Errorf("polite: key %q: want host, domain or ip", s)
}

// ErrNoHost is returned (wrapped) for a URL without a host.
var ErrNoHost = errors.New("polite: URL has no host")

// HostKey returns the canonical host key of a URL's scheme and host[:port]:
// lower-case ASCII (IDNA), no trailing dot, no default port (80 for http, 443
// for https), IPv6 in canonical form inside brackets. It is idempotent:
// HostKey(scheme, HostKey(scheme, h)) == HostKey(scheme, h). For hosts already
// in canonical form it returns its argument without allocating.
func HostKey(scheme, hostport string) (string, error) {
	host, port := splitHostPort(hostport)
	if host == "" {
		return "", fmt.Errorf("%w: %q", ErrNoHost, hostport)
	}
	// "080" dials port 80: one host, one key (found through polite
	// proxy, issue 32, where each spelling had its own budget).
	for len(port) > 1 && port[0] == '0' {
		port = port[1:]
	}
	if isDefaultPort(scheme, port) {
		port = ""
	} else if !validPort(port) {
		return "", fmt.Errorf("polite: host %q: bad port %q", hostport, port)
	}
	if canonicalName(host) {
		if port == "" {
			return host, nil
		}
		if len(hostport) == len(host)+1+len(port) && hostport[len(host)] == ':' {
			return hostport, nil
		}
		return host + ":" + port, nil
	}
	h, err := normalizeHost(host)
	if err != nil {
		return "", err
	}
	if port != "" {
		if strings.IndexByte(h, ':') >= 0 {
			return "[" + h + "]:" + port, nil
		}
		return h + ":" + port, nil
	}
	if strings.IndexByte(h, ':') >= 0 {
		return "[" + h + "]", nil
	}
	return h, nil
}

// splitHostPort splits like url.URL.Hostname and Port, without allocating.
func splitHostPort(hostport string) (host, port string) {
	host = hostport
	if i := strings.LastIndexByte(host, ':'); i >= 0 && (host[0] != '[' || strings.IndexByte(host[i:], ']') < 0) {
		host, port = host[:i], host[i+1:]
	}
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	return host, port
}

func isDefaultPort(scheme, port string) bool {
	switch port {
	case "":
		return true
	case "80":
		return scheme == "http" || scheme == "ws"
	case "443":
		return scheme == "https" || scheme == "wss"
	}
	return false
}

func validPort(p string) bool {
	if len(p) == 0 || len(p) > 5 {
		return false
	}
	n := 0
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return false
		}
		n = n*10 + int(p[i]-'0')
	}
	return n >= 1 && n <= 65535 // port 0 is no destination
}

// canonicalName reports whether host is already a canonical DNS name: only
// [a-z0-9-.], labels that do not start or end with '-', no empty label, no
// trailing dot, no "xn--" label (those go through IDNA validation).
func canonicalName(host string) bool {
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

var idnaProfile = idna.New(
	idna.MapForLookup(),
	idna.Transitional(false),
	idna.BidiRule(),
	idna.StrictDomainName(false), // allow '_' as real hosts use it
)

// CanonicalHost returns a host name or address (no port, no brackets) as
// HostKey writes it: IDNA to ASCII, lower case, no trailing dot, an IPv4
// address in dotted form, an IPv6 one unmapped. Zoned addresses and names
// IDNA would not map back to themselves are refused. A crawl's URL
// normaliser (crawl/scope) uses it so that its hosts are HostKey's.
func CanonicalHost(host string) (string, error) {
	if canonicalName(host) {
		return host, nil
	}
	return normalizeHost(host)
}

func normalizeHost(host string) (string, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			return "", fmt.Errorf("polite: host %q: zoned addresses are not keyed", host)
		}
		return ip.Unmap().String(), nil
	}
	h := strings.TrimSuffix(host, ".")
	if h == "" || strings.HasSuffix(h, ".") {
		return "", fmt.Errorf("polite: host %q: empty label", host)
	}
	if !utf8.ValidString(h) {
		return "", fmt.Errorf("polite: host %q: not valid UTF-8", host)
	}
	a, err := idnaProfile.ToASCII(h)
	if err != nil {
		return "", fmt.Errorf("polite: host %q: %w", host, err)
	}
	a = strings.ToLower(a)
	// The key must be a fixed point, or two spellings of one host could key
	// apart: reject what IDNA maps to a label it would not accept back.
	if b, err := idnaProfile.ToASCII(a); err != nil || b != a {
		return "", fmt.Errorf("polite: host %q: IDNA form %q does not validate", host, a)
	}
	if a == "" || len(a) > 253 {
		return "", fmt.Errorf("polite: host %q: bad length", host)
	}
	for i := 0; i < len(a); i++ {
		c := a[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_') {
			return "", fmt.Errorf("polite: host %q: character %q not allowed", host, c)
		}
	}
	if strings.Contains(a, "..") || a[0] == '.' || a[len(a)-1] == '.' { // "xn--" maps to an empty label
		return "", fmt.Errorf("polite: host %q: empty label", host)
	}
	return a, nil
}

// wireHost returns hostport with its name in the form HostKey gives it
// (IDNA-mapped, so lower-cased, then to ASCII) and its port as it was, and
// true, when the name is not ASCII; "" and false otherwise, without
// allocating. net/http writes the Host field through Punycode alone, which
// keeps the case of the ASCII letters: "BÜCHER.example" went out as
// "xn--BCHER-2pa.example", another name than the "xn--bcher-kva.example"
// it was keyed and dialed as (issue 29, item 13).
func wireHost(hostport string) (string, bool) {
	ascii := true
	for i := 0; i < len(hostport) && ascii; i++ {
		ascii = hostport[i] < utf8.RuneSelf
	}
	if ascii {
		return "", false
	}
	host, port := splitHostPort(hostport)
	h, err := normalizeHost(host)
	if err != nil || strings.IndexByte(h, ':') >= 0 {
		return "", false // not a name: left for net/http to refuse
	}
	if port != "" || strings.HasSuffix(hostport, ":") {
		return h + ":" + port, true
	}
	return h, true
}

// DomainKey returns the registrable domain of a canonical host key (from
// HostKey): its eTLD+1, without the port. IP addresses, localhost, single
// labels and public suffixes themselves key as the hostname.
func DomainKey(hostKey string) string {
	host, _ := splitHostPort(hostKey)
	if strings.IndexByte(host, '.') < 0 || strings.IndexByte(host, ':') >= 0 {
		return host // localhost, single label, IPv6
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return host
	}
	d, err := publicsuffix.EffectiveTLDPlusOne(host)
	if err != nil {
		return host
	}
	return d
}

// Keyer turns a request URL into the key of its per-host state. The zero
// Keyer keys by host. A Keyer is safe for concurrent use; KeyIP caches
// resolutions for TTL.
type Keyer struct {
	By       KeyBy
	Resolver *net.Resolver // for KeyIP; nil means net.DefaultResolver
	TTL      time.Duration // how long KeyIP trusts a resolution; zero means 5 minutes

	ips   sync.Map     // host key → ipEntry
	swept atomic.Int64 // when expired entries were last dropped, UnixNano
}

type ipEntry struct {
	ip      string
	expires time.Time
}

// Key returns u's key. It fails for a URL without a host, a host that is not
// a valid name or address, or (KeyIP) a name that does not resolve; the error
// names the host.
func (k *Keyer) Key(ctx context.Context, u *url.URL) (string, error) {
	if u == nil {
		return "", fmt.Errorf("%w: nil URL", ErrNoHost)
	}
	hk, err := HostKey(u.Scheme, u.Host)
	if err != nil {
		return "", err
	}
	switch k.By {
	case KeyDomain:
		return DomainKey(hk), nil
	case KeyIP:
		return k.ipKey(ctx, hk)
	}
	return hk, nil
}

// cached returns the key of a canonical host key hk when it is known
// without a lookup: always for KeyHost and KeyDomain, and for KeyIP when hk
// is an address or its name resolved within the TTL.
func (k *Keyer) cached(hk string) (string, bool) {
	switch k.By {
	case KeyDomain:
		return DomainKey(hk), true
	case KeyIP:
		host, _ := splitHostPort(hk)
		if ip, err := netip.ParseAddr(host); err == nil {
			return ip.String(), true
		}
		if v, ok := k.ips.Load(host); ok {
			if e := v.(ipEntry); time.Now().Before(e.expires) {
				return e.ip, true
			}
		}
		return "", false
	}
	return hk, true
}

func (k *Keyer) ipKey(ctx context.Context, hk string) (string, error) {
	host, _ := splitHostPort(hk)
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.String(), nil
	}
	now := time.Now()
	if v, ok := k.ips.Load(host); ok {
		if e := v.(ipEntry); now.Before(e.expires) {
			return e.ip, nil
		}
	}
	r := k.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return "", fmt.Errorf("polite: key by ip: %w", err)
	}
	if len(addrs) == 0 {
		return "", fmt.Errorf("polite: key by ip: host %q has no address", host)
	}
	best := addrs[0].Unmap()
	for _, a := range addrs[1:] {
		if a = a.Unmap(); a.Less(best) {
			best = a
		}
	}
	ttl := k.TTL
	if ttl <= 0 {
		ttl = 5 * time.Minute
	}
	ip := best.String()
	k.ips.Store(host, ipEntry{ip: ip, expires: now.Add(ttl)})
	if last := k.swept.Load(); now.UnixNano()-last >= int64(ttl) && k.swept.CompareAndSwap(last, now.UnixNano()) {
		k.sweep(now)
	}
	return ip, nil
}

// sweep drops the resolutions expired at now, so that a long crawl over
// many names keeps only those of about the last two TTLs. One resolution in
// a TTL runs it, off the cached path.
func (k *Keyer) sweep(now time.Time) {
	k.ips.Range(func(host, v any) bool {
		if !now.Before(v.(ipEntry).expires) {
			k.ips.CompareAndDelete(host, v)
		}
		return true
	})
}
