package crawl

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/breaker"
	"github.com/polite-go/polite/retry"
	"github.com/polite-go/polite/robots"
)

// Run fetches every URL of the job not finished yet, and returns when all
// are, or when ctx ends: then it stops handing out URLs, lets the requests in
// flight finish for up to Options.Grace (canceling them after that),
// commits, and returns with Summary.Interrupted set. hard, when it ends,
// cancels the requests in flight at once (a second Ctrl-C). An error means
// the job's files could not be written; what was committed stands.
func (j *Job) Run(ctx, hard context.Context) (Summary, error) {
	if hard == nil {
		hard = context.Background()
	}
	start := time.Now()
	j.mu.Lock()
	j.start = start
	j.mu.Unlock()
	j.sched = newSched(j.tr.Registry())
	if err := j.loadPending(ctx); err != nil {
		return Summary{}, err
	}
	j.mu.Lock()
	j.loaded = true // Progress may read the hosts and the scheduler from now on
	j.mu.Unlock()

	j.commits = make(chan commitMsg, 4*j.opts.Workers+1024)
	commitErr := make(chan error, 1)
	go func() { commitErr <- j.committer() }()

	// Lines that are not URLs finish at once, never requested.
	now := time.Now().UTC()
	for _, it := range j.items {
		if it.invalid != "" {
			j.finish(it, &Result{URL: it.url, Outcome: InvalidURL, Error: "invalid URL: " + it.invalid, Started: now, Finished: now}, nil)
		}
	}
	j.items = nil

	fetchCtx, cancelFetch := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelFetch()
	go j.sched.clock()
	var wg sync.WaitGroup
	for range j.opts.Workers {
		wg.Go(func() {
			for it := j.sched.next(); it != nil; it = j.sched.next() {
				j.fetch(fetchCtx, it)
			}
		})
	}
	workersDone := make(chan struct{})
	go func() { wg.Wait(); close(workersDone) }()

	interrupted := false
	select {
	case <-workersDone:
	case <-ctx.Done():
		interrupted = true
		j.sched.Stop()
		grace := time.NewTimer(j.opts.Grace)
		select {
		case <-workersDone:
		case <-grace.C:
			cancelFetch()
		case <-hard.Done():
			cancelFetch()
		}
		grace.Stop()
		<-workersDone
	}
	j.sched.Stop() // ends the clock
	close(j.commits)
	err := <-commitErr
	if !j.sched.finished() {
		interrupted = true
	}
	j.mu.Lock()
	sum := Summary{Total: j.total, Done: j.doneBefore + j.doneNow, DoneNow: j.doneNow, Outcomes: map[string]int{},
		Interrupted: interrupted, Elapsed: time.Since(start)}
	for k, v := range j.outcomes {
		sum.Outcomes[k] = v
	}
	j.mu.Unlock()
	return sum, err
}

// loadPending reads the job's counts and its URLs not done into the
// scheduler.
func (j *Job) loadPending(ctx context.Context) error {
	total, done, err := j.st.counts()
	if err != nil {
		return fmt.Errorf("crawl: reading state: %w", err)
	}
	j.mu.Lock()
	j.total = total
	for k, v := range done {
		j.outcomes[k] = v
		j.doneBefore += v
	}
	j.mu.Unlock()
	var valid []*item
	var notBefore []time.Time
	err = j.st.pending(ctx, func(r row) error {
		it := &item{id: r.id, url: r.url, invalid: r.invalid, attempts: r.attempts, started: r.started, reason: r.reason}
		if r.invalid == "" {
			h := j.hosts[r.host]
			if h == nil {
				h = &host{key: r.host}
				j.hosts[r.host] = h
				j.hostList = append(j.hostList, h)
			}
			it.host = h
			valid = append(valid, it)
			notBefore = append(notBefore, r.notBefore)
		}
		j.items = append(j.items, it)
		return nil
	})
	if err != nil {
		return fmt.Errorf("crawl: reading state: %w", err)
	}
	for i, it := range valid {
		j.sched.add(it, notBefore[i])
	}
	if len(valid) == 0 {
		j.sched.Stop()
	}
	return nil
}

// fetchState is one fetch of an item, carried in the request's context so
// the counting transport under polite can see it.
type fetchState struct {
	it      *item
	block   atomic.Pointer[string] // the soft block polite's detector saw, if any
	sent    atomic.Bool            // a request went out
	claimed atomic.Bool            // the token claim was released
}

type fetchKey struct{}

// unclaim releases the scheduler's token claim for this fetch, once.
func (f *fetchState) unclaim() {
	if f.claimed.CompareAndSwap(false, true) {
		f.it.host.claimed.Add(-1)
	}
}

// counter sits under polite's Transport: it sees each request that goes on
// the wire (after polite's gates, so the host's token was taken).
type counter struct{ base http.RoundTripper }

func (c counter) RoundTrip(r *http.Request) (*http.Response, error) {
	if f, ok := r.Context().Value(fetchKey{}).(*fetchState); ok {
		f.sent.Store(true)
		f.unclaim()
	}
	return c.base.RoundTrip(r)
}

// blockRecorder is the Transport's BlockDetector: the caller's (or polite's
// default), noting each verdict in the fetch it belongs to so the job need
// not read the body a second time.
type blockRecorder struct{ polite.BlockDetector }

func (b blockRecorder) Detect(resp *http.Response, peek []byte) string {
	r := b.BlockDetector.Detect(resp, peek)
	if resp.Request != nil {
		if f, ok := resp.Request.Context().Value(fetchKey{}).(*fetchState); ok {
			f.block.Store(&r)
		}
	}
	return r
}

// fetch makes one attempt at it and decides: finished, or back to the queue.
func (j *Job) fetch(ctx context.Context, it *item) {
	f := &fetchState{it: it}
	defer f.unclaim()
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, fetchKey{}, f), j.opts.Timeout)
	defer cancel()
	if it.started.IsZero() {
		it.started = time.Now()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, it.url, nil)
	if err != nil { // CheckURL let it through; be safe
		j.finishErr(it, InvalidURL, 0, "invalid URL: "+err.Error())
		return
	}
	resp, err := j.cl.Do(req)
	if f.sent.Load() {
		it.attempts++
		if it.attempts == 1 { // an original request earns retries
			now := time.Now()
			it.host.budget.Deposit(now)
			j.budget.Deposit(now)
		}
	}
	h := it.host
	if err != nil {
		j.failed(ctx, it, err, f.sent.Load())
		return
	}
	body, sum, truncated, rerr := j.readBody(resp)
	now := time.Now()
	out, why := classify(resp, f)
	if rerr != nil && out == OK {
		// The status was fine but the body broke off: no response to keep.
		j.failed(ctx, it, rerr, true)
		return
	}
	if out == Throttled || why == "retry" {
		if next, ok := j.retryAt(it, resp, now); ok {
			j.sched.retry(it, next)
			j.deferred(it, next)
			return
		}
	}
	res := &Result{URL: it.url, Host: h.key, Outcome: out, Status: resp.StatusCode, Attempts: it.attempts,
		Bytes: int64(len(body)), SHA256: sum, Truncated: truncated, Started: it.started.UTC(), Finished: now.UTC()}
	if u := resp.Request.URL.String(); u != it.url {
		res.FinalURL = u
	}
	switch {
	case out == Blocked:
		res.Error = fmt.Sprintf("blocked: %s", why)
	case out == Throttled:
		res.Error = fmt.Sprintf("throttled: %s after %d attempts", resp.Status, it.attempts)
	case out != OK:
		res.Error = resp.Status
		if why == "retry" {
			res.Error = fmt.Sprintf("%s after %d attempts", resp.Status, it.attempts)
		}
	}
	if j.opts.Bodies == BodiesFiles && len(body) > 0 {
		if err := j.writeFile(sum, body); err != nil {
			j.logError("writing a body", err)
		} else {
			res.File = filepath.Join(BodiesDir, sum[:2], sum)
		}
	}
	var k *kept
	if j.warc != nil {
		k = keep(resp, body, truncated)
	}
	j.finish(it, res, k)
}

// readBody reads up to MaxBody bytes of resp's body and closes it.
func (j *Job) readBody(resp *http.Response) (body []byte, sum string, truncated bool, err error) {
	defer resp.Body.Close()
	var buf bytes.Buffer
	if resp.ContentLength > 0 && resp.ContentLength <= j.opts.MaxBody {
		buf.Grow(int(resp.ContentLength))
	}
	_, err = io.Copy(&buf, io.LimitReader(resp.Body, j.opts.MaxBody))
	if err == nil && int64(buf.Len()) == j.opts.MaxBody {
		var one [1]byte
		if n, _ := io.ReadFull(resp.Body, one[:]); n > 0 {
			truncated = true
		}
	}
	body = buf.Bytes()
	if len(body) > 0 {
		s := sha256.Sum256(body)
		sum = hex.EncodeToString(s[:])
	}
	return body, sum, truncated, err
}

// classify maps a response to an outcome, and says why: "retry" for a
// status worth trying again, or a soft block's reason.
func classify(resp *http.Response, f *fetchState) (out, why string) {
	if r := f.block.Load(); r != nil && *r != "" {
		return Blocked, *r
	}
	switch c := resp.StatusCode; {
	case c < 400:
		return OK, ""
	case c == http.StatusTooManyRequests, c == http.StatusServiceUnavailable:
		return Throttled, "retry"
	case c == http.StatusRequestTimeout, c >= 500:
		return HTTPError, "retry"
	}
	return HTTPError, ""
}

// failed handles a fetch that got no response.
func (j *Job) failed(ctx context.Context, it *item, err error, sent bool) {
	now := time.Now()
	var pe *polite.PausedError
	var oe *breaker.OpenError
	var be *polite.BlockedError
	var until time.Time
	switch {
	case errors.As(err, &pe):
		until = pe.Until
		it.reason = "paused (" + string(pe.Reason) + ")"
	case errors.As(err, &oe):
		until = oe.Until
		it.reason = "breaker open"
	case errors.As(err, &be):
		j.finishErr(it, Blocked, 0, fmt.Sprintf("blocked: host %s answered with a %s", be.Host, be.Reason))
		return
	case errors.Is(err, robots.ErrDisallowed):
		j.finishErr(it, RobotsDisallowed, 0, err.Error())
		return
	case context.Cause(ctx) != nil && errors.Is(context.Cause(ctx), context.Canceled):
		// The job is stopping: leave the URL for the next run.
		j.sched.retry(it, now)
		j.deferred(it, time.Time{})
		return
	}
	if !until.IsZero() {
		// The host is paused or its breaker open: nothing was sent. Wait
		// with the host, without holding a worker.
		if until.Sub(now) > j.opts.MaxRetryAfter {
			j.finishErr(it, Throttled, 0, fmt.Sprintf("throttled: host paused until %s, beyond --max-retry-after", until.UTC().Format(time.RFC3339)))
			return
		}
		it.host.pause(until)
		j.sched.retry(it, now)
		j.deferred(it, until)
		return
	}
	if sent {
		it.reason = "network error"
		if next, ok := j.retryAt(it, nil, now); ok {
			j.sched.retry(it, next)
			j.deferred(it, next)
			return
		}
		j.finishErr(it, NetworkError, 0, fmt.Sprintf("%v (after %d attempts)", unwrapPolite(err), it.attempts))
		return
	}
	j.finishErr(it, NetworkError, 0, unwrapPolite(err).Error())
}

// retryAt decides whether it may be tried again and when, after an attempt
// that got resp (nil for none). A throttled host's pause is the wait; else
// the backoff, and the host's retry budget.
func (j *Job) retryAt(it *item, resp *http.Response, now time.Time) (time.Time, bool) {
	h := it.host
	if it.attempts > j.retries(h.key) {
		return time.Time{}, false
	}
	if resp != nil {
		it.reason = resp.Status
	}
	var next time.Time
	if p := time.Unix(0, h.pauseUntil.Load()); p.After(now) {
		next = p
	}
	if resp != nil {
		if d, ok := retry.ParseAfter(resp.Header, now); ok {
			h.pause(now.Add(d))
			next = now.Add(d)
		}
	}
	if !next.IsZero() {
		if next.Sub(now) > j.opts.MaxRetryAfter {
			return time.Time{}, false
		}
		return now, true // the host's pause holds it back, with its siblings
	}
	if !h.budget.Withdraw(now) || !j.budget.Withdraw(now) {
		it.reason += ", retry budget spent"
		return now.Add(time.Second), true
	}
	return now.Add(j.opts.Backoff.Next(it.attempts, 0)), true
}

func unwrapPolite(err error) error {
	var pe *polite.Error
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// finishErr finishes it without a response.
func (j *Job) finishErr(it *item, outcome string, status int, msg string) {
	now := time.Now().UTC()
	started := it.started
	if started.IsZero() {
		started = now
	}
	j.finish(it, &Result{URL: it.url, Host: it.host.key, Outcome: outcome, Status: status, Attempts: it.attempts,
		Error: msg, Started: started.UTC(), Finished: now}, nil)
}

// finish hands a finished URL to the committer and the scheduler.
func (j *Job) finish(it *item, res *Result, k *kept) {
	j.commits <- commitMsg{it: it, res: res, kept: k}
	if it.host != nil {
		it.host.stats.done.Add(1)
		if res.Failed() {
			it.host.stats.failed.Add(1)
		}
		j.sched.done(it)
	}
}

// deferred records a URL put off until notBefore.
func (j *Job) deferred(it *item, notBefore time.Time) {
	j.commits <- commitMsg{later: &later{id: it.id, attempts: it.attempts, notBefore: notBefore, reason: it.reason, started: it.started}}
}

// writeFile stores a body under its sha256, atomically.
func (j *Job) writeFile(sum string, body []byte) error {
	dir := filepath.Join(j.dir, BodiesDir, sum[:2])
	path := filepath.Join(dir, sum)
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(body)
	if e := f.Close(); err == nil {
		err = e
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

func (j *Job) logError(what string, err error) {
	if j.opts.Logger != nil {
		j.opts.Logger.Error("crawl: "+what, "error", err)
	}
}
