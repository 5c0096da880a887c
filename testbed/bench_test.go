package testbed_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/polite-go/polite/testbed"
)

// discard is a ResponseWriter that keeps nothing, so benchmarks measure the
// host, not the recorder.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}

func benchHost(b *testing.B, cfg testbed.HostConfig) {
	h := testbed.NewHost(cfg)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		req := httptest.NewRequest("GET", "http://a.test/page/1", nil)
		w := &discard{h: make(http.Header)}
		for pb.Next() {
			clear(w.h)
			h.ServeHTTP(w, req)
		}
	})
}

// The handler's own cost per request, without HTTP.
func BenchmarkHostServeHTTP(b *testing.B) {
	b.Run("unlimited", func(b *testing.B) { benchHost(b, testbed.HostConfig{Name: "a.test"}) })
	b.Run("bucket", func(b *testing.B) {
		benchHost(b, testbed.HostConfig{Name: "a.test", Rate: 1e9, Burst: 1000, RateLimitHeaders: testbed.RateLimitBoth})
	})
	b.Run("rejecting", func(b *testing.B) {
		benchHost(b, testbed.HostConfig{Name: "a.test", Rate: 1, RetryAfter: testbed.RetryAfterSeconds})
	})
	b.Run("servers", func(b *testing.B) { benchHost(b, testbed.HostConfig{Name: "a.test", Servers: 4}) })
}

// Whole requests over loopback sockets with keep-alive: what a crawl sees.
// The client shares the CPU, so this is a floor for the server alone.
func BenchmarkServerLoopback(b *testing.B) {
	srv := testbed.NewServer(testbed.HostConfig{Name: "a.test"})
	if err := srv.Start(); err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	c := srv.Client()
	b.ReportAllocs()
	b.SetParallelism(8)
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := c.Get("http://a.test/page/1")
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}
