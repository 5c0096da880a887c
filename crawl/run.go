package crawl

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/polite-go/polite"
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
	j.sched = newSched(j.ready)
	j.sched.unreserve = j.tr.CancelReservation
	j.sched.giveUpFn = j.giveUp
	j.sched.maxHosts = j.opts.MaxHosts
	j.sched.revive = j.opts.Frontier != nil || j.opts.Follow != nil
	if err := j.CheckRequest(); err != nil {
		return Summary{}, err
	}
	if j.opts.Frontier != nil {
		j.fl = newFleet(j.opts.Frontier)
		j.sched.fleet = true
		if err := j.fleetResume(ctx); err != nil {
			return Summary{}, err
		}
		if err := j.fleetRoots(ctx, true); err != nil {
			return Summary{}, err
		}
	}
	if err := j.importURLs(); err != nil {
		return Summary{}, err
	}
	paused, err := j.loadPending()
	if err != nil {
		return Summary{}, err
	}
	j.mu.Lock()
	j.loaded = true // Progress may read the hosts and the scheduler from now on
	if j.opts.Follow != nil {
		j.disc = &discoverer{f: j.opts.Follow, fleet: j.fl != nil, total: j.total, hostN: map[string]int{}}
		j.discBase = j.total
	}
	j.mu.Unlock()

	fetchCtx, cancelFetch := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelFetch()
	// A fatal commit error (a full disk) stops the fetchers at once: what
	// they fetched could not be kept (issue 17, defect 4).
	j.fatal = func() {
		j.sched.Stop()
		cancelFetch()
	}
	j.commits = make(chan commitMsg, 4*j.opts.Workers+1024)
	j.backlog = newByteSem(max(j.opts.MaxBacklog, j.opts.MaxBody))
	j.foundBacklog = newByteSem(maxFoundBacklog)
	commitErr := make(chan error, 1)
	go func() { commitErr <- j.committer() }()
	j.openRobots(true)

	// Lines that are not URLs finish at once, never requested.
	if err := j.finishInvalid(fetchCtx); err != nil {
		j.sched.Stop()
		j.openRobots(false)
		close(j.commits)
		return Summary{}, errors.Join(err, <-commitErr)
	}

	go j.sched.clock()
	// The hosts' learned rates, for the next run (see rates.go); a fleet's
	// are in its store already.
	ratesDone := make(chan struct{})
	ratesCtx, stopRates := context.WithCancel(context.Background())
	defer stopRates()
	if j.adaptive() && j.tr.Store == nil && j.fl == nil {
		go j.checkpointRates(ratesCtx, ratesDone)
	} else {
		close(ratesDone)
	}
	feedErr := make(chan error, 1)
	ackDone := make(chan struct{})
	if j.fl != nil {
		go j.extender(fetchCtx)
		go j.acker(context.WithoutCancel(ctx), ackDone)
	}
	go func() {
		feed := j.feed
		if j.fl != nil {
			feed = func(ctx context.Context, _ map[string]hostPause) error { return j.feedFleet(ctx) }
		}
		err := feed(fetchCtx, paused)
		if err != nil {
			j.logError("reading state", err)
			j.fatal()
		}
		feedErr <- err
	}()
	// The Transport's decisions go to events.jsonl: the observer is set
	// here once, each URL's id by prepare (two context values a URL were
	// four allocations; issue 34, part 2).
	observed := polite.WithObserver(fetchCtx, j.events)
	var wg sync.WaitGroup
	for range j.opts.Workers {
		wg.Go(func() {
			for it := j.sched.next(); it != nil; it = j.sched.next() {
				j.fetch(observed, it)
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
	j.sched.Stop() // ends the clock and the feeder
	err = <-feedErr
	stopRates()
	<-ratesDone
	j.openRobots(false)
	close(j.commits)
	err = errors.Join(err, <-commitErr)
	if j.fl != nil {
		// What was not finished goes back to the fleet; what was goes
		// to the frontier (within fleetDrain: the rest next run).
		j.releaseUnfinished()
		j.fl.mu.Lock()
		j.fl.stop = true
		j.fl.mu.Unlock()
		j.fl.poke()
		<-ackDone
		j.fl.mu.Lock()
		err = errors.Join(err, j.fl.err)
		j.fl.mu.Unlock()
	}
	if !j.sched.finished() {
		interrupted = true
	}
	j.mu.Lock()
	sum := Summary{Total: j.total, Done: j.doneBefore + j.doneNow, DoneNow: j.doneNow, Outcomes: map[string]int{},
		Interrupted: interrupted, Elapsed: time.Since(start)}
	for k, v := range j.outcomes {
		sum.Outcomes[k] = v
	}
	sum.Stats = Stats{Statuses: maps.Clone(j.stats.Statuses), Retries: maps.Clone(j.stats.Retries), Bytes: j.stats.Bytes}
	j.mu.Unlock()
	sum.Stats.Paused = j.sched.pausedStats(time.Now())
	if j.fl != nil {
		sum.Fleet = j.fl.summary()
	}
	return sum, err
}

// loadPending reads the job's counts and the pauses earlier runs recorded;
// the pending URLs themselves are streamed by the feeder.
func (j *Job) loadPending() (map[string]hostPause, error) {
	total, done, err := j.st.counts()
	if err != nil {
		return nil, fmt.Errorf("crawl: reading state: %w", err)
	}
	if err := j.st.cacheFor(int64(total)); err != nil {
		return nil, fmt.Errorf("crawl: reading state: %w", err)
	}
	good, invalid, err := j.st.pendingCounts()
	if err != nil {
		return nil, fmt.Errorf("crawl: reading state: %w", err)
	}
	hosts := 0
	if good > 0 {
		if hosts, err = j.st.hostCount(); err != nil {
			return nil, fmt.Errorf("crawl: reading state: %w", err)
		}
	}
	j.mu.Lock()
	j.total = total
	for k, v := range done {
		j.outcomes[k] = v
		j.doneBefore += v
	}
	j.hostCount = hosts
	j.invalid = invalid
	j.mu.Unlock()
	// Pauses beyond MaxRetryAfter recorded by earlier runs hold their hosts
	// back until they end.
	paused := map[string]hostPause{}
	if err := j.st.pauses(time.Now(), func(p hostPause) { paused[p.host] = p }); err != nil {
		return nil, fmt.Errorf("crawl: reading state: %w", err)
	}
	if good == 0 && j.fl == nil {
		j.sched.mu.Lock()
		j.sched.hostsOut = true
		j.sched.stop()
		j.sched.mu.Unlock()
	}
	return paused, nil
}

// finishInvalid finishes the lines that are not URLs, a page at a time.
func (j *Job) finishInvalid(ctx context.Context) error {
	if j.invalid == 0 {
		return nil
	}
	const page = 1024
	var after int64
	for {
		var rows []row
		if err := j.st.window(ctx, "", LaneNormal, after, page, func(r row) { rows = append(rows, r) }); err != nil {
			return fmt.Errorf("crawl: reading state: %w", err)
		}
		now := time.Now().UTC()
		for _, r := range rows {
			it := &item{id: r.id, url: r.url}
			j.finish(it, &Result{URL: it.url, Outcome: InvalidURL, Error: "invalid URL: " + r.invalid, Started: now, Finished: now}, nil)
			after = r.id
		}
		if len(rows) < page {
			return nil
		}
	}
}

// fetch makes one attempt at it and decides: finished, or back to the queue.
// The Transport makes every decision about the host (admission, what the
// answer means, pauses, whether a retry is worth it and when); the job only
// keeps the URL in its queue meanwhile, never holding a worker.
func (j *Job) fetch(ctx context.Context, it *item) {
	resv := it.resv // Try's from the call on; given back unless it is made
	it.resv = nil
	defer func() { j.tr.CancelReservation(resv) }()
	if it.lease != nil && it.lease.lost.Load() {
		j.dropLost(it) // another worker has it now
		return
	}
	j.logHeld(it)
	j.logStartRate(it)
	ctx, cancel := context.WithTimeout(ctx, j.opts.Timeout)
	defer cancel()
	if it.started.IsZero() {
		it.started = time.Now()
	}
	req, target, ip, attempt, ok := j.prepare(ctx, it)
	if !ok {
		return
	}
	h := it.host
	o := polite.TryOptions{Attempt: max(attempt, 1), Retries: j.retries(h.key), Prev: it.prev, Reservation: resv}
	resv = nil
	resp, tr, err := j.tr.Try(req, o)
	if tr.Sent {
		h.sent.Store(true)
		it.latency = tr.Latency
		if tr.Outcome != polite.OK {
			it.prev = tr.Outcome // a redirect (OK) within an attempt keeps why the attempt was made
		}
		if !it.hop {
			it.attempts++
		}
		it.hop = false
		h.stats.record(tr)
		if err != nil {
			j.health(h, tr, err, nil)
		}
		if it.cur == "" || j.ownHop(h, req.URL) { // a hop elsewhere says nothing of h
			h.blk.heard(target, tr.Outcome, tr.Block, time.Now())
		}
	}
	if err != nil {
		j.failed(req.Context(), it, err, tr)
		return
	}
	if resp == nil {
		j.notReady(it, tr)
		return
	}
	out := outcomeOf(tr.Outcome)
	if out == OK && j.redirect(it, resp, ip.get()) {
		// A redirect followed says nothing of h's health: its hop's
		// answer does (a host redirecting to one that throttles forever
		// reset its failures in a row with each 302, and was never
		// given up).
		return
	}
	j.health(h, tr, nil, resp)
	body, sum, truncated, rerr := j.readBody(resp)
	now := time.Now()
	if rerr != nil && out == OK {
		j.bodyBroke(it, resp.StatusCode, rerr, now)
		return
	}
	if j.opts.RetryOn != nil {
		tr = j.retryOn(it, tr, resp.StatusCode, now)
	}
	if j.again(it, tr, resp.Status) {
		return
	}
	// A failed response's body that broke off is kept as it came, flagged
	// (issue 17, defect 12).
	truncated = truncated || rerr != nil
	res := j.disposition(it, tr, out, resp, body, sum, truncated, now)
	if j.opts.Bodies == BodiesFiles && len(body) > 0 {
		if err := j.writeFile(res.SHA256, body); err != nil {
			j.logError("writing a body", err)
		} else {
			res.File = filepath.Join(BodiesDir, res.SHA256[:2], res.SHA256)
		}
	}
	var k *kept
	if j.warc != nil {
		k = keep(resp, body, truncated, sum, ip.get())
	}
	it.found = j.discover(it, resp, body, res)
	j.finish(it, res, k)
}

// prepare makes the request for it's next attempt (or redirect hop) and
// checks it may go: not when its host was given up on or blocked there,
// or when it is no request at all; it is then finished, and ok is false.
// attempt is the attempt's number (a hop is part of the attempt that met
// the redirect); ip notes the address the request reached, for the WARC
// (nil without).
func (j *Job) prepare(ctx context.Context, it *item) (req *http.Request, target string, ip *remoteAddr, attempt int, ok bool) {
	target = it.url
	if it.cur != "" {
		target = it.cur
	}
	// The Transport's decisions go to events.jsonl (Run set the observer
	// on ctx), under the URL's id.
	ctx = polite.WithRequestID(ctx, uint64(it.id))
	if j.warc != nil {
		ctx, ip = withRemoteIP(ctx)
	}
	req, err := j.newRequest(ctx, it, target)
	if err != nil { // CheckURL let it through; be safe
		j.finishErr(it, InvalidURL, 0, "invalid URL: "+err.Error())
		return nil, "", nil, 0, false
	}
	j.addHeader(req, it)
	j.conditional(req, it)
	h := it.host
	if g := h.gaveUp.Load(); g != nil {
		if !g.until.IsZero() {
			j.persistPause(h, g.until, g.why)
		}
		j.finishErr(it, g.outcome, 0, g.msg)
		return nil, "", nil, 0, false
	}
	attempt = it.attempts + 1
	if it.hop {
		attempt-- // a redirect hop is part of the attempt that met the redirect
	}
	if why := h.blk.closed(target); why != "" && (it.cur == "" || j.ownHop(h, req.URL)) {
		j.finishErr(it, Blocked, 0, unsent(h.key, why))
		return nil, "", nil, 0, false
	}
	return req, target, ip, attempt, true
}

// bodyBroke handles a response whose status was fine but whose body broke
// off: no response to keep. The Transport heard a success; the job
// retries the URL itself, as for a network error, while attempts are
// left, and finishes it as a network error or a timeout after.
func (j *Job) bodyBroke(it *item, status int, rerr error, now time.Time) {
	it.reason = "body: " + rerr.Error()
	timeout := errors.Is(rerr, context.DeadlineExceeded)
	if it.attempts <= j.retries(it.host.key) {
		it.prev = polite.NetworkError
		if timeout {
			it.prev = polite.Overloaded // a timeout, as the Transport reads one
		}
		j.countRetry("body broke off")
		next := now.Add(j.backoff.Next(it.attempts, 0))
		j.deferred(it, next)
		j.sched.retry(it, next)
		return
	}
	out := NetworkError
	if timeout {
		out = Timeout
	}
	j.finishErr(it, out, status, fmt.Sprintf("reading the body: %v (after %s)", rerr, attemptsN(it.attempts)))
}

// disposition is the result of a URL whose last attempt was answered and
// will not be retried: its outcome out, the response and its body, and
// the error that says why, when it did not end ok.
func (j *Job) disposition(it *item, tr polite.Tried, out string, resp *http.Response, body []byte, sum [32]byte, truncated bool, now time.Time) *Result {
	h := it.host
	res := &Result{URL: it.url, Host: h.key, Outcome: out, Status: resp.StatusCode, Attempts: it.attempts,
		Bytes: int64(len(body)), SHA256: hexSum(body, sum), Truncated: truncated, Started: it.started.UTC(), Finished: now.UTC(),
		ContentType: resp.Header.Get("Content-Type"), LatencyMS: ms(it.latency)}
	if u := resp.Request.URL.String(); u != it.url {
		res.FinalURL = u
	}
	if c := resp.StatusCode; c < 300 || c == http.StatusNotModified {
		res.ETag, res.LastModified = cutTo(resp.Header.Get("ETag"), maxNamed), cutTo(resp.Header.Get("Last-Modified"), maxNamed)
	}
	if resp.StatusCode == http.StatusNotModified && it.since.id != 0 && out == OK {
		res.Outcome = NotModified
		if res.ETag == "" && res.LastModified == "" {
			res.ETag, res.LastModified = it.since.etag, it.since.lastMod
		}
	}
	res.RedirectNotFollowed, it.notFollowed = it.notFollowed, ""
	switch {
	case out == Blocked:
		res.Error = fmt.Sprintf("blocked: %s", tr.Block)
	case out == Throttled:
		res.Error = fmt.Sprintf("throttled: %s after %s", resp.Status, attemptsN(it.attempts))
		if tr.Reason == polite.ReasonRetryAfter {
			// The host named a pause beyond MaxRetryAfter: say until
			// when, and keep it for the next run.
			if st, ok := j.tr.State(j.budgetOf(h)); ok && st.PausedUntil.After(now) {
				res.Error += fmt.Sprintf("; host paused until %s (%s), beyond --max-retry-after",
					st.PausedUntil.UTC().Format(time.RFC3339), st.PauseWhy)
				j.persistPause(h, st.PausedUntil, st.PauseWhy)
			}
		}
	case out != OK:
		res.Error = resp.Status
		if worthRetry(tr.Outcome) {
			res.Error = fmt.Sprintf("%s after %s", resp.Status, attemptsN(it.attempts))
		}
	}
	if it.refused != "" && out == OK { // a redirect the job cannot follow (issue 29, item 10)
		res.Outcome, res.Error, it.refused = HTTPError, it.refused, ""
	}
	return res
}

// budgetWait is how long a URL whose retry the budget refused waits before
// it is tried again: a queue defers such a URL, never drops it.
const budgetWait = time.Second

// again puts it back in the queue when the Transport says the attempt may
// be retried (or the retry budget asks for patience), and reports whether
// it did. why says what the attempt came to.
func (j *Job) again(it *item, tr polite.Tried, why string) bool {
	var next time.Time
	switch {
	case tr.Retry:
		next = tr.At // for a throttle, now: the host's pause holds it back
	case tr.Reason == polite.ReasonBudget:
		why += ", retry budget spent"
		next = time.Now().Add(min(budgetWait, j.maxDelay()))
	default:
		return false
	}
	it.reason = why
	j.countRetry(why)
	j.deferred(it, next)
	j.sched.retry(it, next)
	return true
}

// maxRetryReasons bounds the reasons Stats.Retries tells apart.
const maxRetryReasons = 64

// countRetry counts a retry scheduled for why, for the closing stats.
func (j *Job) countRetry(why string) {
	j.mu.Lock()
	if j.stats.Retries == nil {
		j.stats.Retries = map[string]int{}
	}
	why = cut(why) // a reason phrase is the server's to size
	if _, ok := j.stats.Retries[why]; !ok && len(j.stats.Retries) >= maxRetryReasons {
		why = "other" // and to vary: a new phrase each time is not a new key each time
	}
	j.stats.Retries[why]++
	j.mu.Unlock()
}

// notReady puts back a URL the Transport did not send because its host was
// not ready: the host waits (the scheduler asks Ready), and the URL with it.
func (j *Job) notReady(it *item, tr polite.Tried) {
	// Everything about it is recorded before the scheduler has it back:
	// from then on another worker may take it.
	switch tr.Reason {
	case polite.ReasonRate, polite.ReasonSlot:
		// a race with another worker: nothing to record
	case polite.ReasonBreaker:
		it.reason = "breaker open"
		j.deferred(it, tr.At)
	default:
		it.reason = "paused (" + string(tr.Reason) + ")"
		j.deferred(it, tr.At)
	}
	if it.cur != "" {
		// A redirect hop, maybe to another host than the one the
		// scheduler asks about: wait for the hop's host (for a free
		// slot, which has no known time, a little: not a busy loop).
		j.sched.retry(it, maxTime(tr.At, time.Now().Add(hopWait)))
	} else {
		j.sched.retry(it, time.Now())
	}
}

// outcomeOf maps the Transport's reading of an attempt to a result's outcome.
func outcomeOf(o polite.Outcome) string {
	switch o {
	case polite.OK:
		return OK
	case polite.Blocked:
		return Blocked
	case polite.Throttled:
		return Throttled
	}
	return HTTPError
}

// worthRetry reports whether an attempt with this outcome is one polite
// retries.
func worthRetry(o polite.Outcome) bool {
	switch o {
	case polite.Throttled, polite.Overloaded, polite.ServerError, polite.NetworkError:
		return true
	}
	return false
}

// failed handles a fetch that got no response.
func (j *Job) failed(ctx context.Context, it *item, err error, tr polite.Tried) {
	var pe *polite.PausedError
	var be *polite.BlockedError
	switch {
	case errors.As(err, &pe) && pe.Host != j.budgetOf(it.host):
		// A redirect hop's host is paused, not the URL's: kept as the
		// URL's host's, the pause finished that host's every URL unsent
		// on the next run.
		j.finishErr(it, Throttled, 0, fmt.Sprintf("throttled: its redirect to %s was not followed: host %s paused until %s (%s), beyond --max-retry-after",
			it.cur, pe.Host, pe.Until.UTC().Format(time.RFC3339), pe.Reason))
	case errors.As(err, &pe):
		j.finishErr(it, Throttled, 0, pausedMsg(pe.Until, pe.Reason))
		j.persistPause(it.host, pe.Until, pe.Reason)
	case errors.Is(err, polite.ErrNotPublic):
		// The destination (the URL's, a redirect's, or its robots.txt's)
		// is an address the job may not connect to: retrying cannot help.
		out := NetworkError
		if errors.Is(err, polite.ErrRobotsUnreachable) {
			out = RobotsUnreachable
		}
		j.finishErr(it, out, 0, fmt.Sprintf("destination refused, not a public address (--allow-private lifts this): %v", unwrapPolite(err)))
	case errors.Is(err, polite.ErrRobotsUnreachable):
		// Disallowed for now (issue 17, defect 9): the URL waits for
		// robots.txt to be fetched again, as many times as it may be
		// retried, each wait the backoff's cap (which the robots cache's
		// ErrorTTL must not exceed for each look to see a new fetch; the
		// CLI sees to it).
		it.robotsTries++
		if it.robotsTries <= j.retries(it.host.key) {
			next := time.Now().Add(j.maxDelay())
			it.reason = "robots.txt unreachable"
			j.deferred(it, next)
			j.sched.retry(it, next)
			return
		}
		j.finishErr(it, RobotsUnreachable, 0, fmt.Sprintf("robots.txt unreachable (checked %s): %v", timesN(it.robotsTries), err))
	case errors.As(err, &be):
		// Not the record of the page that served the challenge: this
		// URL was never requested (issue 18, item 2). It waits for the
		// host's probe (see block.go) unless the host is a wall. (A
		// robots.txt fetch the mark refused is ErrRobotsUnreachable,
		// above, and waits as such: taken for this case, its URL went
		// back to the queue at once, again and again for as long as the
		// robots cache kept the failure: a spin.)
		h := it.host
		if be.Host != j.budgetOf(h) {
			// A redirect hop to another host, which blocks this client:
			// its block is that host's, and the hop would be refused
			// again and again (it spun for good).
			j.finishErr(it, Blocked, 0, fmt.Sprintf("blocked: its redirect to %s was not followed: host %s blocks this client (it answered another URL with a %s)",
				it.cur, be.Host, be.Reason))
			return
		}
		if why := h.blk.closed(nextURL(it)); why != "" {
			j.finishErr(it, Blocked, 0, unsent(be.Host, why))
			return
		}
		h.blk.refused(time.Now(), be.Reason)
		it.reason = "host blocked (" + be.Reason + "); waiting for its re-check"
		now := time.Now()
		j.deferred(it, now)
		j.sched.retry(it, now)
	case errors.Is(err, robots.ErrDisallowed):
		j.finishErr(it, RobotsDisallowed, 0, err.Error())
	case context.Cause(ctx) != nil && errors.Is(context.Cause(ctx), context.Canceled):
		// The job is stopping: leave the URL for the next run.
		j.deferred(it, time.Time{})
		j.sched.retry(it, time.Now())
	case !tr.Sent && errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		// The request's --timeout ran out before it was sent: it waited
		// for a robots.txt that trickles in (issue 17, defect 9). The
		// fetch goes on, bounded by the robots cache's own timeout; the
		// URL waits for it again, as many times as it may be retried.
		it.robotsTries++
		if it.robotsTries <= j.retries(it.host.key) {
			it.reason = "waiting for robots.txt"
			now := time.Now()
			j.deferred(it, now)
			j.sched.retry(it, now)
			return
		}
		// The URL itself was never sent (issue 18, item 2).
		j.finishErr(it, RobotsUnreachable, 0, fmt.Sprintf("robots.txt did not arrive within --timeout %v (waited %d times); never requested: %v",
			j.opts.Timeout, it.robotsTries, unwrapPolite(err)))
	case tr.Sent && tr.Outcome == polite.Overloaded:
		// No answer within --timeout: retried like any timeout.
		if !j.again(it, tr, "timeout") {
			j.finishErr(it, Timeout, 0, fmt.Sprintf("timeout: no response within --timeout %v (after %s)", j.opts.Timeout, attemptsN(it.attempts)))
		}
	case tr.Sent:
		if !j.again(it, tr, "network error") {
			j.finishErr(it, NetworkError, 0, fmt.Sprintf("%v (after %s)", namedEMFILE(unwrapPolite(err)), attemptsN(it.attempts)))
		}
	default:
		j.finishErr(it, NetworkError, 0, namedEMFILE(unwrapPolite(err)).Error())
	}
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
		Error: msg, Started: started.UTC(), Finished: now, LatencyMS: ms(it.latency)}, nil)
}

// finish hands a finished URL to the committer and the scheduler.
func (j *Job) finish(it *item, res *Result, k *kept) {
	res.Depth, res.FoundOn = it.depth, it.foundOn
	if it.kind == KindSitemap {
		res.Kind = "sitemap"
	}
	fd := it.found
	it.found = nil
	if fd != nil {
		j.sched.finds() // before done: the job is not over until they are added
	}
	j.logDone(it, res)
	hops := it.hopsKept
	it.hopsKept = nil
	n := k.size()
	for _, h := range hops {
		n += h.size()
		j.hopBytes.Add(-h.size()) // now in the backlog
	}
	if n > 0 {
		j.backlog.acquire(n) // back-pressure: the committer is behind
	}
	fn := fd.size()
	if fn > 0 {
		// Links wait for the committer within their own bound: a crawl
		// that meets thousands of sitemaps at once (a million-page site's
		// first seconds) would otherwise hold them all.
		j.foundBacklog.acquire(fn)
	}
	j.commits <- commitMsg{it: it, res: res, kept: k, hops: hops, size: n, found: fd, foundSize: fn}
	j.mu.Lock()
	if j.stats.Statuses == nil {
		j.stats.Statuses = map[int]int{}
	}
	j.stats.Statuses[res.Status]++
	j.stats.Bytes += res.Bytes
	j.mu.Unlock()
	if it.host != nil {
		it.host.stats.done.Add(1)
		if res.Failed() {
			it.host.stats.failed.Add(1)
		}
		j.sched.done(it)
	}
}

// Bytes returns the body bytes kept so far by this run (Summary.Stats.Bytes
// at its end), for metrics.
func (j *Job) Bytes() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.stats.Bytes
}

// deferred records a URL put off until notBefore.
func (j *Job) deferred(it *item, notBefore time.Time) {
	j.logDeferred(it, notBefore)
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

// readBody reads up to MaxBody bytes of resp's body and closes it, and
// returns them with their sha256.
func (j *Job) readBody(resp *http.Response) (body []byte, sum [32]byte, truncated bool, err error) {
	defer resp.Body.Close()
	body, err = readUpTo(resp.Body, resp.ContentLength, j.opts.MaxBody)
	if err == nil && int64(len(body)) == j.opts.MaxBody {
		var one [1]byte
		if n, _ := io.ReadFull(resp.Body, one[:]); n > 0 {
			truncated = true
		}
	}
	if len(body) > 0 {
		sum = sha256.Sum256(body)
	}
	return body, sum, truncated, err
}

// readUpTo reads r to its end, or to limit bytes. With the length the
// response announced (0 ≤ n ≤ limit) it reads into one buffer of that size, which
// stays its size: a bytes.Buffer would regrow it for its last read, to
// twice and more (issue 17, defect 3: 18 KB allocated per 1 KB page).
func readUpTo(r io.Reader, n, limit int64) ([]byte, error) {
	if n < 0 || n > limit {
		return readCapped(r, n, limit)
	}
	if n == 0 {
		return nil, nil
	}
	body := make([]byte, n)
	k, err := io.ReadFull(r, body)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF // shorter than announced, as net/http says
	}
	if k == 0 {
		return nil, err
	}
	return body[:k], err
}

// hexSum is a body's sha256 as results.jsonl has it: "" for no body.
func hexSum(body []byte, sum [32]byte) string {
	if len(body) == 0 {
		return ""
	}
	var b [2 * sha256.Size]byte
	hex.Encode(b[:], sum[:])
	return string(b[:]) // one allocation, where EncodeToString made two
}

// attemptsN says n attempts in English: "1 attempt", "3 attempts".
func attemptsN(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}

// timesN says n times in English: "once", "2 times".
func timesN(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}
