package guard

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// A refusal allocates no more than an admission: the field values in one
// string and one slice, the body from pooled memory (issue 29: it took 11
// allocations, and floods are when it runs most).
func TestRefusalAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops pooled items at random")
	}
	for _, tc := range []struct {
		name   string
		c      Config
		method string
	}{
		{"over budget", Config{Identity: Limit{Rate: 0.01, Burst: 1}}, "GET"},
		{"cost above burst", Config{Identity: Limit{Rate: 1, Burst: 5}, Costs: map[string]int{"POST /bulk": 6}}, "POST"},
		{"tenant level", Config{Identity: Limit{Rate: 0.01, Burst: 1}, Tenant: Limit{Rate: 1, Burst: 10},
			Identify: func(*http.Request) Who { return Who{Tenant: "acme"} }}, "GET"},
		{"close refused", Config{Identity: Limit{Rate: 0.01, Burst: 1}, CloseRefused: true}, "GET"},
		{"store down", Config{Store: failing{}, Logger: slog.New(slog.DiscardHandler)}, "GET"},
		// Logged at Info once per 10 s: the others are counted, not built.
		{"logged", Config{Identity: Limit{Rate: 0.01, Burst: 1}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, "GET"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := mustNew(t, tc.c).Handler(ok)
			r := httptest.NewRequest(tc.method, "/bulk", nil)
			r.RemoteAddr = "192.0.2.1:1"
			w := &nopWriter{h: make(http.Header, 8)}
			h.ServeHTTP(w, r) // spends the burst
			allocs := testing.AllocsPerRun(200, func() {
				clear(w.h)
				w.code = 0
				h.ServeHTTP(w, r)
			})
			if w.code != http.StatusTooManyRequests && w.code != http.StatusServiceUnavailable {
				t.Fatalf("status %d, want a refusal", w.code)
			}
			if allocs > 2 {
				t.Errorf("a refusal allocates %v times, want at most 2 (as an admission)", allocs)
			}
		})
	}
}

// The refusal bodies cut ahead of time read as the whole detail would.
func TestRefusalBody(t *testing.T) {
	g := mustNew(t, Config{Identity: Limit{Rate: 0.01, Burst: 3, Name: "per-client"}})
	for _, tc := range []struct{ cost, burst, retry int64 }{{1, 3, 1}, {2, 3, 100}, {1, 3, 0}, {7, 3, -1}, {1 << 20, 1 << 19, -1}} {
		var got []byte
		g.bodies[Identity].append(&got, tc.cost, tc.burst, tc.retry)
		detail := "policy per-client: the request costs " + strconv.FormatInt(tc.cost, 10) + " token(s), fewer are left; retry after " + strconv.FormatInt(tc.retry, 10) + " s"
		if tc.retry < 0 {
			detail = "the request costs " + strconv.FormatInt(tc.cost, 10) + " tokens, more than policy per-client ever holds (" + strconv.FormatInt(tc.burst, 10) + "): it can never be admitted"
		}
		want := appendProblem(nil, http.StatusTooManyRequests, problemQuota, "per-client", detail)
		if !bytes.Equal(got, want) {
			t.Errorf("body(%+v) =\n%s\nwant\n%s", tc, got, want)
		}
	}
}

// A refusal says Connection: close only with CloseRefused, so a client
// over its budget keeps no idle connection open (issue 29); an admission
// never does.
func TestCloseRefused(t *testing.T) {
	for _, closeRefused := range []bool{false, true} {
		h := mustNew(t, Config{Identity: Limit{Rate: 0.01, Burst: 1}, CloseRefused: closeRefused}).Handler(ok)
		if w := do(h, "GET", "/", "192.0.2.1:1"); w.Code != 200 || w.Header().Get("Connection") != "" {
			t.Errorf("CloseRefused %v: admitted %d with Connection %q, want 200 and none", closeRefused, w.Code, w.Header().Get("Connection"))
		}
		want := ""
		if closeRefused {
			want = "close"
		}
		if w := do(h, "GET", "/", "192.0.2.1:1"); w.Code != 429 || w.Header().Get("Connection") != want {
			t.Errorf("CloseRefused %v: refused %d with Connection %q, want 429 and %q", closeRefused, w.Code, w.Header().Get("Connection"), want)
		}
	}
}

// A store that fails on every request is logged at most once per
// warnEvery, the next line counting the ones left out (issue 29: one WARN
// line per refused request, 1,001 lines in 5 s at 200 req/s).
func TestStoreFailureLogThrottled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		g := mustNew(t, Config{Store: failing{}, Logger: slog.New(slog.NewTextHandler(&buf, nil))})
		lines := flood(t, g.Handler(ok), http.StatusServiceUnavailable, &buf)
		if !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "store down") {
			t.Errorf("first line %q: want a WARN naming the error", lines[0])
		}
	})
}

// flood sends h 5,000 requests, 200 a second for 25 s, each answered
// status, and returns the lines logged to buf: three (at 0, 10 and 20 s),
// the second and third counting the 1,999 left out before each.
func flood(t *testing.T, h http.Handler, status int, buf *bytes.Buffer) []string {
	t.Helper()
	const n = 5000
	for range n {
		if w := do(h, "GET", "/", "192.0.2.1:1"); w.Code != status {
			t.Fatalf("status %d, want %d", w.Code, status)
		}
		time.Sleep(5 * time.Millisecond)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines for %d answers %d in 25 s, want 3:\n%s", len(lines), n, status, strings.Join(lines[:min(len(lines), 5)], "\n"))
	}
	if strings.Contains(lines[0], "suppressed") || !strings.Contains(lines[1], "suppressed=1999") || !strings.Contains(lines[2], "suppressed=1999") {
		t.Errorf("lines do not count the ones left out:\n%s", strings.Join(lines, "\n"))
	}
	return lines
}

// Refusals are logged at Info under a logger not at Debug, at most once
// per warnEvery, the next line counting the ones left out (issue 33, item
// 8: polite guard refused in silence; nginx logs each refusal); under a
// Debug logger each one is.
func TestRefusalsLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		g := mustNew(t, Config{Identity: Limit{Rate: 0.01, Burst: 1}, Logger: slog.New(slog.NewTextHandler(&buf, nil))})
		h := g.Handler(ok)
		do(h, "GET", "/", "192.0.2.1:1") // spends the burst
		lines := flood(t, h, http.StatusTooManyRequests, &buf)
		if !strings.Contains(lines[0], "level=INFO") || !strings.Contains(lines[0], "identity=a:192.0.2.1") || !strings.Contains(lines[0], "status=429") {
			t.Errorf("first line %q: want an INFO line naming the identity and the status", lines[0])
		}

		buf.Reset()
		g = mustNew(t, Config{Identity: Limit{Rate: 0.01, Burst: 1},
			Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		h = g.Handler(ok)
		for range 11 {
			do(h, "GET", "/", "192.0.2.1:1")
		}
		if got := strings.Count(buf.String(), "level=DEBUG"); got != 10 {
			t.Errorf("a Debug logger: %d lines for 10 refusals, want each", got)
		}
	})
}

// Many goroutines failing at once: one line is written, and the next one
// counts every other.
func TestThrottleConcurrent(t *testing.T) {
	var th LogThrottle
	now := time.Unix(1000, 0)
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				if ok, _ := th.Allow(now); ok {
					allowed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := allowed.Load(); n != 1 {
		t.Errorf("%d lines allowed at one instant, want 1", n)
	}
	if ok, n := th.Allow(now.Add(warnEvery)); !ok || n != 7999 {
		t.Errorf("allow after warnEvery = %v, %d; want true, 7999", ok, n)
	}
}
