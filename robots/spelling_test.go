package robots

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
)

// robots.txt was fetched once per spelling of a host: a Unicode name and
// its punycode, the forms of one IPv6 address (issue 17, defect 12). One
// origin is one fetch.
func TestOriginSpellingsFetchOnce(t *testing.T) {
	for _, spellings := range [][]string{
		{"http://bücher.test:%s/", "http://xn--bcher-kva.test:%s/", "http://BÜCHER.test:%s/a"},
		{"http://[::1]:%s/", "http://[0:0:0:0:0:0:0:1]:%s/", "http://[0::1]:%s/b"},
	} {
		t.Run(spellings[0], func(t *testing.T) {
			var fetches atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fetches.Add(1)
				w.Write([]byte("User-agent: *\nDisallow: /private\n"))
			}))
			defer srv.Close()
			_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
			// Every name dials the test server.
			tr := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
			}}
			defer tr.CloseIdleConnections()
			c := &Cache{Client: &http.Client{Transport: tr}}
			for _, s := range spellings {
				u, err := url.Parse(fmt.Sprintf(s, port))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := c.Get(context.Background(), u); err != nil {
					t.Fatalf("Get(%s): %v", u, err)
				}
			}
			if n := fetches.Load(); n != 1 {
				t.Errorf("%d fetches for %q, want 1", n, spellings)
			}
		})
	}
}
