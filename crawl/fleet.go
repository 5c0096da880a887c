package crawl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polite-go/polite/crawl/scope"
)

// Fleet mode (issue 31). With Options.Frontier set, a job's URLs are not
// the list loaded into its state.db but the URLs it leases from a frontier
// shared by a fleet of workers (redisstore.Frontier): each worker leases a
// few URLs at a time from hosts that are due, fetches them through its
// Transport (whose Store shares each host's budget with the fleet), and
// commits each result back with the lease's fencing token. The frontier
// takes a result only while the token is current, so every URL ends with
// exactly one committed result, whatever becomes of the workers: a lease
// that a killed or stalled worker left to expire is handed to another
// worker with a new token, and the first worker's late result is refused.
//
// The worker's own directory stays a job as before: every leased URL is a
// row of its state.db (with the lease, in the leases table), and what it
// fetches goes to its results.jsonl and WARC files under the same
// durability rules. A result is sent to the frontier only after it is
// committed there, so a worker killed at any instant has either not
// fetched a URL, or holds its result: reopened, it sends the results the
// frontier did not take yet (still current, they commit; else refused),
// and gives back the leases of URLs it had not finished. The fleet's
// merged view (which worker's record is each URL's result) is the
// frontier's; a worker's results.jsonl may also hold results the frontier
// refused (see Summary.Fleet).

// Frontier is a crawl's work queue shared by a fleet of workers. Every
// method is safe to call again after an error (each call is idempotent on
// the frontier's side), and each is bounded in time by its implementation.
type Frontier interface {
	// Lease hands out up to max URLs from hosts that are due, none from
	// the hosts in skip (those this worker holds enough of).
	Lease(ctx context.Context, max int, skip []string) ([]Leased, error)
	// Extend renews leases; lost[i] says the i-th is no longer this
	// worker's (it expired and went to another, or was committed).
	Extend(ctx context.Context, ls []Leased) (lost []bool, err error)
	// Commit records results; accepted[i] false says the i-th lease was
	// no longer current, and its result is not the URL's.
	Commit(ctx context.Context, cs []Committed) (accepted []bool, err error)
	// Release gives back leased URLs unfinished, due again at notBefore.
	Release(ctx context.Context, ls []Leased, notBefore time.Time) error
	// Finished reports whether no URL is pending and no lease is out.
	Finished(ctx context.Context) (bool, error)
	// DeferHost holds host's URLs back from every worker until until.
	DeferHost(ctx context.Context, host string, until time.Time) error
}

// An InteractiveFrontier says whether its crawl has had an interactive
// URL (LaneInteractive) at all. Until it has, a worker that holds enough
// of a host asks for the host's interactive URLs when it asks for any
// (FleetPoll), not every interactivePoll: ten lease calls a second per
// worker, most of a fleet's calls to the frontier, for URLs that never
// come. A Frontier without the method is asked often.
type InteractiveFrontier interface {
	Frontier
	Interactive() bool
}

// Leased is a URL leased from a Frontier.
type Leased struct {
	URL     string
	Host    string // the URL's host key, as Line.Host
	Lane    Lane   // its lane: the worker's queue of the host orders by it too
	Token   int64  // the lease's fencing token
	Leases  int    // how many times the URL was leased, this one included
	Expires time.Time
	// Depth, FoundOn and Kind are a found URL's (Options.Follow): links
	// followed from a listed URL to it, the page that named it, and
	// whether it is a sitemap.
	Depth   int
	FoundOn string
	Kind    Kind
	Hops    int // redirects in a row that led to it (see foundLink)
}

// A LinkFrontier is a Frontier a fleet's crawl (Options.Follow) adds the
// links its workers find to, and keeps the scope's roots in, so that a
// worker that joins without the list crawls the same scope.
type LinkFrontier interface {
	Frontier
	// Enqueue adds URLs found, each once: one the frontier has (queued,
	// leased, done) is left as it is. It is safe to repeat.
	Enqueue(ctx context.Context, found []Found) error
	// AddRoots adds the scope's roots (scope.Scope.Roots); Roots returns
	// them all.
	AddRoots(ctx context.Context, roots []string) error
	Roots(ctx context.Context) ([]string, error)
}

// Found is a URL a fleet worker found, for its frontier.
type Found struct {
	URL, Host string
	Lane      Lane
	Depth     int
	FoundOn   string
	Kind      Kind
	Hops      int
}

// Committed is a URL's result sent to the frontier under its lease.
type Committed struct {
	Leased
	Outcome string
	Record  []byte // its results.jsonl line, without the newline
}

// FleetSummary is what a fleet worker's run came to, beyond its own results.
type FleetSummary struct {
	Leased   int // URLs leased
	Accepted int // results the frontier took
	Late     int // results it refused: their lease had gone to another worker
	Released int // URLs given back unfinished (the run stopped)
	Lost     int // leases lost before their URL was sent (not sent)
}

// Defaults of fleet mode.
const (
	DefaultLeaseRenew = 10 * time.Second
	DefaultFleetPoll  = 250 * time.Millisecond
	// fleetHostAhead is how many of a host's URLs a worker holds queued
	// (besides those in flight) before it asks for no more of them: the
	// rest stay in the frontier, for any worker, and behind none of this
	// worker's (a URL of a higher lane enqueued later waits only for these).
	fleetHostAhead = 1
	// interactivePoll is how often at most a worker holding hosts' URLs
	// asks for their interactive ones (see Frontier.Lease's skip), once
	// the fleet has had one (InteractiveFrontier).
	interactivePoll = 100 * time.Millisecond
	// fleetHandBack is the shortest pause of a host (Retry-After, a
	// breaker, a block) for which a worker gives its queued URLs back to
	// the frontier and holds the host back there: the fleet's other
	// workers then spend their leases on hosts that can be sent to.
	fleetHandBack = 2 * time.Second
	// ackBatch bounds the results sent in one Commit call.
	ackBatch = 256
	// fleetCallTimeout bounds one call to the frontier.
	fleetCallTimeout = 10 * time.Second
	// fleetAckGiveUp bounds how long a run goes on while the frontier
	// takes none of its results.
	fleetAckGiveUp = 2 * time.Minute
	// fleetDrain bounds how long a stopping run waits for the frontier to
	// take its last results (they are sent again by the next run).
	fleetDrain = 10 * time.Second
)

// fleet is a worker's side of the frontier during a Run.
type fleet struct {
	fr Frontier

	mu   sync.Mutex
	out  map[int64]*item // leased, not finished here yet
	pend []pendingAck    // finished and committed here, not yet taken by the frontier
	wake chan struct{}   // pend gained results, or the run stops
	stop bool
	err  error // why the acker stopped the run
	// rootsAt is when the scope's roots were last read (Options.Follow).
	rootsAt time.Time

	leased, accepted, late, released, lost atomic.Int64
}

// pendingAck is a result committed here that the frontier has not taken.
type pendingAck struct {
	id int64
	c  Committed
}

// leaseOf is the lease an item of a fleet run holds.
type leaseOf struct {
	cur  atomic.Pointer[Leased] // the lease: the frontier may lease the URL here again, with a new token
	lost atomic.Bool
}

func newLeaseOf(l Leased) *leaseOf {
	o := &leaseOf{}
	o.cur.Store(&l)
	return o
}

// get returns the lease in force.
func (o *leaseOf) get() Leased { return *o.cur.Load() }

func newFleet(fr Frontier) *fleet {
	return &fleet{fr: fr, out: map[int64]*item{}, wake: make(chan struct{}, 1)}
}

func (f *fleet) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// queue adds results committed here for the frontier.
func (f *fleet) queue(acks []pendingAck) {
	if len(acks) == 0 {
		return
	}
	f.mu.Lock()
	for _, a := range acks {
		delete(f.out, a.id)
	}
	f.pend = append(f.pend, acks...)
	f.mu.Unlock()
	f.poke()
}

// idle reports whether nothing is leased here nor waiting for the frontier.
func (f *fleet) idle() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.out) == 0 && len(f.pend) == 0
}

// fleetResume settles what an earlier run of this worker left: the results
// it committed here that the frontier did not take are sent (below, by the
// acker), and URLs it leased but did not finish are given back and
// forgotten here (the frontier hands them out again, maybe to this worker).
func (j *Job) fleetResume(ctx context.Context) error {
	acks, unfinished, err := j.st.unacked(j.opts.FrontierID)
	if err != nil {
		return fmt.Errorf("crawl: reading state: %w", err)
	}
	if len(unfinished) > 0 {
		ls := make([]Leased, len(unfinished))
		ids := make([]int64, len(unfinished))
		for i, u := range unfinished {
			ls[i], ids[i] = u.c.Leased, u.id
		}
		cctx, cancel := context.WithTimeout(ctx, fleetCallTimeout)
		err := j.opts.Frontier.Release(cctx, ls, time.Now())
		cancel()
		if err != nil {
			// They come back when their leases expire.
			j.logError("giving back an earlier run's leases", err)
		}
		if err := j.st.forget(ids); err != nil {
			return fmt.Errorf("crawl: writing state: %w", err)
		}
	}
	j.fl.pend = append(j.fl.pend, acks...)
	return nil
}

// feedFleet leases URLs for the scheduler until it stops, or until the
// frontier is finished and this worker holds nothing.
func (j *Job) feedFleet(ctx context.Context) error {
	s := j.sched
	ahead := j.opts.LeaseAhead
	poll := j.opts.FleetPoll
	idleFor := time.Duration(0)
	for {
		s.mu.Lock()
		for !s.stopping && len(s.handBack) == 0 && (s.loaded >= ahead || len(s.hosts) >= s.maxHosts) {
			s.feedCond.Wait()
		}
		if s.stopping {
			s.mu.Unlock()
			return nil
		}
		if len(s.handBack) > 0 {
			hs := s.handBack
			s.handBack = nil
			s.mu.Unlock()
			j.handBack(ctx, hs)
			continue
		}
		n := ahead - s.loaded
		var skip []string
		for k, h := range s.hosts {
			if h.queued()+h.delayed >= fleetHostAhead {
				skip = append(skip, k)
			}
		}
		s.mu.Unlock()

		cctx, cancel := context.WithTimeout(ctx, fleetCallTimeout)
		ls, err := j.fl.fr.Lease(cctx, n, skip)
		cancel()
		j.fleetRoots(ctx, false)
		if err != nil {
			j.logError("leasing URLs", err)
		}
		if len(ls) == 0 {
			if err == nil && j.fl.idle() && s.loadedNow() == 0 {
				cctx, cancel := context.WithTimeout(ctx, fleetCallTimeout)
				fin, err := j.fl.fr.Finished(cctx)
				cancel()
				if err == nil && fin {
					s.mu.Lock()
					s.hostsOut = true
					s.stopIfDone()
					s.mu.Unlock()
					return nil
				}
			}
			// Nothing due now: look again when a URL goes out or ends
			// (a host may take more), or soon, a little later each time
			// while nothing comes (bounded by poll).
			idleFor = emptyWait(idleFor, poll, len(skip) > 0, j.fl.interactive)
			if !s.waitFeed(idleFor) {
				return nil
			}
			continue
		}
		idleFor = 0
		if err := j.takeLeased(ls); err != nil {
			return err
		}
		if len(ls) < n {
			// Fewer than asked for: the frontier has no more due for this
			// worker now. Asking again at once found nothing, one lease
			// call in seven (four workers on one host).
			idleFor = poll / 8
			if !s.waitFeed(idleFor) {
				return nil
			}
		}
	}
}

// takeLeased records leased URLs in state.db and hands them to the
// scheduler. A URL this worker finished before (its result was refused or
// not taken, and the frontier leased it here again) is not fetched again:
// its result goes to the frontier under the new lease.
func (j *Job) takeLeased(ls []Leased) error {
	rows, again, err := j.st.addLeased(ls)
	if err != nil {
		// Not recorded here: give them back rather than fetch what a
		// crash could not account for.
		cctx, cancel := context.WithTimeout(context.Background(), fleetCallTimeout)
		if rerr := j.fl.fr.Release(cctx, ls, time.Now()); rerr != nil {
			j.logError("giving back leases", rerr)
		}
		cancel()
		return fmt.Errorf("crawl: recording leased URLs in %s: %w", StateFile, err)
	}
	j.fl.leased.Add(int64(len(ls)))
	j.fl.queue(again)
	if len(rows) == 0 {
		return nil
	}
	j.scopeLeased(ls)
	s := j.sched
	now := time.Now()
	added := 0
	j.fl.mu.Lock()
	s.mu.Lock()
	for _, r := range rows {
		if it := j.fl.out[r.id]; it != nil {
			// Leased here again (the lease expired under this worker
			// while it held the URL: a stall, an outage): the one item
			// takes the new lease, and no second item is made.
			it.lease.cur.Store(&r.lease)
			it.lease.lost.Store(false)
			continue
		}
		h := s.hosts[r.host]
		if h == nil {
			if h = s.gone.revive(r.host, s.goneByKey); h == nil {
				h = &host{key: r.host}
			}
			s.hosts[r.host] = h
		}
		it := &item{id: r.id, url: r.url, host: h, attempts: r.attempts, started: r.started, reason: r.reason, lease: newLeaseOf(r.lease), lane: r.lane,
			depth: r.depth, kind: r.kind, foundOn: r.foundOn}
		h.hold(it)
		s.loaded++
		added++
		j.fl.out[it.id] = it
		s.requeue(it, r.notBefore, false, now)
	}
	s.peakLoaded = max(s.peakLoaded, s.loaded)
	s.mu.Unlock()
	j.fl.mu.Unlock()
	j.mu.Lock()
	j.total += added
	j.mu.Unlock()
	return nil
}

// handBack gives the frontier back the queued URLs of hosts a pause holds
// (while it holds them: a host awake again keeps its URLs), due when the
// pause ends, and holds each host back there until then.
func (j *Job) handBack(ctx context.Context, hs []*host) {
	s := j.sched
	now := time.Now()
	type back struct {
		host  string
		until time.Time
		its   []*item
	}
	var backs []back
	s.mu.Lock()
	for _, h := range hs {
		h.handBack = false
		if h.state != hostWaiting || !h.asleep || h.wakeAt.Sub(now) < fleetHandBack/2 || h.gaveUp.Load() != nil {
			continue
		}
		b := back{host: h.key, until: h.wakeAt}
		// URLs never sent go back; one already tried stays, its
		// attempts counted here (and bounded by the job's retries).
		var kept []*item
		for h.queued() > 0 {
			it := h.pop()
			if it.attempts > 0 || it.lease == nil {
				kept = append(kept, it)
				continue
			}
			s.queued--
			h.loaded--
			h.lanes[it.lane].loaded--
			s.loaded--
			b.its = append(b.its, it)
		}
		for _, it := range kept {
			h.push(it, false)
		}
		s.letGo(h, now)
		backs = append(backs, b)
	}
	s.mu.Unlock()
	for _, b := range backs {
		cctx, cancel := context.WithTimeout(ctx, fleetCallTimeout)
		if err := j.fl.fr.DeferHost(cctx, b.host, b.until); err != nil {
			j.logError("holding back a paused host in the frontier", err)
		}
		cancel()
		if len(b.its) == 0 {
			continue
		}
		ls := make([]Leased, len(b.its))
		ids := make([]int64, len(b.its))
		for i, it := range b.its {
			ls[i], ids[i] = it.lease.get(), it.id
		}
		cctx, cancel = context.WithTimeout(ctx, fleetCallTimeout)
		err := j.fl.fr.Release(cctx, ls, b.until)
		cancel()
		if err != nil {
			// Not given back: they come back when their leases expire.
			j.logError("giving back a paused host's URLs", err)
		}
		j.fl.mu.Lock()
		for _, id := range ids {
			delete(j.fl.out, id)
		}
		j.fl.mu.Unlock()
		j.fl.released.Add(int64(len(ls)))
		if err := j.st.forget(ids); err != nil {
			j.logError("forgetting given-back URLs", err)
		}
		j.mu.Lock()
		j.total -= len(ls)
		j.mu.Unlock()
	}
	s.mu.Lock()
	s.wakeFeed()
	s.mu.Unlock()
}

// extender renews the leases this worker holds every LeaseRenew until ctx
// ends; a lease found lost marks its URL, which is then not sent (see
// dropLost).
func (j *Job) extender(ctx context.Context) {
	tk := time.NewTicker(j.opts.LeaseRenew)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
		j.fl.mu.Lock()
		ls := make([]Leased, 0, len(j.fl.out)+len(j.fl.pend))
		var of []*leaseOf
		for _, it := range j.fl.out {
			ls = append(ls, it.lease.get())
			of = append(of, it.lease)
		}
		for _, p := range j.fl.pend {
			ls = append(ls, p.c.Leased)
			of = append(of, nil)
		}
		j.fl.mu.Unlock()
		if len(ls) == 0 {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, fleetCallTimeout)
		lost, err := j.fl.fr.Extend(cctx, ls)
		cancel()
		if err != nil {
			j.logError("renewing leases", err)
			continue
		}
		for i, l := range lost {
			if l && i < len(of) && of[i] != nil {
				of[i].lost.Store(true)
			}
		}
	}
}

// dropLost forgets a URL whose lease went to another worker before this one
// sent it: the other worker fetches it.
func (j *Job) dropLost(it *item) {
	j.fl.lost.Add(1)
	j.fl.mu.Lock()
	delete(j.fl.out, it.id)
	j.fl.mu.Unlock()
	if err := j.st.forget([]int64{it.id}); err != nil {
		j.logError("forgetting a lost lease", err)
	}
	j.mu.Lock()
	j.total--
	j.mu.Unlock()
	j.sched.done(it)
}

// acker sends the results committed here to the frontier until the run
// stops and every one is sent, or, once stopping, fleetDrain has passed
// (those left are sent by the next run).
func (j *Job) acker(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	var deadline, failing time.Time
	backoff := time.Duration(0)
	for {
		j.fl.mu.Lock()
		batch := append([]pendingAck(nil), j.fl.pend[:min(len(j.fl.pend), ackBatch)]...)
		stop := j.fl.stop
		j.fl.mu.Unlock()
		if stop && deadline.IsZero() {
			deadline = time.Now().Add(j.drain)
		}
		if len(batch) == 0 {
			if stop {
				return
			}
			select {
			case <-j.fl.wake:
			case <-ctx.Done():
				return
			}
			continue
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return
		}
		cs := make([]Committed, len(batch))
		for i, p := range batch {
			cs[i] = p.c
		}
		// The links they found go first: once a result is taken, no
		// other worker fetches its page again to find them.
		err := j.sendFound(ctx)
		var acc []bool
		if err == nil {
			cctx, cancel := context.WithTimeout(ctx, fleetCallTimeout)
			acc, err = j.fl.fr.Commit(cctx, cs)
			cancel()
		}
		if err == nil && len(acc) != len(cs) {
			err = fmt.Errorf("the frontier answered %d of %d results", len(acc), len(cs))
		}
		if err != nil {
			j.logError("sending results to the frontier", err)
			if stop {
				return // the next run sends them: they are committed here
			}
			if failing.IsZero() {
				failing = time.Now()
			}
			if time.Since(failing) > fleetAckGiveUp {
				// Every wait is bounded: a frontier that takes no result
				// (its Redis gone, or refusing the writes) ends the run;
				// the results are committed here, and the next run sends
				// them. Meanwhile their leases are renewed, so no other
				// worker fetches them again.
				j.fl.mu.Lock()
				j.fl.err = fmt.Errorf("crawl: the fleet's frontier took no result for %v: %w (the results are kept in %s; running again sends them)",
					fleetAckGiveUp, err, StateFile)
				j.fl.mu.Unlock()
				j.fatal()
				return
			}
			backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
			select {
			case <-time.After(backoff):
			case <-j.fl.wake: // the run stops: the drain's deadline decides
			case <-ctx.Done():
				return
			}
			continue
		}
		backoff, failing = 0, time.Time{}
		var ok, late []int64
		for i, a := range acc {
			if a {
				ok = append(ok, batch[i].id)
			} else {
				late = append(late, batch[i].id)
			}
		}
		if err := j.st.acked(batch, acc); err != nil {
			j.logError("recording results the frontier took", err)
		}
		j.fl.accepted.Add(int64(len(ok)))
		j.fl.late.Add(int64(len(late)))
		j.fl.mu.Lock()
		j.fl.pend = j.fl.pend[len(batch):]
		j.fl.mu.Unlock()
	}
}

// releaseUnfinished gives back, as a run ends, the leased URLs it did not
// finish, and forgets them here.
func (j *Job) releaseUnfinished() {
	j.fl.mu.Lock()
	var ls []Leased
	var ids []int64
	for id, it := range j.fl.out {
		ls = append(ls, it.lease.get())
		ids = append(ids, id)
	}
	clear(j.fl.out)
	j.fl.mu.Unlock()
	if len(ls) == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(context.Background(), fleetCallTimeout)
	err := j.fl.fr.Release(cctx, ls, time.Now())
	cancel()
	if err != nil {
		j.logError("giving back unfinished leases", err)
	} else {
		j.fl.released.Add(int64(len(ls)))
	}
	if err := j.st.forget(ids); err != nil {
		j.logError("forgetting unfinished leases", err)
	}
}

// fleetAcks picks the results of a committed batch that the frontier is to
// take.
func fleetAcks(batch []commitMsg, finished []done) []pendingAck {
	var acks []pendingAck
	k := 0
	for _, m := range batch {
		if m.it == nil || m.res == nil {
			continue
		}
		d := finished[k]
		k++
		if m.it.lease == nil {
			continue
		}
		line := []byte(strings.TrimSuffix(d.line, "\n"))
		acks = append(acks, pendingAck{id: d.id, c: Committed{Leased: m.it.lease.get(), Outcome: d.outcome, Record: line}})
	}
	return acks
}

// loadedNow returns the URLs in memory not done.
func (s *sched) loadedNow() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loaded
}

// waitFeed waits until d has passed, something changed what the
// frontier would lease (wakeFeed: a URL handed out, a host let go or given
// back, the last URL done), or the scheduler stops; it reports whether the
// scheduler is still running. A URL's end alone does not end the wait: it
// makes room, and a lease that found nothing had room already (four
// workers on one host asked the frontier 6.6 times a URL).
func (s *sched) waitFeed(d time.Duration) bool {
	fired := false
	t := time.AfterFunc(d, func() {
		s.mu.Lock()
		fired = true
		s.feedCond.Broadcast()
		s.mu.Unlock()
	})
	defer t.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	gen := s.feedGen
	for !s.stopping && !fired && s.feedGen == gen {
		s.feedCond.Wait()
	}
	return !s.stopping
}

// emptyWait is how long the feeder waits after a lease that got nothing,
// its wait before prev: twice that, from poll/8 up to poll. While it
// holds a host's URLs (so that it asked for none of that host's bulk
// ones) and the fleet may have interactive URLs (asked only then), at
// most interactivePoll: an interactive URL of a held host may come at any
// time.
func emptyWait(prev, poll time.Duration, holding bool, interactive func() bool) time.Duration {
	d := min(max(prev*2, poll/8), poll)
	if holding && interactive() {
		d = min(d, interactivePoll)
	}
	return d
}

// interactive says whether the fleet may have interactive URLs (see
// InteractiveFrontier).
func (f *fleet) interactive() bool {
	i, ok := f.fr.(InteractiveFrontier)
	return !ok || i.Interactive()
}

func (f *fleet) summary() *FleetSummary {
	return &FleetSummary{Leased: int(f.leased.Load()), Accepted: int(f.accepted.Load()), Late: int(f.late.Load()),
		Released: int(f.released.Load()), Lost: int(f.lost.Load())}
}

// scopeLeased keeps the scope up with what the frontier hands out
// (Options.Follow): a listed URL is a seed, its root the fleet's already;
// a found URL out of the scope known here means roots this worker has not
// read yet (a list enqueued since): read them now.
func (j *Job) scopeLeased(ls []Leased) {
	if j.opts.Follow == nil {
		return
	}
	stale := false
	for _, l := range ls {
		if l.Depth == 0 && l.FoundOn == "" && l.Kind == KindPage {
			j.scope.AddSeed(l.URL) // a URL that does not parse finds no links
			continue
		}
		if _, why := j.scope.Check(l.URL, -1); why == scope.OffScope {
			stale = true
		}
	}
	if stale {
		j.fl.rootsAt = time.Time{}
		j.fleetRoots(context.Background(), false)
	}
}

// rootsEvery is how often a fleet worker that follows links reads the
// scope's roots again: a list enqueued after it joined brings more.
const rootsEvery = 10 * time.Second

// fleetRoots reads the scope's roots from the frontier (Options.Follow),
// at the start (first: an error is the run's) and every rootsEvery.
func (j *Job) fleetRoots(ctx context.Context, first bool) error {
	if j.opts.Follow == nil {
		return nil
	}
	lf, ok := j.opts.Frontier.(LinkFrontier)
	if !ok {
		return errors.New("crawl: Options.Follow with a Frontier that takes no links found (not a LinkFrontier)")
	}
	if !first && time.Since(j.fl.rootsAt) < rootsEvery {
		return nil
	}
	j.fl.rootsAt = time.Now()
	cctx, cancel := context.WithTimeout(ctx, fleetCallTimeout)
	roots, err := lf.Roots(cctx)
	cancel()
	if err == nil {
		for _, r := range roots {
			if err = j.scope.AddRoot(r); err != nil {
				err = fmt.Errorf("the frontier's root %q: %w", cutTo(r, maxNamed), err)
				break
			}
		}
	}
	if err != nil {
		if first {
			return fmt.Errorf("crawl: reading the scope's roots from the frontier: %w", err)
		}
		j.logError("reading the scope's roots from the frontier", err)
	}
	return nil
}

// sendFound sends the links found here to the fleet's frontier (the
// outbox: committed here with the results that found them), before those
// results: a worker killed after its result is taken has sent its links.
func (j *Job) sendFound(ctx context.Context) error {
	lf, ok := j.opts.Frontier.(LinkFrontier)
	if !ok || j.opts.Follow == nil {
		return nil
	}
	for {
		rows, err := j.st.db.QueryContext(ctx, `SELECT rowid, url, host, lane, depth, found_on, kind, hops FROM outbox ORDER BY rowid LIMIT 1000`)
		if err != nil {
			return err
		}
		var fs []Found
		var last int64
		for rows.Next() {
			var f Found
			if err := rows.Scan(&last, &f.URL, &f.Host, &f.Lane, &f.Depth, &f.FoundOn, &f.Kind, &f.Hops); err != nil {
				rows.Close()
				return err
			}
			fs = append(fs, f)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(fs) == 0 {
			return nil
		}
		cctx, cancel := context.WithTimeout(ctx, fleetCallTimeout)
		err = lf.Enqueue(cctx, fs)
		cancel()
		if err != nil {
			return fmt.Errorf("sending links found to the frontier: %w", err)
		}
		if _, err := j.st.db.ExecContext(ctx, `DELETE FROM outbox WHERE rowid <= ?`, last); err != nil {
			return err
		}
	}
}
