package testbed_test

import (
	"fmt"
	"io"
	"log"
	"net/http/httptest"

	"github.com/polite-go/polite/testbed"
)

// A host with a capacity of 1 request per minute and a burst of 2 admits two
// requests at once, then refuses the third with an honest Retry-After.
func ExampleHost() {
	h := testbed.NewHost(testbed.HostConfig{
		Name: "api.test", Rate: 1.0 / 60, Burst: 2, RetryAfter: testbed.RetryAfterSeconds,
	})
	for range 3 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "http://api.test/items", nil))
		fmt.Printf("%d Retry-After=%q\n", rec.Code, rec.Header().Get("Retry-After"))
	}
	st := h.Stats()
	fmt.Printf("arrivals %d, admitted %d, rejected %d\n", st.Arrivals, st.Admitted, st.Rejected)
	// Output:
	// 200 Retry-After=""
	// 200 Retry-After=""
	// 429 Retry-After="60"
	// arrivals 3, admitted 2, rejected 1
}

// The demo hosts on loopback: the server's client reaches them by name,
// without DNS.
func ExampleServer() {
	srv := testbed.NewServer(testbed.DemoHosts()...)
	if err := srv.Start(); err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL("robots.test") + "/robots.txt")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Print(string(body))
	fmt.Println(srv.Host("robots.test").Stats().Robots)
	// Output:
	// User-agent: *
	// Disallow: /private/
	// Crawl-delay: 1
	// 1
}

func ExampleScenarios() {
	for _, s := range testbed.Scenarios() {
		fmt.Printf("%-22s %2d host(s), %v\n", s.Name, len(s.Hosts), s.Duration)
	}
	// Output:
	// steady                  1 host(s), 1m0s
	// step-down               1 host(s), 45s
	// step-up                 1 host(s), 45s
	// latency-knee            1 host(s), 1m0s
	// shallow-knee            1 host(s), 1m0s
	// retry-after             1 host(s), 1m0s
	// jittery                 1 host(s), 1m0s
	// concurrency-cap         1 host(s), 1m0s
	// knee-wait15-10ms-c8     1 host(s), 30s
	// knee-wait50-0.5ms-c16   1 host(s), 30s
	// knee-wait20-20ms-c1     1 host(s), 30s
	// knee-fifo2-200ms-c4     1 host(s), 30s
	// knee-fifo2-50ms-b50     1 host(s), 30s
	// mixed-20               20 host(s), 1m0s
}
