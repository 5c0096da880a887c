package polite

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
)

// ErrNotPublic is returned (wrapped) for a connection refused because its
// address is not public (see IsPublic).
var ErrNotPublic = errors.New("polite: destination address is not public")

// nonPublic are the IPv4 and IPv6 ranges IsPublic refuses beyond those the
// netip methods name (loopback, private, link-local, multicast,
// unspecified): shared address space, benchmarking, documentation,
// reserved, and the IPv6 forms that embed an IPv4 address.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),   // RFC 6598 carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // RFC 6890 IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // RFC 5737 documentation
	netip.MustParsePrefix("198.18.0.0/15"),   // RFC 2544 benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // RFC 5737
	netip.MustParsePrefix("203.0.113.0/24"),  // RFC 5737
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and broadcast
	netip.MustParsePrefix("::/96"),           // IPv4-compatible (deprecated)
	netip.MustParsePrefix("64:ff9b::/96"),    // RFC 6052 NAT64: reaches any IPv4
	netip.MustParsePrefix("64:ff9b:1::/48"),  // RFC 8215 local-use NAT64
	netip.MustParsePrefix("100::/64"),        // RFC 6666 discard
	netip.MustParsePrefix("2001:db8::/32"),   // RFC 3849 documentation
	netip.MustParsePrefix("2002::/16"),       // 6to4: embeds any IPv4
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated)
}

// IsPublic reports whether a is a public unicast address: not loopback,
// private (RFC 1918, fc00::/7), link-local (169.254.0.0/16, where cloud
// metadata services listen; fe80::/10), unspecified, multicast, shared
// (100.64.0.0/10), documentation, benchmarking or reserved. An
// IPv4-mapped IPv6 address (::ffff:a.b.c.d) is judged as its IPv4
// address; forms that embed an IPv4 address by other rules (6to4, NAT64,
// IPv4-compatible) are refused.
func IsPublic(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// PublicDialer returns a net.Dialer that refuses to connect to an address
// that is not public (IsPublic), unless allow (when not nil) admits it
// (IPv4-mapped addresses come to it unmapped).
// The check runs in the Dialer's Control, on the address about to be
// connected to, after name resolution: so no spelling of a host (decimal
// 2130706433, octal, an IPv4-mapped [::ffff:169.254.169.254]) and no DNS
// answer that changes between a check and the dial (rebinding) gets
// around it, and a redirect is checked like any other destination. Use its
// DialContext as an http.Transport's.
func PublicDialer(allow func(netip.AddrPort) bool) *net.Dialer {
	return &net.Dialer{
		Timeout:   30e9, // http.DefaultTransport's
		KeepAlive: 30e9,
		Control: func(network, address string, _ syscall.RawConn) error {
			return checkPublic(address, allow)
		},
	}
}

func checkPublic(address string, allow func(netip.AddrPort) bool) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %q", ErrNotPublic, address)
	}
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	if !IsPublic(ap.Addr()) && (allow == nil || !allow(ap)) {
		return fmt.Errorf("%w: %s", ErrNotPublic, ap.Addr())
	}
	return nil
}

// publicBase returns base made to connect only to public addresses (see
// Transport.PublicOnly). nil becomes a clone of http.DefaultTransport
// dialing through PublicDialer, as does an *http.Transport without a
// DialContext of its own; one with its own DialContext keeps it, and each
// connection's remote address is checked before anything is sent on it.
// Any other RoundTripper cannot be made so, and is an error.
func publicBase(base http.RoundTripper) (http.RoundTripper, error) {
	var ht *http.Transport
	switch b := base.(type) {
	case nil:
		ht = http.DefaultTransport.(*http.Transport).Clone()
		ht.DialContext = nil
	case *http.Transport:
		ht = b.Clone()
	default:
		return nil, fmt.Errorf("polite: PublicOnly needs a nil Base or an *http.Transport, not %T: dial through PublicDialer in yours", base)
	}
	dial := ht.DialContext
	if dial == nil {
		ht.DialContext = PublicDialer(nil).DialContext
		return ht, nil
	}
	ht.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if err := checkPublic(c.RemoteAddr().String(), nil); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	}
	return ht, nil
}
