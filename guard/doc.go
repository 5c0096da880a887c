// Package guard is the server side of polite: rate-limit middleware that
// gives each caller a budget and tells it, precisely, how to behave.
//
// # Levels
//
// A request takes Cost tokens from up to three token buckets: its
// identity's (the authenticated user, pooled over all of that user's
// devices; else the client's address, so an office behind one NAT shares
// one budget), its tenant's, and everyone's (global). It needs a yes from
// every level in play, and a refused request changes no level: a caller
// refused by its tenant's budget has not spent its own.
//
// Buckets are GCRA, the same arithmetic as polite's bucket package: a rate
// and a burst, one number of state per bucket, exact to the nanosecond in
// memory and to the microsecond in Redis (redisstore.GuardStore, one script
// per request for all levels, on Redis's clock).
//
// # Answers
//
// A refused request gets 429 with Retry-After = ceil((cost - tokens)/rate)
// of the level that refused it, so a client that waits exactly that long is
// admitted; a request costing more than a level's burst can never pass and
// is told so, with no Retry-After and no RateLimit field (whose t would
// invite a retry). Every other answer carries the IETF RateLimit and
// RateLimit-Policy fields (draft-ietf-httpapi-ratelimit-headers-10, all in
// ratelimit.go) and the legacy X-RateLimit-Limit/Remaining/Reset, which
// say the same of one level (Limit is its policy's q); a 429
// has an application/problem+json body of type quota-exceeded naming the
// violated policy. The partition key (pk) is a keyed hash, never the
// identity, and the global level is not advertised unless asked.
//
// # Client addresses
//
// With no TrustedProxies the TCP peer is the client. With some, the guard
// reads X-Forwarded-For (every line, in order) or Forwarded only from a
// trusted peer, and takes the rightmost address that is not a trusted
// proxy: what a client writes left of it cannot mint a new identity.
// IPv6 clients are grouped by /64, IPv4-mapped addresses folded, zones
// dropped. Settings that could be read two ways fail in New.
//
// # Memory
//
// The Memory store is sharded and bounded: at its bound it drops buckets
// that are full first (a new bucket starts full, so nothing is lost), and
// only then others. A decision allocates nothing; the middleware allocates
// twice, for the response fields, whether it admits or refuses: a refusal's
// body is cut ahead of time and written from pooled memory, since floods
// are when refusals run most. A store failure is logged at most once per 10
// s (the next line counts the ones left out), and Config.CloseRefused
// closes the connection of every refusal, so a client over its budget keeps
// none idle.
package guard
