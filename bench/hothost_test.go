package bench

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/inflight"
	"golang.org/x/time/rate"
)

// nopRT answers every request at once with an empty 200: what is measured
// is the client's own bookkeeping per request.
type nopRT struct{}

func (nopRT) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
}

// xrateRT is what most Go API clients write by hand: one x/time/rate
// Limiter in front of the transport.
type xrateRT struct {
	l    *rate.Limiter
	base http.RoundTripper
}

func (t xrateRT) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.l.Wait(req.Context()); err != nil {
		return nil, err
	}
	return t.base.RoundTrip(req)
}

// BenchmarkHotHostRoundTrip is an API client sending as fast as it can to
// one host, every goroutine through one client: polite's whole request
// path (registry, in-flight cap, token, classification, report) beside a
// bare x/time/rate wrapper that does a tenth of that. Run with -cpu 1,2: the
// ns/op at 2 against 1 says whether a second core adds throughput.
func BenchmarkHotHostRoundTrip(b *testing.B) {
	req, _ := http.NewRequest("GET", "http://api.example/v1/items", nil)
	run := func(b *testing.B, rt http.RoundTripper) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				resp, err := rt.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
			}
		})
	}
	b.Run("polite", func(b *testing.B) {
		run(b, &polite.Transport{Base: nopRT{}, UserAgent: "api-client/1", IgnoreRobots: true,
			Limits: polite.Limits{Rate: singleRate, Burst: 1 << 30, Concurrency: inflight.Max}})
	})
	b.Run("xrate", func(b *testing.B) {
		run(b, xrateRT{l: rate.NewLimiter(singleRate, 1<<30), base: nopRT{}})
	})
}
