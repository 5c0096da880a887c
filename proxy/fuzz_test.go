package proxy

// Fuzz targets for the parsers of what comes from outside: the Polite-*
// options (header fields and the proxy user name), Proxy-Authorization,
// and the Proxy-Status value built around a detail that may quote any of
// them. Seeds are in testdata/fuzz.

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/polite-go/polite"
)

// checkOptions fails t unless o holds only values the options may take.
func checkOptions(t *testing.T, o options) {
	t.Helper()
	if o.cost != 0 && (o.cost < 1 || o.cost > maxCost) {
		t.Errorf("cost %d out of 1..%d", o.cost, maxCost)
	}
	if o.maxWait < 0 {
		t.Errorf("max wait %v negative", o.maxWait)
	}
	if o.priority != polite.Normal && o.priority != polite.Background {
		t.Errorf("priority %v", o.priority)
	}
}

func FuzzOptionsSet(f *testing.F) {
	for _, s := range [][2]string{
		{"priority", "bulk"}, {"priority", " Interactive "}, {"priority", "urgent"},
		{"cost", "1"}, {"cost", "1000"}, {"cost", "1001"}, {"cost", "-1"}, {"cost", "+5"}, {"cost", "99999999999999999999"},
		{"no-retry", "1"}, {"no-retry", "TRUE"}, {"no-retry", "maybe"},
		{"max-wait", "5s"}, {"max-wait", "5"}, {"max-wait", "-1s"}, {"max-wait", "1e3s"}, {"max-wait", "9223372036854775807"},
		{"colour", "red"}, {"", ""},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, key, v string) {
		var o options
		err := o.set(key, v, "SRC")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "SRC") {
				t.Errorf("error %q does not name its source", err)
			}
			if !slices.Contains(optionNames, key) && !strings.Contains(err.Error(), "unknown option") {
				t.Errorf("key %q: error %q, want unknown option", key, err)
			}
			return
		}
		if !slices.Contains(optionNames, key) {
			t.Errorf("unknown key %q taken", key)
		}
		checkOptions(t, o)
		if key == "max-wait" {
			// A whole number of seconds or a duration: never a wait the
			// value does not say (see TestHostileMaxWaitOverflow).
			if d, perr := time.ParseDuration(strings.TrimSpace(v)); perr == nil && d != o.maxWait {
				t.Errorf("max-wait %q taken as %v, want %v", v, o.maxWait, d)
			}
		}
	})
}

func FuzzFromHeader(f *testing.F) {
	for _, s := range [][4]string{
		{"Polite-Priority", "bulk", "Polite-Cost", "2"},
		{"polite-cost", "lots", "polite-cost", "3"},
		{"Polite-", "x", "X-Other", "y"},
		{"Polite-Max-Wait", "10s", "Polite-No-Retry", "1"},
		{"Polite-Waited-Ms", "5", "Via", "1.1 polite"},
		{"POLITE-PRIORITY", "BULK", "Polite-Priority", ""},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		h := http.Header{}
		h.Add(k1, v1) // canonicalised, as net/http does
		h.Add(k2, v2)
		var o options
		err := o.fromHeader(h)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "Polite-") {
				t.Errorf("error %q does not name the field", err)
			}
			return
		}
		checkOptions(t, o)
		// What the proxy takes from a request is never sent upstream.
		stripPolite(h)
		for k := range h {
			if strings.HasPrefix(k, "Polite-") {
				t.Errorf("%s left after stripPolite", k)
			}
		}
	})
}

func FuzzFromUser(f *testing.F) {
	for _, s := range []string{
		"alice", "alice,priority=bulk,cost=2", "priority=bulk", "", ",", "alice,", "alice,bulk",
		"alice,=1", "a=b=c", "alice, Cost = 3 ", "ålice,max-wait=5s", "alice,priority=bulk,priority=normal",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, user string) {
		var o options
		account, err := o.fromUser(user)
		if err != nil {
			if account != "" {
				t.Errorf("error %v with account %q", err, account)
			}
			if !strings.HasPrefix(err.Error(), "proxy user name") {
				t.Errorf("error %q does not say it is the user name's", err)
			}
			return
		}
		checkOptions(t, o)
		first, _, _ := strings.Cut(user, ",")
		want := first
		if strings.Contains(first, "=") {
			want = ""
		}
		if account != want {
			t.Errorf("user %q: account %q, want %q", user, account, want)
		}
	})
}

func FuzzCredentials(f *testing.F) {
	for _, s := range []string{
		"", "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:s3cret")),
		"basic " + base64.StdEncoding.EncodeToString([]byte("a,priority=bulk:p:q")),
		"Basic", "Basic ", "Basic %%%", "Bearer abc", "Basic\tYTpi", "YTpi",
		"Basic " + base64.StdEncoding.EncodeToString([]byte("nocolon")),
		"Basic " + base64.StdEncoding.EncodeToString([]byte(":")),
		"Basic  YTpi  ",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{}
		h.Set("Proxy-Authorization", v)
		user, pass, ok, err := credentials(h)
		switch {
		case err != nil:
			if ok || user != "" || pass != "" {
				t.Errorf("error %v with ok %v, %q:%q", err, ok, user, pass)
			}
			if !strings.HasPrefix(err.Error(), "Proxy-Authorization") {
				t.Errorf("error %q does not name the field", err)
			}
		case !ok:
			if h.Get("Proxy-Authorization") != "" {
				t.Errorf("%q: neither credentials nor an error", v)
			}
		default:
			if strings.Contains(user, ":") {
				t.Errorf("user %q holds a colon", user)
			}
			// The credentials read are the ones that were sent.
			h.Set("Proxy-Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user+":"+pass)))
			u2, p2, ok2, err2 := credentials(h)
			if !ok2 || err2 != nil || u2 != user || p2 != pass {
				t.Errorf("%q:%q read back as %q:%q (%v %v)", user, pass, u2, p2, ok2, err2)
			}
		}
	})
}

// errTypes are the RFC 9209 error types the proxy answers with.
var errTypes = []string{
	"http_request_error", "http_request_denied", "destination_ip_prohibited", "destination_unavailable",
	"connection_limit_reached", "proxy_loop_detected", "proxy_internal_error", "proxy_configuration_error",
	"dns_error", "dns_timeout", "tls_certificate_error", "tls_alert_received", "tls_protocol_error",
	"connection_refused", "connection_terminated", "http_response_timeout",
}

func FuzzProxyStatus(f *testing.F) {
	for _, s := range []string{
		"", "plain", `a "quoted" \ thing`, "line\r\nbreak", "é and 日本", "\x00\x7f\xff", `\"`, strings.Repeat(`"`, 10),
		`polite; error=x; details="y"`, "trailing backslash \\",
	} {
		f.Add(uint8(0), s)
	}
	f.Fuzz(func(t *testing.T, i uint8, detail string) {
		errType := errTypes[int(i)%len(errTypes)]
		v := proxyStatus(errType, detail, int(i)%3*250) // 0, 250 or 500: with and without received-status
		params, err := parseSFItem(v)
		if err != nil {
			t.Fatalf("%q: not an RFC 8941 item: %v", v, err)
		}
		if params["error"] != errType {
			t.Errorf("%q: error=%q, want %q", v, params["error"], errType)
		}
		got, has := params["details"]
		if has != (detail != "") {
			t.Errorf("%q: details present %v for detail %q", v, has, detail)
		}
		// The detail comes back with what an sf-string cannot carry
		// (controls, non-ASCII bytes) as '?'.
		want := []byte(detail)
		for j, c := range want {
			if c < 0x20 || c > 0x7e {
				want[j] = '?'
			}
		}
		if has && got != string(want) {
			t.Errorf("details %q, want %q", got, want)
		}
		if !utf8.ValidString(v) {
			t.Errorf("%q is not valid UTF-8 (nor ASCII)", v)
		}
	})
}

// parseSFItem parses a Proxy-Status list member as RFC 8941 §4.2 does an
// Item: the bare item must be the token "polite"; it returns the
// parameters, tokens and strings as their text.
func parseSFItem(s string) (map[string]string, error) {
	p := &sfParser{s: s}
	tok, err := p.token()
	if err != nil {
		return nil, err
	}
	if tok != via {
		return nil, p.errf("bare item %q, want %q", tok, via)
	}
	params := map[string]string{}
	for p.i < len(p.s) && p.s[p.i] == ';' {
		p.i++
		for p.i < len(p.s) && p.s[p.i] == ' ' {
			p.i++
		}
		key, err := p.key()
		if err != nil {
			return nil, err
		}
		val := "?1"
		if p.i < len(p.s) && p.s[p.i] == '=' {
			p.i++
			switch {
			case p.i < len(p.s) && p.s[p.i] == '"':
				val, err = p.str()
			case p.i < len(p.s) && (p.s[p.i] == '-' || p.s[p.i] >= '0' && p.s[p.i] <= '9'):
				val, err = p.integer()
			default:
				val, err = p.token()
			}
			if err != nil {
				return nil, err
			}
		}
		if _, dup := params[key]; dup {
			return nil, p.errf("parameter %q twice", key)
		}
		params[key] = val
	}
	if p.i != len(p.s) {
		return nil, p.errf("trailing %q", p.s[p.i:])
	}
	return params, nil
}

type sfParser struct {
	s string
	i int
}

func (p *sfParser) errf(format string, a ...any) error {
	return &sfError{at: p.i, msg: strings.TrimSpace(fmt.Sprintf(format, a...))}
}

type sfError struct {
	at  int
	msg string
}

func (e *sfError) Error() string { return fmt.Sprintf("at %d: %s", e.at, e.msg) }

// integer reads an sf-integer: an optional minus and 1 to 15 digits.
func (p *sfParser) integer() (string, error) {
	start := p.i
	if p.i < len(p.s) && p.s[p.i] == '-' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	if n := p.i - digits; n < 1 || n > 15 {
		return "", p.errf("want an integer of 1 to 15 digits")
	}
	return p.s[start:p.i], nil
}

// token reads an sf-token: (ALPHA / "*") *(tchar / ":" / "/").
func (p *sfParser) token() (string, error) {
	start := p.i
	if p.i >= len(p.s) || !(isAlpha(p.s[p.i]) || p.s[p.i] == '*') {
		return "", p.errf("want a token")
	}
	p.i++
	for p.i < len(p.s) && (isTchar(p.s[p.i]) || p.s[p.i] == ':' || p.s[p.i] == '/') {
		p.i++
	}
	return p.s[start:p.i], nil
}

// key reads a parameter key: (lcalpha / "*") *(lcalpha / DIGIT / "_" / "-" / "." / "*").
func (p *sfParser) key() (string, error) {
	start := p.i
	if p.i >= len(p.s) || !(p.s[p.i] >= 'a' && p.s[p.i] <= 'z' || p.s[p.i] == '*') {
		return "", p.errf("want a key")
	}
	p.i++
	for p.i < len(p.s) {
		c := p.s[p.i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("_-.*", c) >= 0) {
			break
		}
		p.i++
	}
	return p.s[start:p.i], nil
}

// str reads an sf-string: DQUOTE *(unescaped / "\" (DQUOTE / "\")) DQUOTE,
// unescaped being printable ASCII but DQUOTE and "\".
func (p *sfParser) str() (string, error) {
	p.i++ // the opening quote
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '\\':
			if p.i >= len(p.s) || (p.s[p.i] != '"' && p.s[p.i] != '\\') {
				return "", p.errf("bad escape")
			}
			b.WriteByte(p.s[p.i])
			p.i++
		case c == '"':
			return b.String(), nil
		case c < 0x20 || c > 0x7e:
			return "", p.errf("byte %#x in a string", c)
		default:
			b.WriteByte(c)
		}
	}
	return "", p.errf("unterminated string")
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isTchar(c byte) bool {
	return isAlpha(c) || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
