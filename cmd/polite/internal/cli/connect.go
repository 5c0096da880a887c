package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
)

// connectTo is what --resolve and --connect-to say, as curl's flags do:
// where to connect for a host and port named in URLs, the URLs themselves
// (Host header, TLS server name, per-host state, robots.txt) unchanged. It
// makes `polite testbed`'s named hosts reachable: polite fetch --connect-to
// ::127.0.0.1:8080 urls.txt.
type connectTo struct {
	rules []connectRule
}

// connectRule sends connections for host:port (either empty: any) to
// one of its targets, tried in order.
type connectRule struct {
	host string // lower case; "" matches any host
	port string // "" matches any port
	to   []target
}

// target is where a rule connects: an empty host or port is the URL's.
type target struct{ host, port string }

// addResolve adds a --resolve HOST:PORT:ADDR[,ADDR...] value.
func (c *connectTo) addResolve(v string) error {
	// pflag's error names the flag and the value; this says what is wrong.
	bad := func(why string) error { return fmt.Errorf("%s (want HOST:PORT:ADDR[,ADDR...])", why) }
	host, rest, ok := strings.Cut(v, ":")
	switch {
	case !ok:
		return bad("no port and no address")
	case host == "":
		return bad("no host")
	}
	port, list, ok := strings.Cut(rest, ":")
	if !ok {
		return bad("no address")
	}
	if err := checkPort(port); err != nil || port == "" {
		return bad("port must be 1 to 65535")
	}
	r := connectRule{host: strings.ToLower(host), port: port}
	if host == "*" {
		r.host = ""
	}
	for a := range strings.SplitSeq(list, ",") {
		a = strings.TrimSuffix(strings.TrimPrefix(a, "["), "]")
		ip, err := netip.ParseAddr(a)
		if err != nil {
			return bad(fmt.Sprintf("%q is not an IP address", a))
		}
		r.to = append(r.to, target{ip.String(), port})
	}
	c.rules = append(c.rules, r)
	return nil
}

// addConnectTo adds a --connect-to HOST1:PORT1:HOST2:PORT2 value; an empty
// HOST1 or PORT1 matches any, an empty HOST2 or PORT2 keeps the URL's.
func (c *connectTo) addConnectTo(v string) error {
	bad := func(why string) error {
		return fmt.Errorf("%s (want HOST1:PORT1:HOST2:PORT2, fields may be empty)", why)
	}
	parts, err := splitConnect(v)
	if err != nil {
		return bad(err.Error())
	}
	for _, p := range []string{parts[1], parts[3]} {
		if err := checkPort(p); err != nil {
			return bad(err.Error())
		}
	}
	r := connectRule{host: strings.ToLower(parts[0]), port: parts[1], to: []target{{parts[2], parts[3]}}}
	c.rules = append(c.rules, r)
	return nil
}

// splitConnect splits HOST1:PORT1:HOST2:PORT2 where either host may be an
// IPv6 address in brackets.
func splitConnect(v string) ([4]string, error) {
	var out [4]string
	for i := range out {
		if i > 0 {
			if v == "" || v[0] != ':' {
				return out, errors.New("want four fields separated by ':'")
			}
			v = v[1:]
		}
		if (i == 0 || i == 2) && strings.HasPrefix(v, "[") {
			end := strings.IndexByte(v, ']')
			if end < 0 {
				return out, errors.New("unclosed '['")
			}
			out[i], v = v[1:end], v[end+1:]
			if _, err := netip.ParseAddr(out[i]); err != nil {
				return out, fmt.Errorf("%q in brackets is not an IPv6 address", out[i])
			}
			continue
		}
		end := strings.IndexByte(v, ':')
		switch {
		case i == 3 && end >= 0:
			return out, errors.New("more than four fields")
		case i == 3:
			end = len(v)
		case end < 0:
			return out, errors.New("want four fields separated by ':'")
		}
		out[i], v = v[:end], v[end:]
	}
	if v != "" {
		return out, errors.New("more than four fields")
	}
	return out, nil
}

func checkPort(p string) error {
	if p == "" {
		return nil
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q must be 1 to 65535", p)
	}
	return nil
}

// targets returns where to connect for address (host:port as the URL has
// it), and whether a rule said so.
func (c *connectTo) targets(address string) ([]string, bool) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, false
	}
	host = strings.ToLower(host)
	for _, r := range c.rules {
		if (r.host != "" && r.host != host) || (r.port != "" && r.port != port) {
			continue
		}
		out := make([]string, 0, len(r.to))
		for _, t := range r.to {
			h2, p2 := cmp.Or(t.host, host), cmp.Or(t.port, port)
			out = append(out, net.JoinHostPort(h2, p2))
		}
		return out, true
	}
	return nil, false
}

// allows reports whether ap is an address a rule names (an IP address, or
// localhost for loopback): the user pointed polite at it, so the
// public-address check lets it through.
func (c *connectTo) allows(ap netip.AddrPort) bool {
	for _, r := range c.rules {
		for _, t := range r.to {
			if t.port != "" && t.port != strconv.Itoa(int(ap.Port())) {
				continue
			}
			if strings.EqualFold(t.host, "localhost") && ap.Addr().IsLoopback() {
				return true
			}
			if ip, err := netip.ParseAddr(t.host); err == nil && ip.Unmap() == ap.Addr() {
				return true
			}
		}
	}
	return false
}

// wrap makes base connect where the rules say, trying each target in turn.
func (c *connectTo) wrap(base *http.Transport) {
	if c == nil || len(c.rules) == 0 {
		return
	}
	dial := base.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	base.DialContext = func(ctx context.Context, network, address string) (net.Conn, error) {
		to, ok := c.targets(address)
		if !ok {
			return dial(ctx, network, address)
		}
		var errs []error
		for _, a := range to {
			conn, err := dial(ctx, network, a)
			if err == nil {
				return conn, nil
			}
			errs = append(errs, err)
		}
		return nil, errors.Join(errs...)
	}
}

// connectFlag is --resolve or --connect-to: each use adds a rule.
type connectFlag struct {
	c   *connectTo
	add func(*connectTo, string) error
}

func (f connectFlag) String() string     { return "" }
func (f connectFlag) Type() string       { return "string" }
func (f connectFlag) Set(v string) error { return f.add(f.c, v) }
