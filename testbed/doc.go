// Package testbed simulates HTTP hosts with a hidden capacity, for rehearsing
// and measuring politeness: how close a client gets to what a host can bear
// without making it shed load. It is polite's test-helper package, in the way
// net/http/httptest is net/http's, and users rehearse a crawl policy on it
// before pointing it at the real web.
//
// The testbed is the measuring stick, so it depends on nothing else in
// polite: it keeps its own server-side token bucket.
//
// # Hosts
//
// A Host is an http.Handler configured by a HostConfig:
//
//   - capacity: a token bucket (Rate, Burst) that may follow a Schedule of
//     steps up and down, or be changed by hand (Host.SetCapacity);
//   - beyond capacity: 429 or 503 (Status), with an honest Retry-After in
//     seconds or as an HTTP-date, and optional RateLimit / X-RateLimit-*
//     fields; or, under NoThrottle, no refusal at all: the request waits;
//   - service: Servers serving for Latency (± Jitter) each, a FIFO queue in
//     front of them (MaxQueue, beyond which it sheds with 503). Latency stays
//     at Latency below Servers/Latency req/s and climbs as arrivals approach
//     it: the knee. Slowdown makes the knee shallow: service slows with the
//     number of requests in service, as on a shared database;
//   - faults: hangs until the client gives up (TimeoutProb) and WAF challenge
//     pages (SoftBlock);
//   - content: /robots.txt (Robots), deterministic HTML pages of BodySize
//     bytes, and /status/NNN for any status.
//
// # Server-side truth
//
// Host.Stats counts arrivals and how each ended (admitted, rejected, shed,
// blocked, timed out), requests in flight and their maximum, and latency
// percentiles of admitted requests. Host.Timeline gives the same per 1-second
// window, with the capacity in force in each window: enough to compute goodput
// as a share of capacity, the worst window over capacity, and the time taken
// to settle after a step.
//
// # Serving
//
// A Server routes many hosts by the Host header. Server.Start listens on one
// loopback port, and Server.Client reaches http://fast.test/page/1 without
// DNS by dialing that port for every host name; Server.StartPerHostIP gives
// each host its own 127.0.0.x address instead, reachable from any client
// (Linux). Only loopback addresses are ever used.
//
// # Real time
//
// Served on sockets (Start, StartAt, StartPerHostIP, or a Host of one's
// own server after Host.RealTime), a host ends each wait, its queue's and
// its service time, with a kernel sleep of the last 2 ms (nanosleep, on
// Linux and macOS). Go's timers are late by up to a
// millisecond, which made a 0.5 ms host answer in 1.1 ms and a server of
// 10 ms serve 93 requests a second instead of 100: a host serves the
// latency and the capacity its HostConfig says, within about 0.1 ms.
//
// # Fake time
//
// Everything else waits on timers and channels, never by polling, so hosts run
// under testing/synctest, where fake time advances whenever every goroutine
// is blocked. Sockets would keep goroutines from ever being durably blocked,
// so inside a bubble use Server.StartInMemory (or a Network), which serves
// over in-memory connections. Create the server inside the bubble and close
// it before the bubble's function returns:
//
//	synctest.Test(t, func(t *testing.T) {
//		srv := testbed.NewServer(testbed.HostConfig{Name: "a.test", Rate: 10})
//		srv.StartInMemory()
//		defer srv.Close()
//		resp, err := srv.Client().Get("http://a.test/")
//		...
//	})
//
// # Presets
//
// DemoHosts are the hosts of `polite demo`; Scenarios are the politeness
// benchmark's standard scenarios (steady, step down and up, latency knee,
// Retry-After, jittery link, concurrency cap, 20 mixed hosts). Both are plain
// data.
package testbed
