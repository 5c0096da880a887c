package guard

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
)

func TestClientAddress(t *testing.T) {
	proxies := []string{"10.0.0.0/8", "2001:db8:ffff::/48", "192.0.2.7"}
	for _, tc := range []struct {
		name    string
		header  string // ProxyHeader; "-" for no trusted proxies
		remote  string
		lines   []string
		want    string
		proxied bool
	}{
		{"no proxies: peer", "-", "198.51.100.1:5", []string{"203.0.113.9"}, "198.51.100.1", false},
		{"untrusted peer: header ignored", "", "198.51.100.1:5", []string{"203.0.113.9"}, "198.51.100.1", false},
		{"one hop", "", "10.1.2.3:5", []string{"203.0.113.9"}, "203.0.113.9", true},
		{"forged left entries", "", "10.1.2.3:5", []string{"1.1.1.1, 2.2.2.2, 203.0.113.9"}, "203.0.113.9", true},
		{"trusted chain skipped", "", "10.1.2.3:5", []string{"6.6.6.6, 203.0.113.9, 10.9.9.9, 192.0.2.7"}, "203.0.113.9", true},
		{"lines merged, last line nearest", "", "10.1.2.3:5", []string{"6.6.6.6", "203.0.113.9, 10.2.2.2"}, "203.0.113.9", true},
		{"forged line before the real one", "", "10.1.2.3:5", []string{"6.6.6.6, 7.7.7.7", "203.0.113.9"}, "203.0.113.9", true},
		{"all trusted: leftmost", "", "10.1.2.3:5", []string{"10.5.5.5, 10.6.6.6"}, "10.5.5.5", true},
		{"no header: the proxy", "", "10.1.2.3:5", nil, "10.1.2.3", true},
		{"garbage: last trusted", "", "10.1.2.3:5", []string{"203.0.113.9, bogus"}, "10.1.2.3", true},
		{"empty element", "", "10.1.2.3:5", []string{"203.0.113.9, "}, "10.1.2.3", true},
		{"with port", "", "10.1.2.3:5", []string{"203.0.113.9:4711"}, "203.0.113.9", true},
		{"v6 bracketed with port", "", "10.1.2.3:5", []string{"[2001:db8:1:2::9]:80"}, "2001:db8:1:2::9", true},
		{"v4-mapped folded", "", "10.1.2.3:5", []string{"::ffff:203.0.113.9"}, "203.0.113.9", true},
		{"zone stripped", "", "10.1.2.3:5", []string{"fe80::1%eth0"}, "fe80::1", true},
		{"v6 proxy", "", "[2001:db8:ffff:1::1]:5", []string{"2001:db8:1:2::9"}, "2001:db8:1:2::9", true},
		{"v4-mapped peer trusted", "", "[::ffff:10.1.2.3]:5", []string{"203.0.113.9"}, "203.0.113.9", true},
		{"Forwarded", "Forwarded", "10.1.2.3:5", []string{`for=6.6.6.6, for=203.0.113.9;proto=https`}, "203.0.113.9", true},
		{"Forwarded quoted v6", "Forwarded", "10.1.2.3:5", []string{`for="[2001:db8:1:2::9]:4711";by=10.0.0.1`}, "2001:db8:1:2::9", true},
		{"Forwarded case and spaces", "Forwarded", "10.1.2.3:5", []string{`proto=http; For = 203.0.113.9`}, "203.0.113.9", true},
		{"Forwarded unknown", "Forwarded", "10.1.2.3:5", []string{`for=203.0.113.9, for=unknown`}, "10.1.2.3", true},
		{"Forwarded obfuscated", "Forwarded", "10.1.2.3:5", []string{`for=_hidden`}, "10.1.2.3", true},
		{"Forwarded quoted comma", "Forwarded", "10.1.2.3:5", []string{`for=6.6.6.6;x="a,b", for=203.0.113.9`}, "203.0.113.9", true},
		{"Forwarded ignores XFF", "Forwarded", "10.1.2.3:5", nil, "10.1.2.3", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{ProxyHeader: tc.header, TrustedProxies: proxies}
			if tc.header == "-" {
				c = Config{}
			}
			tr, err := newTrust(&c)
			if err != nil {
				t.Fatal(err)
			}
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tc.remote
			name := tr.header
			if name == "" {
				name = HeaderXForwardedFor
			}
			for _, l := range tc.lines {
				r.Header.Add(name, l)
			}
			if tc.header == "Forwarded" {
				r.Header.Add(HeaderXForwardedFor, "9.9.9.9")
			}
			a, proxied, ok := tr.client(r)
			if !ok || a.String() != tc.want || proxied != tc.proxied {
				t.Errorf("client = %v, %v, %v; want %s, %v", a, proxied, ok, tc.want, tc.proxied)
			}
		})
	}
}

func TestAddressGrouping(t *testing.T) {
	for _, tc := range []struct {
		v4, v6 int
		addr   string
		want   string
	}{
		{0, 0, "192.0.2.1", "192.0.2.1"},
		{0, 0, "2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{24, 56, "192.0.2.1", "192.0.2.0/24"},
		{24, 56, "2001:db8:1:2ff::1", "2001:db8:1:200::/56"},
		{0, 128, "2001:db8::1", "2001:db8::1"},
	} {
		tr, err := newTrust(&Config{IPv4Prefix: tc.v4, IPv6Prefix: tc.v6})
		if err != nil {
			t.Fatal(err)
		}
		a, _ := hostAddr(tc.addr)
		if got := string(tr.appendAddrKey(nil, a)); got != tc.want {
			t.Errorf("key(%s, /%d, /%d) = %s, want %s", tc.addr, tc.v4, tc.v6, got, tc.want)
		}
	}
}

// A client that forges X-Forwarded-For, directly or through the trusted
// proxy, gets no identity but its own: its budget is not renewed.
func TestSpoofing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		proxies []string
		remote  string
	}{
		{"direct, no proxies configured", nil, "198.51.100.1:5"},
		{"direct, proxies configured", []string{"10.0.0.0/8"}, "198.51.100.1:5"},
		{"through the proxy", []string{"10.0.0.0/8"}, "10.0.0.1:5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := mustNew(t, Config{Identity: Limit{Rate: 0.001, Burst: 5}, TrustedProxies: tc.proxies})
			h := g.Handler(ok)
			admitted := 0
			for i := range 100 {
				r := httptest.NewRequest("GET", "/", nil)
				r.RemoteAddr = tc.remote
				forged := "203.0.113." + itoa(i) + ", 2001:db8::" + itoa(i)
				r.Header.Set("X-Forwarded-For", forged)
				r.Header.Add("X-Forwarded-For", "6.6.6."+itoa(i))
				r.Header.Set("Forwarded", "for=7.7.7."+itoa(i))
				r.Header.Set("X-Real-IP", "8.8.8."+itoa(i))
				if strings.HasPrefix(tc.remote, "10.") {
					// The proxy appends the peer it saw on the last line.
					lines := r.Header.Values("X-Forwarded-For")
					lines[len(lines)-1] += ", 198.51.100.1"
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code == http.StatusOK {
					admitted++
				}
			}
			if admitted != 5 {
				t.Errorf("admitted %d of 100 forged requests, want the burst, 5", admitted)
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestUserHeaderOnlyFromProxies(t *testing.T) {
	g := mustNew(t, Config{Identity: Limit{Rate: 0.001, Burst: 1}, TrustedProxies: []string{"10.0.0.0/8"}, UserHeader: "X-User"})
	h := g.Handler(ok)
	send := func(remote, user string) int {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = remote
		r.Header.Set("X-User", user)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	// A direct client naming users gets its address's one token only.
	if send("198.51.100.1:1", "a") != 200 || send("198.51.100.1:1", "b") != 429 {
		t.Error("a direct client's X-User was honoured")
	}
	// Through the proxy each named user has a budget.
	if send("10.0.0.1:1", "a") != 200 || send("10.0.0.1:1", "b") != 200 || send("10.0.0.1:1", "a") != 429 {
		t.Error("the proxy's X-User was not honoured")
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{TrustedProxies: []string{"0.0.0.0/0"}}, "trusts every address"},
		{Config{TrustedProxies: []string{"::/0"}}, "trusts every address"},
		{Config{TrustedProxies: []string{"10.0.0.1/8"}}, "host bits set"},
		{Config{TrustedProxies: []string{"proxy.internal"}}, "not an address or CIDR"},
		{Config{TrustedProxies: []string{"fe80::1%eth0"}}, "zone"},
		{Config{ProxyHeader: "X-Forwarded-For"}, "without TrustedProxies"},
		{Config{TrustedProxies: []string{"10.0.0.0/8"}, ProxyHeader: "X-Real-IP"}, "X-Real-IP"},
		{Config{UserHeader: "X-User"}, "any client could name any user"},
		{Config{TrustedProxies: []string{"10.0.0.0/8"}, UserHeader: "X-User", Identify: func(*http.Request) Who { return Who{} }}, "say which"},
		{Config{IPv6Prefix: 129}, "IPv6Prefix 129"},
		{Config{IPv4Prefix: 33}, "IPv4Prefix 33"},
		{Config{Identity: Limit{Rate: -1}}, "identity rate -1"},
		{Config{Tenant: Limit{Rate: 1, Burst: -2}}, "tenant burst -2"},
		{Config{Global: Limit{Rate: 1, Name: "Global Limit"}}, "global name"},
		{Config{Tenant: Limit{Rate: 1, Name: "identity"}}, "share the name"},
		{Config{Costs: map[string]int{"GET /x": -1}}, `Costs["GET /x"] = -1`},
		{Config{Costs: map[string]int{"GET x": 2}}, `pattern "GET x"`},
		{Config{Costs: map[string]int{"/a/{x}": 2, "/a/{y}": 3}}, "conflicts"},
		{Config{MaxKeys: -1}, "MaxKeys -1"},
	} {
		_, err := New(tc.c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error containing %q", tc.c, err, tc.want)
		}
	}
}

func TestLongNamesHashed(t *testing.T) {
	long := strings.Repeat("u", 10_000)
	if k := appendName(nil, "iu", long); len(k) != 3+64 || string(k[:3]) != "iu#" {
		t.Errorf("key of a 10,000-byte name: %d bytes %q", len(k), k[:8])
	}
	if k := string(appendName(nil, "t", "acme")); k != "t:acme" {
		t.Errorf("key = %q", k)
	}
	// The hash keeps distinct names apart.
	if string(appendName(nil, "iu", long)) == string(appendName(nil, "iu", long+"x")) {
		t.Error("two long names share a key")
	}
}

func TestTrusted(t *testing.T) {
	g := mustNew(t, Config{TrustedProxies: []string{"10.0.0.0/8", "2001:db8::1"}})
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"10.1.2.3", true},
		{"::ffff:10.1.2.3", true}, // IPv4-mapped, as a dual-stack listener sees it
		{"11.0.0.1", false},
		{"2001:db8::1", true},
		{"2001:db8::2", false},
	} {
		if got := g.Trusted(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("Trusted(%s) = %v, want %v", tc.addr, got, tc.want)
		}
	}
	if mustNew(t, Config{}).Trusted(netip.MustParseAddr("10.1.2.3")) {
		t.Error("Trusted with no TrustedProxies = true, want false")
	}
}
