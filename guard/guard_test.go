package guard

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/polite-go/polite/retry"
)

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })

// do sends one request from addr through h.
func do(h http.Handler, method, target, addr string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	r.RemoteAddr = addr
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func mustNew(t testing.TB, c Config) *Guard {
	t.Helper()
	g, err := New(c)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return g
}

type problem struct {
	Type     string   `json:"type"`
	Title    string   `json:"title"`
	Status   int      `json:"status"`
	Detail   string   `json:"detail"`
	Violated []string `json:"violated-policies"`
}

func TestZeroConfig(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := mustNew(t, Config{}).Handler(ok)
		for i := range DefaultBurst {
			w := do(h, "GET", "/", "192.0.2.1:1234")
			if w.Code != 200 {
				t.Fatalf("request %d: status %d, want 200", i+1, w.Code)
			}
			wantR := strconv.Itoa(DefaultBurst - 1 - i)
			if got := w.Header().Get("X-RateLimit-Remaining"); got != wantR {
				t.Errorf("request %d: X-RateLimit-Remaining = %s, want %s", i+1, got, wantR)
			}
		}
		w := do(h, "GET", "/", "192.0.2.1:1234")
		if w.Code != http.StatusTooManyRequests {
			t.Fatalf("request %d: status %d, want 429", DefaultBurst+1, w.Code)
		}
		if got := w.Header().Get("Retry-After"); got != "1" {
			t.Errorf("Retry-After = %q, want 1 (a token per 100 ms)", got)
		}
		if got := w.Header().Get("RateLimit"); !strings.HasPrefix(got, `"identity";r=0;t=1;pk=:`) {
			t.Errorf("RateLimit = %q", got)
		}
		if got := w.Header().Get("RateLimit-Policy"); got != `"identity";q=20;w=2` {
			t.Errorf("RateLimit-Policy = %q", got)
		}
		if got := w.Header().Get("Content-Type"); got != "application/problem+json" {
			t.Errorf("Content-Type = %q", got)
		}
		var p problem
		if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
			t.Fatalf("body %q: %v", w.Body, err)
		}
		if p.Type != problemQuota || p.Status != 429 || len(p.Violated) != 1 || p.Violated[0] != "identity" {
			t.Errorf("problem = %+v", p)
		}
		// Another client has its own budget.
		if w := do(h, "GET", "/", "192.0.2.2:1234"); w.Code != 200 {
			t.Errorf("other client: status %d, want 200", w.Code)
		}
		// One token every 100 ms.
		time.Sleep(99 * time.Millisecond)
		if w := do(h, "GET", "/", "192.0.2.1:1234"); w.Code != 429 {
			t.Errorf("after 99 ms: status %d, want 429", w.Code)
		}
		time.Sleep(time.Millisecond)
		if w := do(h, "GET", "/", "192.0.2.1:1234"); w.Code != 200 {
			t.Errorf("after 100 ms: status %d, want 200", w.Code)
		}
	})
}

func TestCostAboveBurst(t *testing.T) {
	g := mustNew(t, Config{Identity: Limit{Rate: 1, Burst: 5}, Costs: map[string]int{"POST /bulk": 6, "/cheap/": 0}})
	h := g.Handler(ok)
	w := do(h, "POST", "/bulk", "192.0.2.1:1")
	if w.Code != 429 {
		t.Fatalf("status %d, want 429", w.Code)
	}
	if got := w.Header().Get("Retry-After"); got != "" {
		t.Errorf("Retry-After = %q, want none: waiting cannot help", got)
	}
	// No RateLimit (issue 33, item 8: "identity";r=…;t=0 told a client
	// following the draft to retry at once, for ever), the policy still.
	for field, want := range map[string]string{"RateLimit": "", "X-RateLimit-Remaining": "", "X-RateLimit-Reset": "",
		"RateLimit-Policy": `"identity";q=5;w=5`, "X-RateLimit-Limit": "5"} {
		if got := w.Header().Get(field); got != want {
			t.Errorf("%s = %q, want %q", field, got, want)
		}
	}
	var p problem
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Detail, "never") || p.Violated[0] != "identity" {
		t.Errorf("problem = %+v", p)
	}
	// The refusal took nothing; a GET of the same path costs 1.
	if w := do(h, "GET", "/bulk", "192.0.2.1:1"); w.Code != 200 || w.Header().Get("X-RateLimit-Remaining") != "4" {
		t.Errorf("GET: %d remaining %q, want 200 and 4", w.Code, w.Header().Get("X-RateLimit-Remaining"))
	}
	// Cost 0 passes unannounced.
	for range 10 {
		if w := do(h, "GET", "/cheap/x", "192.0.2.1:1"); w.Code != 200 || w.Header().Get("RateLimit") != "" {
			t.Fatalf("cheap: %d %q", w.Code, w.Header().Get("RateLimit"))
		}
	}
	if s := g.Stats(); s.TooCostly != 1 || s.Refused != 1 || s.RefusedBy != [NumLevels]int64{1, 0, 0} {
		t.Errorf("Stats = %+v", s)
	}
}

func TestDryRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seen []string
		obs := observerFunc(func(detail string) { seen = append(seen, detail) })
		g := mustNew(t, Config{Identity: Limit{Rate: 1, Burst: 2}, DryRun: true, Observer: obs})
		h := g.Handler(ok)
		for i := range 5 {
			w := do(h, "GET", "/", "[2001:db8::1]:1")
			if w.Code != 200 || w.Header().Get("RateLimit") != "" {
				t.Fatalf("request %d: %d %q, want 200 with no fields", i, w.Code, w.Header().Get("RateLimit"))
			}
		}
		if s := g.Stats(); s.Shadowed != 3 || s.Refused != 0 {
			t.Errorf("Stats = %+v, want 3 shadowed", s)
		}
		if len(seen) != 3 || seen[0] != "identity (dry-run)" {
			t.Errorf("events = %q", seen)
		}
	})
}

func TestLevels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		who := func(r *http.Request) Who { return Who{User: r.Header.Get("U"), Tenant: r.Header.Get("T")} }
		g := mustNew(t, Config{
			Identity: Limit{Rate: 1, Burst: 3},
			Tenant:   Limit{Rate: 1, Burst: 4, Name: "org"},
			Global:   Limit{Rate: 100, Burst: 100},
			Identify: who,
		})
		h := g.Handler(ok)
		send := func(user, tenant string) *httptest.ResponseRecorder {
			r := httptest.NewRequest("GET", "/", nil)
			r.Header.Set("U", user)
			r.Header.Set("T", tenant)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			return w
		}
		for range 3 {
			if w := send("alice", "acme"); w.Code != 200 {
				t.Fatalf("alice: %d", w.Code)
			}
		}
		w := send("alice", "acme")
		if w.Code != 429 || !strings.Contains(w.Body.String(), `["identity"]`) {
			t.Fatalf("alice 4th: %d %s", w.Code, w.Body)
		}
		// bob shares acme's 4: one left.
		if w := send("bob", "acme"); w.Code != 200 {
			t.Fatalf("bob: %d", w.Code)
		}
		w = send("bob", "acme")
		if w.Code != 429 || !strings.Contains(w.Body.String(), `["org"]`) {
			t.Fatalf("bob 2nd: %d %s", w.Code, w.Body)
		}
		got := w.Header().Get("RateLimit-Policy")
		if got != `"identity";q=3;w=3, "org";q=4;w=4` {
			t.Errorf("RateLimit-Policy = %q (global not advertised)", got)
		}
		// A user without a tenant is limited by identity (and global) only.
		if w := send("carol", ""); w.Code != 200 || w.Header().Get("RateLimit-Policy") != `"identity";q=3;w=3` {
			t.Errorf("carol: %d %q", w.Code, w.Header().Get("RateLimit-Policy"))
		}
	})
}

type observerFunc func(detail string)

// failing is a Store that always fails.
type failing struct{}

func (failing) Decide(context.Context, *Request, *Decision) error { return errors.New("store down") }

func TestStoreFailure(t *testing.T) {
	g := mustNew(t, Config{Store: failing{}})
	w := do(g.Handler(ok), "GET", "/", "192.0.2.1:1")
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Content-Type") != "application/problem+json" ||
		!strings.Contains(w.Body.String(), "temporary-reduced-capacity") {
		t.Errorf("store down: %d %q %s", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
	if g.Stats().StoreErrors != 1 {
		t.Errorf("Stats = %+v", g.Stats())
	}
	// A client gone while the store decided gets no answer and no count.
	r := httptest.NewRequest("GET", "/", nil)
	ctx, cancel := context.WithCancel(r.Context())
	cancel()
	w = httptest.NewRecorder()
	g.Handler(ok).ServeHTTP(w, r.WithContext(ctx))
	if g.Stats().StoreErrors != 1 || w.Body.Len() != 0 {
		t.Errorf("canceled request: counted %d, body %q", g.Stats().StoreErrors, w.Body)
	}
	// Dry run lets it through.
	g = mustNew(t, Config{Store: failing{}, DryRun: true})
	if w := do(g.Handler(ok), "GET", "/", "192.0.2.1:1"); w.Code != 200 {
		t.Errorf("dry run, store down: %d", w.Code)
	}
}

// TestCostAboveBurstTellsNoOneElse: the answer to a request that can never
// pass says nothing of the tokens of a request answered before it (the
// store is not asked for it: its scratch held another client's numbers).
func TestCostAboveBurstTellsNoOneElse(t *testing.T) {
	g := mustNew(t, Config{Identity: Limit{Rate: 1, Burst: 5}, Costs: map[string]int{"POST /bulk": 6}})
	h := g.Handler(ok)
	for range 3 {
		do(h, "GET", "/", "192.0.2.1:1")
	}
	w := do(h, "POST", "/bulk", "192.0.2.2:1")
	if w.Code != 429 || w.Header().Get("RateLimit") != "" || w.Header().Get("X-RateLimit-Remaining") != "" {
		t.Errorf("too costly: %d, RateLimit %q, X-RateLimit-Remaining %q; want 429 and neither",
			w.Code, w.Header().Get("RateLimit"), w.Header().Get("X-RateLimit-Remaining"))
	}
}

// TestLegacyFieldsAgree: X-RateLimit-Limit is the RateLimit-Policy q (it
// was the burst, issue 33, item 8), Remaining the RateLimit r and Reset
// the t; on a refusal they are the refusing level's and Reset agrees with
// Retry-After.
func TestLegacyFieldsAgree(t *testing.T) {
	for _, tc := range []struct {
		name   string
		c      Config
		n      int // requests before the one checked
		policy string
		limit  string
	}{
		{"20/s burst 5", Config{Identity: Limit{Rate: 20, Burst: 5}}, 1, `"identity";q=20;w=1`, "20"},
		{"3/s burst 10", Config{Identity: Limit{Rate: 3, Burst: 10}}, 1, `"identity";q=12;w=4`, "12"},
		{"refused", Config{Identity: Limit{Rate: 0.5, Burst: 2}}, 3, `"identity";q=2;w=4`, "2"},
		{"refused by the tenant", Config{Identity: Limit{Rate: 10, Burst: 20}, Tenant: Limit{Rate: 1, Burst: 1},
			Identify: func(*http.Request) Who { return Who{Tenant: "acme"} }}, 2, `"identity";q=20;w=2, "tenant";q=1;w=1`, "1"},
		// The global level is not advertised: the identity's item tells
		// the refusal's story, nothing left until the Retry-After (it
		// said r=19;t=0 beside Retry-After: 2).
		{"refused by the unadvertised global", Config{Identity: Limit{Rate: 10, Burst: 20}, Global: Limit{Rate: 0.5, Burst: 1}}, 2,
			`"identity";q=20;w=2`, "20"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := mustNew(t, tc.c).Handler(ok)
				var w *httptest.ResponseRecorder
				for range tc.n {
					w = do(h, "GET", "/", "192.0.2.1:1")
				}
				hd := w.Header()
				if got := hd.Get("RateLimit-Policy"); got != tc.policy {
					t.Errorf("RateLimit-Policy = %q, want %q", got, tc.policy)
				}
				if got := hd.Get("X-RateLimit-Limit"); got != tc.limit {
					t.Errorf("X-RateLimit-Limit = %q, want %q (the policy's q)", got, tc.limit)
				}
				q, ok := retry.ParseRateLimit(http.Header{"Ratelimit": hd.Values("RateLimit"), "Ratelimit-Policy": hd.Values("RateLimit-Policy")}, time.Now())
				if !ok {
					t.Fatalf("RateLimit %q does not parse", hd.Get("RateLimit"))
				}
				reset, _ := strconv.ParseInt(hd.Get("X-RateLimit-Reset"), 10, 64)
				if hd.Get("X-RateLimit-Remaining") != strconv.Itoa(q.Remaining) || strconv.Itoa(q.Limit) != tc.limit || reset != time.Now().Add(q.Reset).Unix() {
					t.Errorf("X-RateLimit %q/%q/%q, RateLimit %q (read %+v): two stories", hd.Get("X-RateLimit-Limit"),
						hd.Get("X-RateLimit-Remaining"), hd.Get("X-RateLimit-Reset"), hd.Get("RateLimit"), q)
				}
				if w.Code == 429 {
					ra, _ := strconv.ParseInt(hd.Get("Retry-After"), 10, 64)
					if q.Remaining != 0 {
						t.Errorf("a 429 whose RateLimit %q leaves %d", hd.Get("RateLimit"), q.Remaining)
					}
					if reset-time.Now().Unix() != ra {
						t.Errorf("X-RateLimit-Reset in %d s, Retry-After %d s", reset-time.Now().Unix(), ra)
					}
				}
			})
		})
	}
}

// TestRefusedByLevel: Stats count refusals by the level that refused, for
// polite guard --metrics.
func TestRefusedByLevel(t *testing.T) {
	g := mustNew(t, Config{Identity: Limit{Rate: 0.01, Burst: 2}, Tenant: Limit{Rate: 0.01, Burst: 3},
		Identify: func(r *http.Request) Who { return Who{Tenant: "acme"} }})
	h := g.Handler(ok)
	for _, addr := range []string{"192.0.2.1:1", "192.0.2.1:1", "192.0.2.1:1", "192.0.2.2:1", "192.0.2.3:1"} {
		do(h, "GET", "/", addr)
	}
	// 192.0.2.1's third is its own level's; 192.0.2.3 finds the tenant's
	// three tokens spent.
	if s := g.Stats(); s.Refused != 2 || s.RefusedBy != [NumLevels]int64{1, 1, 0} {
		t.Errorf("Stats = %+v, want 2 refused: 1 by identity, 1 by tenant", s)
	}
}
