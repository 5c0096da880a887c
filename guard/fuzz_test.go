package guard

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/polite-go/polite/retry"
)

// FuzzClientAddress: whatever the proxy header holds, the resolver never
// panics, a peer that is not a trusted proxy is always its own identity,
// and the address found is one the header or the peer spelled.
func FuzzClientAddress(f *testing.F) {
	for _, s := range [][3]string{
		{"10.0.0.1:80", "203.0.113.9", ""},
		{"10.0.0.1:80", "1.1.1.1, 2.2.2.2", "203.0.113.9, 10.0.0.2"},
		{"198.51.100.1:80", "203.0.113.9", ""},
		{"[::ffff:10.0.0.1]:80", "[2001:db8::1]:443", "fe80::1%eth0"},
		{"10.0.0.1:80", `for="[2001:db8::1]:80";proto=https, for=unknown`, `For=203.0.113.9;by="x,y"`},
		{"10.0.0.1:80", `for="\"`, `,,,, ;;; =`},
		{"garbage", "", ""},
	} {
		f.Add(s[0], s[1], s[2], false)
		f.Add(s[0], s[1], s[2], true)
	}
	xff, _ := newTrust(&Config{TrustedProxies: []string{"10.0.0.0/8", "2001:db8:ffff::/48"}})
	fwd, _ := newTrust(&Config{TrustedProxies: []string{"10.0.0.0/8", "2001:db8:ffff::/48"}, ProxyHeader: "forwarded"})
	f.Fuzz(func(t *testing.T, remote, line1, line2 string, forwarded bool) {
		tr := &xff
		if forwarded {
			tr = &fwd
		}
		r := &http.Request{RemoteAddr: remote, Header: http.Header{tr.header: {line1, line2}}}
		a, proxied, ok := tr.client(r)
		p, pok := peer(r)
		if ok != pok {
			t.Fatalf("client ok %v, peer ok %v", ok, pok)
		}
		if !ok {
			return
		}
		if !tr.trusted(p) && (a != p || proxied) {
			t.Fatalf("untrusted peer %v: identity %v, proxied %v", p, a, proxied)
		}
		if a.Zone() != "" || a.Is4In6() {
			t.Fatalf("identity %v not canonical", a)
		}
		if a != p && !strings.Contains(line1+line2, strings.Split(a.String(), ":")[0]) && !a.Is6() {
			t.Fatalf("identity %v from neither the peer %v nor the header %q %q", a, p, line1, line2)
		}
		key := tr.appendAddrKey(nil, a)
		if len(key) == 0 {
			t.Fatal("empty key")
		}
	})
}

// FuzzConfig: New never panics on any settings, and a Guard it returns
// answers with fields polite's own parser reads back.
func FuzzConfig(f *testing.F) {
	f.Add(10.0, 20, "identity", 0.0, 0, "", "10.0.0.0/8", "", "GET /x/{id}", 2, 64)
	f.Add(0.5, 1, "per-user", 1.0, 3, "org", "192.0.2.7", "Forwarded", "/search/", 0, 56)
	f.Add(-1.0, -5, "Bad Name", 1e300, 1<<30, "identity", "0.0.0.0/0", "X-Real-IP", "GET x", -3, 200)
	f.Add(1e-7, 0, "", 3.0, 0, "", "::/0", "x-forwarded-for", "[", 1, 0)
	f.Fuzz(func(t *testing.T, rate float64, burst int, name string, trate float64, tburst int, tname,
		proxy, header, pattern string, cost, v6 int) {
		c := Config{Identity: Limit{Rate: rate, Burst: burst, Name: name}, Tenant: Limit{Rate: trate, Burst: tburst, Name: tname},
			TrustedProxies: []string{proxy}, ProxyHeader: header, Costs: map[string]int{pattern: cost}, IPv6Prefix: v6,
			Identify: func(*http.Request) Who { return Who{Tenant: "t"} }}
		g, err := New(c)
		if err != nil {
			if err.Error() == "" || !strings.HasPrefix(err.Error(), "guard: ") {
				t.Fatalf("error %q: want one that names the setting", err)
			}
			return
		}
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/", nil)
		g.Handler(ok).ServeHTTP(w, r)
		if w.Code != 200 && w.Code != 429 {
			t.Fatalf("status %d", w.Code)
		}
		if w.Code == 200 && w.Header().Get("RateLimit") != "" {
			if _, ok := retry.ParseRateLimit(w.Header(), time.Now()); !ok {
				t.Fatalf("polite cannot read its own fields: %q", w.Header())
			}
		}
	})
}
