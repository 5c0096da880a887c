package scope

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/polite-go/polite"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		name, raw, want string
	}{
		// Scheme and host.
		{"already normal", "http://example.com/", "http://example.com/"},
		{"scheme and host case", "HTTP://WWW.Example.COM/Path", "http://www.example.com/Path"},
		{"https", "HtTpS://a.example/", "https://a.example/"},
		{"empty path", "http://example.com", "http://example.com/"},
		{"empty path with query", "http://example.com?a=1", "http://example.com/?a=1"},
		{"trailing dot", "http://example.com./", "http://example.com/"},
		{"IDN", "http://Bücher.example/", "http://xn--bcher-kva.example/"},
		{"IDN upper case", "http://BÜCHER.example/", "http://xn--bcher-kva.example/"},
		{"punycode upper case", "http://XN--BCHER-KVA.example/", "http://xn--bcher-kva.example/"},
		{"IDN full stop", "http://bücher。example/", "http://xn--bcher-kva.example/"},
		{"percent-encoded host", "http://%65xample.com/", "http://example.com/"},
		{"underscore host", "http://a_b.example/", "http://a_b.example/"},
		{"IPv4", "http://127.0.0.1:8080/", "http://127.0.0.1:8080/"},
		{"IPv6", "http://[2001:DB8:0:0::1]/", "http://[2001:db8::1]/"},
		{"IPv6 port", "http://[::1]:8080/x", "http://[::1]:8080/x"},
		{"IPv6 default port", "https://[::1]:443/", "https://[::1]/"},
		{"IPv4-mapped IPv6", "http://[::ffff:10.0.0.1]/", "http://10.0.0.1/"},
		{"localhost", "http://LOCALHOST:3000", "http://localhost:3000/"},

		// Ports.
		{"http default port", "http://example.com:80/", "http://example.com/"},
		{"https default port", "https://example.com:443/", "https://example.com/"},
		{"http on 443", "http://example.com:443/", "http://example.com:443/"},
		{"https on 80", "https://example.com:80/", "https://example.com:80/"},
		{"leading zeros", "http://example.com:0080/", "http://example.com/"},
		{"leading zeros kept port", "http://example.com:08080/", "http://example.com:8080/"},
		{"empty port", "http://example.com:/", "http://example.com/"},
		{"max port", "http://example.com:65535/", "http://example.com:65535/"},

		// Userinfo and fragment.
		{"userinfo", "http://user:pass@example.com/", "http://example.com/"},
		{"user only", "http://user@example.com/", "http://example.com/"},
		{"at in userinfo", "http://a@b@example.com/", "http://example.com/"},
		{"fragment", "http://example.com/a#top", "http://example.com/a"},
		{"fragment after query", "http://example.com/a?b=1#top", "http://example.com/a?b=1"},
		{"fragment with ?", "http://example.com/a#x?y", "http://example.com/a"},
		{"empty fragment", "http://example.com/#", "http://example.com/"},

		// Dot segments (RFC 3986 §5.2.4).
		{"dot", "http://h/a/./b", "http://h/a/b"},
		{"dot dot", "http://h/a/b/../c", "http://h/a/c"},
		{"dot dot above root", "http://h/../../a", "http://h/a"},
		{"trailing dot dot", "http://h/a/b/..", "http://h/a/"},
		{"trailing dot", "http://h/a/.", "http://h/a/"},
		{"escaped dots", "http://h/a/%2E%2e/b", "http://h/b"},
		{"empty segments kept", "http://h/a//b", "http://h/a//b"},
		{"dot dot over empty segment", "http://h/a//../b", "http://h/a/b"},
		{"dots in names", "http://h/a.b/..c/.d", "http://h/a.b/..c/.d"},
		{"backslash", `http://h\a\b`, "http://h/a/b"},
		{"backslash after slashes", `http:\\h\a`, "http://h/a"},

		// Percent-encoding.
		{"unreserved decoded", "http://h/%7euser/%41%2D%5f", "http://h/~user/A-_"},
		{"slash stays escaped", "http://h/a%2fb", "http://h/a%2Fb"},
		{"hex upper case", "http://h/%c3%a9", "http://h/%C3%A9"},
		{"space escaped", "http://h/a b?q=c d", "http://h/a%20b?q=c%20d"},
		{"non-ASCII escaped", "http://h/é?é", "http://h/%C3%A9?%C3%A9"},
		{"unsafe ASCII escaped", `http://h/<a>"{|}^` + "`", "http://h/%3Ca%3E%22%7B%7C%7D%5E%60"},
		{"brackets in path", "http://h/[a]", "http://h/%5Ba%5D"},
		{"sub-delims kept", "http://h/!$&'()*+,;=:@", "http://h/!$&'()*+,;=:@"},
		{"escaped sub-delim kept", "http://h/%21%2B", "http://h/%21%2B"},
		{"percent escaped", "http://h/100%25", "http://h/100%25"},
		{"plus in query", "http://h/?q=a+b", "http://h/?q=a+b"},
		{"escaped plus in query", "http://h/?q=a%2bb", "http://h/?q=a%2Bb"},
		{"escaped ampersand not a separator", "http://h/?a=1%26b%3D2", "http://h/?a=1%26b%3D2"},
		{"question mark in query", "http://h/?a=?b/c", "http://h/?a=?b/c"},
		{"backslash in query", `http://h/?a=\`, "http://h/?a=%5C"},
		{"control escaped", "http://h/a\x01b\x7f", "http://h/a%01b%7F"},
		{"tabs and newlines removed", "http://h/a\n\tb\r\n", "http://h/ab"},
		{"surrounding space", "  http://h/a \t", "http://h/a"},

		// Query.
		{"empty query", "http://h/a?", "http://h/a"},
		{"empty query and fragment", "http://h/a?#x", "http://h/a"},
		{"ampersands only", "http://h/a?&&", "http://h/a"},
		{"empty parameters", "http://h/?a=1&&b=2&", "http://h/?a=1&b=2"},
		{"empty key", "http://h/?=1&a", "http://h/?=1&a"},
		{"repeated keys kept", "http://h/?a=1&a=2&a=1", "http://h/?a=1&a=2&a=1"},
		{"semicolon is no separator", "http://h/?a=1;b=2", "http://h/?a=1;b=2"},
		{"order kept", "http://h/?b=1&a=2", "http://h/?b=1&a=2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Normalize(tt.raw, NormOptions{})
			if err != nil || got != tt.want {
				t.Fatalf("Normalize(%q) = %q, %v, want %q", tt.raw, got, err, tt.want)
			}
			checkNormal(t, got, NormOptions{})
		})
	}
}

func TestNormalizeOptions(t *testing.T) {
	def := NormOptions{StripParams: DefaultStripParams}
	tests := []struct {
		name string
		raw  string
		o    NormOptions
		want string
	}{
		{"utm prefix", "http://h/?utm_source=a&id=1&utm_medium=b", def, "http://h/?id=1"},
		{"prefix needs the prefix", "http://h/?utm=1&utmx=2", def, "http://h/?utm=1&utmx=2"},
		{"exact names", "http://h/?fbclid=x&fbclid2=y&gclid=z", def, "http://h/?fbclid2=y"},
		{"case-sensitive", "http://h/?FBCLID=x", def, "http://h/?FBCLID=x"},
		{"escaped name", "http://h/?utm%5Fsource=a&b", def, "http://h/?b"},
		{"name without value", "http://h/?gclid&a=1", def, "http://h/?a=1"},
		{"all stripped", "http://h/a?utm_source=a&_ga=1", def, "http://h/a"},
		{"value not matched", "http://h/?q=utm_source", def, "http://h/?q=utm_source"},
		{"session ids kept", "http://h/?PHPSESSID=1&jsessionid=2", def, "http://h/?PHPSESSID=1&jsessionid=2"},
		{"star strips all", "http://h/?a=1&b=2", NormOptions{StripParams: []string{"*"}}, "http://h/"},
		{"empty entry strips nothing", "http://h/?a=1", NormOptions{StripParams: []string{""}}, "http://h/?a=1"},
		{"sort", "http://h/?b=1&a=2&c=3", NormOptions{SortQuery: true}, "http://h/?a=2&b=1&c=3"},
		{"sort stable", "http://h/?b=2&a=1&b=1&a=0", NormOptions{SortQuery: true}, "http://h/?a=1&a=0&b=2&b=1"},
		{"sort by name only", "http://h/?a=2&a&a=1", NormOptions{SortQuery: true}, "http://h/?a=2&a&a=1"},
		{"sort and strip", "http://h/?z=1&utm_id=2&a=3", NormOptions{StripParams: DefaultStripParams, SortQuery: true}, "http://h/?a=3&z=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Normalize(tt.raw, tt.o)
			if err != nil || got != tt.want {
				t.Fatalf("Normalize(%q, %+v) = %q, %v, want %q", tt.raw, tt.o, got, err, tt.want)
			}
			checkNormal(t, got, tt.o)
		})
	}
}

func TestNormalizeErrors(t *testing.T) {
	tests := []struct {
		name, raw, want string // want: in the error
	}{
		{"empty", "", "not an absolute http or https URL"},
		{"relative", "/a/b", "not an absolute"},
		{"fragment only", "#top", "not an absolute"},
		{"mailto", "mailto:a@example.com", "not an absolute"},
		{"javascript", "javascript:void(0)", "not an absolute"},
		{"ftp", "ftp://example.com/", "not an absolute"},
		{"long s", "httpſ://example.com/", "not an absolute"},
		{"kelvin", "\u212Attp://example.com/", "not an absolute"},
		{"no slashes", "http:example.com", "no host"},
		{"one slash", "http:/example.com", "no host"},
		{"empty host", "http:///a", "no host"},
		{"userinfo only", "http://user@/", "no host"},
		{"port only", "http://:80/", "no host"},
		{"bad escape in path", "http://h/%zz", `bad percent-escape "%zz" in the path`},
		{"short escape", "http://h/a%2", `"%2"`},
		{"bad escape in query", "http://h/?a=%g1", `bad percent-escape "%g1" in the query`},
		{"bad escape in host", "http://%zz.example/", `bad percent-escape "%zz"`},
		{"bad port", "http://h:8o/", `bad port "8o"`},
		{"port 0", "http://h:0/", "bad port"},
		{"port too big", "http://h:65536/", "bad port"},
		{"long port", "http://h:0000000000000000000000080x/", "bad port"},
		{"IPv6 zone", "http://[fe80::1%25eth0]/", "IPv6 zones are refused"},
		{"IPv6 unclosed", "http://[::1/", "no closing"},
		{"IPv4 in brackets", "http://[127.0.0.1]/", "not an IPv6 address"},
		{"IPv6 garbage after", "http://[::1]x/", "text after"},
		{"IPv6 unbracketed", "http://%3A%3A1/", "must be in brackets"},
		{"empty label", "http://a..b/", "empty label"},
		{"two trailing dots", "http://a.b../", "empty label"},
		{"space in host", "http://a b/", "not allowed"},
		{"bad punycode", "http://xn--a.example/", "host"},
		{"invalid UTF-8 host", "http://\xff.example/", "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Normalize(tt.raw, NormOptions{})
			if err == nil {
				t.Fatalf("Normalize(%q) = %q, want an error", tt.raw, got)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "scope: URL "+fmt.Sprintf("%q", tt.raw)) || !strings.Contains(msg, tt.want) {
				t.Errorf("Normalize(%q) error = %q, want it to name the URL and say %q", tt.raw, msg, tt.want)
			}
		})
	}
}

func TestNormalizeLongInputQuotedShort(t *testing.T) {
	raw := "ftp://" + strings.Repeat("a", 10000)
	_, err := Normalize(raw, NormOptions{})
	if err == nil || len(err.Error()) > 300 {
		t.Errorf("Normalize(10 kB) error = %d bytes, want a short one", len(err.Error()))
	}
}

// A URL in normal form comes back as it is, without allocating: Check's
// common case, for URLs up to 512 bytes. (An IDN host, "xn--…", is
// validated by IDNA each time, which allocates.)
func TestNormalizeNormalDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, raw := range []string{
		"https://www.example.com/a/b?c=d&e",
		"http://[::1]:8080/",
		"http://10.0.0.1/%C3%A9",
		"https://a.example/" + strings.Repeat("x", 400),
	} {
		if n := testing.AllocsPerRun(100, func() { _, _ = Normalize(raw, NormOptions{}) }); n != 0 {
			t.Errorf("Normalize(%q) allocates %v times, want 0", raw, n)
		}
	}
}

// The host of a normal URL is a fixed point of polite.HostKey, so that the
// library keys a page's host as scope sees it; and for the spellings
// HostKey accepts, both agree.
func TestNormalizeHostAgreesWithHostKey(t *testing.T) {
	for _, h := range []string{
		"Example.COM", "example.com.", "Bücher.example", "XN--BCHER-KVA.example", "a_b.example",
		"127.0.0.1", "[::1]", "[2001:DB8::1]", "[::ffff:10.0.0.1]", "example.com:8080", "example.com:080",
		"example.com:443", "localhost", "ＥＸＡＭＰＬＥ.com", "\u212Aelvin.example", "WWW.EXAMPLE.COM.:8080",
	} {
		for _, scheme := range []string{"http", "https"} {
			n, err := Normalize(scheme+"://"+h+"/", NormOptions{})
			if err != nil {
				t.Errorf("Normalize(%s://%s/): %v", scheme, h, err)
				continue
			}
			want, err := polite.HostKey(scheme, h)
			if err != nil {
				t.Errorf("polite.HostKey(%q, %q): %v", scheme, h, err)
				continue
			}
			if got := hostOf(n); got != want {
				t.Errorf("host of Normalize(%s://%s/) = %q, polite.HostKey = %q", scheme, h, got, want)
			}
		}
	}
}

// checkNormal checks the properties every normal URL n has: Normalize
// leaves it as it is, net/url parses it into an absolute http(s) URL with
// a host and no userinfo or fragment, it is a fixed point of the
// frontier's rules, and its host of polite.HostKey.
func checkNormal(t *testing.T, n string, o NormOptions) {
	t.Helper()
	if again, err := Normalize(n, o); err != nil || again != n {
		t.Errorf("Normalize(%q) = %q, %v: not idempotent", n, again, err)
	}
	u, err := url.Parse(n)
	if err != nil {
		t.Fatalf("url.Parse(%q): %v", n, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.User != nil || u.Fragment != "" || u.Opaque != "" {
		t.Errorf("url.Parse(%q) = %#v: not an absolute http(s) URL with a host", n, u)
	}
	if u.String() != n {
		t.Errorf("url.Parse(%q).String() = %q", n, u.String())
	}
	if r, err := redisNormalizeURL(n); err != nil || r != n {
		t.Errorf("redisstore.NormalizeURL(%q) = %q, %v: not a fixed point", n, r, err)
	}
	if k, err := polite.HostKey(u.Scheme, u.Host); err != nil || k != u.Host {
		t.Errorf("polite.HostKey(%q, %q) = %q, %v: not a fixed point", u.Scheme, u.Host, k, err)
	}
}

// removeDots, in place, gives what the frontier's removeDots gives.
func TestRemoveDots(t *testing.T) {
	for _, p := range []string{
		"/", "/.", "/..", "/./", "/../", "/a/b/c/./../../g", "/mid/content=5/../6", "/a//b", "/a//../b",
		"/a/b/..", "/a/b/.", "/a/./b/../../..", "/../a/..", "//..", "/.../a/..b/.c", "/a/b/c/../../..//",
		"/a/..//b", "/./././", "/a/b/../../../../c/",
	} {
		checkRemoveDots(t, p)
	}
}

func checkRemoveDots(t *testing.T, p string) {
	t.Helper()
	b := []byte(p)
	got := string(b[:removeDots(b)])
	if want := redisRemoveDots(p); got != want {
		t.Errorf("removeDots(%q) = %q, want %q", p, got, want)
	}
}
