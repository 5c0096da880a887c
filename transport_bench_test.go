package polite

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/polite-go/polite/adaptive"
	"github.com/polite-go/polite/bucket"
	"github.com/polite-go/polite/inflight"
)

// BenchmarkRoundTrip measures the Transport's own overhead against a bare
// http.Transport on loopback, with no limit binding. Compare the two
// sub-benchmarks: the difference is what polite adds per request.
func BenchmarkRoundTrip(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	run := func(b *testing.B, rt http.RoundTripper) {
		req, _ := http.NewRequest("GET", srv.URL+"/", nil)
		b.ReportAllocs()
		for b.Loop() {
			resp, err := rt.RoundTrip(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	b.Run("bare", func(b *testing.B) {
		base := &http.Transport{MaxIdleConnsPerHost: 16}
		defer base.CloseIdleConnections()
		run(b, base)
	})
	b.Run("polite", func(b *testing.B) {
		base := &http.Transport{MaxIdleConnsPerHost: 16}
		defer base.CloseIdleConnections()
		run(b, &Transport{Base: base, Limits: Limits{Rate: bucket.Inf, Concurrency: inflight.Max}})
	})
}

// nopBase answers every request at once with an empty 200, so a benchmark
// through it measures the Transport's bookkeeping alone.
type nopBase struct{}

func (nopBase) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}}, nil
}

// nopRT is nopBase called as the Transport calls its Base: through the
// interface, so its response and header escape (2 allocations) in the
// "base" line as they do under polite, and the difference is polite's own.
var nopRT http.RoundTripper = nopBase{}

func BenchmarkOverhead(b *testing.B) {
	req, _ := http.NewRequest("GET", "http://overhead.test/", nil)
	b.Run("base", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			resp, _ := nopRT.RoundTrip(req)
			resp.Body.Close()
		}
	})
	// polite bare, then in the configurations users run: with a UserAgent
	// (so robots.txt is consulted, from the cache after the first request)
	// and, as the CLI runs by default, adaptive as well (its ceiling far
	// above the loop's pace, so no request waits).
	for _, c := range []struct {
		name      string
		userAgent string
		adaptive  bool
	}{{"polite", "", false}, {"polite-ua", "bench/1.0", false}, {"polite-ua-adaptive", "bench/1.0", true}} {
		b.Run(c.name, func(b *testing.B) {
			t := &Transport{Base: nopBase{}, Limits: Limits{Rate: bucket.Inf, Concurrency: inflight.Max}, UserAgent: c.userAgent}
			if c.adaptive {
				t.Adaptive = &adaptive.Config{Initial: 1e9, Max: 1e9}
			}
			b.ReportAllocs()
			for b.Loop() {
				resp, err := t.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
			}
		})
	}
	b.Run("polite-parallel", func(b *testing.B) {
		t := &Transport{Base: nopBase{}, Limits: Limits{Rate: bucket.Inf, Concurrency: inflight.Max}}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				resp, err := t.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
			}
		})
	})
}

// BenchmarkReady measures a scheduler's question (Transport.Ready) on a
// host that is ready, and on one waiting for its rate, where Ready also
// tells the Store a request waits (DemandNoter): asked of the local store
// itself, and of a Store wrapping it (which hears no note).
func BenchmarkReady(b *testing.B) {
	for _, c := range []struct {
		name    string
		rate    float64
		wrapped bool
		want    Reason
	}{{"ready", bucket.Inf, false, ""}, {"rate", 1e-3, false, ReasonRate}, {"rate-wrapped", 1e-3, true, ReasonRate}} {
		b.Run(c.name, func(b *testing.B) {
			t := &Transport{Base: nopBase{}, IgnoreRobots: true, Limits: Limits{Rate: c.rate, Burst: 1, Concurrency: inflight.Max}}
			if c.wrapped {
				t.Store = &countingStore{Store: NewLocalStore(t.Registry(), t.LocalOptions())}
			}
			req, _ := http.NewRequest("GET", "http://ready.test/", nil)
			resp, err := t.RoundTrip(req) // takes the one token
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
			b.ReportAllocs()
			for b.Loop() {
				if _, why := t.Ready("ready.test", time.Now()); why != c.want {
					b.Fatalf("Ready = %q, want %q", why, c.want)
				}
			}
		})
	}
}
