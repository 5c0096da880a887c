package polite

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/polite-go/polite/adaptive"
)

// footprint returns the live heap per host after n hosts with keys of
// keyLen bytes have each had one request through a Transport built by mk.
func footprint(t *testing.T, n, keyLen int, mk func() *Transport) float64 {
	t.Helper()
	pad := strings.Repeat("x", keyLen-len("h0000000.example"))
	urls := make([]string, n)
	for i := range urls {
		urls[i] = fmt.Sprintf("http://h%07d%s.example/", i, pad)
	}
	reqs := make([]*http.Request, n)
	for i, u := range urls {
		reqs[i], _ = http.NewRequest("GET", u, nil)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tr := mk()
	for _, req := range reqs {
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if got := tr.Registry().Len(); got != n {
		t.Fatalf("registry holds %d hosts, want %d", got, n)
	}
	runtime.KeepAlive(tr)
	runtime.KeepAlive(reqs)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
}

// TestTransportFootprint holds the heap per host once a Transport has sent
// to it, keys included, in the configurations people run: bare, adaptive,
// and the CLI's defaults (a User-Agent, robots.txt, adaptive). Run with -v
// for the figures. The goals are 512 B plain and 1 KiB with the CLI's
// defaults, for 16-byte keys; a 64-byte key is kept twice (the host's and
// its robots.txt origin's), so those bounds are 96 bytes higher.
func TestTransportFootprint(t *testing.T) {
	n := 20_000
	if testing.Short() {
		n = 100
	}
	for _, c := range []struct {
		name string
		mk   func() *Transport
		max  float64 // for 16-byte keys
	}{
		{"plain", func() *Transport { return &Transport{Base: nopBase{}, IgnoreRobots: true} }, 512},
		{"adaptive", func() *Transport {
			return &Transport{Base: nopBase{}, IgnoreRobots: true, Adaptive: &adaptive.Config{}}
		}, 928},
		{"cli-defaults", func() *Transport {
			// A burst of 4, so the robots.txt request does not make the
			// page wait for the host's next token.
			return &Transport{Base: nopBase{}, UserAgent: "polite-test/1", Limits: Limits{Rate: 200, Burst: 4},
				Adaptive: &adaptive.Config{Max: 200}}
		}, 1024},
	} {
		for _, keyLen := range []int{16, 64} {
			per := footprint(t, n, keyLen, c.mk)
			t.Logf("%-12s key %2d B: %6.0f bytes/host", c.name, keyLen, per)
			limit := c.max
			if keyLen > 16 {
				limit += 96
			}
			if per > limit {
				t.Errorf("%s, %d-byte keys: %.0f bytes per host, want ≤ %.0f", c.name, keyLen, per, limit)
			}
		}
	}
}

// TestOverheadAllocs holds what a Transport allocates per request, beyond
// what its Base does, to 3 in the configurations people run (BenchmarkOverhead
// has the times).
func TestOverheadAllocs(t *testing.T) {
	req, _ := http.NewRequest("GET", "http://overhead.test/", nil)
	roundTrip := func(rt http.RoundTripper) func() {
		return func() {
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
	}
	base := testing.AllocsPerRun(100, roundTrip(nopRT))
	for _, c := range []struct {
		name string
		tr   *Transport
	}{
		{"plain", &Transport{Base: nopBase{}, Limits: Limits{Rate: 1e9, Burst: 1 << 20}}},
		{"user-agent", &Transport{Base: nopBase{}, Limits: Limits{Rate: 1e9, Burst: 1 << 20}, UserAgent: "t/1"}},
		{"user-agent+adaptive", &Transport{Base: nopBase{}, Limits: Limits{Rate: 1e9, Burst: 1 << 20}, UserAgent: "t/1",
			Adaptive: &adaptive.Config{Initial: 1e9, Max: 1e9}}},
	} {
		roundTrip(c.tr)() // robots.txt and the host's state are made once
		if added := testing.AllocsPerRun(100, roundTrip(c.tr)) - base; added > 3 {
			t.Errorf("%s: %.1f allocations per request beyond the base's, want ≤ 3", c.name, added)
		}
	}
}

// A request carrying its own terms (a request id, a cost: the crawl job
// sends every request so) allocates no more than one without: robots.txt,
// cached, is read without preparing a fetch's context (issue 32's fix
// for robots.txt taking a request's terms did so on every request).
func TestTermsAllocNothing(t *testing.T) {
	tr := &Transport{Base: nopBase{}, Limits: Limits{Rate: 1e9, Burst: 1 << 20}, UserAgent: "t/1"}
	plain, _ := http.NewRequest("GET", "http://overhead.test/", nil)
	withTerms := plain.WithContext(WithRequestID(WithCost(context.Background(), 1), 7))
	allocs := func(req *http.Request) float64 {
		return testing.AllocsPerRun(100, func() {
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		})
	}
	allocs(plain) // robots.txt and the host's state are made once
	if a, b := allocs(plain), allocs(withTerms); b > a {
		t.Errorf("%.1f allocations per request with terms, %.1f without: want no more", b, a)
	}
}
