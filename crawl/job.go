package crawl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/audit"
	"github.com/polite-go/polite/breaker"
	"github.com/polite-go/polite/crawl/scope"
	"github.com/polite-go/polite/retry"
)

// Bodies says where a job keeps response bodies.
type Bodies string

// Ways to keep bodies.
const (
	BodiesWARC  Bodies = "warc"  // WARC/1.1 records in DIR/bodies.warc.gz (see WARCName)
	BodiesFiles Bodies = "files" // DIR/bodies/ab/abcdef…, named by their sha256
	BodiesNone  Bodies = "none"  // not kept; results.jsonl still has their size and sha256
)

// ParseBodies parses "warc", "files" or "none".
func ParseBodies(s string) (Bodies, error) {
	switch b := Bodies(s); b {
	case BodiesWARC, BodiesFiles, BodiesNone:
		return b, nil
	}
	return "", fmt.Errorf("crawl: bodies %q: want warc, files or none", s)
}

// Defaults for Options fields left zero.
const (
	DefaultWorkers        = 64
	DefaultRetries        = 5
	DefaultTimeout        = 30 * time.Second
	DefaultMaxBody        = 10 << 20
	DefaultWARCMaxSize    = 1 << 30 // as Heritrix's and most archives' files
	DefaultMaxRetryAfter  = 10 * time.Minute
	DefaultCommitInterval = 50 * time.Millisecond
	DefaultGrace          = 10 * time.Second
	DefaultHostGiveUp     = 5 * time.Minute
	DefaultMaxBacklog     = 128 << 20
	DefaultMaxHosts       = 2048
)

// Files in a job's directory.
const (
	StateFile   = "state.db"
	ResultsFile = "results.jsonl"
	WARCFile    = "bodies.warc.gz" // the first WARC file; see WARCName
	BodiesDir   = "bodies"
	lockFile    = "lock"
)

// Options configure a Job. The zero value of each field is its default.
type Options struct {
	// Transport sends the requests and carries the politeness policy (rates,
	// rules, key, breaker, robots, adaptive, retry budgets, backoff,
	// MaxRetryAfter). The job sends through its Try, one attempt at a time,
	// and keeps URLs that wait (a paused host, a backoff) in its own queue,
	// never holding a worker; it never changes the Transport, which may be
	// shared. Its Retries is not used: Retries and RetriesFor below count
	// a URL's attempts over every run. If nil, the job builds one from
	// Backoff, Budget and MaxRetryAfter below, sending through NewBase
	// with LimitConns.
	Transport *polite.Transport
	// Workers is how many requests may be in flight over all hosts. If
	// zero, DefaultWorkers.
	Workers int
	// Retries is how many times a URL is tried again after its first
	// attempt fails for a reason worth retrying (429/503, 408/504, other
	// 5xx, no response). If zero, DefaultRetries; if negative, none.
	Retries int
	// RetriesFor, if set, returns the Retries of one host (by host key),
	// with the same meaning; it overrides Retries.
	RetriesFor func(host string) int
	// Backoff, Budget and MaxRetryAfter configure the Transport the job
	// builds when Transport is nil (see polite.Transport's fields of the
	// same names); a Transport given brings its own. Backoff spaces the
	// retries of a URL whose host gave no Retry-After (full jitter from
	// 500 ms to 60 s when zero); Budget is each host's retry budget (a
	// URL whose retry it refuses waits a second and goes again, never
	// dropped); a URL whose host is paused for longer than MaxRetryAfter
	// (DefaultMaxRetryAfter when zero) ends as throttled.
	Backoff       retry.Backoff
	Budget        retry.BudgetConfig
	MaxRetryAfter time.Duration
	// HostGiveUp is how long a host may keep failing (its breaker
	// unclosed, open or half-open with its probes failing, or as many
	// failures in a row as open the breaker, however far apart) before
	// the host's remaining URLs are finished with the reason, its last
	// failure's outcome: a dead host must not keep a job alive for days.
	// If zero, DefaultHostGiveUp; if negative, never.
	HostGiveUp time.Duration
	// BlockRecheck is how long after a soft block (a challenge page) the
	// job asks its host again, with one URL alone from a part of the site
	// not challenged yet (issue 29): a page that looked like a challenge
	// may have been an ordinary one, the challenge a rule on one path, or
	// passing. The host's other URLs wait meanwhile. Two challenges in a
	// row on different paths end the host's remaining URLs "blocked",
	// never sent; a path challenged twice and never answered with a page
	// is left alone (see block.go). If zero, DefaultBlockRecheck; if
	// negative, never re-checked: the first challenge ends the host.
	BlockRecheck time.Duration
	// Method is every request's method; "" is GET. Body, when not nil, is
	// sent with every request (its Content-Type is the Header's). A 301,
	// 302 or 303 turns a request other than GET or HEAD into a GET without
	// the body, as browsers and net/http do; 307 and 308 keep both. A job
	// keeps the method and body it was first run with: Run refuses others.
	// Whether a POST or PATCH is retried is the Transport's
	// RetryNonIdempotent.
	Method string
	Body   []byte
	// Timeout bounds one request, body included. If zero, DefaultTimeout.
	Timeout time.Duration
	// Bodies says where bodies are kept. If empty, BodiesWARC.
	Bodies Bodies
	// MaxBody caps the bytes of a body kept (and read); the rest is not
	// downloaded and the result says Truncated. If zero, DefaultMaxBody.
	MaxBody int64
	// WARCPlain writes the WARC files uncompressed (bodies.warc) instead
	// of a gzip member per record (bodies.warc.gz). A job keeps what it
	// was first run with.
	WARCPlain bool
	// WARCMaxSize starts a new WARC file once the current one passes this
	// many bytes: bodies-00001.warc.gz and on. If zero,
	// DefaultWARCMaxSize; if negative, never.
	WARCMaxSize int64
	// MaxBacklog bounds the bytes of finished responses (bodies and heads)
	// waiting to be written to the WARC files: a worker whose response would
	// go over waits for the committer. If zero, DefaultMaxBacklog; never
	// less than MaxBody. With WARC on, the bodies then hold at most
	// Workers × MaxBody (being read; a buffer never grows past MaxBody,
	// though while one of unknown length grows, its old and new buffer
	// are both held for a moment) + MaxBacklog (queued, and being
	// written); the Go heap may reach twice that before a collection
	// (GOGC=100) unless a soft memory limit (debug.SetMemoryLimit) holds
	// it, as polite fetch sets. Measured: 200 chunked 12 MiB bodies, 64
	// workers, 10 MiB MaxBody: 2,280 MiB peak RSS before the cap on
	// buffers (issue 29, item 14), 1,549 MiB with it, 1,039 MiB with the
	// limit too (400 endless bodies: 7.2 GB before the bound on the
	// backlog, issue 17).
	MaxBacklog int64
	// MaxHosts bounds the hosts whose URLs Run holds in memory at a time:
	// pending URLs are streamed from state.db, at most 32 per host besides
	// those in flight (about 300 bytes each), so a job's memory does not
	// grow with its size: at most MaxHosts × 32 + Workers URLs, plus
	// SQLite's page caches (the writer's 64 bytes a URL, from 2 to 64 MB;
	// the feeder's 8 MB) and the bodies bounded by MaxBacklog. Hosts are
	// taken in by key order as others finish. A host paused for long
	// holds its place meanwhile: with many such hosts, raise it. If zero,
	// DefaultMaxHosts.
	MaxHosts int
	// MaxURLLen is the longest line taken as a URL. If zero,
	// DefaultMaxURLLen.
	MaxURLLen int
	// Lane is the lane Load gives the URLs of a list whose lines name
	// none (see ReadLines): a URL's turns within its host (see Lane). A
	// URL already in the job keeps the lane it was added with. If zero,
	// LaneNormal.
	Lane Lane
	// CommitInterval is the longest a finished URL waits to be committed
	// with others (group commit). If zero, DefaultCommitInterval.
	CommitInterval time.Duration
	// Grace is how long Run lets requests in flight finish after its
	// context ends. If zero, DefaultGrace.
	Grace time.Duration
	// Header is added to every request the job sends (robots.txt's
	// excepted). Authorization, Proxy-Authorization, Cookie and Host are
	// not sent on a redirect to another host than the URL's, as net/http's
	// Client does not, and the WARC files record the values of the first
	// three as "xxxxx".
	Header http.Header
	// RetryOn, if not nil, names the statuses retried (while attempts
	// are left), in place of the Transport's reading (429/503, 408/504,
	// other 5xx): a status it names is retried with the backoff even when
	// the Transport would not, one it does not name is not retried. A soft
	// block is never retried, nor a pause beyond MaxRetryAfter; a 429 or
	// 503 still pauses its host.
	RetryOn map[int]bool
	// SameHost keeps redirects on the host each URL was listed under
	// (its name; the scheme and port may change, http to https say): a
	// redirect elsewhere is not followed, and the 3xx is the URL's answer,
	// with the target in its result's redirect_not_followed (issue 17,
	// defect 6: a list's URLs may not send the job to hosts nobody
	// listed).
	SameHost bool
	// MaxURLs, if positive, is how many lines of a list Load takes (the
	// first ones; blank and comment lines do not count); Load skips the
	// rest and Skipped says how many.
	MaxURLs int
	// Logger receives the job's own records (resume, commit errors). If
	// nil, nothing is logged.
	Logger *slog.Logger

	// CredentialsFor, when set, says whether the credentials fields of
	// Header (Authorization, Proxy-Authorization, Cookie) may go to a host
	// (host[:port] as in the URL) the job's URL names: a fleet worker sends
	// them only to the hosts its own list named, never to those of URLs
	// other workers put in the frontier. Nil: to every URL's own host.
	CredentialsFor func(host string) bool

	// Frontier, when set, makes the job a fleet worker (see fleet.go): its
	// URLs are those it leases from the frontier, not a list loaded into
	// the job, and each result goes to the frontier too.
	Frontier Frontier
	// FrontierID names the frontier's crawl (redisstore.Frontier.ID),
	// recorded in state.db. Zero: none.
	FrontierID int64
	// LeaseAhead bounds the leased URLs a fleet worker holds not finished
	// (queued, waiting, in flight). If zero, Workers.
	LeaseAhead int
	// LeaseRenew is how often a fleet worker renews its leases (well
	// within the frontier's lease time). If zero, DefaultLeaseRenew.
	LeaseRenew time.Duration
	// FleetPoll is the longest a fleet worker with nothing to do waits
	// before asking the frontier again. If zero, DefaultFleetPoll.
	FleetPoll time.Duration
	// Reserve makes the scheduler take each host's next admission itself
	// (Transport.Reserve) instead of asking Transport.Ready, and hand it to
	// the URL's Try: for a Transport whose Store other processes share, a
	// fleet's Redis, where every question costs a round trip and Ready's
	// answer is stale by the time Try asks again. One process needs none.
	Reserve bool

	// Follow, when set, makes the job a crawl (issue 35): the links of
	// the pages it fetches, the scope and bounds allowing, are added to it
	// (see discover.go). Listed URLs are kept normalised, as links are.
	Follow *Follow
	// Since, when set, is the directory of an earlier job: a URL it
	// answered ok with an ETag or Last-Modified is asked for with
	// If-None-Match and If-Modified-Since, and a 304 ends it
	// not_modified (see since.go).
	Since string
}

// Job is a durable crawl: a list of URLs, each fetched once through a
// polite.Transport, with its state in DIR/state.db and one line per URL in
// DIR/results.jsonl.
//
// Durability: a URL is finished when the transaction that records its
// result commits. Lines are appended to results.jsonl (and records to
// the WARC files) only in commit order, and the database keeps the offset each
// file had reached: opening a job cuts the files back to those offsets and
// writes the lines of any committed URL missing from results.jsonl. So a
// job killed at any instant, even by SIGKILL, resumes with every finished
// URL's line written exactly once, never fetches a finished URL again, and
// fetches again only the URLs that were in flight (including those answered
// within the last CommitInterval before the kill).
//
// Open, Load, Run, Close in that order; Progress may be called from any
// goroutine while Run runs.
type Job struct {
	dir  string
	opts Options
	tr   *polite.Transport
	st   *store
	lock *os.File

	// sched, hostCount and invalid are written by Run as it starts,
	// before it sets loaded, and only read afterwards.
	sched     *sched
	hostCount int // hosts with URLs not done when Run started
	invalid   int // lines not URLs, not done when Run started
	retries   func(string) int
	backoff   retry.Backoff // the Transport's

	commits chan commitMsg
	// robotsMu guards robotsOpen: KeepRobots may send to commits.
	robotsMu   sync.RWMutex
	robotsOpen bool
	backlog    *byteSem // bounds the bytes in commits
	// foundBacklog bounds the links on their way to the committer
	// (maxFoundBacklog).
	foundBacklog *byteSem
	fatal        func() // stops the fetchers after a fatal commit error
	res          *resultsFile
	warc         *warcWriter
	events       *audit.Log // events.jsonl
	fl           *fleet     // fleet mode, while Run runs
	// Discovery (Options.Follow): the scope, buffers of links, and the
	// committer's side.
	scope    *scope.Scope
	linkBufs *sync.Pool
	disc     *discoverer
	discBase int    // disc.total when Job.total last took it in (guarded by mu)
	since    *since // Options.Since
	// listed are the hosts (host[:port] as in the URLs) the job's lists
	// named, when it follows links and Header carries credentials: they
	// go to those hosts only (addHeader). Written by Open and Load, read
	// by Run.
	listed map[string]bool
	drain  time.Duration // fleetDrain; tests shorten it
	// rows is the feeder's buffer for the URLs it reads (read); only the
	// feeder goroutine uses it.
	rows []row

	// hopBytes are the bytes of redirect hops kept for the WARC files by
	// URLs not finished yet, at most hopBudget (keepHop).
	hopBytes    atomic.Int64
	hopBudget   int64 // 0: the const hopBudget
	hopsDropped atomic.Int64

	mu         sync.Mutex // guards the fields below
	total      int
	doneBefore int
	doneNow    int
	outcomes   map[string]int
	start      time.Time
	loaded     bool // Run has loaded the pending URLs (see hosts)
	stats      Stats
	skipped    int // lines Load skipped (MaxURLs)

	loading   atomic.Bool  // Load is reading a list
	linesRead atomic.Int64 // entries of lists Load has read
	dropped   atomic.Int64 // of which the job had already
}

// Stats are a Run's closing figures, over the URLs it finished and the
// requests it sent (like Scrapy's closing stats).
type Stats struct {
	// Statuses counts the URLs finished by their last HTTP status (0: no
	// response).
	Statuses map[int]int
	// Retries counts the retries scheduled by what the failed attempt came
	// to: a status line, "timeout", "network error", "body: …".
	Retries map[string]int
	// Bytes is the body bytes kept.
	Bytes int64
	// Paused is, by host key, the time the host was paused this run
	// (Retry-After, RateLimit, backoff, breaker; a pause beyond
	// MaxRetryAfter ends the host's URLs instead): hosts never paused are
	// left out.
	Paused map[string]time.Duration
}

// Open opens (creating it if need be) the job in dir, takes its lock, and
// repairs results.jsonl and the WARC files after a crash. Only one process may
// have a job open.
func Open(dir string, opts Options) (*Job, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("crawl: %w", err)
	}
	lock, err := lockDir(filepath.Join(dir, lockFile))
	if err != nil {
		return nil, err
	}
	j := &Job{dir: dir, opts: opts, lock: lock, outcomes: map[string]int{}}
	j.defaults()
	if err := j.openEvents(); err != nil {
		j.Close()
		return nil, err
	}
	if j.st, err = openStore(filepath.Join(dir, StateFile)); err != nil {
		j.Close()
		return nil, err
	}
	if err := j.reconcile(); err != nil {
		j.Close()
		return nil, err
	}
	if opts.Follow != nil {
		if err := errors.Join(j.openScope(), j.openListed()); err != nil {
			j.Close()
			return nil, err
		}
	}
	if opts.Since != "" {
		if same, _ := sameDir(dir, opts.Since); same {
			j.Close()
			return nil, errNoSince
		}
		if j.since, err = openSince(opts.Since); err != nil {
			j.Close()
			return nil, err
		}
	}
	if j.opts.Bodies == BodiesFiles {
		if err := os.MkdirAll(filepath.Join(dir, BodiesDir), 0o755); err != nil {
			j.Close()
			return nil, fmt.Errorf("crawl: %w", err)
		}
	}
	return j, nil
}

func (j *Job) defaults() {
	o := &j.opts
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.Retries == 0 {
		o.Retries = DefaultRetries
	}
	if o.MaxRetryAfter <= 0 {
		o.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.HostGiveUp == 0 {
		o.HostGiveUp = DefaultHostGiveUp
	}
	if o.Bodies == "" {
		o.Bodies = BodiesWARC
	}
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.MaxBacklog <= 0 {
		o.MaxBacklog = DefaultMaxBacklog
	}
	if o.MaxHosts <= 0 {
		o.MaxHosts = DefaultMaxHosts
	}
	if o.MaxURLLen <= 0 {
		o.MaxURLLen = DefaultMaxURLLen
	}
	if o.CommitInterval <= 0 {
		o.CommitInterval = DefaultCommitInterval
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.LeaseAhead <= 0 {
		o.LeaseAhead = o.Workers
	}
	if o.LeaseRenew <= 0 {
		o.LeaseRenew = DefaultLeaseRenew
	}
	if o.FleetPoll <= 0 {
		o.FleetPoll = DefaultFleetPoll
	}
	j.drain = fleetDrain
	j.retries = func(string) int { return o.Retries }
	if o.RetriesFor != nil {
		j.retries = func(h string) int {
			if n := o.RetriesFor(h); n != 0 {
				return n
			}
			return o.Retries
		}
	}
	j.tr = o.Transport
	if j.tr == nil {
		base := NewBase(o.Workers)
		LimitConns(base, o.Workers)
		j.tr = &polite.Transport{Base: base, Backoff: o.Backoff, Budget: o.Budget, MaxRetryAfter: o.MaxRetryAfter,
			Breaker: BreakerFor(o.Backoff.Cap)}
	}
	j.backoff = j.tr.Backoff
}

// BreakerFor returns the breaker settings of a job whose backoff is capped
// at maxDelay (retry.DefaultCap when zero): the breaker's open delay is a
// wait polite chooses itself, so it is capped the same way (issue 17,
// defect 1: doubling to 5 minutes, it spaced a dead host's attempts 66 s
// apart under --max-delay 1s).
func BreakerFor(maxDelay time.Duration) breaker.Config {
	if maxDelay <= 0 {
		maxDelay = retry.DefaultCap
	}
	return breaker.Config{OpenDelay: min(breaker.DefaultOpenDelay, maxDelay), MaxOpenDelay: min(breaker.DefaultMaxOpenDelay, maxDelay)}
}

// NewBase returns the http.Transport a job sends through when it builds its
// own polite.Transport: http.DefaultTransport's settings, but with 16 idle
// connections kept per host, so that a busy host keeps its connections,
// and over all hosts as many as the process's file descriptor limit leaves
// after workers requests in flight (DefaultWorkers when zero) and a reserve
// for the job's files (issue 29, item 3), at most 4,096; past that the
// connection idle longest is closed. That bounds HTTP/1 connections only:
// see LimitConns, which a job that builds its own transport applies.
func NewBase(workers int) *http.Transport {
	if workers <= 0 {
		workers = DefaultWorkers
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = idleConns(fdLimit(), workers)
	t.MaxIdleConnsPerHost = 16
	t.IdleConnTimeout = 30 * time.Second
	return t
}

// Dir returns the job's directory.
func (j *Job) Dir() string { return j.dir }

// Load adds the URLs of a list (see ReadLines) that the job does not have
// yet, and returns how many were new. It may be called more than once, before
// Run; a rerun reading the same list adds nothing.
func (j *Job) Load(r io.Reader) (int, error) {
	return j.LoadContext(context.Background(), r)
}

// LoadContext is Load, stopped when ctx ends (issue 33, item 9: Ctrl-C
// waited for a million lines to load): it returns what it added until
// then, kept in the job (it commits every 100,000 lines; a rerun reading
// the list goes on), with an error wrapping ctx's cause. A read from r
// that blocks is not interrupted. Meanwhile Progress says how far it is
// (Loading, Read).
func (j *Job) LoadContext(ctx context.Context, r io.Reader) (int, error) {
	if j.opts.Lane >= numLanes {
		return 0, fmt.Errorf("crawl: Options.Lane: unknown lane %d", j.opts.Lane)
	}
	j.loading.Store(true)
	defer j.loading.Store(false)
	var batch []Line
	added := 0
	had, err := j.st.maxID()
	if err != nil {
		return 0, fmt.Errorf("crawl: reading state: %w", err)
	}
	// Marked until the list is read to its end: a job resumed without
	// its list can tell it holds part of it (LoadStopped).
	if err := j.st.commit(nil, nil, map[string]int64{metaLoading: 1}); err != nil {
		return 0, fmt.Errorf("crawl: %w", err)
	}
	flush := func() error {
		if err := j.st.cacheFor(had + int64(added+len(batch))); err != nil {
			return err
		}
		n, err := j.st.add(ctx, batch)
		if err == nil {
			j.dropped.Add(int64(len(batch) - n))
			// The roots of the URLs in the job, before Run may read
			// links against them.
			if err = j.saveRoots(); err != nil {
				err = fmt.Errorf("keeping the scope's roots: %w", err)
			}
		}
		added += n
		batch = batch[:0]
		return err
	}
	taken := 0
	err = ReadLinesLane(r, j.opts.MaxURLLen, j.opts.Lane, func(l Line) error {
		if j.linesRead.Add(1)%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if j.opts.MaxURLs > 0 && taken >= j.opts.MaxURLs {
			j.skipped++
			return nil
		}
		taken++
		j.seed(&l)
		if l.Problem != "" {
			// Its results.jsonl line says where it is (issue 33,
			// item 12).
			l.Problem = fmt.Sprintf("line %d: %s", l.Number, l.Problem)
		}
		batch = append(batch, l)
		if len(batch) == loadBatch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if ctx.Err() != nil {
		// A statement the context interrupted says so its own way.
		return added, fmt.Errorf("crawl: reading the URL list: stopped after %d new URLs: %w", added, context.Cause(ctx))
	}
	if err != nil {
		return added, fmt.Errorf("crawl: reading the URL list: %w", err)
	}
	if err := j.st.commit(nil, nil, map[string]int64{metaLoading: 0}); err != nil {
		return added, fmt.Errorf("crawl: %w", err)
	}
	return added, nil
}

// LoadStopped reports whether the last Load into the job (this run's or
// an earlier one's) stopped before the end of its list: the job then holds
// only part of it, and loading the list again adds the rest.
func (j *Job) LoadStopped() (bool, error) {
	v, err := j.st.meta(metaLoading)
	if err != nil {
		return false, fmt.Errorf("crawl: reading state: %w", err)
	}
	return v == 1, nil
}

// loadBatch is how many lines Load adds in one transaction: the more, the
// fewer times each index page is rewritten (see openStore).
const loadBatch = 100_000

// Skipped returns how many lines Load skipped beyond Options.MaxURLs.
func (j *Job) Skipped() int { return j.skipped }

// Summary is what a Run came to.
type Summary struct {
	// Total is the number of URLs in the job, Done the finished ones (over
	// every run), Outcomes the finished ones by outcome.
	Total, Done int
	Outcomes    map[string]int
	// Interrupted says Run stopped before every URL was finished (its
	// context ended); the rest wait for the next run.
	Interrupted bool
	// Elapsed is how long Run took; DoneNow the URLs it finished.
	Elapsed time.Duration
	DoneNow int
	// Stats are this run's closing figures.
	Stats Stats
	// Fleet is a fleet worker's account of its leases (Options.Frontier).
	Fleet *FleetSummary
}

// OK reports whether every URL is finished and ok.
func (s Summary) OK() bool {
	return !s.Interrupted && s.Done == s.Total && s.Outcomes[OK]+s.Outcomes[NotModified] == s.Total
}

// Close releases the job's files; a second Close does nothing. It does not
// stop a Run: end Run's context and wait for it first.
func (j *Job) Close() error {
	var errs []error
	if j.warc != nil {
		errs = append(errs, j.warc.Close())
		j.warc = nil
	}
	if j.res != nil {
		errs = append(errs, j.res.Close())
		j.res = nil
	}
	if j.events != nil {
		errs = append(errs, j.events.Close())
		j.events = nil
	}
	if j.st != nil {
		errs = append(errs, j.st.Close())
		j.st = nil
	}
	if j.since != nil {
		errs = append(errs, j.since.Close())
		j.since = nil
	}
	if j.lock != nil {
		errs = append(errs, j.lock.Close())
		j.lock = nil
	}
	return errors.Join(errs...)
}
