package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/polite-go/polite/guard"
)

// BenchmarkGuardProxy: requests through `polite guard`'s handler (guard in
// front of the reverse proxy) against the bare reverse proxy, both on
// loopback before one upstream, 16 clients in flight. The client sits
// behind a trusted proxy (127.0.0.1) and names 1,000 client addresses in
// X-Forwarded-For, every request admitted. Throughput is 1/(ns/op): the
// guard's share of the bare proxy's is bare ns/op divided by guard ns/op.
func BenchmarkGuardProxy(b *testing.B) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok\n")
	}))
	defer upstream.Close()
	u, _ := url.Parse(upstream.URL)
	g, err := guard.New(guard.Config{Identity: guard.Limit{Rate: 1e6, Burst: 1 << 20}, TrustedProxies: []string{"127.0.0.1"}})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		h    http.Handler
	}{
		{"bare", newProxy(u, discard())},
		{"guard", g.Handler(newProxy(u, discard()))},
	} {
		b.Run(tc.name, func(b *testing.B) {
			front := httptest.NewServer(tc.h)
			defer front.Close()
			tr := &http.Transport{MaxIdleConnsPerHost: 64}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr}
			var next, bad atomic.Int64
			b.SetParallelism(8)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				req, _ := http.NewRequest("GET", front.URL+"/x", nil)
				for pb.Next() {
					req.Header.Set("X-Forwarded-For", "198.51."+strconv.Itoa(int(next.Add(1)%1000)/250)+"."+strconv.Itoa(int(next.Load()%250)))
					resp, err := c.Do(req)
					if err != nil {
						bad.Add(1)
						continue
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						bad.Add(1)
					}
				}
			})
			if n := bad.Load(); n > 0 {
				b.Fatalf("%d requests failed or were refused", n)
			}
		})
	}
}
