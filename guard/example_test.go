package guard_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/polite-go/polite/guard"
)

func Example() {
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") })
	g, err := guard.New(guard.Config{
		Identity: guard.Limit{Rate: 1, Burst: 2},     // per user, else per client address
		Tenant:   guard.Limit{Rate: 10, Burst: 20},   // per tenant
		Costs:    map[string]int{"POST /reports": 2}, // a report takes two tokens
		Identify: func(r *http.Request) guard.Who { // after authentication
			return guard.Who{User: r.Header.Get("X-User"), Tenant: r.Header.Get("X-Org")}
		},
	})
	if err != nil {
		panic(err)
	}
	h := g.Handler(api)
	for _, method := range []string{"GET", "POST"} {
		r := httptest.NewRequest(method, "/reports", nil)
		r.Header.Set("X-User", "alice")
		r.Header.Set("X-Org", "acme")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Println(method, w.Code, w.Header().Get("Retry-After"), w.Header().Get("RateLimit-Policy"))
	}
	// Output:
	// GET 200  "identity";q=2;w=2, "tenant";q=20;w=2
	// POST 429 1 "identity";q=2;w=2, "tenant";q=20;w=2
}

// A LogThrottle keeps a failure that repeats on every request to one log
// line per 10 s, the next line counting those left out.
func ExampleLogThrottle() {
	var th guard.LogThrottle
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 30 { // a failure a second for 30 s
		if ok, left := th.Allow(start.Add(time.Duration(i) * time.Second)); ok {
			fmt.Printf("at %2ds: a line, %d left out before it\n", i, left)
		}
	}
	// Output:
	// at  0s: a line, 0 left out before it
	// at 10s: a line, 9 left out before it
	// at 20s: a line, 9 left out before it
}
