package proxy_test

import (
	"log"
	"net/http"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/proxy"
)

// A forward proxy on loopback giving every client 2 requests per second
// and 4 in flight per host, holding a request over budget up to 30 s.
// Clients set http_proxy=http://127.0.0.1:8899.
func Example() {
	s := &proxy.Server{
		Transport: &polite.Transport{
			PublicOnly: true, // never reach private addresses for a client
			Limits:     polite.Limits{Rate: 2, Burst: 2, Concurrency: 4},
			UserAgent:  "example-crawler/1.0 (+https://example.com/bot)",
		},
		MaxWait: 30 * time.Second,
	}
	srv := &http.Server{Addr: "127.0.0.1:8899", Handler: s, ReadHeaderTimeout: 30 * time.Second}
	if false { // an example: it does not listen
		log.Fatal(srv.ListenAndServe())
	}
}

// Interception of named hosts: the CA is made once (its key stays in the
// directory) and its certificate given to clients to trust.
func ExampleNewCA() {
	ca, err := proxy.LoadCA("/etc/polite/proxy-ca")
	if err != nil {
		if ca, err = proxy.NewCA("/etc/polite/proxy-ca"); err != nil {
			log.Print(err)
			return
		}
	}
	_ = &proxy.Server{
		Transport: &polite.Transport{PublicOnly: true},
		CA:        ca,
		Intercept: func(host string) bool { return host == "api.example.com" },
	}
}
