package crawl

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/retry"
)

// Bodies says where a job keeps response bodies.
type Bodies string

// Ways to keep bodies.
const (
	BodiesWARC  Bodies = "warc"  // request and response records in DIR/bodies.warc (WARC/1.1)
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
	DefaultMaxRetryAfter  = 10 * time.Minute
	DefaultCommitInterval = 50 * time.Millisecond
	DefaultGrace          = 10 * time.Second
)

// Files in a job's directory.
const (
	StateFile   = "state.db"
	ResultsFile = "results.jsonl"
	WARCFile    = "bodies.warc"
	BodiesDir   = "bodies"
	lockFile    = "lock"
)

// Options configure a Job. The zero value of each field is its default.
type Options struct {
	// Transport sends the requests and carries the politeness policy (rates,
	// rules, key, breaker, robots, adaptive). It must not have been used:
	// Open sets its Base (wrapping the one given, so the job can count
	// attempts), its Observer (chaining the one given), Retries to -1 and
	// MaxRetryAfter to 1 ns, and wraps its Blocks, because the job does the waiting and retrying
	// itself — in its own queue, never holding a worker. If nil, a zero
	// Transport is used.
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
	// Backoff spaces the retries of a URL whose host gave no Retry-After.
	// The zero value is full jitter from 500 ms to 60 s.
	Backoff retry.Backoff
	// Budget is each host's retry budget: a retry waits until the host's
	// budget has a token, so a host where everything fails is not hammered
	// by retries. The zero value allows retries up to 20 % of recent
	// requests plus 1 per second.
	Budget retry.BudgetConfig
	// MaxRetryAfter is the longest pause a URL waits out (Retry-After, a
	// breaker, RateLimit headers). A URL whose host is paused for longer
	// ends as throttled. If zero, DefaultMaxRetryAfter.
	MaxRetryAfter time.Duration
	// Timeout bounds one request, body included. If zero, DefaultTimeout.
	Timeout time.Duration
	// Bodies says where bodies are kept. If empty, BodiesWARC.
	Bodies Bodies
	// MaxBody caps the bytes of a body kept (and read); the rest is not
	// downloaded and the result says Truncated. If zero, DefaultMaxBody.
	MaxBody int64
	// MaxURLLen is the longest line taken as a URL. If zero,
	// DefaultMaxURLLen.
	MaxURLLen int
	// CommitInterval is the longest a finished URL waits to be committed
	// with others (group commit). If zero, DefaultCommitInterval.
	CommitInterval time.Duration
	// Grace is how long Run lets requests in flight finish after its
	// context ends. If zero, DefaultGrace.
	Grace time.Duration
	// Logger receives the job's own records (resume, commit errors). If
	// nil, nothing is logged.
	Logger *slog.Logger
}

// Job is a durable crawl: a list of URLs, each fetched once through a
// polite.Transport, with its state in DIR/state.db and one line per URL in
// DIR/results.jsonl.
//
// Durability: a URL is finished when the transaction that records its
// result commits. Lines are appended to results.jsonl (and records to
// bodies.warc) only in commit order, and the database keeps the offset each
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
	cl   *http.Client
	st   *store
	lock *os.File

	// hosts, hostList, items and sched are written by Run as it loads the
	// pending URLs, before it sets loaded, and only read afterwards.
	hosts    map[string]*host // by key
	hostList []*host
	items    []*item // pending, from the database, in order
	sched    *sched
	budget   retry.Budget // the global retry budget
	retries  func(string) int

	commits chan commitMsg
	res     *resultsFile
	warc    *warcWriter

	mu         sync.Mutex // guards the fields below
	total      int
	doneBefore int
	doneNow    int
	outcomes   map[string]int
	start      time.Time
	loaded     bool // Run has loaded the pending URLs (see hosts)
}

// Open opens (creating it if need be) the job in dir, takes its lock, and
// repairs results.jsonl and bodies.warc after a crash. Only one process may
// have a job open.
func Open(dir string, opts Options) (*Job, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("crawl: %w", err)
	}
	lock, err := lockDir(filepath.Join(dir, lockFile))
	if err != nil {
		return nil, err
	}
	j := &Job{dir: dir, opts: opts, lock: lock, hosts: map[string]*host{}, outcomes: map[string]int{}}
	j.defaults()
	if j.st, err = openStore(filepath.Join(dir, StateFile)); err != nil {
		j.Close()
		return nil, err
	}
	if err := j.reconcile(); err != nil {
		j.Close()
		return nil, err
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
	if o.Bodies == "" {
		o.Bodies = BodiesWARC
	}
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
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
	j.retries = func(string) int { return o.Retries }
	if o.RetriesFor != nil {
		j.retries = func(h string) int {
			if n := o.RetriesFor(h); n != 0 {
				return n
			}
			return o.Retries
		}
	}
	j.budget = *retry.NewBudget(o.Budget)
	tr := o.Transport
	if tr == nil {
		tr = &polite.Transport{}
	}
	base := tr.Base
	if base == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns = 0 // no overall cap: every host keeps its own
		t.MaxIdleConnsPerHost = 16
		t.IdleConnTimeout = 30 * time.Second
		base = t
	}
	tr.Base = counter{base}
	tr.Retries = -1
	tr.MaxRetryAfter = time.Nanosecond
	tr.Observer = &observer{hosts: j.hosts, next: tr.Observer}
	blocks := tr.Blocks
	if blocks == nil {
		blocks = polite.DefaultBlocks
	}
	tr.Blocks = blockRecorder{blocks}
	j.tr = tr
	j.cl = &http.Client{Transport: tr}
}

// Dir returns the job's directory.
func (j *Job) Dir() string { return j.dir }

// Load adds the URLs of a list (see ReadLines) that the job does not have
// yet, and returns how many were new. It may be called more than once, before
// Run; a rerun reading the same list adds nothing.
func (j *Job) Load(r io.Reader) (int, error) {
	var batch []Line
	added := 0
	flush := func() error {
		n, err := j.st.add(batch)
		added += n
		batch = batch[:0]
		return err
	}
	err := ReadLines(r, j.opts.MaxURLLen, func(l Line) error {
		batch = append(batch, l)
		if len(batch) == 10000 {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return added, fmt.Errorf("crawl: reading the URL list: %w", err)
	}
	return added, nil
}

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
}

// OK reports whether every URL is finished and ok.
func (s Summary) OK() bool {
	return !s.Interrupted && s.Done == s.Total && s.Outcomes[OK] == s.Total
}

// Close releases the job's files. It does not stop a Run: end Run's context
// and wait for it first.
func (j *Job) Close() error {
	var errs []error
	if j.warc != nil {
		errs = append(errs, j.warc.Close())
	}
	if j.res != nil {
		errs = append(errs, j.res.Close())
	}
	if j.st != nil {
		errs = append(errs, j.st.Close())
	}
	if j.lock != nil {
		errs = append(errs, j.lock.Close())
	}
	return errors.Join(errs...)
}
