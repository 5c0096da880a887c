package redisstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// FrontierStats are a frontier's counters, summed over its shards. The
// scripts keep them exact as they change state, so Stats reads a hash per
// shard.
type FrontierStats struct {
	Pending   int64 // queued or delayed
	Leased    int64 // leases out (expired ones included until reclaimed)
	Done      int64 // committed results
	Dead      int64 // dead letters
	Late      int64 // commits refused: the lease was no longer current
	Reclaimed int64 // expired leases put back in their queue
	Outcomes  map[string]int64
	Workers   map[string]WorkerStats
	// Hosts has some hosts, up to StatsHosts (HostsTruncated says when
	// there were more); HostStats reads any one.
	Hosts          map[string]HostStats
	HostsTruncated bool
}

// WorkerStats are one worker's counts.
type WorkerStats struct {
	Committed int64 // results it committed
	Leased    int64 // leases it holds
}

// HostStats are one host's counts.
type HostStats struct {
	Pending int64 // URLs not done yet: queued, delayed or leased
	Done    int64
}

// StatsHosts caps FrontierStats.Hosts.
const StatsHosts = 1000

// Stats returns the frontier's counters.
func (f *Frontier) Stats(ctx context.Context) (FrontierStats, error) {
	ctx, cancel := context.WithTimeout(ctx, f.o.Timeout)
	defer cancel()
	st := FrontierStats{Outcomes: map[string]int64{}, Workers: map[string]WorkerStats{}, Hosts: map[string]HostStats{}}
	pl := f.c.Pipeline()
	type shardCmds struct {
		counters *redis.MapStringStringCmd
		hosts    [2]*redis.ScanCmd // pending, done: one HSCAN step each, so a shard of many hosts costs no more
	}
	cmds := make([]shardCmds, f.o.Shards)
	per := int64(StatsHosts/f.o.Shards + 1)
	for s := range cmds {
		k := f.keys(s)
		cmds[s] = shardCmds{pl.HGetAll(ctx, k[4]), [2]*redis.ScanCmd{pl.HScan(ctx, k[7], 0, "", per), pl.HScan(ctx, k[8], 0, "", per)}}
	}
	if _, err := pl.Exec(ctx); err != nil {
		return st, fmt.Errorf("redisstore: frontier: stats: %w", err)
	}
	for _, c := range cmds {
		for field, v := range c.counters.Val() {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return st, fmt.Errorf("redisstore: frontier: stats: counter %q = %q", field, v)
			}
			switch {
			case field == "pending":
				st.Pending += n
			case field == "leased":
				st.Leased += n
			case field == "done":
				st.Done += n
			case field == "dead":
				st.Dead += n
			case field == "late":
				st.Late += n
			case field == "reclaimed":
				st.Reclaimed += n
			case strings.HasPrefix(field, "o:"):
				st.Outcomes[field[2:]] += n
			case strings.HasPrefix(field, "wc:"):
				w := st.Workers[field[3:]]
				w.Committed += n
				st.Workers[field[3:]] = w
			case strings.HasPrefix(field, "wl:"):
				w := st.Workers[field[3:]]
				w.Leased += n
				st.Workers[field[3:]] = w
			}
		}
		for i, sc := range c.hosts {
			kv, cursor := sc.Val()
			if cursor != 0 {
				st.HostsTruncated = true
			}
			for j := 0; j+1 < len(kv); j += 2 {
				h := kv[j]
				hs, ok := st.Hosts[h]
				if !ok && len(st.Hosts) >= StatsHosts {
					st.HostsTruncated = true
					continue
				}
				n, _ := strconv.ParseInt(kv[j+1], 10, 64)
				if i == 0 {
					hs.Pending = n
				} else {
					hs.Done = n
				}
				st.Hosts[h] = hs
			}
		}
	}
	return st, nil
}

// HostStats returns one host's counts.
func (f *Frontier) HostStats(ctx context.Context, host string) (HostStats, error) {
	ctx, cancel := context.WithTimeout(ctx, f.o.Timeout)
	defer cancel()
	k := f.keys(f.shard(host))
	pl := f.c.Pipeline()
	p, d := pl.HGet(ctx, k[7], host), pl.HGet(ctx, k[8], host)
	if _, err := pl.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return HostStats{}, fmt.Errorf("redisstore: frontier: host stats: %w", err)
	}
	pn, _ := p.Int64()
	dn, _ := d.Int64()
	return HostStats{Pending: pn, Done: dn}, nil
}

// Finished reports whether the crawl is over: in every shard nothing is
// pending (queued or delayed) and no lease is out. A lease that expired
// is still out until a Lease call reclaims it.
func (f *Frontier) Finished(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, f.o.Timeout)
	defer cancel()
	pl := f.c.Pipeline()
	cmds := make([]*redis.SliceCmd, f.o.Shards)
	for s := range cmds {
		cmds[s] = pl.HMGet(ctx, f.keys(s)[4], "pending", "leased")
	}
	if _, err := pl.Exec(ctx); err != nil {
		return false, fmt.Errorf("redisstore: frontier: finished: %w", err)
	}
	for _, c := range cmds {
		for _, v := range c.Val() {
			if v == nil {
				continue
			}
			s, _ := v.(string)
			if n, err := strconv.ParseInt(s, 10, 64); err != nil || n != 0 {
				return false, nil
			}
		}
	}
	return true, nil
}

// Result is a committed result as stored.
type Result struct {
	URL, Host, Worker, Outcome string
	Lane                       Lane
	Leases                     int
	Token                      int64
	Record                     []byte
	Depth                      int    // as enqueued (see Entry)
	FoundOn                    string // as enqueued (see Entry)
	Sitemap                    bool   // as enqueued (see Entry)
	Hops                       int    // as enqueued (see Entry)
}

// parseResult reads a stored result: lane leases "," token "," [ext]
// then host, URL, worker and outcome, each as <len>":"<bytes>, then the
// record.
func parseResult(v string) (Result, error) {
	var r Result
	bad := func(why string) (Result, error) {
		return Result{}, fmt.Errorf("redisstore: frontier: malformed result (%s): %.80q", why, v)
	}
	if len(v) < 1 || v[0] < '0' || v[0] >= '0'+byte(nLanes) {
		return bad("lane")
	}
	r.Lane = Lane(v[0] - '0')
	leases, rest, ok := number(v[1:], ',')
	if !ok || leases > math.MaxInt32 {
		return bad("leases")
	}
	r.Leases = int(leases)
	if r.Token, rest, ok = number(rest, ','); !ok {
		return bad("token")
	}
	if r.Depth, r.FoundOn, rest, ok = parseExt(rest); !ok {
		return bad("depth")
	}
	r.Depth, r.Hops, r.Sitemap = unpackDepth(r.Depth)
	var fields [4]string
	for i := range fields {
		if fields[i], rest, ok = field(rest); !ok {
			return bad("field " + strconv.Itoa(i))
		}
	}
	r.Host, r.URL, r.Worker, r.Outcome = fields[0], fields[1], fields[2], fields[3]
	r.Record = []byte(rest)
	return r, nil
}

// number reads a decimal number ended by sep from the front of s: digits
// only, no leading zero, at most 18 of them (as the scripts write).
func number(s string, sep byte) (n int64, rest string, ok bool) {
	i := strings.IndexByte(s, sep)
	if i < 1 || i > 18 || (i > 1 && s[0] == '0') {
		return 0, s, false
	}
	for _, c := range []byte(s[:i]) {
		if c < '0' || c > '9' {
			return 0, s, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, s[i+1:], true
}

// field reads <len>":"<bytes> from the front of s.
func field(s string) (f, rest string, ok bool) {
	n, rest, ok := number(s, ':')
	if !ok || n > int64(len(rest)) {
		return "", s, false
	}
	return rest[:n], rest[n:], true
}

// parseExt reads a record's or result's ext from the front of s, if
// it has one (lua/frontier_lib.lua): "+" depth "," <len>":"found_on. One
// that says nothing (depth 0, found on "") is malformed: the scripts
// write none then.
func parseExt(s string) (depth int, foundOn, rest string, ok bool) {
	if !strings.HasPrefix(s, "+") {
		return 0, "", s, true
	}
	d, rest, ok := number(s[1:], ',')
	if !ok || d > maxDepth {
		return 0, "", s, false
	}
	if foundOn, rest, ok = field(rest); !ok || (d == 0 && foundOn == "") {
		return 0, "", s, false
	}
	return int(d), foundOn, rest, true
}

// record is a URL's record as stored (lua/frontier_lib.lua, enc).
type record struct {
	State        byte // q queued, d delayed, l leased, x dead, c committed
	Lane         Lane
	Leases       int
	Token        int64
	Host, Worker string
	URL          string
	Depth        int    // 0 in a committed record: its result has it
	FoundOn      string // "" in a committed record
	Sitemap      bool   // false in a committed record
	Hops         int    // 0 in a committed record
}

// parseRecord reads a URL's stored record.
func parseRecord(v string) (record, error) {
	var r record
	bad := func(why string) (record, error) {
		return record{}, fmt.Errorf("redisstore: frontier: malformed record (%s): %.80q", why, v)
	}
	if len(v) < 2 || strings.IndexByte("qdlxc", v[0]) < 0 {
		return bad("state")
	}
	if v[1] < '0' || v[1] >= '0'+byte(nLanes) {
		return bad("lane")
	}
	r.State, r.Lane = v[0], Lane(v[1]-'0')
	leases, rest, ok := number(v[2:], ',')
	if !ok || leases > math.MaxInt32 {
		return bad("leases")
	}
	r.Leases = int(leases)
	if r.Token, rest, ok = number(rest, ','); !ok {
		return bad("token")
	}
	if r.State == 'c' {
		if rest != "" {
			return bad("committed with a tail")
		}
		return r, nil
	}
	if r.Depth, r.FoundOn, rest, ok = parseExt(rest); !ok {
		return bad("depth")
	}
	r.Depth, r.Hops, r.Sitemap = unpackDepth(r.Depth)
	if r.Host, rest, ok = field(rest); !ok {
		return bad("host")
	}
	if r.Worker, rest, ok = field(rest); !ok {
		return bad("worker")
	}
	r.URL = rest
	return r, nil
}

// scan calls fn with each field and value of hash key, HSCAN by HSCAN,
// each bounded by the Frontier's timeout.
func (f *Frontier) scan(ctx context.Context, key string, fn func(field, value string) error) error {
	var cursor uint64
	for {
		c, cancel := context.WithTimeout(ctx, f.o.Timeout)
		kv, next, err := f.c.HScan(c, key, cursor, "", 512).Result()
		cancel()
		if err != nil {
			return fmt.Errorf("redisstore: frontier: HSCAN %s: %w", key, err)
		}
		if len(kv)%2 != 0 {
			return fmt.Errorf("redisstore: frontier: HSCAN %s: odd reply", key)
		}
		for i := 0; i < len(kv); i += 2 {
			if err := fn(kv[i], kv[i+1]); err != nil {
				return err
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// Results calls fn with each committed result's URL and record, shard by
// shard. HSCAN may return a field twice if its hash is rehashed meanwhile;
// Results hands on each URL once. It stops at fn's first error.
func (f *Frontier) Results(ctx context.Context, fn func(url string, record []byte) error) error {
	return f.EachResult(ctx, func(r Result) error { return fn(r.URL, r.Record) })
}

// EachResult is Results with all of each result: who committed it, its
// outcome, lane and token.
func (f *Frontier) EachResult(ctx context.Context, fn func(Result) error) error {
	for s := range f.o.Shards {
		seen := map[string]bool{}
		err := f.scan(ctx, f.keys(s)[5], func(fp, v string) error {
			if seen[fp] {
				return nil
			}
			seen[fp] = true
			r, err := parseResult(v)
			if err != nil {
				return err
			}
			return fn(r)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// DeadLetter is a URL leased MaxLeases times without a commit.
type DeadLetter struct {
	URL, Host string
	Lane      Lane
	Leases    int
	Reason    string
	Depth     int    // as enqueued (see Entry)
	FoundOn   string // as enqueued (see Entry)
}

// DeadLetters calls fn with each dead letter, shard by shard, once.
func (f *Frontier) DeadLetters(ctx context.Context, fn func(DeadLetter) error) error {
	for s := range f.o.Shards {
		if err := f.dead(ctx, s, func(_ string, d DeadLetter) error { return fn(d) }); err != nil {
			return err
		}
	}
	return nil
}

func (f *Frontier) dead(ctx context.Context, s int, fn func(fp string, d DeadLetter) error) error {
	k := f.keys(s)
	seen := map[string]bool{}
	return f.scan(ctx, k[6], func(fp, why string) error {
		if seen[fp] {
			return nil
		}
		seen[fp] = true
		c, cancel := context.WithTimeout(ctx, f.o.Timeout)
		v, err := f.c.HGet(c, k[0], fp).Result()
		cancel()
		if errors.Is(err, redis.Nil) {
			return nil // retried meanwhile
		}
		if err != nil {
			return fmt.Errorf("redisstore: frontier: dead letter: %w", err)
		}
		r, err := parseRecord(v)
		if err != nil {
			return err
		}
		if r.State != 'x' {
			return nil
		}
		return fn(fp, DeadLetter{URL: r.URL, Host: r.Host, Lane: r.Lane, Leases: r.Leases, Reason: why,
			Depth: r.Depth, FoundOn: r.FoundOn})
	})
}

// RetryFilter chooses what Retry puts back in the queues.
type RetryFilter struct {
	Dead     bool     // the dead letters
	Outcomes []string // committed results with one of these outcomes
	Host     string   // only this host's URLs, if set
}

// Retry queues again the dead letters and committed results filter
// chooses, as `polite retry` does: a dead letter with its lease count
// reset, a result dropped (uncounted) and its URL fetched again. It
// returns how many URLs it queued.
func (f *Frontier) Retry(ctx context.Context, filter RetryFilter) (n int, err error) {
	for s := range f.o.Shards {
		var args []any
		flush := func() error {
			if len(args) == 0 {
				return nil
			}
			c := &fcall{script: retryScript, shard: s, args: append([]any{f.clock()}, args...)}
			args = nil
			if err := f.run(ctx, []*fcall{c}, true); err != nil {
				return err
			}
			k, err := c.cmd.Int()
			n += k
			return err
		}
		add := func(fp string, tok int64) error {
			args = append(args, fp, tok)
			if len(args) >= 2*enqueueBatch {
				return flush()
			}
			return nil
		}
		// Sent in batches while HSCAN walks: what a batch removes is
		// not walked again, and a fingerprint seen twice is refused the
		// second time (its state or token has changed).
		if filter.Dead {
			err := f.dead(ctx, s, func(fp string, d DeadLetter) error {
				if filter.Host != "" && d.Host != filter.Host {
					return nil
				}
				return add(fp, 0)
			})
			if err != nil {
				return n, err
			}
		}
		if len(filter.Outcomes) > 0 {
			err := f.scan(ctx, f.keys(s)[5], func(fp, v string) error {
				r, err := parseResult(v)
				if err != nil {
					return err
				}
				if !slices.Contains(filter.Outcomes, r.Outcome) || (filter.Host != "" && r.Host != filter.Host) {
					return nil
				}
				return add(fp, r.Token)
			})
			if err != nil {
				return n, err
			}
		}
		if err := flush(); err != nil {
			return n, err
		}
	}
	return n, nil
}
