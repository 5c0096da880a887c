package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/bucket"
	"github.com/polite-go/polite/cmd/polite/internal/term"
	"github.com/polite-go/polite/crawl"
	"github.com/polite-go/polite/inflight"
	"github.com/polite-go/polite/retry"
	"github.com/polite-go/polite/robots"
)

// fetchOptions are the settings of `polite fetch`, parsed and checked.
type fetchOptions struct {
	List string // URLFILE, or "-" for stdin

	Out           string
	Rate          float64 // starting requests per second per host; +Inf: none
	MaxRate       float64 // ceiling of the adaptive rate; 0: the controller's default
	Burst         int
	Concurrency   int
	Smooth        bool
	Workers       int
	Adaptive      bool
	Retries       int
	MaxDelay      time.Duration
	MaxRetryAfter time.Duration
	HostGiveUp    time.Duration
	BlockRecheck  time.Duration // 0: never re-checked
	Timeout       time.Duration
	Grace         time.Duration
	Robots        bool
	AllowPrivate  bool
	SameHost      bool
	Connect       connectTo // --resolve and --connect-to
	UserAgent     string
	Key           polite.KeyBy
	Config        string  // path of the per-host rules file
	Rules         *config // its contents
	Redis         string
	Fleet         string
	Outage        string
	// With --redis (issue 31): the list goes into the fleet's frontier
	// unless OwnList; Lane is its priority there, EnqueueOnly stops after
	// enqueuing, Worker names this worker, LeaseTTL is how long a lease
	// lives unrenewed, WaitAOF how long enqueues and commits wait for
	// Redis's append-only file (0: not).
	OwnList     bool
	Lane        string
	EnqueueOnly bool
	Worker      string
	LeaseTTL    time.Duration
	WaitAOF     time.Duration
	JoinWait    time.Duration // how long a worker waits for a frontier that never had a URL
	Metrics     string
	MetricsHost int // --metrics-hosts
	Bodies      crawl.Bodies
	MaxBody     int64
	WARCGzip    bool  // a gzip member per record (bodies.warc.gz)
	WARCMaxSize int64 // start a new WARC file past this; negative: never
	MaxURLLen   int
	Progress    string      // auto, bar, log or none
	Headers     []string    // -H as given
	Header      http.Header // parsed
	MaxTime     time.Duration
	MaxURLs     int
	RetryOn     map[int]bool // nil: polite's reading of the status
	Method      string       // -X; "" is GET (POST with --data)
	Body        []byte       // --data; nil: no body
	RetryPost   bool         // --retry-non-idempotent
	// Discovery (--follow and the flags beside it), and what they came to.
	followOptions
	follow *crawl.Follow

	// With --redis: how long --outage local lasts before closed, and how
	// long closed lasts before the job stops.
	OutageLocalFor  time.Duration
	OutageClosedFor time.Duration

	// Set by `polite demo`, not by flags.
	base    http.RoundTripper // dials the built-in testbed
	list    io.Reader         // the URL list
	onReady func()            // called once the job is loaded, before fetching
	// onMetrics is called with the address --metrics listens on.
	onMetrics func(addr string)
	summaryN  int // hosts in the final summary
	// Set by tests: no signal handling (a synctest bubble forbids it).
	noSignals bool
}

// defaultUserAgent names polite and where to read about it, as a crawler's
// User-Agent should.
func defaultUserAgent() string {
	return "polite/" + strings.TrimPrefix(version(), "v") + " (+https://github.com/polite-go/polite)"
}

const fetchLong = `Fetch every URL of URLFILE politely and record what became of each.

URLFILE has one URL per line ("-" reads standard input). Blank lines and lines
starting with # are skipped. A line that is not an http or https URL with a
host, has text after its URL (a space in a URL is written %20), or is longer
than --max-url-len, is recorded as invalid_url, its error naming the line's
number, and never requested. A URL the list repeats is fetched once (fetch
says how many lines it dropped). A line starting with { is a JSON object
naming the URL and its lane, {"url": "https://example.com/a", "lane":
"interactive"} (interactive, normal or bulk; other keys ignored), and a
host's lanes share its budget 6:3:1, so interactive URLs go first and bulk
ones never starve.

Every host gets its own budget: --rate requests per second (with --burst),
at most --concurrency requests in flight, and --workers in flight over all
hosts. A host that answers 429 or 503 is paused (for its Retry-After when it
gives one) and its URLs wait in a queue without holding a worker; a host that
answers with a soft block (WAF challenge, captcha) is stopped and asked
again after --block-recheck with one URL from a path not challenged; a host
that challenges two paths in a row has its URLs recorded as blocked, never
sent, and a path challenged twice (and never answered) is left alone. With
--adaptive each host's rate starts at --rate and tunes itself to what the
host bears, up to --max-rate; a resumed job's hosts start at the rates they
had learned (kept in state.db). robots.txt is obeyed unless --robots=false.

Output, in --out:
  results.jsonl   one JSON object per URL once finished: url, host, outcome
                  (below), status, attempts, bytes, sha256, error (why it
                  failed; empty when ok), started, finished, latency_ms
                  (the last request's, to its response headers); and
                  content_type, truncated, final_url, warc_file and
                  warc_offset, or file, when they apply
  state.db        the job's state (SQLite; open it with sqlite3)
  bodies.warc.gz  WARC records (--bodies warc; bodies-00001.warc.gz… past --warc-max-size), or bodies/
                  (--bodies files)

Outcomes (what to do about each in brackets):
  ok                  a 2xx response (redirects followed, up to 10), or a
                      1xx/3xx the server meant as the answer
  http_error          another status (4xx, or 5xx after the retries)
                      [status says which; 5xx may pass on a later run]
  throttled           still 429/503 when retries ran out, or the host named a
                      pause beyond --max-retry-after [polite retry later]
  blocked             a soft block (WAF challenge, captcha). The page that
                      served it has its status; once the host challenged
                      two paths in a row (the second a re-check
                      --block-recheck later), its other URLs are not
                      sent, nor those of a path challenged twice, and
                      their error says "not sent"
  robots_disallowed   robots.txt disallows it; never requested
  robots_unreachable  robots.txt could not be fetched (refused, 5xx, not
                      within --timeout) after the retries; never requested
                      [polite retry later]
  invalid_url         the line is not an http(s) URL; never requested
  network_error       no response: refused, reset, DNS, TLS; after retries
  timeout             no complete response within --timeout, after retries
                      [a larger --timeout, or polite retry later]
  redirect_loop       a redirect came back to a URL already visited, or more
                      than 10 redirects; not retried

The job is durable: kill it at any moment and run the same command again; it
resumes where it was, never fetching a finished URL again, and results.jsonl
holds each URL exactly once. The list may be left out then: 'polite fetch
--out DIR' with the job's other flags resumes the job in DIR, whose URLs are
in its state.db (its flags are not: --rate, --config and -H are the run's;
another -X, --data or --bodies is refused). The first Ctrl-C (or SIGTERM) stops taking new
work and lets requests in flight finish for up to --grace; a second one stops
at once; while the list loads, it stops the loading (what was loaded stays).
Either way the state is kept.

With --redis, workers share each host's budget through Redis (--fleet names
them). When Redis stops answering each worker says so and goes on as
--outage says: local (the default) sends each host this worker's share of
its limits, so that the fleet keeps to rate + burst in any second, for
--outage-local-for; then closed: nothing is sent, said in the log, and the
progress line reads "waiting for Redis (closed since …)". Redis answering
again ends the outage within a second (said too). A job closed for
--outage-closed-for stops with exit status 1, its unfinished URLs pending in
state.db: run the same command again to resume once Redis is back.

Exit status: 0 when every URL ended ok; 4 when the job finished and some URLs
did not; 2 for bad usage or config; 1 for a fatal error, an interrupted job,
or a fleet's Redis gone for --outage-local-for and --outage-closed-for.`

const configHelp = `
--config FILE holds per-host rules in TOML. Each [[rule]] matches host keys
(host[:port], or the domain or IP with --key) by glob: "*.example.com", an
exact key, or "*". An exact key beats any glob; among globs the longest wins.
Fields left out take the flags' values.

  [[rule]]
  hosts = "*.example.com"
  rate = 5            # requests per second ("inf" for no limit); with --adaptive
                      # the start and the ceiling
  max_rate = 20       # with --adaptive, how far above rate it may rise
  burst = 2
  concurrency = 2     # requests in flight
  smooth = false      # space requests evenly (no bursts)
  retries = 3         # retries after the first attempt (0 or -1: none)
  adaptive = false    # this rule's hosts keep their rate (or true: adapt
                      # even without --adaptive)

A rule that applies to no host the list names is warned of before the run.
examples/rules.toml in polite's repository is a commented example.
`

func newFetchCmd(e *env, runF func(context.Context, any) error) *cobra.Command {
	o := &fetchOptions{}
	var rate, maxBody, key, bodies, warcMax string
	c := &cobra.Command{
		Use:   "fetch [flags] [URLFILE]",
		Short: "Fetch a list of URLs politely, durably and resumably",
		Long:  fetchLong + "\n" + configHelp,
		Example: `  polite fetch urls.txt
  cat urls.txt | polite fetch --out run1 --rate 1 --concurrency 1 -
  polite fetch --config rules.toml --bodies none urls.txt`,
		Args: args(func(c *cobra.Command, a []string) error {
			// A fleet worker may start without a list: it joins the
			// fleet's frontier.
			if redis, _ := c.Flags().GetString("redis"); redis != "" && len(a) == 0 {
				if own, _ := c.Flags().GetBool("own-list"); !own {
					return nil
				}
			}
			if len(a) == 0 {
				// So may a job's own: its URLs are in state.db (issue
				// 33, item 13).
				out, _ := c.Flags().GetString("out")
				if _, err := os.Stat(filepath.Join(out, crawl.StateFile)); err == nil {
					return nil
				}
				return fmt.Errorf("no URLFILE: give a list of URLs (\"-\" for standard input), or the --out DIR of a job to resume (%s has no %s)", out, crawl.StateFile)
			}
			return cobra.ExactArgs(1)(c, a)
		}),
		RunE: func(c *cobra.Command, a []string) error {
			if len(a) == 1 {
				o.List = a[0]
			}
			if err := o.parse(rate, maxBody, key, bodies); err != nil {
				return err
			}
			if err := o.parseWARCMax(warcMax); err != nil {
				return err
			}
			// A rate the user names is a ceiling for the adaptive rate
			// too, unless --max-rate raises it.
			if c.Flags().Changed("rate") && !c.Flags().Changed("max-rate") && o.Rate < bucket.Inf {
				o.MaxRate = o.Rate
			}
			if err := o.checkRates(c.Flags().Changed("max-rate")); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), o)
			}
			return runFetch(c.Context(), e, o)
		},
	}
	f := c.Flags()
	addPolicyFlags(f, o, &rate, &key)
	f.StringVar(&o.Out, "out", "polite-out", "the job's `DIR`: state.db, results.jsonl, bodies; running again on the same DIR resumes")
	f.IntVar(&o.Workers, "workers", crawl.DefaultWorkers, "requests in flight over all hosts")
	f.IntVar(&o.Retries, "retries", crawl.DefaultRetries, "retries of a URL after its first attempt (429/503, 408/504, 5xx, timeout, no response)")
	f.DurationVar(&o.MaxDelay, "max-delay", retry.DefaultCap, "cap of every wait polite chooses itself: backoff between retries, breaker open delay")
	f.DurationVar(&o.MaxRetryAfter, "max-retry-after", crawl.DefaultMaxRetryAfter, "longest pause a host may name (Retry-After, RateLimit reset) that its URLs wait out; beyond, they end throttled at once")
	f.DurationVar(&o.HostGiveUp, "host-give-up", crawl.DefaultHostGiveUp, "a host failing for this long (its breaker not closed, or nothing but failures, 5 or more in a row) has its remaining URLs finished with the reason")
	f.DurationVar(&o.BlockRecheck, "block-recheck", crawl.DefaultBlockRecheck, "after a soft block (WAF challenge, captcha), ask the host again this much later, with one URL from a path not challenged; 0: never (the first challenge ends the host)")
	f.DurationVar(&o.Timeout, "timeout", crawl.DefaultTimeout, "time limit of one request, body included, and of each robots.txt fetch")
	f.DurationVar(&o.Grace, "grace", crawl.DefaultGrace, "after Ctrl-C, how long requests in flight may finish")
	f.BoolVar(&o.SameHost, "same-host", false, "follow a redirect only to the host its URL was listed under (any scheme or port); the 3xx of one elsewhere is the URL's answer")
	f.BoolVar(&o.AllowPrivate, "allow-private", false, "connect to non-public addresses too (private, link-local, loopback); by default only the loopback ports the list names are")
	f.Var(connectFlag{&o.Connect, (*connectTo).addResolve}, "resolve", "connect to `HOST:PORT:ADDR[,ADDR...]` for URLs of HOST:PORT, as curl's --resolve (repeatable; HOST * is any host); the address given is reachable even when not public")
	f.Var(connectFlag{&o.Connect, (*connectTo).addConnectTo}, "connect-to", "for URLs of HOST1:PORT1 connect to `HOST1:PORT1:HOST2:PORT2` instead, as curl's --connect-to (repeatable; empty fields: any / the URL's); e.g. ::127.0.0.1:8080 sends every URL to a polite testbed --addr")
	f.StringVar(&o.Config, "config", "", "TOML `FILE` of per-host rules (see below)")
	f.StringVar(&o.Redis, "redis", "", "Redis `URL` (redis://HOST:PORT/DB) through which a fleet of workers shares each host's rate, pause, breaker and retry budget")
	f.StringVar(&o.Fleet, "fleet", "default", "the fleet's `NAME` in Redis: workers with the same --redis and --fleet share budgets")
	f.BoolVar(&o.OwnList, "own-list", false, "with --redis: share only the hosts' budgets, each worker fetching its own list into its own --out (no shared frontier)")
	f.StringVar(&o.Lane, "lane", "normal", "the priority within their hosts of this list's URLs whose lines name none: interactive, normal or bulk (a host's lanes go 6:3:1, so bulk never starves; in the fleet's frontier with --redis)")
	f.BoolVar(&o.EnqueueOnly, "enqueue-only", false, "with --redis: put the list into the fleet's frontier and exit, fetching nothing")
	f.StringVar(&o.Worker, "worker", "", "with --redis: this worker's `NAME` in the fleet's accounts (default HOSTNAME:PID)")
	f.DurationVar(&o.LeaseTTL, "lease-ttl", 30*time.Second, "with --redis: a URL a worker leased and did not renew or finish within this long goes to another worker (a killed worker's URLs come back after it)")
	f.DurationVar(&o.JoinWait, "join-wait", time.Minute, "with --redis: how long a worker waits for a fleet's first URLs when its frontier has never had any (started before the list is enqueued); then it ends")
	f.DurationVar(&o.WaitAOF, "wait-aof", 0, "with --redis: wait up to this long for Redis to write each enqueue and result to its append-only file (WAITAOF; needs appendonly yes): a Redis crash then loses none; 0: do not wait (appendfsync everysec loses at most about a second)")
	f.StringVar(&o.Outage, "outage", "local", "while Redis does not answer: local (each worker sends each host its share, the fleet within rate + burst a second, for --outage-local-for, then closed), closed (send nothing) or open (full rate per worker)")
	f.DurationVar(&o.OutageLocalFor, "outage-local-for", 5*time.Minute, "how long --outage local lasts before it turns closed")
	f.DurationVar(&o.OutageClosedFor, "outage-closed-for", 10*time.Minute, "once nothing has been sent for this long waiting for Redis (closed), the job stops with exit status 1, unfinished URLs pending (run again to resume)")
	f.StringVar(&o.Metrics, "metrics", "", "serve Prometheus metrics on `ADDR`'s /metrics while the job runs (\":9464\"): requests, waits, retries, pauses and rates by host, the job's URLs by state and outcome, its queue and bytes")
	f.IntVar(&o.MetricsHost, "metrics-hosts", defaultMetricsHosts, metricsHostsHelp)
	f.StringVar(&bodies, "bodies", string(crawl.BodiesWARC), "where bodies go: warc (DIR/bodies.warc.gz, WARC/1.1 with robots.txt fetches; index with polite cdxj DIR), files (DIR/bodies/) or none; a job keeps its first run's")
	f.BoolVar(&o.WARCGzip, "warc-gzip", true, "gzip each WARC record on its own (bodies.warc.gz), as archives and replay tools expect; false writes bodies.warc (a job keeps what it was first run with)")
	f.StringVar(&warcMax, "warc-max-size", "1GiB", "start a new WARC file (bodies-00001.warc.gz, …) once the current one passes this `SIZE`; 0 for one file")
	f.StringVar(&maxBody, "max-body", "10MiB", "bytes of a body kept; the rest is not downloaded and the result says truncated")
	f.IntVar(&o.MaxURLLen, "max-url-len", crawl.DefaultMaxURLLen, "longest line taken as a URL, in bytes")
	f.StringArrayVarP(&o.Headers, "header", "H", nil, "add `\"Name: value\"` to every request (repeatable); Authorization, Cookie and Proxy-Authorization go only to the hosts the list names (not on a redirect elsewhere) and are never written to the WARC files")
	f.StringVarP(&o.Method, "method", "X", "", "request `METHOD` of every URL (GET; POST when --data is given)")
	f.VarP(dataFlag{&o.Body}, "data", "d", "request `BODY` of every URL, exactly as given, or read from @FILE; Content-Type application/x-www-form-urlencoded unless -H names one")
	f.BoolVar(&o.RetryPost, "retry-non-idempotent", false, "retry POST and PATCH requests too (429/503, 5xx, no response): only when the API makes a repeat harmless")
	f.Var(retryOnFlag{&o.RetryOn}, "retry-on", "comma-separated `STATUSES` that are retried, in place of polite's own reading (429,503,408,504 and other 5xx); a status left out is not retried; 4xx and 5xx only")
	f.DurationVar(&o.MaxTime, "max-time", 0, "stop the whole job after this long, counted from its start, the list's loading included (as Ctrl-C does: resumable); 0 for no limit")
	f.IntVar(&o.MaxURLs, "max-urls", 0, "take only the first N URLs of the list (a sample run); with --follow, also the most URLs the crawl holds, those found included; 0 for all")
	addFollowFlags(f, &o.followOptions)
	f.StringVar(&o.Progress, "progress", "auto", "live display: bar (on a terminal), log (a line every 5 s), none, or auto (bar on a terminal, else log)")
	f.SortFlags = false
	return c
}

// addPolicyFlags defines the per-host policy flags, shared with demo.
func addPolicyFlags(f *pflag.FlagSet, o *fetchOptions, rate, key *string) {
	f.StringVar(rate, "rate", strconv.FormatFloat(polite.DefaultRate, 'g', -1, 64), "requests per second per host; with --adaptive the starting rate, and, when given, also the ceiling unless --max-rate raises it; \"inf\" for no limit (with --adaptive: start at --max-rate)")
	f.Float64Var(&o.MaxRate, "max-rate", DefaultMaxRate, "ceiling of a host's adaptive rate: a server's owner agreed to nothing, so without --rate or --max-rate a host is not pushed past this ("+strconv.FormatFloat(DefaultMaxRate, 'g', -1, 64)+" req/s, ten times the default --rate); with --rate given and no --max-rate, --rate; never below --rate, never 0")
	f.IntVar(&o.Burst, "burst", polite.DefaultBurst, "requests a host may get at once after an idle spell")
	f.IntVar(&o.Concurrency, "concurrency", polite.DefaultConcurrency, "requests in flight per host")
	f.BoolVar(&o.Smooth, "smooth", false, "space each host's requests evenly (no bursts)")
	f.BoolVar(&o.Adaptive, "adaptive", true, "tune each host's rate to what it bears (AIMD, led by 429s and latency)")
	f.BoolVar(&o.Robots, "robots", true, "obey robots.txt: skip disallowed URLs, honour Crawl-delay")
	f.StringVar(&o.UserAgent, "user-agent", defaultUserAgent(), "User-Agent header, and the token robots.txt is read for")
	f.StringVar(key, "key", "host", "what a budget belongs to: host, domain (registrable domain) or ip (resolved address)")
}

// checkRates refuses a --max-rate that contradicts itself or --rate
// ("each host started at 5.0 req/s and could rise to 1.0", issue 33,
// item 12). maxSet says --max-rate was given.
func (o *fetchOptions) checkRates(maxSet bool) error {
	if !maxSet {
		return nil
	}
	if o.MaxRate == 0 {
		return usageErr("--max-rate 0: a ceiling of nothing; give a rate, or leave it out for the default (%g)", DefaultMaxRate)
	}
	if o.Rate < bucket.Inf && o.MaxRate < o.Rate {
		return usageErr("--max-rate %g is below --rate %g: the starting rate cannot be over the ceiling", o.MaxRate, o.Rate)
	}
	return nil
}

// parse checks the flags' values and reads the config file.
// parseWARCMax reads --warc-max-size.
func (o *fetchOptions) parseWARCMax(s string) error {
	n, err := parseSize(s)
	if err != nil || n < 0 {
		return usageErr("--warc-max-size %q: want a size such as 1GiB or 500MB, or 0 for one file", s)
	}
	o.WARCMaxSize = n
	if n == 0 {
		o.WARCMaxSize = -1
	}
	return nil
}

func (o *fetchOptions) parse(rate, maxBody, key, bodies string) error {
	var err error
	if o.Rate, err = parseRate(rate); err != nil {
		return usageErr("--rate: %v", err)
	}
	if o.MaxRate < 0 {
		return usageErr("--max-rate %v: must not be negative", o.MaxRate)
	}
	if o.Burst < 1 {
		return usageErr("--burst %d: must be at least 1", o.Burst)
	}
	if o.Concurrency < 1 {
		return usageErr("--concurrency %d: must be at least 1", o.Concurrency)
	}
	if o.Workers < 1 {
		return usageErr("--workers %d: must be at least 1", o.Workers)
	}
	if o.Retries < 0 {
		return usageErr("--retries %d: must not be negative", o.Retries)
	}
	for name, d := range map[string]time.Duration{"--max-delay": o.MaxDelay, "--max-retry-after": o.MaxRetryAfter, "--timeout": o.Timeout, "--grace": o.Grace, "--host-give-up": o.HostGiveUp} {
		if d <= 0 {
			return usageErr("%s %v: must be positive", name, d)
		}
	}
	if o.BlockRecheck < 0 {
		return usageErr("--block-recheck %v: must not be negative", o.BlockRecheck)
	}
	if err := o.parseOutage(); err != nil {
		return err
	}
	if err := o.parseFleet(); err != nil {
		return err
	}
	if o.Key, err = polite.ParseKeyBy(key); err != nil {
		return usageErr("--key %q: want host, domain or ip", key)
	}
	if o.Bodies, err = crawl.ParseBodies(bodies); err != nil {
		return usageErr("--bodies %q: want warc, files or none", bodies)
	}
	if o.MaxBody, err = parseSize(maxBody); err != nil || o.MaxBody <= 0 {
		return usageErr("--max-body %q: want a size such as 10MiB, 512KiB or 1000000", maxBody)
	}
	if o.MaxURLLen < 1 {
		return usageErr("--max-url-len %d: must be positive", o.MaxURLLen)
	}
	if o.MaxTime < 0 {
		return usageErr("--max-time %v: must not be negative", o.MaxTime)
	}
	if o.MaxURLs < 0 {
		return usageErr("--max-urls %d: must not be negative", o.MaxURLs)
	}
	if len(o.Headers) == 0 {
		o.Headers = nil
	}
	if o.Header, err = parseHeaders(o.Headers); err != nil {
		return usageErr("%v", err)
	}
	if err := o.parseRequest(); err != nil {
		return err
	}
	if o.follow, err = o.followOptions.parse(o.MaxURLs); err != nil {
		return err
	}
	switch o.Progress {
	case "auto", "bar", "log", "none":
	default:
		return usageErr("--progress %q: want auto, bar, log or none", o.Progress)
	}
	if o.Config != "" {
		if o.Rules, err = loadConfig(o.Config); err != nil {
			return &exitError{code: ExitUsage, err: err}
		}
		if o.Redis != "" && o.Rules.anyAdaptive() {
			// The fleet's rate control runs in Redis, one for all hosts.
			return usageErr("--config %s: a rule's adaptive key does not apply with --redis (use --adaptive for the fleet)", o.Config)
		}
	}
	return nil
}

// retryOnFlag is --retry-on: a list of HTTP statuses.
type retryOnFlag struct{ m *map[int]bool }

func (f retryOnFlag) String() string {
	if f.m == nil || *f.m == nil {
		return ""
	}
	codes := make([]string, 0, len(*f.m))
	for c := range *f.m {
		codes = append(codes, strconv.Itoa(c))
	}
	sort.Strings(codes)
	return strings.Join(codes, ",")
}

func (f retryOnFlag) Set(s string) error {
	m := map[int]bool{}
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		c, err := strconv.Atoi(p)
		if err != nil || c < 100 || c > 599 {
			return fmt.Errorf("%q is not an HTTP status (100-599)", p)
		}
		if c < 400 {
			// Retrying a success or a redirect fetches it again for
			// nothing (--retry-on 200 fetched every page six times).
			return fmt.Errorf("%d is not an error status: --retry-on takes 4xx and 5xx", c)
		}
		m[c] = true
	}
	*f.m = m
	return nil
}

func (retryOnFlag) Type() string { return "statuses" }

// parseHeaders reads -H values, "Name: value" each.
func parseHeaders(hs []string) (http.Header, error) {
	if len(hs) == 0 {
		return nil, nil
	}
	h := http.Header{}
	for _, s := range hs {
		name, value, ok := strings.Cut(s, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || !isToken(name) || strings.ContainsAny(value, "\r\n\x00") {
			return nil, fmt.Errorf("--header %q: want \"Name: value\"", redactHeader(s))
		}
		h.Add(name, strings.TrimSpace(value))
	}
	return h, nil
}

// isToken reports whether s is an HTTP token (RFC 9110, section 5.6.2),
// as a field name must be.
func isToken(s string) bool {
	for _, c := range []byte(s) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return s != ""
}

// redactHeader hides the value of a credentials field in an error message.
func redactHeader(s string) string {
	name, _, ok := strings.Cut(s, ":")
	switch http.CanonicalHeaderKey(strings.TrimSpace(name)) {
	case "Authorization", "Proxy-Authorization", "Cookie":
		if ok {
			return name + ": xxxxx"
		}
	}
	return s
}

func parseRate(s string) (float64, error) {
	switch strings.ToLower(s) {
	case "inf", "unlimited", "none":
		return bucket.Inf, nil
	}
	r, err := strconv.ParseFloat(s, 64)
	if err != nil || r <= 0 || r != r {
		return 0, fmt.Errorf("%q: want a positive number of requests per second, or inf", s)
	}
	if r > 1e12 {
		r = bucket.Inf
	}
	return r, nil
}

// parseSize reads a byte count: a number with an optional unit B, KB, MB, GB
// (powers of 1000) or KiB, MiB, GiB (powers of 1024).
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	i := len(s)
	for i > 0 && (s[i-1] < '0' || s[i-1] > '9') {
		i--
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, err
	}
	mult := map[string]int64{"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
	m, ok := mult[strings.ToLower(strings.TrimSpace(s[i:]))]
	if !ok {
		return 0, fmt.Errorf("unknown unit %q", s[i:])
	}
	return n * m, nil
}

// transport builds the polite Transport of a fetch, without a Logger:
// polite's per-decision log records are for debugging. Unless
// --allow-private it connects only to public addresses and the loopback
// ports in loop.
func (o *fetchOptions) transport(loop *loopbackPorts) *polite.Transport {
	conc := o.Concurrency
	if conc >= inflight.Max {
		conc = inflight.Max
	}
	base := o.base
	if base == nil {
		b := crawl.NewBase(o.Workers)
		if !o.AllowPrivate {
			publicOnly(b, loop, o.Connect.allows)
		}
		o.Connect.wrap(b)
		crawl.LimitConns(b, o.Workers) // HTTP/2's idle connections too
		base = b
	}
	tr := &polite.Transport{
		Base:          base,
		Limits:        polite.Limits{Rate: o.Rate, Burst: o.Burst, Concurrency: conc, Smooth: o.Smooth},
		Key:           o.Key,
		MaxInFlight:   o.Workers,
		Backoff:       retry.Backoff{Cap: o.MaxDelay},
		Breaker:       crawl.BreakerFor(o.MaxDelay),
		MaxRetryAfter: o.MaxRetryAfter,
		UserAgent:     o.UserAgent,
		// An Idempotency-Key from -H makes POSTs retried too.
		RetryNonIdempotent: o.RetryPost,
	}
	if o.Rules != nil {
		tr.Rules = o.Rules.politeRules()
	}
	o.policy(tr)
	if !tr.IgnoreRobots {
		// An unreachable robots.txt is fetched again within --max-delay,
		// a wait polite chooses itself, so that the URLs waiting for it
		// (a retry each) see a new fetch each time (issue 17, defect 9).
		// A fetch is a request like any: --timeout bounds it (the cache's
		// own minute held one of --workers for a robots.txt that never
		// answers, and other hosts' robots.txt waited behind it).
		tr.RobotsCache = &robots.Cache{Client: &http.Client{Transport: tr}, UserAgent: o.UserAgent, Timeout: o.Timeout,
			ErrorTTL: min(robots.DefaultErrorTTL, o.MaxDelay), MaxErrorTTL: o.MaxDelay}
	}
	return tr
}

// startRates starts the hosts of a job resumed in --out at the rates they
// had learned (issue 33, item 14: a resumed job ran at 267 URLs/s for its
// first seconds against 1,900 before), when their rates adapt; a fleet's
// are in Redis. An unreadable state.db is crawl.Open's to report.
func (o *fetchOptions) startRates(tr *polite.Transport) {
	if o.Redis != "" || tr.Adaptive == nil && tr.NewRater == nil {
		return
	}
	if rates, err := crawl.ReadRates(o.Out); err == nil && len(rates) > 0 {
		// Each rate serves once: a host evicted when idle and made again
		// later in this run starts as a new one, not at what the last
		// run had learned (this run may have learned to go slower).
		var mu sync.Mutex
		tr.StartRate = func(key string) float64 {
			mu.Lock()
			defer mu.Unlock()
			r := rates[key]
			delete(rates, key)
			return r
		}
	}
}

var errMaxTime = errors.New("--max-time reached")

// ratesLine is the closing line on the rates: what a host started at and
// could rise to, and that the hosts a --config rule names had the rule's
// (it said "each host" while a rule held one at 0.5/s, issue 33, item 1).
func (o *fetchOptions) ratesLine() string {
	s := fmt.Sprintf("rates: each host started at %s req/s and could rise to %s (--max-rate); the rate column is where each ended",
		fmtRate(o.Rate), fmtRate(o.maxRate()))
	if o.Rules == nil || len(o.Rules.Rules) == 0 {
		return s
	}
	var named []string
	for _, r := range o.Rules.Rules {
		if r.Rate != nil || r.MaxRate != nil || r.Adaptive != nil {
			named = append(named, r.Hosts)
		}
	}
	if len(named) == 0 {
		return s
	}
	s = strings.Replace(s, "each host started", "each host no --config rule names started", 1)
	return s + fmt.Sprintf("; hosts matching %s followed their rule in %s instead", strings.Join(named, ", "), o.Config)
}

// warnIdleRules warns of each --config rule no host of the job picks.
// With --key ip a host's key is its address, known only once resolved:
// no check then.
func (o *fetchOptions) warnIdleRules(job *crawl.Job, notice func(string)) {
	if o.Rules == nil || o.Key == polite.KeyIP || o.frontier() {
		// A fleet worker's state.db holds only the URLs it leased, none
		// at its start: its rules apply to the fleet's hosts.
		return
	}
	keyOf := func(h string) string { return h }
	if o.Key == polite.KeyDomain {
		keyOf = polite.DomainKey
	}
	warns, err := o.Rules.idle(job.EachHost, keyOf)
	if err != nil {
		notice(fmt.Sprintf("polite: checking the --config rules against the job's hosts: %v", err))
	}
	for _, w := range warns {
		notice("polite: warning: " + w)
	}
}

// loadList loads the list into the job, with loading set meanwhile. When
// a read may block (mayBlock: standard input with nothing coming, a named
// pipe), it is given up when ctx ends, so that Ctrl-C and --max-time stop
// the loading whatever the list is.
func loadList(job *crawl.Job, ctx context.Context, list io.Reader, mayBlock bool, loading *atomic.Bool) (int, error) {
	loading.Store(true)
	defer loading.Store(false)
	if mayBlock {
		list = &ctxReader{ctx: ctx, r: list}
	}
	return job.LoadContext(ctx, list)
}

// ctxReader reads r in a goroutine of its own, one Read at a time, and
// returns at once when ctx ends: the read it leaves behind ends with the
// process (the CLI stops soon after), or returns its bytes to no one.
type ctxReader struct {
	ctx     context.Context
	r       io.Reader
	pending chan readResult // the read under way; nil when none
	buf     []byte          // what it reads into, reused once it is done
}

type readResult struct {
	b   []byte
	err error
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := context.Cause(c.ctx); err != nil {
		return 0, err
	}
	if c.pending == nil {
		ch := make(chan readResult, 1)
		c.pending = ch
		if cap(c.buf) < len(p) {
			c.buf = make([]byte, len(p))
		}
		b := c.buf[:len(p)]
		go func() {
			n, err := c.r.Read(b)
			ch <- readResult{b[:n], err}
		}()
	}
	select {
	case r := <-c.pending:
		c.pending = nil
		return copy(p, r.b), r.err
	case <-c.ctx.Done():
		return 0, context.Cause(c.ctx)
	}
}

// listName names URLFILE in a message ("-": standard input).
func listName(l string) string {
	if l == "-" {
		return "(standard input)"
	}
	return l
}

func runFetch(ctx context.Context, e *env, o *fetchOptions) error {
	defer limitMemory(o.Workers, o.MaxBody)()
	list, mayBlock, closeList, err := o.openList(e)
	if err != nil {
		return err
	}
	defer closeList()

	sg := o.signals(ctx, e)
	defer sg.close()
	soft, hard, notice := sg.soft, sg.hard, sg.notice
	loop := &loopbackPorts{}
	if list != nil {
		list = loop.tap(list)
	}
	tr := o.transport(loop)
	jobs := &jobMetrics{}
	o.startRates(tr)
	if o.Metrics != "" {
		addr, stop, err := serveMetrics(o.Metrics, tr, o.MetricsHost, jobs)
		if err != nil {
			return err
		}
		defer stop()
		fmt.Fprintf(e.stderr, "polite: metrics on http://%s/metrics\n", addr)
		if o.onMetrics != nil {
			o.onMetrics(addr)
		}
	}
	var fleet *fleetWatch
	if o.Redis != "" {
		w, closeRedis, err := o.fleetStore(ctx, tr, notice)
		if err != nil {
			return err
		}
		defer closeRedis()
		fleet = w
	}
	opts, enqueued, err := o.crawlOptions(ctx, e, tr, fleet, list)
	if err != nil || enqueued {
		return err
	}
	job, err := o.openJob(opts)
	if err != nil {
		return err
	}
	defer job.Close()
	jobs.set(job)
	defer jobs.set(nil)
	if rc := tr.RobotsCache; rc != nil {
		rc.Record = job.KeepRobots // robots.txt fetches go to the WARC files too
	}
	mode := o.Progress
	if mode == "auto" {
		mode = "log"
		if isTerminal(e.stderr) {
			mode = "bar"
		}
	}
	// --max-time counts from here, the list's loading included, and
	// Ctrl-C stops the loading too (issue 33, item 9).
	run := soft
	if o.MaxTime > 0 {
		var cancel context.CancelFunc
		run, cancel = context.WithTimeoutCause(soft, o.MaxTime, errMaxTime)
		defer cancel()
	}
	var note noteFunc
	if fleet != nil {
		// A Redis that stays away stops the job (as --max-time does).
		var stopRun context.CancelCauseFunc
		run, stopRun = context.WithCancelCause(run)
		defer stopRun(nil)
		go fleet.watch(run, func(err error) {
			notice("polite: " + err.Error() + ": stopping; unfinished URLs stay pending")
			stopRun(err)
		})
		note = fleet.note
	}
	// The display runs from the first second: a list of a million lines
	// takes seconds to load, which it shows (issue 33, item 9).
	d := startDisplay(mode, job, e.stderr, note)
	sg.say.Store(&d.say)
	stopDisplay := sync.OnceFunc(func() {
		d.stop()
		sg.say.Store(nil)
	})
	defer stopDisplay()
	before, added, err := o.loadJob(job, list, mayBlock, run, loop, sg, stopDisplay)
	if err != nil {
		return err
	}
	o.warnIdleRules(job, notice)
	if n := job.Skipped(); n > 0 {
		notice(fmt.Sprintf("polite: --max-urls %d: took the first %d URLs of the list, skipped %d", o.MaxURLs, o.MaxURLs, n))
	}
	if p := job.Progress(0); before == 0 && p.Dropped > 0 {
		// Never silently (issue 33, item 12).
		notice(fmt.Sprintf("polite: %s of the list repeated a URL (or bad line) it had named: dropped, each is fetched once", plural(p.Dropped, "line")))
	}
	if before > 0 && added > 0 {
		// A different list on an existing --out is merged into the job;
		// never silently (issue 18, item 3).
		notice(fmt.Sprintf("polite: %s already holds a job of %d URLs; this list adds %d new ones, fetched along with the job's unfinished ones (use a new --out for a separate job)",
			o.Out, before, added))
	}
	if o.onReady != nil {
		o.onReady()
	}
	sum, err := job.Run(run, hard)
	stopDisplay()
	return o.finish(e, job, sum, err, before > 0, run)
}

// crawlOptions are the job's options from the flags. In fleet mode the
// job leases from the fleet's frontier, which the list (if any) is first
// enqueued into: enqueued says --enqueue-only's work is done.
func (o *fetchOptions) crawlOptions(ctx context.Context, e *env, tr *polite.Transport, fleet *fleetWatch, list io.Reader) (opts crawl.Options, enqueued bool, err error) {
	opts = crawl.Options{
		Transport: tr, Workers: o.Workers, Retries: o.Retries, Backoff: retry.Backoff{Cap: o.MaxDelay},
		MaxRetryAfter: o.MaxRetryAfter, Timeout: o.Timeout, Bodies: o.Bodies, MaxBody: o.MaxBody,
		WARCPlain: !o.WARCGzip, WARCMaxSize: o.WARCMaxSize,
		MaxURLLen: o.MaxURLLen, Grace: o.Grace, HostGiveUp: o.HostGiveUp, BlockRecheck: o.BlockRecheck,
		Header: o.Header, MaxURLs: o.MaxURLs, RetryOn: o.RetryOn, SameHost: o.SameHost,
		Method: o.Method, Body: o.Body, Follow: o.follow, Since: o.Since,
	}
	opts.Lane, _ = crawl.ParseLane(o.Lane) // checked by parse
	if o.BlockRecheck == 0 {
		opts.BlockRecheck = -1 // crawl's zero is its default
	}
	if o.Retries == 0 {
		opts.Retries = -1
	}
	if o.Rules != nil {
		opts.RetriesFor = o.Rules.retriesFor
	}
	// A fleet's scheduler takes each admission in one call to Redis, not
	// Ready's and Try's two.
	opts.Reserve = o.Redis != ""
	if o.frontier() {
		fr, err := o.newFrontier(fleet.c)
		if err != nil {
			return opts, false, &exitError{code: ExitFatal, err: err}
		}
		// Credentials (-H) go only to the hosts this worker's own list
		// names: the frontier holds other workers' URLs too.
		listed := map[string]bool{}
		if hasCredentials(o.Header) {
			opts.CredentialsFor = func(host string) bool { return listed[host] }
			fmt.Fprintln(e.stderr, "polite: -H credentials (Authorization, Cookie) go only to the hosts this worker's own list names, not to URLs other workers put in the fleet's frontier")
		}
		if list != nil {
			res, err := enqueue(ctx, fr, list, o)
			if res.hosts != nil {
				listed = res.hosts
			}
			if err != nil {
				return opts, false, &exitError{code: ExitFatal, err: fmt.Errorf("enqueuing %s into fleet %q: %w (what was enqueued stays; running again adds the rest once)", o.List, o.Fleet, err)}
			}
			fmt.Fprintf(e.stderr, "polite: fleet %q: %d of the list's %d URLs were new to its frontier (%d already there)\n",
				o.Fleet, res.added, res.lines-res.invalid, res.lines-res.invalid-res.added)
			if res.invalid > 0 {
				fmt.Fprintf(e.stderr, "polite: %d lines of the list are not URLs to fetch and were left out, the first %s\n", res.invalid, term.Quote(res.firstInvalid))
			}
			if o.EnqueueOnly {
				return opts, true, nil
			}
		}
		if opts.FrontierID, err = fr.ID(ctx); err != nil {
			return opts, false, &exitError{code: ExitFatal, err: err}
		}
		opts.Frontier = fleetFrontier{f: fr, worker: o.workerName(), since: time.Now(), joinWait: o.JoinWait, begun: new(atomic.Bool)}
		opts.LeaseRenew = o.LeaseTTL / 3
	}
	return opts, false, nil
}

// loadJob loads the list into the job (none in fleet mode: the frontier
// has it), or, resumed without one, takes the loopback ports its URLs
// name from state.db. before is what the job held, added what the list
// added. A load stopped (Ctrl-C, --max-time, Redis gone) is said as such,
// with the display stopped first.
func (o *fetchOptions) loadJob(job *crawl.Job, list io.Reader, mayBlock bool, run context.Context, loop *loopbackPorts,
	sg *fetchSignals, stopDisplay func()) (before, added int, err error) {
	if o.frontier() {
		return 0, 0, nil
	}
	if before, err = job.Len(); err != nil {
		return before, added, &exitError{code: ExitFatal, err: err}
	}
	if list == nil {
		// Resumed without its list (issue 33, item 13): the URLs
		// are state.db's, and so are the loopback ports the list
		// named, which the job may connect to.
		if err := job.Origins(func(o string) { loop.line([]byte(o)) }); err != nil {
			return before, added, &exitError{code: ExitFatal, err: err}
		}
		if before == 0 {
			return before, added, usageErr("--out %s holds no URLs to resume: give a URLFILE", o.Out)
		}
		sg.notice(fmt.Sprintf("polite: resuming the job in %s: its %d URLs are in %s", o.Out, before, crawl.StateFile))
		if stopped, err := job.LoadStopped(); err != nil {
			return before, added, &exitError{code: ExitFatal, err: err}
		} else if stopped {
			sg.notice("polite: the job's list was not loaded to its end (its loading was stopped): these are the URLs loaded; give the list again to add the rest")
		}
	} else if added, err = loadList(job, run, list, mayBlock, &sg.loading); err != nil {
		if run.Err() == nil {
			return before, added, &exitError{code: ExitFatal, err: err}
		}
		stopDisplay()
		why := "interrupted"
		var gone *redisGoneError
		switch cause := context.Cause(run); {
		case cause == errMaxTime:
			why = fmt.Sprintf("stopped by --max-time %v", o.MaxTime)
		case errors.As(cause, &gone):
			why = gone.Error() + ": stopped"
		}
		return before, added, &exitError{code: ExitFatal, err: fmt.Errorf("%s while loading %s, after %d new URLs (kept in %s); run the same command again to go on",
			why, listName(o.List), added, crawl.StateFile)}
	}
	if before == 0 && added == 0 && job.Skipped() == 0 {
		// Nothing to do is no success to report (issue 33, item 12).
		return before, added, usageErr("URLFILE %s: no URLs in it (one per line, or JSON lines with \"url\")", listName(o.List))
	}
	return before, added, nil
}

// openList opens URLFILE (o.list when a test set it): standard input for
// "-", none when left out (a resume). mayBlock says a read may wait for
// more lines (standard input, a named pipe: see loadList).
func (o *fetchOptions) openList(e *env) (list io.Reader, mayBlock bool, closeList func(), err error) {
	closeList = func() {}
	if o.list != nil || o.List == "" {
		return o.list, false, closeList, nil
	}
	if o.List == "-" {
		return e.stdin, true, closeList, nil
	}
	f, err := os.Open(o.List)
	if err != nil {
		return nil, false, closeList, usageErr("URLFILE: %v", err)
	}
	fi, err := f.Stat()
	if err == nil && fi.IsDir() {
		f.Close()
		return nil, false, closeList, usageErr("URLFILE %s is a directory: want a file with one URL per line", o.List)
	}
	return f, err != nil || !fi.Mode().IsRegular(), func() { f.Close() }, nil // a named pipe may block
}

// fetchSignals are a fetch's two stops and its notices. The first SIGINT
// or SIGTERM ends soft (take no more work; while the list loads, stop the
// loading), the second hard (cancel what is in flight). Notices go
// through the display once it runs (say), so that they never break its
// view (issue 18, item 4).
type fetchSignals struct {
	soft, hard context.Context
	close      func()
	say        atomic.Pointer[func(string)]
	// loading is set while the list loads: Ctrl-C then stops the
	// loading, with no request in flight to let finish.
	loading atomic.Bool
	stderr  io.Writer
}

func (sg *fetchSignals) notice(s string) {
	if f := sg.say.Load(); f != nil {
		(*f)(s)
		return
	}
	fmt.Fprintln(sg.stderr, s)
}

func (o *fetchOptions) signals(ctx context.Context, e *env) *fetchSignals {
	sg := &fetchSignals{stderr: e.stderr}
	soft, stopSoft := context.WithCancel(ctx)
	hard, stopHard := context.WithCancel(context.Background())
	sg.soft, sg.hard = soft, hard
	sigs := make(chan os.Signal, 2)
	if !o.noSignals {
		signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	}
	sg.close = func() {
		signal.Stop(sigs)
		stopHard()
		stopSoft()
	}
	go func() {
		select {
		case <-sigs:
		case <-soft.Done():
			return
		}
		stopSoft()
		if sg.loading.Load() {
			sg.notice("polite: stopping the list's loading: the URLs read so far are kept")
		} else {
			sg.notice("polite: stopping: letting requests in flight finish (Ctrl-C again to stop now)")
		}
		select {
		case <-sigs:
			stopHard()
		case <-hard.Done():
		}
	}()
	return sg
}

// openJob opens the job in --out and refuses a run it must not be (issue
// 33, items 1 and 10): another -X, --data or --bodies, or a fleet
// worker's directory without its fleet, before its list is loaded or a
// summary and report of it written.
func (o *fetchOptions) openJob(opts crawl.Options) (*crawl.Job, error) {
	if fi, err := os.Stat(o.Out); err == nil && !fi.IsDir() {
		return nil, usageErr("--out %s is a file: want a directory (a new one, or a job's to resume)", o.Out)
	}
	job, err := crawl.Open(o.Out, opts)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return nil, usageErr("--out %s: %v", o.Out, err)
		}
		return nil, &exitError{code: ExitFatal, err: err}
	}
	err = job.CheckRequest()
	if err == nil {
		return job, nil
	}
	job.Close()
	var bc *crawl.BodiesChangedError
	switch {
	case errors.Is(err, crawl.ErrRequestChanged):
		return nil, usageErr("%v", err)
	case errors.Is(err, crawl.ErrFleetDir):
		return nil, usageErr("--out %s: %v", o.Out, strings.TrimPrefix(err.Error(), "crawl: "))
	case errors.As(err, &bc):
		// As another -X is (issue 33, item 10).
		return nil, usageErr("--bodies %s: the job in %s keeps its bodies as %s (--bodies %s); a run keeping them as %s would split them: resume it with --bodies %s, or use a new --out",
			bc.Run, o.Out, bc.Job, bc.Job, bc.Run, bc.Job)
	}
	return nil, &exitError{code: ExitFatal, err: err}
}

// finish writes a run's summary, its report and its closing lines, and
// returns its exit status: runErr is Run's error, resumed says the job
// held URLs before this run, run is the context the job ran under (why it
// stopped).
func (o *fetchOptions) finish(e *env, job *crawl.Job, sum crawl.Summary, runErr error, resumed bool, run context.Context) error {
	n := o.summaryN
	if n == 0 {
		n = 20
	}
	p := job.Progress(-1)
	if resumed {
		p.Dropped = 0 // the URLs of a list read again: not the list's repeats
	}
	writeSummary(e.stdout, p, sum, o.Out, n)
	job.Close() // events.jsonl written out, for the report
	path, unread, rerr := writeReport(o.Out)
	switch {
	case rerr != nil:
		fmt.Fprintf(e.stdout, "report: not written: %s\n", term.Quote(rerr.Error()))
	case unread != "":
		fmt.Fprintf(e.stdout, "report: %s (%s)\n", path, term.Quote(unread))
	default:
		fmt.Fprintf(e.stdout, "report: %s\n", path)
	}
	if f := sum.Fleet; f != nil {
		fmt.Fprintf(e.stdout, "fleet %q: this worker leased %d URLs: %d results taken by the frontier, %d refused (their lease had gone to another worker), %d given back unfinished, %d lost before sending; 'polite status --redis %s --fleet %s' shows the whole fleet\n",
			o.Fleet, f.Leased, f.Accepted, f.Late, f.Released, f.Lost, redact(o.Redis), o.Fleet)
	}
	if o.Adaptive {
		fmt.Fprintln(e.stdout, o.ratesLine())
	}
	if runErr != nil {
		return &exitError{code: ExitFatal, err: runErr}
	}
	var gone *redisGoneError
	switch {
	case sum.Interrupted && errors.As(context.Cause(run), &gone):
		return &exitError{code: ExitFatal, err: fmt.Errorf("%v: stopped with %d of %d URLs finished; run the same command again to resume once Redis answers", gone, sum.Done, sum.Total)}
	case sum.Interrupted && context.Cause(run) == errMaxTime:
		return &exitError{code: ExitFatal, err: fmt.Errorf("stopped by --max-time %v with %d of %d URLs finished; run the same command again to resume", o.MaxTime, sum.Done, sum.Total)}
	case sum.Interrupted:
		return &exitError{code: ExitFatal, err: fmt.Errorf("interrupted with %d of %d URLs finished; run the same command again to resume", sum.Done, sum.Total)}
	case rerr != nil:
		// The job is whole, but not all of what fetch was to write was
		// written: not a success (issue 29, item 6: it exited 0).
		return &exitError{code: ExitFatal, err: fmt.Errorf("%w; the job's results are whole (%d of %d URLs finished): once that is fixed, write the report with 'polite report %s'",
			rerr, sum.Done, sum.Total, o.Out)}
	case sum.OK():
		return nil
	}
	return &exitError{code: ExitFailures}
}
