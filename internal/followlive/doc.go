// Package followlive measures `polite fetch --follow` (issue 35) the way
// users meet it: the built CLI as separate OS processes against real
// servers on loopback sockets in real time, judged by the servers' own
// access logs, never by polite's view. `make follow-live` runs its TestLive
// with -live -polite BIN; -parts picks some of the parts.
//
// # Parts
//
// site: `polite testbed --site` serves the site (the zero
// testbed.Site: 10,000 pages over 20 hosts, every feature and the calendar
// trap) with a hidden capacity of 20 req/s + 5 a host, and `polite fetch
// --follow --sitemaps --scope domain --max-depth D --rate 10 --burst 2
// --adaptive=false` crawls it from every host's root, D the least depth
// that covers every page but the calendar's (Website.Expected says which).
// Judged by Expectation.Check on the testbed's --access-log, each host's
// busiest 1-second window of arrivals against rate + burst, the 429s, the
// calendar months requested and state.db's max_depth skips; `polite
// report` must write a Crawl section.
//
// kill: the same crawl from a testbed of its own, killed with SIGKILL at
// -kills random instants within site's wall time (seeded by -seed), resumed
// each time, then run to its end: the URLs with a result must be site's,
// each one line of results.jsonl, and no URL in results.jsonl at a kill
// may be requested again after the next run starts (429/503 aside); the
// URLs answered twice (in flight at a kill) are counted.
//
// since: a re-crawl with --since site's job against the site at
// --site-version 1 (1% of pages changed): the share of 304s in the
// testbed's log, the body bytes of both crawls, the URLs with a result.
//
// wget: the site's static copy (testbed --write-site) served by nginx
// (`root WWW/$host; absolute_redirect off;`), crawled by Debian's wget
// (-r -l D --wait 0.1 -e robots=on -H -D site.test, reaching nginx as its
// http_proxy: a proxy request names its host, which nginx takes as $host)
// and by polite (--connect-to), each against an nginx of its own: the
// pages each requested, repeats, requests no correct crawl makes (by
// Expectation.Never's reasons) and the busiest 1-second windows.
//
// memory: the peak RSS (VmHWM, see Proc.MaxRSS) of the polite process crawling
// sites of 100,000 and 1,000,000 pages, 1,000 pages a host, at --rate inf
// with --bodies none: the ratio of the two.
//
// Every part is bounded by -part-timeout and every crawl by --max-time;
// every process is the measurement's own, stopped by its pid; nothing
// listens or connects beyond 127.0.0.1. The run dir keeps every process's
// output, the logs and figures.json.
package followlive
