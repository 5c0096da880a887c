package redisstore

import (
	"context"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/frontier_lib.lua
	frontierLib string
	//go:embed lua/frontier_enqueue.lua
	frontierEnqueueLua string
	//go:embed lua/frontier_lease.lua
	frontierLeaseLua string
	//go:embed lua/frontier_extend.lua
	frontierExtendLua string
	//go:embed lua/frontier_commit.lua
	frontierCommitLua string
	//go:embed lua/frontier_release.lua
	frontierReleaseLua string
	//go:embed lua/frontier_defer.lua
	frontierDeferLua string
	//go:embed lua/frontier_retry.lua
	frontierRetryLua string
)

var (
	enqueueScript  = redis.NewScript(frontierLib + frontierEnqueueLua)
	leaseScript    = redis.NewScript(frontierLib + frontierLeaseLua)
	extendScript   = redis.NewScript(frontierLib + frontierExtendLua)
	commitScript   = redis.NewScript(frontierLib + frontierCommitLua)
	releaseFScript = redis.NewScript(frontierLib + frontierReleaseLua)
	deferScript    = redis.NewScript(frontierLib + frontierDeferLua)
	retryScript    = redis.NewScript(frontierLib + frontierRetryLua)
)

// FrontierOptions configure a Frontier. Every worker of a fleet must use
// the same Prefix and Shards; the zero value of each field is its default.
type FrontierOptions struct {
	// Prefix starts every key, "polite:" if empty: the fleet's prefix, as
	// the Store's ("polite:NAME:").
	Prefix string
	// Shards is the number of virtual shards, 16 if zero. It is recorded
	// in Redis at first use; a Frontier with another number is refused.
	Shards int
	// LeaseTTL is how long a lease lives unless extended or committed;
	// 30 s if zero, at least 1 ms. Then it is reclaimed and the URL leased again.
	LeaseTTL time.Duration
	// PerHost is how many URLs one Lease call takes from one host; 2 if
	// zero.
	PerHost int
	// HostGap is how long a host is not due to another Lease call after
	// one took from it; none if zero.
	HostGap time.Duration
	// MaxLeases: a URL leased this many times without a commit becomes a
	// dead letter; 5 if zero.
	MaxLeases int
	// WaitAOF, if positive, makes Enqueue and Commit wait that long for
	// Redis to confirm (WAITAOF 1 0 <ms>, Redis 7.2+) that their writes
	// are in its append-only file, and fail if it does not. Not with a
	// ClusterClient, whose connections go-redis does not expose per node.
	WaitAOF time.Duration
	// Clock, in tests, is the clock the scripts use (µs) instead of
	// Redis's TIME; nil in production, where every worker shares Redis's.
	Clock func() time.Time
	// Timeout bounds each method's calls to Redis; 2 s if zero.
	Timeout time.Duration
}

// Lane is a URL's priority within its host. Between a host's non-empty
// lanes, leases go in a weighted round, 6 interactive : 3 normal : 1 bulk,
// so bulk is slowed but never starved; within a lane, first in first out.
// The zero value is LaneNormal.
type Lane uint8

// The lanes.
const (
	LaneNormal Lane = iota
	LaneInteractive
	LaneBulk
	nLanes
)

// String returns the lane's name.
func (l Lane) String() string {
	switch l {
	case LaneNormal:
		return "normal"
	case LaneInteractive:
		return "interactive"
	case LaneBulk:
		return "bulk"
	}
	return "lane(" + strconv.Itoa(int(l)) + ")"
}

// Entry is a URL to enqueue. Host is the caller's host key: it decides the
// URL's shard and its queue, and politeness is per host key; if empty,
// the URL's host (with a port other than the scheme's default).
//
// Depth and FoundOn are link discovery's (issue 35): how many links were
// followed from a listed URL to this one (0 for a listed URL, at most
// 2³¹-1), and the URL of the page that named it ("" for a listed URL),
// kept as given. They are stored with the URL and handed back with each
// of its leases. A URL keeps those it was first enqueued with: enqueuing
// a known URL again changes nothing, so a fleet's depth of a URL is the
// depth it was first enqueued at, not the least depth any worker found
// it at. Sitemap says the URL is a sitemap, read for its entries (polite
// fetch --sitemaps); Hops counts the redirects in a row that led to it
// (at most 15 kept). The record's depth field holds them all, Depth × 32
// + Hops × 2 + Sitemap, so Depth is at most 2²⁶-1.
type Entry struct {
	URL, Host string
	Lane      Lane
	Depth     int
	FoundOn   string
	Sitemap   bool
	Hops      int
}

// maxDepth bounds the records' depth field (see Entry), as the records'
// readers do; maxEntryDepth bounds Entry.Depth, maxHops Entry.Hops.
const (
	maxDepth      = math.MaxInt32
	maxEntryDepth = maxDepth >> 5
	maxHops       = 15
)

// packDepth is a record's depth field: depth × 32 + hops × 2 + sitemap.
func packDepth(depth, hops int, sitemap bool) int {
	v := (depth<<4 | min(max(hops, 0), maxHops)) << 1
	if sitemap {
		v |= 1
	}
	return v
}

// unpackDepth is packDepth's inverse.
func unpackDepth(v int) (depth, hops int, sitemap bool) { return v >> 5, v >> 1 & maxHops, v&1 == 1 }

// Lease is a URL leased to a worker until Expires.
type Lease struct {
	URL, Host string // URL normalized
	Lane      Lane
	Token     int64     // the fencing token: a commit must name it
	Leases    int       // times leased, this one included
	Expires   time.Time // on the Frontier's clock (Redis's, or Options.Clock)
	Depth     int       // as enqueued (see Entry)
	FoundOn   string    // as enqueued (see Entry)
	Sitemap   bool      // as enqueued (see Entry)
	Hops      int       // as enqueued (see Entry)
}

// Commit is a lease's result.
type Commit struct {
	Lease
	Outcome string // counted per outcome ("ok", "404", "error", ...)
	Record  []byte // the result as JSON, stored as given
	Worker  string // who committed, counted per worker
}

// ErrShards is wrapped by NewFrontier's error when Redis records another
// number of shards for the prefix.
var ErrShards = errors.New("redisstore: frontier shards mismatch")

// Frontier is a crawl frontier shared by a fleet through Redis (issue
// 31), the work queue of the URLs a crawl has yet to fetch, kept in the Redis that already holds the fleet's rate budget, as
// Lua scripts on it. Workers (separate `polite fetch` processes) lease
// URLs, fetch them, and commit each result.
//
// Leases and fencing tokens. A worker may die, stall or lose its
// network at any time, so a URL handed out must come back by itself: it
// is leased for LeaseTTL, and a lease neither extended nor committed by
// then is reclaimed and leased again. That makes fetching at-least-once (a
// slow worker and its successor may both fetch), and results exactly-once:
// each lease carries a fencing token, a number that grows with every
// lease of the shard, and a commit is accepted only while the URL is leased under
// that very token. A reclaimed lease's holder commits too late and is
// refused (counted in Late); the current holder commits; once committed a
// URL is done and is never committed, nor enqueued, again. The
// nats-server#4786 and crawlee#2849 duplicates cannot happen.
//
// Exactly-once holds in Redis even if it loses its last second of
// writes (AOF everysec, then a crash): each URL's record falls back to an
// older state of itself, and the results hash holds at most one result
// per URL, since a commit turns the record to done and a done record
// accepts no other token. What a lost second can cost is an
// acknowledgement: a commit accepted, then lost, leaves the URL leased,
// to be reclaimed, fetched again and committed by another worker. Tokens
// are not reused across such a loss: each is the shard's last plus one,
// and never less than Redis's clock in µs, so tokens handed out after the
// restart exceed every one handed out before the crash (Redis's clock
// moving on across a restart assumed). With WaitAOF set, Enqueue and
// Commit return only once their writes are in the append-only file, and
// nothing acknowledged is lost.
//
// No janitor. Each Lease call first reclaims a bounded number of the
// shard's expired leases and moves its delayed URLs that are due; a shard
// with workers is kept by them, one without needs no keeping, and no
// process must be elected or kept alive for it.
//
// Layout. Hosts are spread over Shards virtual shards by xxhash64(host) % Shards;
// all keys of shard s carry the hash tag {f<s>}, so each script touches
// one Cluster slot and a Cluster spreads the shards. URLs are deduplicated
// by an 8-byte fingerprint of their normalized form (NormalizeURL). In a
// shard (lua/frontier_lib.lua lists the keys): a hash of fingerprint to a
// small packed record (state, lane, leases, token, host, worker, URL, and
// a discovered URL's depth and page found on), one
// list per host and lane of fingerprints, a sorted set of hosts by when
// they are next due, a sorted set of leases by expiry, and a hash of
// counters kept exact by the scripts. A committed URL keeps a few bytes of
// its record for the dedupe; its URL and result move to the results hash.
//
// Scheduling. Within a host, lanes take turns 6:3:1 (see Lane); hosts take
// turns by when each is next due (HostGap after a take, DeferHost);
// Lease visits the shards round-robin.
//
// Discovery (issue 35). A worker following links enqueues those it finds
// like any other entries, with their Depth and FoundOn; the dedupe keeps
// each URL once, at the depth it was first enqueued at. The crawl's scope
// roots are shared too (AddRoots, Roots), so a worker that joins without
// a list follows links within the same scope.
//
// A Frontier is made by NewFrontier; its methods are safe for concurrent
// use by any number of goroutines and processes. Each method's calls to
// Redis are bounded by Timeout. go-redis may send a script again after a
// lost reply: every script but lease's is idempotent, and a lease whose
// reply was lost expires after LeaseTTL like any other.
type Frontier struct {
	c     redis.UniversalClient
	o     FrontierOptions
	start atomic.Uint64 // the shard Lease starts at, round-robin
	// idle[s]: until when (the caller's clock, µs) Lease passes over
	// shard s, which had nothing due (see rest).
	idle []atomic.Int64
	// interactive: a lease reply said its shard has had an interactive URL.
	interactive atomic.Bool
}

// Interactive reports whether any shard this Frontier leased from has had
// an interactive URL (LaneInteractive) enqueued: until then, a worker
// holding enough of a host need not ask often for the host's interactive
// URLs. Once true it stays true.
func (f *Frontier) Interactive() bool { return f.interactive.Load() }

// shardRest bounds how long Lease passes over a shard with nothing due:
// a URL another process enqueues there meanwhile waits at most this long
// (an interactive URL of a host the fleet is crawling does not: that
// host's shard is never at rest).
const shardRest = time.Second

// rest notes what a lease call said of its shard: with nothing due until
// next (Redis's µs, -1: nothing at all; now is Redis's), Lease passes over
// the shard until then, at most shardRest: a single-host crawl's Lease then
// costs a script, not one per shard.
func (f *Frontier) rest(s int, now, next int64) {
	wait := shardRest.Microseconds()
	if next >= 0 {
		wait = min(wait, next-now)
	}
	if wait <= 0 {
		f.idle[s].Store(0)
		return
	}
	f.idle[s].Store(f.localNow() + wait)
}

// localNow is the caller's clock in µs (Options.Clock's, else time.Now).
func (f *Frontier) localNow() int64 {
	if f.o.Clock != nil {
		return f.o.Clock().UnixMicro()
	}
	return time.Now().UnixMicro()
}

// Limits of one script call, so that no call holds Redis for long.
const (
	enqueueBatch = 1000 // entries per enqueue call
	leaseChores  = 64   // expired leases reclaimed, and delayed URLs moved, per lease call
	leaseFanout  = 4    // shards one pipeline of Lease visits
	leaseMax     = 1000 // leases one Lease call takes at most

	frontierPipeline = 32 // script calls per pipeline: 32,000 entries of Enqueue take about 0.15 s
)

// NewFrontier returns a Frontier on c, recording o.Shards for o.Prefix in
// Redis if none is recorded yet.
func NewFrontier(c redis.UniversalClient, o FrontierOptions) (*Frontier, error) {
	if o.Prefix == "" {
		o.Prefix = "polite:"
	}
	if o.Shards <= 0 {
		o.Shards = 16
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = 30 * time.Second
	}
	o.LeaseTTL = max(o.LeaseTTL, time.Millisecond)
	if o.PerHost <= 0 {
		o.PerHost = 2
	}
	if o.HostGap < 0 {
		o.HostGap = 0
	}
	if o.MaxLeases <= 0 {
		o.MaxLeases = 5
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	if _, ok := c.(*redis.ClusterClient); ok && o.WaitAOF > 0 {
		return nil, errors.New("redisstore: frontier WaitAOF needs a non-Cluster client")
	}
	f := &Frontier{c: c, o: o, idle: make([]atomic.Int64, o.Shards)}
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	key := o.Prefix + "frontier:shards"
	if err := c.SetNX(ctx, key, o.Shards, 0).Err(); err != nil {
		return nil, fmt.Errorf("redisstore: frontier: %w", err)
	}
	got, err := c.Get(ctx, key).Int()
	if err != nil {
		return nil, fmt.Errorf("redisstore: frontier: reading %s: %w", key, err)
	}
	if got != o.Shards {
		return nil, fmt.Errorf("%w: %d shards asked, %s records %d", ErrShards, o.Shards, key, got)
	}
	if o.WaitAOF > 0 {
		// Every Enqueue and Commit would fail on a Redis without
		// WAITAOF (before 7.2) or without its append-only file: say so
		// now, not at the first commit.
		if err := c.Do(ctx, "WAITAOF", 1, 0, 100).Err(); err != nil {
			return nil, fmt.Errorf("redisstore: frontier: WaitAOF needs Redis 7.2 or later with appendonly yes: WAITAOF: %w", err)
		}
	}
	return f, nil
}

// ID returns the frontier's identity: a number drawn when it was first
// asked for and kept in Redis, the same for every worker of the crawl and
// different for a crawl started anew (after its keys were deleted), so
// that a worker can tell its directory's crawl from another.
func (f *Frontier) ID(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, f.o.Timeout)
	defer cancel()
	key := f.o.Prefix + "frontier:id"
	if err := f.c.SetNX(ctx, key, rand.Int64N(1<<53)+1, 0).Err(); err != nil {
		return 0, fmt.Errorf("redisstore: frontier: %w", err)
	}
	id, err := f.c.Get(ctx, key).Int64()
	if err != nil {
		return 0, fmt.Errorf("redisstore: frontier: reading %s: %w", key, err)
	}
	return id, nil
}

// shard returns the shard of a host key.
func (f *Frontier) shard(host string) int {
	return int(xxhash.Sum64String(host) % uint64(f.o.Shards))
}

// keys returns the keys of shard s, in lua/frontier_lib.lua's order.
func (f *Frontier) keys(s int) []string {
	b := f.o.Prefix + "{f" + strconv.Itoa(s) + "}:"
	return []string{b + "u", b + "ls", b + "rdy", b + "dly", b + "c", b + "r", b + "dead", b + "hp", b + "hd", b + "hdef", b + "wr"}
}

// clock is the scripts' first argument: the caller's clock in µs, 0 for
// Redis's TIME.
func (f *Frontier) clock() int64 {
	if f.o.Clock == nil {
		return 0
	}
	return f.o.Clock().UnixMicro()
}

// ahead returns how far t is ahead of the caller's now (Options.Clock's,
// else time.Now), in µs, 0 when it has passed or is zero.
func (f *Frontier) ahead(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	now := time.Now()
	if f.o.Clock != nil {
		now = f.o.Clock()
	}
	return max(t.Sub(now).Microseconds(), 0)
}

// fingerprint returns the 8-byte fingerprint of a normalized URL.
func fingerprint(u string) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], xxhash.Sum64String(u))
	return string(b[:])
}

// fcall is one script call of a pipeline.
type fcall struct {
	script *redis.Script
	shard  int
	keys   []string // if nil, shard's (the frontier's scripts)
	args   []any
	cmd    *redis.Cmd
}

// run sends calls in pipelines of at most frontierPipeline (a Cluster client
// splits each per node), each bounded by Timeout, and with wait ends each
// with WAITAOF on the same connection. Calls refused with NOSCRIPT (first
// use, or Redis restarted) are sent again, once, after loading their
// scripts.
func (f *Frontier) run(ctx context.Context, calls []*fcall, wait bool) error {
	for _, c := range calls {
		if c.keys == nil && c.script != leaseScript {
			f.idle[c.shard].Store(0) // it may have work due now: Lease visits it
		}
	}
	for len(calls) > 0 {
		n := min(len(calls), frontierPipeline)
		if err := f.run1(ctx, calls[:n], wait && f.o.WaitAOF > 0); err != nil {
			return err
		}
		calls = calls[n:]
	}
	return nil
}

func (f *Frontier) run1(ctx context.Context, calls []*fcall, wait bool) error {
	ctx, cancel := context.WithTimeout(ctx, f.o.Timeout)
	defer cancel()
	send := func(calls []*fcall) error {
		pl := f.c.Pipeline()
		for _, c := range calls {
			keys := c.keys
			if keys == nil {
				keys = f.keys(c.shard)
			}
			c.cmd = c.script.EvalSha(ctx, pl, keys, c.args...)
		}
		var aof *redis.Cmd
		if wait {
			aof = pl.Do(ctx, "WAITAOF", 1, 0, max(f.o.WaitAOF.Milliseconds(), 1))
		}
		_, _ = pl.Exec(ctx) // each command holds its own error
		if wait {
			return waited(aof)
		}
		return nil
	}
	werr := send(calls)
	var again []*fcall
	loaded := map[*redis.Script]bool{}
	for _, c := range calls {
		if err := c.cmd.Err(); err != nil && isNoScript(err) {
			if !loaded[c.script] {
				loaded[c.script] = true
				if err := c.script.Load(ctx, f.c).Err(); err != nil {
					return fmt.Errorf("redisstore: frontier: loading a script: %w", err)
				}
			}
			again = append(again, c)
		}
	}
	if len(again) > 0 {
		if err := send(again); err != nil && werr == nil {
			werr = err
		}
	}
	for _, c := range calls {
		if err := c.cmd.Err(); err != nil {
			return fmt.Errorf("redisstore: frontier: %w", err)
		}
	}
	return werr
}

// waited checks WAITAOF's reply: [local, replicas], local 1 when the
// writes are in the append-only file.
func waited(cmd *redis.Cmd) error {
	v, err := cmd.Result()
	if err != nil {
		return fmt.Errorf("redisstore: frontier: WAITAOF: %w", err)
	}
	a, ok := v.([]any)
	if !ok || len(a) < 1 {
		return fmt.Errorf("redisstore: frontier: WAITAOF: unexpected reply %v", v)
	}
	if n, _ := a[0].(int64); n < 1 {
		return errors.New("redisstore: frontier: WAITAOF: the writes are not confirmed in the append-only file")
	}
	return nil
}

// Enqueue adds the entries whose URL the frontier does not know yet
// (queued, leased, done or dead) and returns how many it added. It is
// idempotent: the same list twice, or from two workers at once, adds each
// URL once, with the Depth and FoundOn of the entry that added it. A URL
// NormalizeURL rejects, or a Depth out of range, fails the whole call
// before anything is written.
func (f *Frontier) Enqueue(ctx context.Context, es []Entry) (added int, err error) {
	// A group is a run of entries of one host and lane, and one depth
	// and page found on: the script writes its records' common head
	// once. A host and lane's groups go in the order of their entries,
	// so its queue keeps the order of es.
	type group struct {
		host    string
		lane    Lane
		depth   int
		foundOn string
		args    []any // fingerprint, URL pairs
	}
	byShard := make(map[int][]*group)
	type hostLane struct {
		host string
		lane Lane
	}
	last := make(map[hostLane]*group) // each host and lane's last group
	for _, e := range es {
		if e.Lane >= nLanes {
			return 0, fmt.Errorf("redisstore: frontier: %s: unknown lane %d", e.URL, e.Lane)
		}
		if e.Depth < 0 || e.Depth > maxEntryDepth {
			return 0, fmt.Errorf("redisstore: frontier: %s: depth %d out of range [0, %d]", e.URL, e.Depth, maxEntryDepth)
		}
		e.Depth = packDepth(e.Depth, e.Hops, e.Sitemap)
		u, err := NormalizeURL(e.URL)
		if err != nil {
			return 0, err
		}
		if e.Host == "" {
			e.Host = hostOf(u)
		}
		k := hostLane{e.Host, e.Lane}
		g := last[k]
		if g == nil || g.depth != e.Depth || g.foundOn != e.FoundOn {
			g = &group{host: e.Host, lane: e.Lane, depth: e.Depth, foundOn: e.FoundOn}
			last[k] = g
			s := f.shard(e.Host)
			byShard[s] = append(byShard[s], g)
		}
		g.args = append(g.args, fingerprint(u), u)
	}
	var calls []*fcall
	for s, gs := range byShard {
		var args []any
		n := 0
		flush := func() {
			if n > 0 {
				calls = append(calls, &fcall{script: enqueueScript, shard: s, args: args})
			}
			args, n = []any{f.clock()}, 0
		}
		flush()
		for _, g := range gs {
			for rest := g.args; len(rest) > 0; {
				k := min(len(rest)/2, enqueueBatch-n)
				args = append(args, g.host, int(g.lane), g.depth, g.foundOn, k)
				args = append(args, rest[:2*k]...)
				rest = rest[2*k:]
				if n += k; n >= enqueueBatch {
					flush()
				}
			}
		}
		flush()
	}
	if err := f.run(ctx, calls, true); err != nil {
		return 0, err
	}
	for _, c := range calls {
		n, err := c.cmd.Int()
		if err != nil {
			return added, fmt.Errorf("redisstore: frontier: enqueue reply: %w", err)
		}
		added += n
	}
	return added, nil
}

// Lease leases up to max URLs to worker, visiting the shards round-robin
// from where the Frontier's last Lease began, a pipeline of shards at a
// time, until it has max or has visited all. In each shard it first
// reclaims expired leases and moves due delayed URLs (a bounded number),
// then takes from the hosts that are due, in the order they became due,
// up to PerHost URLs each. It returns no leases, and no error, when
// nothing is due, and at most 1000 leases. On an error it returns the
// leases it took before it.
func (f *Frontier) Lease(ctx context.Context, worker string, max int) ([]Lease, error) {
	return f.LeaseExcept(ctx, worker, max, nil)
}

// skipped marks, in LeaseExcept's count of URLs taken from a host, a host
// the caller holds enough of: the lease script takes one interactive URL
// of it, no other.
const skipped = -1

// LeaseExcept is Lease, taking of the hosts in skip (those the worker
// holds enough of already) only an interactive URL, at most one each: it
// goes ahead of what the worker holds, so an interactive URL waits for no
// lease to come back. A skipped host keeps its turn.
func (f *Frontier) LeaseExcept(ctx context.Context, worker string, max int, skip []string) ([]Lease, error) {
	if max <= 0 {
		return nil, nil
	}
	max = min(max, leaseMax)
	var out []Lease
	first := int(f.start.Add(1) % uint64(f.o.Shards))
	var full []int                    // shards that gave all they were asked: they may have more
	taken := map[int]map[string]int{} // per shard, URLs taken from each host (at most PerHost per call)
	for _, h := range skip {
		s := f.shard(h)
		if taken[s] == nil {
			taken[s] = map[string]int{}
		}
		taken[s][h] = skipped // an interactive URL only, then none
	}
	visit := func(shards []int, ask int) error {
		calls := make([]*fcall, len(shards))
		for i, s := range shards {
			args := []any{f.clock(), worker, ask, f.o.PerHost,
				f.o.HostGap.Microseconds(), f.o.LeaseTTL.Microseconds(), f.o.MaxLeases, leaseChores}
			for h, n := range taken[s] {
				args = append(args, h, n)
			}
			calls[i] = &fcall{script: leaseScript, shard: s, args: args}
		}
		if err := f.run(ctx, calls, false); err != nil {
			return err
		}
		for i, c := range calls {
			ls, now, next, il, err := parseLeaseReply(c.cmd.Val(), f.o.LeaseTTL)
			if err != nil {
				return err
			}
			if il {
				f.interactive.Store(true)
			}
			f.rest(shards[i], now, next)
			if len(ls) == ask {
				full = append(full, shards[i])
			}
			for _, l := range ls {
				if taken[shards[i]] == nil {
					taken[shards[i]] = map[string]int{}
				}
				if taken[shards[i]][l.Host] == skipped {
					taken[shards[i]][l.Host] = f.o.PerHost
					continue
				}
				taken[shards[i]][l.Host]++
			}
			out = append(out, ls...)
		}
		return nil
	}
	// A few shards per pipeline, the leases still wanted split between
	// them; then, if that was not enough, the shards that had more, one
	// by one.
	order := make([]int, 0, f.o.Shards)
	local := f.localNow()
	for k := range f.o.Shards {
		if s := (first + k) % f.o.Shards; f.idle[s].Load() <= local {
			order = append(order, s)
		}
	}
	for visited := 0; visited < len(order) && len(out) < max; {
		want := max - len(out)
		n := min(want, len(order)-visited, leaseFanout)
		shards := make([]int, n)
		for i := range shards {
			shards[i] = order[visited+i]
		}
		visited += n
		if err := visit(shards, (want+n-1)/n); err != nil {
			return out, err
		}
	}
	for k := 0; k < len(full) && len(out) < max; k++ {
		if err := visit(full[k:k+1], max-len(out)); err != nil {
			return out, err
		}
	}
	if len(out) > max {
		extra := out[max:]
		out = out[:max:max]
		if err := f.Release(ctx, extra, time.Time{}); err != nil {
			return out, err
		}
	}
	return out, nil
}

// leaseHead is how many slots begin lease's reply (now, when anything is
// next due, whether the shard has had an interactive URL); leaseFields how
// many it writes per lease: URL, host, lane, token, leases, depth,
// found_on.
const (
	leaseHead   = 3
	leaseFields = 7
)

// parseLeases reads lease's reply: its head (leaseHead), then leaseFields
// per lease.
func parseLeases(v any, ttl time.Duration) ([]Lease, error) {
	ls, _, _, _, err := parseLeaseReply(v, ttl)
	return ls, err
}

// parseLeaseReply reads lease's reply: the leases, Redis's now and when
// anything of the shard's is next due (-1: nothing).
func parseLeaseReply(v any, ttl time.Duration) (ls []Lease, now, next int64, interactive bool, err error) {
	a, ok := v.([]any)
	if !ok || len(a) < leaseHead || (len(a)-leaseHead)%leaseFields != 0 {
		return nil, 0, 0, false, fmt.Errorf("redisstore: frontier: malformed lease reply %.200v", v)
	}
	if now, err = replyInt(a[0]); err != nil {
		return nil, 0, 0, false, err
	}
	if next, err = replyInt(a[1]); err != nil {
		return nil, 0, 0, false, err
	}
	il, err := replyInt(a[2])
	if err != nil {
		return nil, 0, 0, false, err
	}
	exp := time.UnixMicro(now).Add(ttl)
	ls = make([]Lease, 0, (len(a)-leaseHead)/leaseFields)
	for i := leaseHead; i < len(a); i += leaseFields {
		u, ok1 := a[i].(string)
		h, ok2 := a[i+1].(string)
		lane, err1 := replyInt(a[i+2])
		tok, err2 := replyInt(a[i+3])
		n, err3 := replyInt(a[i+4])
		depth, err4 := replyInt(a[i+5])
		found, ok3 := a[i+6].(string)
		if !ok1 || !ok2 || !ok3 || errors.Join(err1, err2, err3, err4) != nil || lane < 0 || lane >= int64(nLanes) ||
			depth < 0 || depth > maxDepth {
			return nil, 0, 0, false, fmt.Errorf("redisstore: frontier: malformed lease in reply %.200v", a[i:i+leaseFields])
		}
		d, hops, sm := unpackDepth(int(depth))
		ls = append(ls, Lease{URL: u, Host: h, Lane: Lane(lane), Token: tok, Leases: int(n), Expires: exp,
			Depth: d, FoundOn: found, Sitemap: sm, Hops: hops})
	}
	return ls, now, next, il == 1, nil
}

// replyInt reads an integer a script returned, as a number or a string.
func replyInt(v any) (int64, error) {
	switch v := v.(type) {
	case int64:
		return v, nil
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("redisstore: frontier: malformed number %q in a reply", v)
		}
		return n, nil
	}
	return 0, fmt.Errorf("redisstore: frontier: malformed number %v in a reply", v)
}

// byShard groups the indexes of leases by their shard.
func (f *Frontier) byShard(ls []Lease) map[int][]int {
	m := make(map[int][]int)
	for i, l := range ls {
		s := f.shard(l.Host)
		m[s] = append(m[s], i)
	}
	return m
}

// Extend renews each lease still current for LeaseTTL from now, setting
// its Expires in ls, and reports the ones lost (reclaimed, released or
// committed meanwhile): their result will be refused. A lease past its
// expiry is current until a Lease call reclaims it.
func (f *Frontier) Extend(ctx context.Context, ls []Lease) (lost []bool, err error) {
	var calls []*fcall
	var idx [][]int
	for s, is := range f.byShard(ls) {
		args := []any{f.clock(), f.o.LeaseTTL.Microseconds()}
		for _, i := range is {
			args = append(args, fingerprint(ls[i].URL), ls[i].Token)
		}
		calls = append(calls, &fcall{script: extendScript, shard: s, args: args})
		idx = append(idx, is)
	}
	if err := f.run(ctx, calls, false); err != nil {
		return nil, err
	}
	lost = make([]bool, len(ls))
	for k, c := range calls {
		a, ok := c.cmd.Val().([]any)
		if !ok || len(a) != len(idx[k])+1 {
			return nil, fmt.Errorf("redisstore: frontier: malformed extend reply %.200v", c.cmd.Val())
		}
		now, err := replyInt(a[0])
		if err != nil {
			return nil, err
		}
		for j, i := range idx[k] {
			n, _ := replyInt(a[j+1])
			lost[i] = n != 1
			if n == 1 {
				ls[i].Expires = time.UnixMicro(now).Add(f.o.LeaseTTL)
			}
		}
	}
	return lost, nil
}

// Commit stores each result whose lease is current, and reports which
// were accepted. A lease is named by its URL and Token (as for Extend and
// Release): its Depth and FoundOn are not read, the stored ones are kept
// with the result. A URL's result is accepted once: a lease reclaimed or
// released meanwhile is refused (counted in Late), and committing the
// same token again is accepted and counts nothing twice. A lease past its
// expiry is accepted until a Lease call reclaims it. With WaitAOF set
// Commit returns only once Redis has the results in its append-only file.
func (f *Frontier) Commit(ctx context.Context, cs []Commit) (accepted []bool, err error) {
	ls := make([]Lease, len(cs))
	for i, c := range cs {
		ls[i] = c.Lease
	}
	var calls []*fcall
	var idx [][]int
	for s, is := range f.byShard(ls) {
		args := []any{f.clock()}
		for _, i := range is {
			c := cs[i]
			args = append(args, fingerprint(c.URL), c.Token, c.Worker, c.Outcome, c.Record)
		}
		calls = append(calls, &fcall{script: commitScript, shard: s, args: args})
		idx = append(idx, is)
	}
	if err := f.run(ctx, calls, true); err != nil {
		return nil, err
	}
	accepted = make([]bool, len(cs))
	for k, c := range calls {
		a, ok := c.cmd.Val().([]any)
		if !ok || len(a) != len(idx[k]) {
			return nil, fmt.Errorf("redisstore: frontier: malformed commit reply %.200v", c.cmd.Val())
		}
		for j, i := range idx[k] {
			n, _ := replyInt(a[j])
			accepted[i] = n == 1
		}
	}
	return accepted, nil
}

// Release gives back leases of URLs not fetched: each still current goes
// back to the front of its host's queue, due at notBefore (at once if it
// has passed or is zero), and its lease does not count against
// MaxLeases. notBefore is on the caller's clock: the scripts get how far
// ahead of the caller's now it is, and add that to Redis's, so a worker's
// clock that is off shifts nothing.
func (f *Frontier) Release(ctx context.Context, ls []Lease, notBefore time.Time) error {
	at := f.ahead(notBefore)
	var calls []*fcall
	for s, is := range f.byShard(ls) {
		args := []any{f.clock(), at}
		for _, i := range is {
			args = append(args, fingerprint(ls[i].URL), ls[i].Token)
		}
		calls = append(calls, &fcall{script: releaseFScript, shard: s, args: args})
	}
	return f.run(ctx, calls, false)
}

// DeferHost makes host's URLs not due before until, as for a
// Retry-After; an earlier deferral in force stands. until is on the
// caller's clock, as Release's notBefore.
func (f *Frontier) DeferHost(ctx context.Context, host string, until time.Time) error {
	c := &fcall{script: deferScript, shard: f.shard(host), args: []any{f.clock(), host, f.ahead(until)}}
	return f.run(ctx, []*fcall{c}, false)
}

// hostOf returns the host of a normalized URL: what follows the scheme,
// up to the path.
func hostOf(u string) string {
	_, rest, _ := strings.Cut(u, "://")
	h, _, _ := strings.Cut(rest, "/")
	if i := strings.LastIndexByte(h, '@'); i >= 0 {
		h = h[i+1:]
	}
	h, _, _ = strings.Cut(h, "?")
	return h
}
