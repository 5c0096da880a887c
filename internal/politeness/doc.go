// Package politeness is polite's politeness benchmark: it runs rate policies
// against the testbed's standard scenarios and measures, from the hosts' own
// records, how much of each host's hidden capacity a policy used and how
// often it made the host refuse. `polite bench` prints its table.
//
// # Runs
//
// Each scenario (testbed.Scenarios: steady capacity, steps down and up, a
// latency knee with no 429s, a shallow knee, 429 with Retry-After, a jittery
// link, a concurrency cap, 20 hosts of mixed capacities) is served afresh for
// each policy, and Options.Workers requests per host are kept going for the
// scenario's duration: the demand is endless, the policy alone holds it back.
// Requests go through polite.Transport with one Rater per host from the
// policy, as a user would run it (burst 1, no robots.txt), or, with
// Options.Bare, through a minimal per-host limiter that shows the policy
// without the Transport's retries, breaker and backoff pauses.
//
// Hosts are served over the testbed's in-memory network, where a run inside
// a testing/synctest bubble takes no real time (the tests run every scenario
// and policy in seconds), or on loopback sockets in real time
// (Options.Realtime), as the CLI does.
//
// # Policies
//
// Ours is adaptive.Controller. Static is a fixed rate, the usual guess. AIMD
// is the textbook law: +1 req/s per second, halved on a throttle, once per
// second. AutoThrottle is Scrapy's AutoThrottle and AWSAdaptive the client
// rate limiter of the AWS SDK for Go v2's adaptive retry mode (CUBIC), both
// re-implemented here from their documentation and source, with their
// defaults, so that no peer enters the module. Every policy implements
// adaptive.Rater and drives the same client.
//
// # Metrics
//
// From each host's Timeline (1-second windows, requests counted in the
// window they arrived in) and Stats:
//
//   - goodput: requests admitted over the hidden capacity, summed over
//     hosts and windows;
//   - 429/503: requests refused (throttled or shed) over requests sent;
//   - settle: after a capacity step, the time until requests sent per
//     second stay within 10 % of the new capacity for 3 seconds in a row
//     (the worst host; "never" if they did not by the end);
//   - p95/unloaded: the worst host's p95 latency of admitted requests,
//     server side and queueing included, over its configured latency (the
//     live benchmark: over the host's median latency when asked one request
//     at a time just before the run, in a testbed of its own, which is what
//     the server gives unloaded on this machine, "unloaded ms" in its table);
//   - peak/cap: the worst 1-second window's requests over its capacity, the
//     most a host was asked to bear.
//
// Results are deterministic in memory under synctest: a policy is compared
// on one trace per scenario. Tuning should look at several (the -tune test
// flag shifts steps and reseeds hosts).
//
// # Commands
//
//	go test ./internal/politeness -run TestTable -v -args -table          # through polite.Transport
//	go test ./internal/politeness -run TestTable -v -args -table -bare    # the policies alone
//	go test ./internal/politeness -run TestTune -v -args -tune -bare      # polite, averaged over variants
//	go test ./internal/politeness -run TestTune -v -args -tune -initial 5 -scenarios bucket-load,queue-knee -each
//
// -tune also runs the live benchmark's testbed scenarios that have no
// simulated twin (bucket-load, queue-knee), for as long as their URL list
// takes at capacity; -initial starts the controller at the live flags'
// --rate 5, -variants N averages over N variants and -each prints each.
//
// -scenarios and -policies take comma-separated names, -json FILE writes
// the report with per-second timelines, -trace prints them, and -debug
// prints the controller's decisions in a build with -tags adaptivetrace.
package politeness
