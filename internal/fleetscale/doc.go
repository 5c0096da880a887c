// Package fleetscale measures issue 31's scale figures with the built CLI
// as separate OS processes and one redis-server on loopback: `make
// fleet-scale` runs its TestScale with -scale.
//
// # Parts
//
// crawl: pages of each of many testbed hosts with hidden capacities (5 to
// 50 req/s; 429 with and without Retry-After, 503), served by this process
// on one loopback address routed by Host header (Sites), each request
// logged with its arrival, path and status. The list is enqueued from two
// `polite fetch --enqueue-only` processes at once, in overlapping
// two-thirds, then fleet workers with no list join and work the frontier.
// Judged by the sites' logs (each host's busiest 1-second window against
// the fleet's ceiling, --max-rate + --burst; the slack its arrivals need to
// fit that token bucket, Measure) and by `polite status --results` (each
// URL one committed result).
//
// throughput: unlimited hosts, --rate inf, no robots, no bodies; the
// fleet's frontier against the floor, the same URLs dealt out to the same
// workers with --own-list (the hosts' budgets still shared through Redis,
// no frontier). Redis CPU per URL from INFO cpu, and its scripts' time
// from INFO commandstats; the difference of the two runs is the
// frontier's.
//
// enqueue: one `polite fetch --enqueue-only` of a generated list into an
// empty redis-server: URLs/s and INFO memory's used_memory per URL; then
// the same list again, every URL already there.
//
// Each part is bounded by -part-timeout (and every worker by --max-time);
// traffic goes to loopback only. Bulky files (lists, logs, hits.tsv,
// figures.json) go to the run dir under /tmp.
package fleetscale
