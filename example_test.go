package polite_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/retry"
)

func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello, %s", r.UserAgent())
	}))
	defer srv.Close()

	client := &http.Client{Transport: &polite.Transport{UserAgent: "mybot/1.0"}}
	resp, err := client.Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))
	// Output: 200 hello, mybot/1.0
}

// Per-host rules: a default budget, a slower one for a fragile host, and a
// smooth pace for an API that must not see bursts.
func ExampleTransport_rules() {
	t := &polite.Transport{
		Limits: polite.Limits{Rate: 5, Burst: 2, Concurrency: 4},
		Rules: []polite.Rule{
			{Pattern: "*.fragile.example", Limits: polite.Limits{Rate: 0.5, Concurrency: 1}},
			{Pattern: "api.example.com", Limits: polite.Limits{Rate: 10, Smooth: true}},
		},
	}
	fmt.Printf("%+v\n", t.Registry().LimitsFor("www.fragile.example"))
	fmt.Printf("%+v\n", t.Registry().LimitsFor("api.example.com"))
	fmt.Printf("%+v\n", t.Registry().LimitsFor("other.org"))
	// Output:
	// {Rate:0.5 Burst:2 Concurrency:1 Smooth:false MaxRate:0}
	// {Rate:10 Burst:2 Concurrency:4 Smooth:true MaxRate:0}
	// {Rate:5 Burst:2 Concurrency:4 Smooth:false MaxRate:0}
}

// An Observer sees every decision: here the host's robots.txt, fetched
// before its first page, then a 429 without Retry-After, which pauses the
// host for a backoff, and the retry that succeeds. A metrics exporter would
// count the attempts instead of printing them.
func ExampleTransport_observer() {
	first := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
			return
		}
		if first {
			first = false
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()

	t := &polite.Transport{
		Observer: polite.ObserverFunc(func(e polite.Event) {
			if e.Kind == polite.EventAttempt {
				fmt.Printf("attempt %d: %d %s\n", e.Attempt, e.Status, e.Outcome)
			}
		}),
		Backoff: retry.Backoff{Base: time.Millisecond, Cap: time.Millisecond},
	}
	resp, err := (&http.Client{Transport: t}).Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	// Output:
	// attempt 1: 200 ok
	// attempt 1: 429 throttled
	// attempt 2: 200 ok
}

// A scheduler with its own queue asks Ready whether a host could send, and
// sends with Try, which never waits at a gate: a host that is not ready
// comes back unsent, with when to try again.
func ExampleTransport_Try() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	// A burst of 2: robots.txt, fetched before the host's first request,
	// takes a token too.
	t := &polite.Transport{Limits: polite.Limits{Rate: 1, Burst: 2}}
	for range 2 {
		req, _ := http.NewRequest("GET", srv.URL, nil)
		resp, tried, err := t.Try(req, polite.TryOptions{Attempt: 1})
		if err != nil {
			fmt.Println(err)
			return
		}
		if !tried.Sent {
			fmt.Printf("not sent (%s), again in about %v\n", tried.Reason, time.Until(tried.At).Round(time.Second))
			continue
		}
		resp.Body.Close()
		fmt.Println("sent:", tried.Outcome)
	}
	req, _ := http.NewRequest("GET", srv.URL, nil)
	key, _ := t.KeyOf(req)
	_, why := t.Ready(key, time.Now())
	fmt.Println("ready?", why)
	// Output:
	// sent: ok
	// not sent (rate), again in about 1s
	// ready? rate
}

// A scheduler whose Transport shares its Store with other processes (a
// fleet's Redis) reserves each request's admission instead of asking
// Ready, and sends with Try under the reservation, which waits for its
// instant and asks the Store nothing more. What it does not send under,
// it gives back.
func ExampleTransport_Reserve() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	// A burst of 2: robots.txt and the host's first request go at once.
	t := &polite.Transport{Limits: polite.Limits{Rate: 10, Burst: 2}}
	send := func(path string, r *polite.Reservation) {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		resp, tried, err := t.Try(req, polite.TryOptions{Attempt: 1, Reservation: r})
		if err != nil {
			fmt.Println(err)
			return
		}
		if !tried.Sent {
			fmt.Println(path, "not sent:", tried.Reason)
			return
		}
		resp.Body.Close()
		fmt.Println(path, "sent:", tried.Outcome)
	}
	// The host's first request fetches its robots.txt first: sent as Try
	// sends, without a reservation.
	send("/a", nil)
	key, _ := t.KeyOf(httptest.NewRequest("GET", srv.URL, nil))
	r, wait, why := t.Reserve(key, time.Now(), time.Second, true, 1)
	if r == nil {
		fmt.Println("not reserved:", why, wait)
		return
	}
	// The bucket is empty: the token is reserved about 100 ms ahead.
	fmt.Println("due later:", r.At().After(time.Now()))
	send("/b", r)
	r, _, _ = t.Reserve(key, time.Now(), time.Second, true, 1)
	t.CancelReservation(r) // not sent under: given back
	// Output:
	// /a sent: ok
	// due later: true
	// /b sent: ok
}
