package cli

import (
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/polite-go/polite/crawl"
)

// --resolve and --connect-to reach named hosts that no DNS knows (as
// `polite testbed --addr` serves them), keep the URL's Host header, and let
// the loopback address they name through the public-address check, which
// refuses it otherwise: the list names no loopback URL (issue 18, item 5).
func TestResolveAndConnectTo(t *testing.T) {
	srv, hosts := recordServer(t, func(r *http.Request) string { return r.Host })
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	for _, tc := range []struct {
		name string
		flag []string
	}{
		{"resolve", []string{"--resolve", "shop.test:" + port + ":127.0.0.1", "--resolve", "blog.test:" + port + ":[::1],127.0.0.1"}},
		{"connect-to", []string{"--connect-to", "::127.0.0.1:" + port}},
		{"connect-to localhost", []string{"--connect-to", "::localhost:" + port}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(hosts())
			list := "http://shop.test:" + port + "/a\nhttp://blog.test:" + port + "/b\n"
			code, res, stderr := runHostile(t, t.TempDir(), list, append([]string{"--rate", "100"}, tc.flag...)...)
			if code != ExitOK {
				t.Fatalf("exit %d, stderr %s; results %+v", code, stderr, res)
			}
			for u, r := range res {
				if r.Outcome != crawl.OK {
					t.Errorf("%s: %s (%s)", u, r.Outcome, r.Error)
				}
			}
			got := slices.Sorted(slices.Values(hosts()[before:]))
			want := []string{"blog.test:" + port, "shop.test:" + port}
			if !slices.Equal(got, want) {
				t.Errorf("server saw Host %q, want %q", got, want)
			}
		})
	}

	// Without them, the loopback address is refused (the names alone do
	// not resolve at all, so point one at loopback by IP through a rule
	// for another port: the check is per address and port).
	code, res, _ := runHostile(t, t.TempDir(), "http://shop.test:"+port+"/a\n", "--rate", "100", "--retries", "0",
		"--connect-to", "::127.0.0.1:1")
	if code == ExitOK || res["http://shop.test:"+port+"/a"].Outcome == crawl.OK {
		t.Errorf("a rule for port 1 reached port %s: exit %d, %+v", port, code, res)
	}
}

// Malformed --resolve and --connect-to values are usage errors that name
// the value and what is wrong.
func TestConnectFlagErrors(t *testing.T) {
	for _, tc := range []struct{ flag, value, want string }{
		{"--resolve", "shop.test", "no port and no address"},
		{"--resolve", "shop.test:80", "no address"},
		{"--resolve", ":80:127.0.0.1", "no host"},
		{"--resolve", "shop.test:99999:127.0.0.1", "port"},
		{"--resolve", "shop.test:80:not-an-ip", `"not-an-ip" is not an IP address`},
		{"--connect-to", "a:80", "four fields"},
		{"--connect-to", "a:80:b:70000", `port "70000"`},
		{"--connect-to", "[::1:80::", "unclosed"},
		{"--connect-to", "a:1:b:2:c", "more than four"},
	} {
		code, _, stderr := politeCmd(t, "fetch", tc.flag, tc.value, "-")
		if code != ExitUsage || !strings.Contains(stderr, tc.value) || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s %q: exit %d, stderr %q; want %d naming the value and %q", tc.flag, tc.value, code, stderr, ExitUsage, tc.want)
		}
	}
}
