package crawl

import (
	"container/heap"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polite-go/polite"
)

// item is one URL of the job while it is not done.
type item struct {
	id       int64
	url      string
	host     *host
	attempts int       // requests sent so far, over every run
	started  time.Time // the first attempt; zero before it
	reason   string    // why it last waited
	// robotsTries counts the times robots.txt was unreachable for it, or
	// its fetch outlasted the URL's timeout (this run): it waits for
	// robots.txt again while it may be retried.
	robotsTries int
	// prev is why the next attempt is a retry: the last failed outcome
	// (this run; OK when not known), for the Transport's events.
	prev polite.Outcome
	// cur is the URL the next request goes to when redirects are being
	// followed ("" for url itself), hops the redirect targets so far
	// (this run).
	cur  string
	hops []string
	hop  bool // the next request is a redirect hop, not a new attempt
	// asGet: a redirect turned the job's method into a GET without body.
	asGet bool
	// notFollowed is a redirect's target left alone (Options.SameHost, or
	// refused: then refused is why).
	notFollowed, refused string
	// hopsKept are the redirects followed, for the WARC files (keepHop).
	hopsKept []*kept
	// latency is the last request's, for its result.
	latency time.Duration
	// lease is the frontier's lease on it (fleet mode; see fleet.go).
	lease *leaseOf
	// resv is the admission its host reserved for it (handOut; see
	// Options.ReserveAhead), spent or given back by fetch.
	resv *polite.Reservation
	// lane is its priority within its host (see Lane).
	lane Lane
	// held are the spells its host held it back, URL in hand, before the
	// scheduler handed it out (see host.heldBack), for events.jsonl.
	held []heldSpell
	// Discovery (--follow): links followed from a listed URL to it, what
	// it is, the page that named it (its URL), and what its answer named
	// (on its way to the committer with its result).
	depth   int
	kind    Kind
	foundOn string
	found   *found
	// prev is what the job of Options.Since kept of its answer, when its
	// request carried that answer's validators (since.go).
	since prevAnswer
}

// heldSpell is a time a host had a URL to send and the Transport would not
// have it sent yet, for one reason: its rate, its in-flight cap, a pause,
// an open breaker. The politeness cost users read in the report.
type heldSpell struct {
	from time.Time
	d    time.Duration
	why  polite.Reason
}

// hostState says where a host is in the scheduler.
type hostState uint8

const (
	hostIdle    hostState = iota // in no list: nothing to send, or at its cap
	hostReady                    // in the ready list
	hostWaiting                  // in the timer heap until wakeAt
)

// host is the scheduler's view of one destination: its queues of URLs, one
// per lane, and its requests in flight. Whether the host may send is the
// Transport's to say (Transport.Ready). The fields under "guarded by sched.mu" are the
// scheduler's; the rest are safe for concurrent use.
type host struct {
	key string
	// budget is the key of the Transport's budget the host is under (its
	// key, or with --key domain|ip the domain's or address's), once known
	// and stable (see Job.budgetKey).
	budget atomic.Pointer[string]

	// guarded by sched.mu
	lanes    [numLanes]laneQueue
	turn     uint8 // the host's place in laneTurns
	delayed  int   // URLs of this host in the timer heap
	inflight int
	state    hostState
	wakeAt   time.Time
	asleep   bool // in the timer heap for a pause or breaker, not its rate
	// heldSince is since when the host has been held back with a URL to
	// send (zero while not), for heldWhy; spells the spells of this hold
	// already ended for another reason (see heldBack).
	heldSince time.Time
	heldWhy   polite.Reason
	spells    []heldSpell
	// Streaming from state.db (issue 17, defect 3): loaded counts the URLs
	// of the host in memory and not done (queued, delayed, in flight);
	// refill says the feeder has the host in hand. Each lane keeps its own
	// counts and cursor (laneQueue).
	loaded int
	refill bool

	// handBack: the host is in sched.handBack (fleet mode).
	handBack bool
	// resv is the admission reserved for the host's next URL
	// (Options.ReserveAhead): handOut gives it to the URL it hands out.
	resv *polite.Reservation
	// goneAt is the host's place in sched.gone, from 1; 0 when not there.
	goneAt int

	// pausedUntil is a pause beyond MaxRetryAfter recorded by an earlier
	// run (the hosts table), and pauseWhy its reason; set before Run
	// starts fetching, read-only afterwards.
	pausedUntil time.Time
	pauseWhy    polite.Reason

	// gaveUp, once set, finishes every URL of the host still waiting
	// (issue 17, defect 1): the host named a pause beyond MaxRetryAfter, or
	// its breaker did not close within HostGiveUp.
	gaveUp atomic.Pointer[givenUp]
	// persisted is the pause end last written to the hosts table (unix ms).
	persisted atomic.Int64
	// pauseSeen is the latest pause end seen (unix ns), paused the time
	// the host's pauses covered this run (ns; see notePause).
	pauseSeen, paused atomic.Int64
	// failing is since when (unix ns) the host has been failing (its
	// breaker not closed, or the breaker's threshold of failures in a
	// row), 0 while it is not; lastFail what its last failed attempt came
	// to. streak is the host's failures in a row, one wave counted once,
	// and failHeard when the last of them was heard (unix ns; see
	// failedAgain).
	failing   atomic.Int64
	lastFail  atomic.Pointer[givenUp]
	streak    atomic.Int32
	failHeard atomic.Int64
	// blk is what the job heard of the host's soft blocks (see block.go).
	blk blockState
	// rateLogged: the host's starting rate is in events.jsonl (this run).
	rateLogged atomic.Bool
	// sent: a request of the host went out (this run), its robots.txt
	// read first; from then on a fleet's scheduler reserves (Job.reserve).
	sent atomic.Bool
	// sitemaps: the sitemaps of the host's robots.txt were taken (this
	// run; Follow.Sitemaps).
	sitemaps atomic.Bool

	stats hostStats
}

// givenUp is why a host's remaining URLs are finished unsent.
type givenUp struct {
	outcome string
	msg     string
	until   time.Time // the pause's end, when a pause is why
	why     polite.Reason
}

// laneQueue is one lane of a host: its URLs ready to send, in order, and
// its share of the host's streaming from state.db. Guarded by sched.mu.
type laneQueue struct {
	queue []*item // FIFO: URLs ready to send as soon as the host is
	head  int     // queue[head:] are queued
	// delayed and loaded are the lane's part of the host's counts;
	// unloaded counts its URLs still only in the database, cursor is the
	// id of the last one read.
	delayed  int
	loaded   int
	unloaded int
	cursor   int64
	// found counts the URLs discovery added to the lane since its last
	// read began (foundAdded): a read that comes back short cannot have
	// seen them all.
	found int
}

func (q *laneQueue) queued() int { return len(q.queue) - q.head }

func (q *laneQueue) push(it *item, front bool) {
	if front && q.head > 0 {
		q.head--
		q.queue[q.head] = it
		return
	}
	if front {
		q.queue = append([]*item{it}, q.queue[q.head:]...)
		q.head = 0
		return
	}
	if q.head > 0 && q.head == len(q.queue) {
		q.queue, q.head = q.queue[:0], 0
	}
	q.queue = append(q.queue, it)
}

func (q *laneQueue) pop() *item {
	it := q.queue[q.head]
	q.queue[q.head] = nil
	q.head++
	q.queue, q.head = compact(q.queue, q.head)
	return it
}

// queued returns the URLs of h ready to send, over its lanes.
func (h *host) queued() int {
	n := 0
	for i := range h.lanes {
		n += h.lanes[i].queued()
	}
	return n
}

// push queues it in its lane: at the back, or at the front (a retry, a
// redirect hop).
func (h *host) push(it *item, front bool) { h.lanes[it.lane].push(it, front) }

// pop takes the next URL to send: the head of the lane whose turn it is
// in laneTurns, turns of lanes with nothing queued passed over. h must
// have a URL queued.
func (h *host) pop() *item {
	for range laneTurns {
		l := laneTurns[h.turn]
		h.turn = (h.turn + 1) % uint8(len(laneTurns))
		if h.lanes[l].queued() > 0 {
			return h.lanes[l].pop()
		}
	}
	panic("crawl: pop from a host with nothing queued")
}

// goesNext makes q's URL at i (i >= q.head) the next one pop takes: first
// in its lane, and its lane's turn next.
func (h *host) goesNext(l Lane, i int) {
	q := &h.lanes[l]
	if i > q.head {
		q.queue[q.head], q.queue[i] = q.queue[i], q.queue[q.head]
	}
	for range laneTurns {
		if laneTurns[h.turn] == l {
			return
		}
		h.turn = (h.turn + 1) % uint8(len(laneTurns))
	}
}

// hold counts it, taken in from the database or the frontier, among h's
// URLs in memory.
func (h *host) hold(it *item) {
	h.loaded++
	h.lanes[it.lane].loaded++
}

// unloaded returns how many of h's URLs are still only in the database.
func (h *host) unloaded() int {
	n := 0
	for i := range h.lanes {
		n += h.lanes[i].unloaded
	}
	return n
}

// compact moves q[head:] to the front of q once head is half of it (or all
// of it), and returns the queue and its new head. A queue that refills
// before it empties (a host's, as the feeder tops it up; the ready list,
// with work for every host) would otherwise grow by every element it ever
// held: 80 MB of a 10,000,000-URL job.
func compact[T any](q []*T, head int) ([]*T, int) {
	if head < len(q) && (head < 64 || head*2 < len(q)) {
		return q, head
	}
	n := copy(q, q[head:])
	clear(q[n:])
	return q[:n], 0
}

// sched hands URLs to workers, one host at a time, so that no worker waits
// on a host: a host is handed out only when it has a URL queued and the
// Transport says it is ready (a free in-flight slot, a token, no pause, no
// open breaker). Otherwise it sleeps in the timer heap until it may be
// ready, or, waiting for a slot, until one of its requests ends; URLs put
// off by backoff sleep there too. Workers take hosts round-robin. Two
// workers may take one host's last token between them: the second's Try
// finds no token and the URL comes back (retry), and the host sleeps.
//
// A sched is safe for concurrent use.
type sched struct {
	readyFn func(h *host, now time.Time) (time.Duration, polite.Reason) // Transport.Ready, and pauses of earlier runs
	// giveUpFn, when set, is asked (with mu held) about a host with a
	// URL to hand out, ready (d 0) or not for d: a non-nil answer
	// finishes the host's URLs (they are handed out at once, marked,
	// instead of waiting).
	giveUpFn func(h *host, d time.Duration, why polite.Reason, now time.Time) *givenUp
	wake     chan struct{} // the timer heap's head moved earlier

	// maxHosts bounds the hosts in memory (see feed).
	maxHosts int
	// fleet: URLs come from a frontier (feedFleet), not from state.db;
	// handBack the hosts whose queued URLs the feeder is to give back (a
	// pause of fleetHandBack or more holds them).
	fleet    bool
	handBack []*host

	// mu guards every field below, and the hosts' guarded fields.
	mu       sync.Mutex
	cond     *sync.Cond // signalled when ready gains a host or stopping is set
	ready    []*host
	rhead    int
	timers   timerHeap
	stopping bool
	inflight int
	delayed  int // URLs in the timer heap
	queued   int // URLs in hosts' queues

	// The feeder's side (see feed): hosts in memory by key, hosts whose
	// URLs run low, whether every host with URLs left has been taken in,
	// the URLs in memory (and their most), and the paused time of hosts
	// done with, for the closing stats.
	feedCond *sync.Cond // signalled when want gains a host, a host is let go, or stopping is set
	// feedGen counts the wakes of the feeder (wakeFeed) that may change
	// what the fleet's frontier would lease it: not a URL's end, which
	// only makes room (see waitFeed).
	feedGen    uint64
	hosts      map[string]*host
	want       []*host
	hostsOut   bool
	loaded     int
	peakLoaded int
	pausedGone map[string]time.Duration
	gone       goneHeap // the hosts let go with the most requests, for Progress
	// goneByKey finds a fleet worker's hosts in gone (see revive).
	goneByKey map[string]*host
	// Discovery (--follow): the finished URLs whose links the committer
	// has not added yet (the job is not over while there are any), and
	// whether links were added to hosts the feeder has passed, so that
	// it scans the hosts again.
	finding int
	rescan  bool
	// taking is the host the feeder is taking in (reading it unlocked),
	// takingFound the URLs discovery added to it meanwhile, by lane.
	taking      string
	takingFound [numLanes]int
	// revive: hosts let go may come back (fleet mode, discovery); keep
	// goneByKey for them.
	revive bool
	// unreserve gives back a reservation no URL will use (see host.resv).
	unreserve func(*polite.Reservation)
}

func newSched(ready func(h *host, now time.Time) (time.Duration, polite.Reason)) *sched {
	s := &sched{readyFn: ready, wake: make(chan struct{}, 1), hosts: map[string]*host{}, maxHosts: DefaultMaxHosts}
	s.cond = sync.NewCond(&s.mu)
	s.feedCond = sync.NewCond(&s.mu)
	return s
}

// Bounds on the URLs the scheduler holds in memory (issue 17, defect 3):
// a host whose URLs queued or put off fall to lowWater asks the feeder for
// refillTo minus those; the URLs in flight are bounded by the workers. So
// the scheduler holds at most maxHosts × (refillTo + ...) URLs plus those
// in flight, whatever the job's size. A host with URLs in more than one
// lane shares refillTo (and lowWater) between them by their weights
// (laneCap), so that each lane has URLs in memory for its turns however
// late in the list they came: of a host's 200 bulk URLs listed before 50
// interactive ones, 27 interactive and 4 bulk are held.
const (
	lowWater = 8
	refillTo = 32
)

// laneCap is how many of h's URLs of lane l the scheduler holds queued or
// put off at most: refillTo shared by the weights of the lanes with URLs
// left (in memory or in the database), at least 1. It only grows as a
// run goes on: lanes empty, none fills. Called with mu held.
func (h *host) laneCap(l Lane) int {
	sum := 0
	for i := range h.lanes {
		if q := &h.lanes[i]; q.loaded > 0 || q.unloaded > 0 || Lane(i) == l {
			sum += laneWeights[i]
		}
	}
	return max(refillTo*laneWeights[l]/sum, 1)
}

// laneAsk is a read of up to n of a host's URLs of one lane, with ids after
// after.
type laneAsk struct {
	lane  Lane
	after int64
	n     int
}

// asks returns the reads that top up h's lanes that run low: those with
// URLs in the database and at most a quarter of their laneCap (lowWater
// of refillTo) queued or put off, each to its laneCap. Called with mu held.
func (h *host) asks() []laneAsk {
	var as []laneAsk
	for i := range h.lanes {
		q := &h.lanes[i]
		if q.unloaded == 0 {
			continue
		}
		c := h.laneCap(Lane(i))
		if have := q.queued() + q.delayed; have <= max(c*lowWater/refillTo, 1) {
			as = append(as, laneAsk{lane: Lane(i), after: q.cursor, n: c - have})
		}
	}
	return as
}

// take adds URLs read from the database to h, at their not-before times;
// the lanes of asks that came back short have no more. Called with mu
// held.
func (s *sched) take(h *host, asks []laneAsk, rows []row, now time.Time) {
	got := [numLanes]int{}
	for _, r := range rows {
		it := &item{id: r.id, url: r.url, host: h, attempts: r.attempts, started: r.started, reason: r.reason, lane: r.lane,
			depth: r.depth, kind: r.kind, foundOn: r.foundOn}
		h.hold(it)
		s.loaded++
		s.requeue(it, r.notBefore, false, now)
		q := &h.lanes[r.lane]
		q.cursor = r.id
		q.unloaded = max(0, q.unloaded-1)
		got[r.lane]++
	}
	for _, a := range asks {
		if got[a.lane] < a.n {
			// The count was off: nothing more to read, but for URLs
			// discovery added since the read began.
			h.lanes[a.lane].unloaded = h.lanes[a.lane].found
		}
	}
	s.peakLoaded = max(s.peakLoaded, s.loaded)
}

// low asks the feeder for more of h's URLs when a lane runs low. Called
// with mu held.
func (s *sched) low(h *host) {
	if h.refill || len(h.asks()) == 0 {
		return
	}
	h.refill = true
	s.want = append(s.want, h)
	s.wakeFeed()
}

// letGo forgets h once it has nothing left, in memory or in the database,
// and stops the scheduler when it was the last host. Called with mu held.
func (s *sched) letGo(h *host, now time.Time) {
	if h.loaded > 0 || h.unloaded() > 0 || h.refill || s.hosts[h.key] != h {
		return
	}
	delete(s.hosts, h.key)
	s.dropResv(h)
	if d := h.pausedFor(now); d > 0 {
		if s.pausedGone == nil {
			s.pausedGone = map[string]time.Duration{}
		}
		s.pausedGone[h.key] = d
	}
	s.gone.keep(h)
	if s.revive && h.goneAt > 0 {
		if s.goneByKey == nil || len(s.goneByKey) > 2*keepGone {
			// Those dropped from gone since: forgotten.
			s.goneByKey = make(map[string]*host, len(s.gone))
			for _, g := range s.gone {
				s.goneByKey[g.key] = g
			}
		}
		s.goneByKey[h.key] = h
	}
	s.wakeFeed()
	s.stopIfDone()
}

// stopIfDone stops the scheduler once every host with URLs has been taken
// in and let go, and no links found are still on their way to the job.
// Called with mu held.
func (s *sched) stopIfDone() {
	if len(s.hosts) == 0 && s.hostsOut && s.finding == 0 && !s.rescan {
		s.stop()
	}
}

// finds says a finished URL's links are on their way to the committer.
func (s *sched) finds() {
	s.mu.Lock()
	s.finding++
	s.mu.Unlock()
}

// foundAdded says the committer added the links of n finished URLs:
// added counts the new URLs by host and lane. A host in memory reads them
// when it runs low; the feeder takes in the others, scanning the hosts
// again if it has passed them.
func (s *sched) foundAdded(n int, added foundCount) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finding -= n
	for key, c := range added {
		if h := s.hosts[key]; h != nil {
			for l, k := range c {
				h.lanes[l].unloaded += k
				h.lanes[l].found += k
			}
			s.low(h)
			continue
		}
		if key == s.taking {
			for l, k := range c {
				s.takingFound[l] += k
			}
			continue
		}
		s.rescan = true
	}
	if s.rescan {
		s.hostsOut = false
		s.wakeFeed()
	}
	s.stopIfDone()
}

// requeue puts it back in its host's queue (at the front when front), or
// into the timer heap until notBefore. Called with mu held.
func (s *sched) requeue(it *item, notBefore time.Time, front bool, now time.Time) {
	h := it.host
	if notBefore.After(now) && h.gaveUp.Load() == nil {
		h.delayed++
		h.lanes[it.lane].delayed++
		s.delayed++
		s.pushTimer(timer{at: notBefore, it: it})
		return
	}
	h.push(it, front)
	s.queued++
	s.kick(h)
}

// kick puts h in the ready list if it is idle and has something to send.
// Called with mu held.
func (s *sched) kick(h *host) {
	if h.state != hostIdle || h.queued() == 0 {
		return
	}
	h.state = hostReady
	s.ready = append(s.ready, h)
	s.cond.Signal()
}

// next blocks until a URL may be sent now and returns it, or returns nil
// once the scheduler is stopping.
func (s *sched) next() *item {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		for s.rhead == len(s.ready) && !s.stopping {
			s.cond.Wait()
		}
		if s.stopping {
			return nil
		}
		h := s.ready[s.rhead]
		s.ready[s.rhead] = nil
		s.rhead++
		s.ready, s.rhead = compact(s.ready, s.rhead)
		h.state = hostIdle
		if h.queued() == 0 {
			h.unhold()
			s.dropResv(h)
			continue
		}
		now := time.Now()
		if h.gaveUp.Load() != nil {
			return s.handOut(h, now) // finished unsent by the worker
		}
		d, why := s.readyFn(h, now)
		if why == polite.ReasonSlot && h.inflight > 0 {
			h.heldBack(now, why)
			continue // kicked again when one of its requests ends
		}
		// Ready or not: a host whose URLs all redirect to a failing one
		// is ready whenever asked, and failing all the same.
		if s.giveUpFn != nil {
			if g := s.giveUpFn(h, d, why, now); g != nil {
				s.abandon(h, g)
				return s.handOut(h, now)
			}
		}
		if d > 0 || why == polite.ReasonSlot {
			h.heldBack(now, why)
		}
		if d > 0 {
			s.sleep(h, now.Add(d), pauses(why))
			if s.fleet && pauses(why) && d >= fleetHandBack && !h.handBack {
				// The fleet's other URLs of h need not wait with these:
				// the feeder gives them back to the frontier until then.
				h.handBack = true
				s.handBack = append(s.handBack, h)
				s.wakeFeed()
			}
			continue
		}
		if why == polite.ReasonSlot {
			// Slots held by others (a robots.txt fetch, another
			// client of the Transport): look again shortly.
			s.sleep(h, now.Add(slotPoll), false)
			continue
		}
		return s.handOut(h, now)
	}
}

// heldBack notes that h, with a URL to send, is held back at now for why.
// Called with mu held.
func (h *host) heldBack(now time.Time, why polite.Reason) {
	if !h.heldSince.IsZero() && why == h.heldWhy {
		return
	}
	h.endHold(now)
	h.heldSince, h.heldWhy = now, why
}

// endHold closes the hold under way at at: the host may send again (its
// timer fired, or a request of its own ended and freed its slot). The
// time it may then wait for a worker is not the host's doing, and is not
// counted. Spells of one reason in a row are summed. Called with mu held.
func (h *host) endHold(at time.Time) {
	if h.heldSince.IsZero() {
		return
	}
	d := max(at.Sub(h.heldSince), 0)
	if n := len(h.spells); n > 0 && h.spells[n-1].why == h.heldWhy {
		h.spells[n-1].d += d
	} else {
		h.spells = append(h.spells, heldSpell{h.heldSince, d, h.heldWhy})
	}
	h.heldSince = time.Time{}
}

// unhold forgets a hold that ended without a URL handed out (the host's
// URLs went elsewhere). Called with mu held.
func (h *host) unhold() {
	h.heldSince, h.spells = time.Time{}, nil
}

// handOut pops h's next URL for a worker, with the spells h held it back.
// Called with mu held.
func (s *sched) handOut(h *host, now time.Time) *item {
	it := h.pop()
	it.resv, h.resv = h.resv, nil
	h.endHold(now)
	if len(h.spells) > 0 {
		it.held, h.spells = h.spells, nil
	}
	s.queued--
	h.inflight++
	s.inflight++
	s.low(h)
	if s.fleet && h.queued()+h.delayed < fleetHostAhead {
		s.wakeFeed() // the feeder may lease more of h
	}
	s.kick(h) // more for this host? back of the line
	return it
}

// abandon marks h given up and moves its URLs out of the timer heap into
// its queue, so that every one is handed out (and finished) now, not when
// its backoff ends. Called with mu held.
func (s *sched) abandon(h *host, g *givenUp) {
	h.gaveUp.Store(g)
	kept := s.timers[:0]
	for _, t := range s.timers {
		if t.it != nil && t.it.host == h {
			h.delayed--
			h.lanes[t.it.lane].delayed--
			s.delayed--
			h.push(t.it, false)
			s.queued++
			continue
		}
		kept = append(kept, t)
	}
	clear(s.timers[len(kept):])
	s.timers = kept
	heap.Init(&s.timers)
}

// slotPoll is how long a host whose in-flight slots are all held by
// requests the job did not send sleeps before it is asked again.
const slotPoll = 50 * time.Millisecond

// sleep parks h in the timer heap until t; paused says a pause or an open
// breaker holds it, not its rate. Called with mu held.
func (s *sched) sleep(h *host, t time.Time, paused bool) {
	h.state = hostWaiting
	h.wakeAt = t
	h.asleep = paused
	s.pushTimer(timer{at: t, h: h})
}

// done says a URL handed out by next is finished.
func (s *sched) done(it *item) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := it.host
	h.loaded--
	h.lanes[it.lane].loaded--
	s.loaded--
	s.settle(h)
	s.letGo(h, time.Now())
	if s.fleet {
		if s.loaded == 0 {
			s.feedGen++ // the frontier may be finished: ask now
		}
		s.feedCond.Signal() // room for more leases
	}
}

// retry says a URL handed out by next goes back: to the front of its
// host's queue when notBefore has passed (the host's own pause holds it
// back), else into the timer heap.
func (s *sched) retry(it *item, notBefore time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settle(it.host)
	s.requeue(it, notBefore, true, time.Now())
}

// settle ends a request in flight to h. Called with mu held.
func (s *sched) settle(h *host) {
	h.inflight--
	s.inflight--
	if h.state == hostIdle && h.heldWhy == polite.ReasonSlot {
		h.endHold(time.Now()) // its cap held it: a slot is free now
	}
	s.kick(h)
}

// stop makes next return nil from now on. Called with mu held.
func (s *sched) stop() {
	s.stopping = true
	for _, h := range s.hosts {
		s.dropResv(h)
	}
	s.cond.Broadcast()
	s.feedCond.Broadcast()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// wakeFeed wakes the feeder for a change that may change what it takes in:
// a host that wants more URLs, one let go or given back, a URL handed out.
// Called with mu held.
func (s *sched) wakeFeed() {
	s.feedGen++
	s.feedCond.Signal()
}

// dropResv gives back h's reservation, if it holds one: no URL of h will
// go under it. Called with mu held.
func (s *sched) dropResv(h *host) {
	if h.resv != nil && s.unreserve != nil {
		s.unreserve(h.resv)
	}
	h.resv = nil
}

// peek returns the URL pop would take next, or nil when h has none queued.
func (h *host) peek() *item {
	t := h.turn
	for range laneTurns {
		l := laneTurns[t]
		t = (t + 1) % uint8(len(laneTurns))
		if q := &h.lanes[l]; q.queued() > 0 {
			return q.queue[q.head]
		}
	}
	return nil
}

// Stop makes next return nil from now on.
func (s *sched) Stop() {
	s.mu.Lock()
	s.stop()
	s.mu.Unlock()
}

// finished reports whether every URL is done.
func (s *sched) finished() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hostsOut && len(s.hosts) == 0 && s.finding == 0 && !s.rescan
}

func (s *sched) pushTimer(t timer) {
	heap.Push(&s.timers, t)
	if s.timers[0] == t {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// clock moves hosts and URLs out of the timer heap when their time comes,
// until the scheduler stops.
func (s *sched) clock() {
	tm := time.NewTimer(time.Hour)
	defer tm.Stop()
	for {
		s.mu.Lock()
		if s.stopping {
			s.mu.Unlock()
			return
		}
		now := time.Now()
		for len(s.timers) > 0 && !s.timers[0].at.After(now) {
			t := heap.Pop(&s.timers).(timer)
			switch {
			case t.it != nil:
				h := t.it.host
				h.delayed--
				h.lanes[t.it.lane].delayed--
				s.delayed--
				h.push(t.it, false)
				s.queued++
				s.kick(h)
			case t.h.state == hostWaiting && t.h.wakeAt.Equal(t.at):
				t.h.state = hostIdle
				t.h.wakeAt = time.Time{}
				t.h.asleep = false
				t.h.endHold(t.at) // sendable from its timer on, worker or not
				s.kick(t.h)
			}
		}
		d := time.Hour
		if len(s.timers) > 0 {
			d = s.timers[0].at.Sub(now)
		}
		s.mu.Unlock()
		tm.Reset(d)
		select {
		case <-tm.C:
		case <-s.wake:
			if !tm.Stop() {
				select {
				case <-tm.C:
				default:
				}
			}
		}
	}
}

// counts returns URLs in flight, queued (ready to go as soon as their
// host's rate or in-flight cap lets them) and waiting: put off by backoff,
// or queued for a host that a pause or an open breaker holds back.
func (s *sched) counts() (inflight, queued, waiting int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	held := 0
	for _, t := range s.timers {
		if h := t.h; h != nil && h.asleep && h.state == hostWaiting && h.wakeAt.Equal(t.at) {
			held += h.queued()
		}
	}
	return s.inflight, s.queued - held, s.delayed + held
}

// pauses reports whether a host not ready for why is paused (by the server,
// a backoff, a block or its breaker) rather than spacing its requests.
func pauses(why polite.Reason) bool {
	switch why {
	case polite.ReasonRetryAfter, polite.ReasonRateLimit, polite.ReasonBackoff, polite.ReasonBreaker,
		polite.ReasonStore, polite.ReasonBlock:
		return true
	}
	return false
}

// timer is a host to wake or a URL to queue at a time.
type timer struct {
	at time.Time
	h  *host
	it *item
}

type timerHeap []timer

func (t timerHeap) Len() int           { return len(t) }
func (t timerHeap) Less(i, j int) bool { return t[i].at.Before(t[j].at) }
func (t timerHeap) Swap(i, j int)      { t[i], t[j] = t[j], t[i] }
func (t *timerHeap) Push(x any)        { *t = append(*t, x.(timer)) }
func (t *timerHeap) Pop() any {
	old := *t
	x := old[len(old)-1]
	old[len(old)-1] = timer{}
	*t = old[:len(old)-1]
	return x
}

// pausedStats returns the time each host was paused this run, up to now,
// leaving out hosts never paused.
func (s *sched) pausedStats(now time.Time) map[string]time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var m map[string]time.Duration
	for k, d := range s.pausedGone {
		if m == nil {
			m = map[string]time.Duration{}
		}
		m[k] = d
	}
	for _, h := range s.hosts {
		if d := h.pausedFor(now); d > 0 {
			if m == nil {
				m = map[string]time.Duration{}
			}
			m[h.key] = d
		}
	}
	return m
}

// keepGone is how many hosts let go Progress still reports: those with the
// most requests.
const keepGone = 4096

// goneHeap holds the keepGone hosts let go with the most requests, the one
// with the fewest on top.
type goneHeap []*host

func (g goneHeap) Len() int { return len(g) }
func (g goneHeap) Less(i, j int) bool {
	return g[i].stats.requests.Load() < g[j].stats.requests.Load()
}
func (g goneHeap) Swap(i, j int) {
	g[i], g[j] = g[j], g[i]
	g[i].goneAt, g[j].goneAt = i+1, j+1
}
func (g *goneHeap) Push(x any) {
	h := x.(*host)
	*g = append(*g, h)
	h.goneAt = len(*g)
}
func (g *goneHeap) Pop() any {
	old := *g
	x := old[len(old)-1]
	old[len(old)-1] = nil
	*g = old[:len(old)-1]
	x.goneAt = 0
	return x
}

// revive takes back from the heap the host let go under key, if it is
// there (a fleet worker leases a host's URLs again after it ran out of
// them: one host, with its stats and state, not a second).
func (g *goneHeap) revive(key string, byKey map[string]*host) *host {
	h := byKey[key]
	if h == nil {
		return nil
	}
	delete(byKey, key)
	if h.goneAt > 0 && h.goneAt <= len(*g) && (*g)[h.goneAt-1] == h {
		heap.Remove(g, h.goneAt-1)
	}
	h.goneAt = 0
	return h
}

// keep adds h, let go, dropping the host with the fewest requests when
// there are more than keepGone.
func (g *goneHeap) keep(h *host) {
	if h.stats.requests.Load() == 0 && h.stats.done.Load() == 0 {
		return
	}
	if len(*g) < keepGone {
		heap.Push(g, h)
		return
	}
	if (*g)[0].stats.requests.Load() < h.stats.requests.Load() {
		(*g)[0].goneAt = 0
		(*g)[0] = h
		h.goneAt = 1
		heap.Fix(g, 0)
	}
}
