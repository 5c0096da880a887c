// Package proxylive measures `polite proxy` (issue 32) with real clients
// no one here wrote against real servers, judged by the servers' own
// logs: `make proxy-live` runs its TestLive with -live -polite BIN.
//
// # Scenarios
//
// Each runs against nginx on 127.0.0.1 (a static 1 KiB page for every
// path; robots.txt 404) whose access log records $msec, $request_time,
// $status, $request_uri, $connection and $connection_requests.
//
// scrapy: Scrapy (Debian's python3-scrapy, testdata/spider.py,
// CONCURRENT_REQUESTS 16, AutoThrottle off, no download delay) through
// polite proxy against limit_req rate=20r/s burst=5 nodelay (429 beyond):
// the share of capacity nginx served (200s per second from the first
// arrival to the last response, against 20) and the share it refused.
// Beside it, Scrapy without the proxy and with AutoThrottle on.
//
// delay: the same against nginx's delay queue (rate=10r/s burst=20, 503
// beyond): p95 $request_time of the 200s, 200s per second, 503s.
//
// clients: curl, wget, Python requests and Node undici's ProxyAgent each
// fetch a list through the proxy, over plain HTTP and over HTTPS the proxy
// intercepts (nginx's certificate from a CA made here with crypto/x509,
// given to the proxy with --upstream-ca; polite's own CA, from `polite
// proxy ca export`, given to each client): every URL 200 at the client
// and each path once in nginx's log.
//
// connect: clients that open a new tunnel per URL through the proxy, not
// intercepting, at --rate 5 --burst 1: each nginx connection's first
// request is when its tunnel came into use; at most 6 in any second.
//
// overhead: a Go load driver (keep-alive, concurrency 8, a bounded count)
// direct to nginx with no limits, via Debian's tinyproxy and via polite
// proxy with every limit off, in alternating rounds: each path's added
// p50 and p99, polite's against tinyproxy's, and each path's ceiling at
// concurrency 32.
//
// Every load is bounded in count and time, every process is ours and is
// stopped at the end, and nothing listens or connects beyond 127.0.0.1.
// Missing Debian packages (nginx, tinyproxy, curl, wget, python3-scrapy,
// python3-requests) are installed with apt-get when running as root;
// undici is installed with npm into the run directory.
package proxylive
