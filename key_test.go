package polite

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestHostKey(t *testing.T) {
	tests := []struct {
		scheme, host, want string
		err                bool
	}{
		{"https", "example.com", "example.com", false},
		{"https", "WWW.Example.COM", "www.example.com", false},
		{"https", "www.example.com.", "www.example.com", false},
		{"https", "www.example.com:443", "www.example.com", false},
		{"http", "www.example.com:80", "www.example.com", false},
		{"https", "www.example.com:80", "www.example.com:80", false},
		{"http", "www.example.com:8080", "www.example.com:8080", false},
		{"http", "Example.COM.:8080", "example.com:8080", false},
		{"https", "bücher.example", "xn--bcher-kva.example", false},
		{"https", "BÜCHER.example", "xn--bcher-kva.example", false},
		{"https", "xn--bcher-kva.example", "xn--bcher-kva.example", false},
		{"http", "127.0.0.1:8080", "127.0.0.1:8080", false},
		{"http", "[::1]:8080", "[::1]:8080", false},
		{"http", "[0:0::1]", "[::1]", false},
		{"http", "[::ffff:127.0.0.1]", "127.0.0.1", false},
		{"http", "under_score.example", "under_score.example", false},
		{"http", "", "", true},
		{"http", ":80", "", true},
		{"http", "a..b", "", true},
		{"http", "example.com:99999", "", true},
		{"http", "example.com:080", "example.com", false},
		{"http", "example.com:0008080", "example.com:8080", false},
		{"https", "example.com:0443", "example.com", false},
		{"http", "example.com:0", "", true},
		{"http", "example.com:000", "", true},
		{"http", "example.com:8x", "", true},
		{"http", "exa mple.com", "", true},
		{"http", "[fe80::1%25eth0]", "", true},
		{"http", ".", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			got, err := HostKey(tt.scheme, tt.host)
			if (err != nil) != tt.err || got != tt.want {
				t.Fatalf("HostKey(%q, %q) = %q, %v; want %q, error %v", tt.scheme, tt.host, got, err, tt.want, tt.err)
			}
			if err != nil && !strings.Contains(err.Error(), "polite:") {
				t.Errorf("error %q does not say where it comes from", err)
			}
		})
	}
}

func TestDomainKey(t *testing.T) {
	tests := []struct{ in, want string }{
		{"www.example.com", "example.com"},
		{"a.b.example.co.uk", "example.co.uk"},
		{"example.co.uk", "example.co.uk"},
		{"co.uk", "co.uk"},
		{"localhost", "localhost"},
		{"127.0.0.1:8080", "127.0.0.1"},
		{"[::1]:8080", "::1"},
		{"foo.github.io", "foo.github.io"},
		{"www.example.com:8080", "example.com"},
	}
	for _, tt := range tests {
		if got := DomainKey(tt.in); got != tt.want {
			t.Errorf("DomainKey(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestKeyer(t *testing.T) {
	ctx := context.Background()
	mustURL := func(s string) *url.URL {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	var byHost Keyer
	if got, err := byHost.Key(ctx, mustURL("https://WWW.Example.com:443/x?y")); err != nil || got != "www.example.com" {
		t.Errorf("host Key = %q, %v; want www.example.com", got, err)
	}
	byDomain := Keyer{By: KeyDomain}
	if got, err := byDomain.Key(ctx, mustURL("https://a.b.Example.co.uk/")); err != nil || got != "example.co.uk" {
		t.Errorf("domain Key = %q, %v; want example.co.uk", got, err)
	}
	byIP := Keyer{By: KeyIP}
	if got, err := byIP.Key(ctx, mustURL("http://127.0.0.1:8080/")); err != nil || got != "127.0.0.1" {
		t.Errorf("ip Key(127.0.0.1) = %q, %v", got, err)
	}
	if got, err := byIP.Key(ctx, mustURL("http://localhost:8080/")); err != nil || (got != "127.0.0.1" && got != "::1") {
		t.Errorf("ip Key(localhost) = %q, %v; want a loopback address", got, err)
	}
	if _, err := byHost.Key(ctx, mustURL("/relative/path")); !errors.Is(err, ErrNoHost) {
		t.Errorf("Key(relative URL) error = %v, want ErrNoHost", err)
	}
	if _, err := ParseKeyBy("dns"); err == nil {
		t.Error(`ParseKeyBy("dns") succeeded`)
	}
	for _, k := range []KeyBy{KeyHost, KeyDomain, KeyIP} {
		if got, err := ParseKeyBy(k.String()); err != nil || got != k {
			t.Errorf("ParseKeyBy(%q) = %v, %v", k.String(), got, err)
		}
	}
}

func TestHostKeyNoAlloc(t *testing.T) {
	for _, h := range []string{"www.example.com", "www.example.com:8080", "www.example.com:443"} {
		if n := testing.AllocsPerRun(100, func() { _, _ = HostKey("https", h) }); n != 0 {
			t.Errorf("HostKey(%q) allocates %v times, want 0", h, n)
		}
	}
}

// FuzzHostKey: any string as a host gives a stable key or a clear error.
func FuzzHostKey(f *testing.F) {
	for _, s := range []string{"example.com", "WWW.EXAMPLE.COM.", "bücher.example:8080", "[::1]:80",
		"127.0.0.1", "xn--bcher-kva.example", "a..b", "", ":", "[", "]", "[::1", "%", "例え.テスト",
		"ﬀ.example", "xn--", "xn--a.example", "a.b.c.d.e.f.g.h", "[fe80::1%25en0]:443", "ab:cd:ef", "ß.de"} {
		f.Add("https", s)
	}
	f.Fuzz(func(t *testing.T, scheme, host string) {
		k, err := HostKey(scheme, host)
		if err != nil {
			if k != "" {
				t.Fatalf("HostKey(%q, %q) = %q with error %v", scheme, host, k, err)
			}
			if !strings.HasPrefix(err.Error(), "polite:") {
				t.Fatalf("HostKey(%q, %q) error %q lacks the package prefix", scheme, host, err)
			}
			return
		}
		k2, err := HostKey(scheme, k)
		if err != nil || k2 != k {
			t.Fatalf("HostKey not stable: %q → %q → %q, %v", host, k, k2, err)
		}
		_ = DomainKey(k)
		// The name sent for a host that is not ASCII keys as the host
		// does, and is what net/http writes as it is (issue 29, item 13).
		if w, ok := wireHost(host); ok {
			if kw, err := HostKey(scheme, w); err != nil || kw != k {
				t.Fatalf("wireHost(%q) = %q, keyed %q (%v); the host keys %q", host, w, kw, err, k)
			}
			for i := range len(w) {
				if c := w[i]; c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
					t.Fatalf("wireHost(%q) = %q: not lower-case ASCII", host, w)
				}
			}
		}
		u := &url.URL{Scheme: scheme, Host: host}
		var kr Keyer
		if k3, err := kr.Key(context.Background(), u); err != nil || k3 != k {
			t.Fatalf("Keyer.Key(%q) = %q, %v; HostKey gave %q", host, k3, err, k)
		}
	})
}

// FuzzKeyURL: any string parsed as a URL keys without panicking.
func FuzzKeyURL(f *testing.F) {
	for _, s := range []string{"https://example.com/", "http://[::1]:8080/x", "//host/", "mailto:x@y", "http://%41/", "http://a b/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.Parse(raw)
		if err != nil {
			return
		}
		for _, by := range []KeyBy{KeyHost, KeyDomain} {
			kr := Keyer{By: by}
			k1, err1 := kr.Key(context.Background(), u)
			k2, err2 := kr.Key(context.Background(), u)
			if k1 != k2 || (err1 == nil) != (err2 == nil) {
				t.Fatalf("Key(%q) unstable: %q/%v then %q/%v", raw, k1, err1, k2, err2)
			}
			// A host key is already normal: keying it again changes nothing.
			if by == KeyHost && err1 == nil {
				if again, err := HostKey(u.Scheme, k1); err != nil || again != k1 {
					t.Fatalf("HostKey(%q, %q) = %q, %v; want it unchanged", u.Scheme, k1, again, err)
				}
			}
		}
	})
}

// KeyIP's resolutions do not pile up: a resolution drops those that expired
// (at most once a TTL), and keeps the rest.
func TestKeyIPSweepsExpired(t *testing.T) {
	k := Keyer{By: KeyIP}
	now := time.Now()
	k.ips.Store("old.example", ipEntry{ip: "192.0.2.1", expires: now.Add(-time.Second)})
	k.ips.Store("fresh.example", ipEntry{ip: "192.0.2.2", expires: now.Add(time.Hour)})
	u, _ := url.Parse("http://localhost:8080/")
	if _, err := k.Key(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	if _, ok := k.ips.Load("old.example"); ok {
		t.Error("an expired resolution was kept")
	}
	for _, h := range []string{"fresh.example", "localhost"} {
		if _, ok := k.ips.Load(h); !ok {
			t.Errorf("%s's resolution was dropped", h)
		}
	}
}

// CanonicalHost writes a host as HostKey does, and is a fixed point.
func TestCanonicalHost(t *testing.T) {
	for in, want := range map[string]string{
		"example.com": "example.com", "Example.COM.": "example.com", "bücher.example": "xn--bcher-kva.example",
		"127.0.0.1": "127.0.0.1", "::ffff:10.0.0.1": "10.0.0.1", "a_b.example": "a_b.example",
	} {
		got, err := CanonicalHost(in)
		if err != nil || got != want {
			t.Errorf("CanonicalHost(%q) = %q, %v; want %q", in, got, err, want)
			continue
		}
		if again, err := CanonicalHost(got); err != nil || again != got {
			t.Errorf("CanonicalHost(%q) = %q, %v: not a fixed point", got, again, err)
		}
	}
	for _, bad := range []string{"", "a..b", "fe80::1%eth0", "exa mple.com"} {
		if got, err := CanonicalHost(bad); err == nil {
			t.Errorf("CanonicalHost(%q) = %q, want an error", bad, got)
		}
	}
}
