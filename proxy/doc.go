// Package proxy is polite as an HTTP forward proxy: any client that can be
// pointed at a proxy (Scrapy, curl, wget, Python requests, Node) gets a
// polite Transport's per-host discipline without a line of Go.
//
// # Plain HTTP
//
// A request in absolute form ("GET http://example.com/a HTTP/1.1") goes
// upstream through the Server's polite.Transport, with everything that
// means: robots.txt, the host's rate and in-flight cap, its pause after a
// 429 or 503 with Retry-After, the adaptive rate, the breaker, retries of
// idempotent requests inside the proxy. Bodies stream both ways; both
// sides keep their connections alive. A request over its host's budget is
// held, not refused, for up to MaxWait (or less, when the wait it faces is
// known to be longer); then it is answered 429 (the host's rate or slots)
// or 503 (the host paused us, or its breaker is open) with a Retry-After
// and a Proxy-Status field (RFC 9209) saying why. An origin's own 429 or
// 503, once polite's retries are spent, is passed through as it came. A
// client that goes away while its request waits gives its place back.
//
// # HTTPS
//
// A CONNECT tunnel carries TLS the proxy cannot read, so for a host not
// intercepted polite paces connections only: a tunnel opens when the
// host's rate has a token for it (the same bucket its plain requests
// spend, paused with them), and at most TunnelCap tunnels to a host are
// open at once. Requests inside one tunnel are not paced; a client that
// keeps one connection alive sends through it at its own rate.
//
// For hosts Intercept names, the proxy answers the CONNECT itself and ends
// the client's TLS with a certificate its CA signs for the host (the CA is
// one the user made with NewCA and trusts explicitly), and sends each
// request inside upstream over TLS of its own, verifying the origin's
// certificate as any client would. Intercepted requests get request-level
// politeness like plain HTTP.
//
// # Per-request options
//
// A request (or a CONNECT, for every request in its tunnel) may carry
// Polite-Priority (interactive, normal or bulk), Polite-Cost (tokens, 1 to
// 1000), Polite-No-Retry (1) and Polite-Max-Wait (a duration no longer than
// the Server's MaxWait). Clients that cannot set headers put the same as
// comma-separated key=value pairs in the proxy user name
// ("http://priority=bulk,max-wait=10s:x@127.0.0.1:8899"). Polite-* fields are
// never sent upstream. Answers carry Polite-Waited-Ms, how long polite
// held the request before its first attempt.
//
// # Who may use it
//
// Without Auth only loopback clients are served: a proxy reachable from
// elsewhere without credentials is an open relay. Where upstream requests
// and tunnels may connect is the Transport's dialer's business (and
// Server.Dial's for tunnels): the CLI refuses non-public addresses unless
// told otherwise.
package proxy
