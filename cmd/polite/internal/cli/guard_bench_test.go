package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/polite-go/polite/guard"
)

// proxyBench is a bare reverse proxy and the guard in front of the same
// proxy, both on loopback before one upstream, and a client for each.
type proxyBench struct {
	bare, guarded string
	client        *http.Client
	next, bad     atomic.Int64
}

func newProxyBench(b *testing.B) *proxyBench {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok\n")
	}))
	b.Cleanup(upstream.Close)
	u, _ := url.Parse(upstream.URL)
	g, err := guard.New(guard.Config{Identity: guard.Limit{Rate: 1e6, Burst: 1 << 20}, TrustedProxies: []string{"127.0.0.1"}})
	if err != nil {
		b.Fatal(err)
	}
	bare := httptest.NewServer(newProxy(u, 0, discard()))
	b.Cleanup(bare.Close)
	guarded := httptest.NewServer(g.Handler(newProxy(u, 0, discard())))
	b.Cleanup(guarded.Close)
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	b.Cleanup(tr.CloseIdleConnections)
	return &proxyBench{bare: bare.URL + "/x", guarded: guarded.URL + "/x", client: &http.Client{Transport: tr}}
}

// get sends one request naming one of 1,000 client addresses behind the
// trusted proxy 127.0.0.1.
func (p *proxyBench) get(req *http.Request) {
	n := int(p.next.Add(1) % 1000)
	req.Header.Set("X-Forwarded-For", "198.51."+strconv.Itoa(n/250)+"."+strconv.Itoa(n%250))
	resp, err := p.client.Do(req)
	if err != nil {
		p.bad.Add(1)
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		p.bad.Add(1)
	}
}

// burst sends n requests to target from 16 goroutines and returns how
// long they took.
func (p *proxyBench) burst(target string, n int) time.Duration {
	start := time.Now()
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			req, _ := http.NewRequest("GET", target, nil)
			for range n / 16 {
				p.get(req)
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

// BenchmarkGuardProxy: requests through `polite guard`'s handler (guard in
// front of the reverse proxy) and through the bare reverse proxy, 16 in
// flight, every request admitted; the client names 1,000 addresses in
// X-Forwarded-For behind the trusted 127.0.0.1. ns/op is per request.
func BenchmarkGuardProxy(b *testing.B) {
	p := newProxyBench(b)
	for _, tc := range []struct{ name, url string }{{"bare", p.bare}, {"guard", p.guarded}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetParallelism(8)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				req, _ := http.NewRequest("GET", tc.url, nil)
				for pb.Next() {
					p.get(req)
				}
			})
		})
	}
	if n := p.bad.Load(); n > 0 {
		b.Fatalf("%d requests failed or were refused", n)
	}
}

// BenchmarkGuardProxyShare measures the guarded proxy's throughput as a
// share of the bare proxy's, alternating the two in rounds of 512
// requests each so that what else runs on a shared machine weighs on both
// alike: the metric guard-%-of-bare is bare time / guard time * 100.
func BenchmarkGuardProxyShare(b *testing.B) {
	p := newProxyBench(b)
	p.burst(p.bare, 512) // warm both: connections, buckets
	p.burst(p.guarded, 512)
	var tb, tg time.Duration
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			tb += p.burst(p.bare, 512)
			tg += p.burst(p.guarded, 512)
		} else {
			tg += p.burst(p.guarded, 512)
			tb += p.burst(p.bare, 512)
		}
	}
	if n := p.bad.Load(); n > 0 {
		b.Fatalf("%d requests failed or were refused", n)
	}
	b.ReportMetric(100*tb.Seconds()/tg.Seconds(), "guard-%-of-bare")
	b.ReportMetric(float64(tb.Nanoseconds())/float64(b.N*512), "bare-ns/req")
	b.ReportMetric(float64(tg.Nanoseconds())/float64(b.N*512), "guard-ns/req")
}
