// Package polite makes an HTTP client limit itself per host before servers
// have to.
//
// Wrap a client's transport and every host it talks to gets its own budget:
//
//	client := &http.Client{Transport: &polite.Transport{UserAgent: "mybot/1.0"}}
//	resp, err := client.Get("https://example.com/")
//
// # The gates
//
// Transport.RoundTrip passes each request through these gates, in this order,
// for the request's host (the key from Transport.Key: host, registrable domain
// or IP):
//
//  1. block mark: a host that answered with a soft block (challenge page,
//     captcha) fails fast with ErrBlocked;
//  2. pause: a host that said "slow down" (429/503 with or without
//     Retry-After, RateLimit remaining 0) is paused for every request, not
//     just the one that was refused; a pause beyond MaxRetryAfter fails fast
//     with ErrPaused;
//  3. breaker: a host that keeps failing fails fast with breaker.ErrOpen,
//     letting one probe through after the open delay;
//  4. in-flight slot: the host's concurrency cap, then the global cap
//     (MaxInFlight); the slot is held until the response body is closed;
//  5. token: the host's token bucket (rate, burst; smooth mode spaces
//     requests evenly);
//  6. send, classify (ok, throttled, overloaded, blocked, server error,
//     network error, client error), feed the outcome back (pause, drain the
//     bucket, breaker, RateLimit ceiling);
//  7. retry: only replayable requests, with attempts left and a token from
//     both the host's and the global retry budget; the delay is the host's
//     pause (Retry-After) or full-jitter backoff.
//
// When retries run out the last response is returned as it is, so a 429
// comes back as a response; an error means there is no response.
//
// # Per-host state
//
// Registry holds the per-host state, created on first touch and evicted when
// idle, in bounded memory for millions of hosts. Rules set Limits by host
// pattern. The primitives live in their own packages and know nothing of
// each other: bucket (token bucket), inflight (FIFO semaphore), retry
// (Retry-After, RateLimit headers, backoff, retry budget), breaker, robots.
//
// # Observing
//
// Every decision is an Event for Transport.Observer and a record for
// Transport.Logger (nil means silent), with the reason: rate, concurrency,
// retry-after, backoff, ratelimit, budget, breaker, block.
package polite
