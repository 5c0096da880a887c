// Package breaker is a per-host circuit breaker: after a run of failures it
// stops sending to a host for a while, then lets a single probe find out
// whether the host is back.
//
// Retries and backoff deal with one request; a breaker deals with a host
// that keeps failing. Without one, every new request to a dead or
// overloaded host still goes out, meets the same failure, and retries. With
// one, requests fail fast with ErrOpen (a crawl job reschedules them) and
// the host sees one probe per open period, the period doubling while the
// probes keep failing.
//
// # States
//
//	closed    --Threshold failures within Window-->   open
//	open      --open delay passed, Allow------------>  half-open (one probe)
//	half-open --probe succeeded--------------------->  closed (delay reset)
//	half-open --probe failed------------------------>  open (delay doubled, capped)
//
// What counts as a failure is the caller's decision: polite records
// throttle signals (429, 503), timeouts and connection failures, not a 404.
//
// # Time
//
// The breaker is pure in time: Allow, Record and State take now, and
// nothing runs in the background, so a test steps it through a table of
// instants instead of sleeping.
package breaker
