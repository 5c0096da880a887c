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
//  1. robots.txt (unless IgnoreRobots): a URL it disallows fails with
//     robots.ErrDisallowed before it waits for anything, and its Crawl-delay or
//     Request-rate lowers the host's rate;
//  2. in-flight slot: the host's concurrency cap; the slot is held until the
//     response body is closed;
//  3. the Store's admission, in one call: the block mark (a host that
//     answered with a soft block fails fast with ErrBlocked), the pause (a
//     host that said "slow down" with 429/503, with or without
//     Retry-After, or RateLimit remaining 0, is paused for every request;
//     a pause beyond MaxRetryAfter fails fast with ErrPaused), the breaker
//     (a host that keeps failing fails fast with breaker.ErrOpen, letting
//     one probe through after the open delay) and the token (rate, burst;
//     smooth mode spaces requests evenly);
//  4. the global slot (MaxInFlight), taken only once the host's token is at
//     hand, so a request waiting on a slow host never holds up the others;
//  5. send, classify (ok, throttled, overloaded, blocked, server error,
//     network error, client error), and report the outcome to the Store in
//     one call (pause, drain the bucket, breaker, RateLimit ceiling,
//     adaptive rate);
//  6. retry: only replayable requests, with attempts left and a token from
//     both the host's and the global retry budget; the delay is the host's
//     pause (Retry-After) or full-jitter backoff.
//
// When retries run out the last response is returned as it is, so a 429
// comes back as a response; an error means there is no response.
//
// # Per-host state
//
// Registry holds the per-host entries, created on first touch and evicted
// when idle, in bounded memory for millions of hosts. A Store owns what
// decides admission (the local store keeps it in memory, in the entries);
// Transport.Ready asks it, taking nothing, whether a host could send now,
// Transport.Try makes one attempt without waiting (for schedulers such as
// the crawl job), and Transport.Hosts and Transport.State read HostState
// snapshots. Rules set Limits by host
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
