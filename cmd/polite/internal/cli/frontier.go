package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/polite-go/polite/crawl"
	"github.com/polite-go/polite/crawl/scope"
	"github.com/polite-go/polite/redisstore"
)

// One crawl over many machines (issue 31): with --redis, a worker's list
// goes into the fleet's frontier in Redis (deduplicated, so lists given to
// several workers, or given twice, yield each URL once), and every worker
// of the fleet leases its URLs from there; a worker started without a list
// joins. Each result is committed to the frontier under its lease's fencing
// token, so each URL has exactly one committed result whatever becomes of
// the workers. The job ends when the frontier is empty and no lease is out.

// frontierCallTimeout bounds one call to the frontier: longer than the
// store's redisTimeout, since a call carries a batch.
const frontierCallTimeout = 5 * time.Second

// enqueueBatch is how many URLs go to the frontier in one call, and
// enqueueInFlight how many calls at once.
const (
	enqueueBatch    = 2000
	enqueueInFlight = 3
)

// fleetFrontier is one worker's side of the fleet's frontier, as the crawl
// job wants it.
type fleetFrontier struct {
	f      *redisstore.Frontier
	worker string
	// A frontier that has never had a URL has not begun, not ended: a
	// worker started before the list is enqueued waits for it, up to
	// joinWait from since (then it ends: nothing came).
	since    time.Time
	joinWait time.Duration
	begun    *atomic.Bool
}

func toLease(l crawl.Leased) redisstore.Lease {
	return redisstore.Lease{URL: l.URL, Host: l.Host, Lane: redisstore.Lane(l.Lane), Token: l.Token, Leases: l.Leases, Expires: l.Expires,
		Depth: l.Depth, FoundOn: l.FoundOn}
}

func toLeases(ls []crawl.Leased) []redisstore.Lease {
	out := make([]redisstore.Lease, len(ls))
	for i, l := range ls {
		out[i] = toLease(l)
	}
	return out
}

func (a fleetFrontier) Lease(ctx context.Context, max int, skip []string) ([]crawl.Leased, error) {
	ls, err := a.f.LeaseExcept(ctx, a.worker, max, skip)
	out := make([]crawl.Leased, len(ls))
	for i, l := range ls {
		// The two number their lanes alike (normal 0, interactive 1, bulk 2).
		out[i] = crawl.Leased{URL: l.URL, Host: l.Host, Lane: crawl.Lane(l.Lane), Token: l.Token, Leases: l.Leases, Expires: l.Expires,
			Depth: l.Depth, FoundOn: l.FoundOn, Kind: kindOf(l.Sitemap), Hops: l.Hops}
	}
	return out, err
}

// Interactive says whether the fleet has had an interactive URL
// (crawl.InteractiveFrontier).
func (a fleetFrontier) Interactive() bool { return a.f.Interactive() }

// Enqueue adds the links a worker found (crawl.LinkFrontier).
func (a fleetFrontier) Enqueue(ctx context.Context, found []crawl.Found) error {
	es := make([]redisstore.Entry, len(found))
	for i, f := range found {
		es[i] = redisstore.Entry{URL: f.URL, Host: f.Host, Lane: redisstore.Lane(f.Lane), Depth: f.Depth, FoundOn: f.FoundOn,
			Sitemap: f.Kind == crawl.KindSitemap, Hops: f.Hops}
	}
	_, err := a.f.Enqueue(ctx, es)
	return err
}

// kindOf is a leased URL's kind: a sitemap, or a page.
func kindOf(sitemap bool) crawl.Kind {
	if sitemap {
		return crawl.KindSitemap
	}
	return crawl.KindPage
}

func (a fleetFrontier) AddRoots(ctx context.Context, roots []string) error {
	return a.f.AddRoots(ctx, roots)
}

func (a fleetFrontier) Roots(ctx context.Context) ([]string, error) { return a.f.Roots(ctx) }

func (a fleetFrontier) Extend(ctx context.Context, ls []crawl.Leased) ([]bool, error) {
	return a.f.Extend(ctx, toLeases(ls))
}

func (a fleetFrontier) Commit(ctx context.Context, cs []crawl.Committed) ([]bool, error) {
	out := make([]redisstore.Commit, len(cs))
	for i, c := range cs {
		out[i] = redisstore.Commit{Lease: toLease(c.Leased), Outcome: c.Outcome, Record: c.Record, Worker: a.worker}
	}
	return a.f.Commit(ctx, out)
}

func (a fleetFrontier) Release(ctx context.Context, ls []crawl.Leased, notBefore time.Time) error {
	return a.f.Release(ctx, toLeases(ls), notBefore)
}

func (a fleetFrontier) Finished(ctx context.Context) (bool, error) {
	fin, err := a.f.Finished(ctx)
	if err != nil || !fin || a.begun.Load() {
		return fin, err
	}
	st, err := a.f.Stats(ctx)
	if err != nil {
		return false, err
	}
	if st.Done+st.Dead+st.Pending+st.Leased > 0 {
		a.begun.Store(true)
		return true, nil
	}
	return time.Since(a.since) > a.joinWait, nil
}

func (a fleetFrontier) DeferHost(ctx context.Context, host string, until time.Time) error {
	return a.f.DeferHost(ctx, host, until)
}

// newFrontier opens the fleet's frontier on c.
func (o *fetchOptions) newFrontier(c redis.UniversalClient) (*redisstore.Frontier, error) {
	return redisstore.NewFrontier(c, redisstore.FrontierOptions{
		Prefix:   fleetPrefix(o.Fleet),
		LeaseTTL: o.LeaseTTL,
		WaitAOF:  o.WaitAOF,
		Timeout:  frontierCallTimeout,
	})
}

// fleetPrefix is the prefix of a fleet's keys in Redis.
func fleetPrefix(name string) string { return "polite:" + name + ":" }

// workerName is this worker's name in the fleet's accounts: --worker, or
// the machine's name and the process's id.
func (o *fetchOptions) workerName() string {
	if o.Worker != "" {
		return o.Worker
	}
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "worker"
	}
	return h + ":" + strconv.Itoa(os.Getpid())
}

// enqueued is what putting a list into the frontier came to.
type enqueued struct {
	lines, added, invalid int
	firstInvalid          string
	// hosts are the hosts (host[:port], as in the URLs) the list named,
	// when asked for: the only ones this worker sends credentials to.
	hosts map[string]bool
}

// enqueue reads a URL list into the frontier, a batch at a time: lines that
// are not URLs are counted (and the first named), never enqueued.
func enqueue(ctx context.Context, f *redisstore.Frontier, r io.Reader, o *fetchOptions) (enqueued, error) {
	var res enqueued
	if hasCredentials(o.Header) {
		res.hosts = map[string]bool{}
	}
	lane, _ := crawl.ParseLane(o.Lane) // checked by parse
	// enqueueInFlight batches go to Redis at once while the list is read
	// on: one at a time, Redis waited on the client between batches
	// (make fleet-scale: 83,000 URLs/s, Redis busy 74 % of the time).
	type sent struct {
		n   int
		err error
	}
	var (
		inflight = make(chan struct{}, enqueueInFlight)
		answers  = make(chan sent, enqueueInFlight)
		pending  int
		firstErr error
	)
	collect := func() {
		a := <-answers
		<-inflight
		pending--
		res.added += a.n
		if firstErr == nil {
			firstErr = a.err
		}
	}
	batch := make([]redisstore.Entry, 0, enqueueBatch)
	// With --follow, each batch's roots go to the frontier before its
	// URLs: a worker that leases one finds its scope there.
	var roots *scope.Scope
	if o.follow != nil {
		roots = scope.New(o.follow.Rules)
	}
	flush := func() error {
		if len(batch) == 0 {
			return firstErr
		}
		if roots != nil {
			cctx, cancel := context.WithTimeout(ctx, frontierCallTimeout)
			err := f.AddRoots(cctx, roots.Roots())
			cancel()
			if err != nil {
				return fmt.Errorf("adding the scope's roots to the frontier: %w", err)
			}
			roots = scope.New(o.follow.Rules)
		}
		for len(inflight) == cap(inflight) {
			collect()
		}
		inflight <- struct{}{}
		pending++
		go func(b []redisstore.Entry) {
			cctx, cancel := context.WithTimeout(ctx, 4*frontierCallTimeout)
			n, err := f.Enqueue(cctx, b)
			cancel()
			answers <- sent{n, err}
		}(batch)
		batch = make([]redisstore.Entry, 0, enqueueBatch)
		return firstErr
	}
	err := crawl.ReadLinesLane(r, o.MaxURLLen, lane, func(l crawl.Line) error {
		if o.MaxURLs > 0 && res.lines >= o.MaxURLs {
			return errStopList
		}
		res.lines++
		if l.Problem != "" || l.Host == "" {
			res.invalid++
			if res.firstInvalid == "" {
				res.firstInvalid = fmt.Sprintf("%q: %s", cutText(l.Text, 80), l.Problem)
			}
			return nil
		}
		if roots != nil && roots.AddSeed(l.Text) == nil {
			// Kept as links are: one page is one URL.
			if n, err := scope.Normalize(l.Text, o.follow.Rules.Norm); err == nil {
				l.Text = n
			}
		}
		// The two number their lanes alike (TestLanesNumberedAlike).
		if res.hosts != nil {
			// As the frontier hands the URL out: normalised (host
			// lower-case, default port dropped), as requests name it.
			if n, err := redisstore.NormalizeURL(l.Text); err == nil {
				if u, err := url.Parse(n); err == nil {
					res.hosts[u.Host] = true
				}
			}
		}
		batch = append(batch, redisstore.Entry{URL: l.Text, Host: l.Host, Lane: redisstore.Lane(l.Lane)})
		if len(batch) == enqueueBatch {
			return flush()
		}
		return nil
	})
	if errors.Is(err, errStopList) {
		err = nil
	}
	if err == nil {
		err = flush()
	}
	for pending > 0 {
		collect()
	}
	return res, errors.Join(err, firstErr)
}

var errStopList = errors.New("enough lines")

func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// frontier reports whether the job works the fleet's shared frontier.
func (o *fetchOptions) frontier() bool { return o.Redis != "" && !o.OwnList }

// parseFleet checks the frontier's flags.
func (o *fetchOptions) parseFleet() error {
	if o.Lane == "" {
		o.Lane = "normal" // polite demo has no --lane
	}
	if _, err := crawl.ParseLane(o.Lane); err != nil {
		return usageErr("--lane %q: want interactive, normal or bulk", o.Lane)
	}
	if o.Redis == "" {
		for name, set := range map[string]bool{"--enqueue-only": o.EnqueueOnly, "--own-list": o.OwnList,
			"--worker": o.Worker != "", "--wait-aof": o.WaitAOF != 0} {
			if set {
				return usageErr("%s needs --redis: it is about a fleet's frontier", name)
			}
		}
		return nil
	}
	if o.EnqueueOnly && (!o.frontier() || o.List == "") {
		return usageErr("--enqueue-only needs --redis and a URLFILE (and not --own-list)")
	}
	if !o.frontier() {
		return nil
	}
	if o.JoinWait <= 0 {
		return usageErr("--join-wait %v: must be positive", o.JoinWait)
	}
	if o.LeaseTTL < 2*time.Second {
		return usageErr("--lease-ttl %v: must be at least 2s", o.LeaseTTL)
	}
	if o.WaitAOF < 0 {
		return usageErr("--wait-aof %v: must not be negative", o.WaitAOF)
	}
	return nil
}

// hasCredentials reports whether -H gave a credentials field.
func hasCredentials(h http.Header) bool {
	for _, k := range []string{"Authorization", "Proxy-Authorization", "Cookie"} {
		if _, ok := h[k]; ok {
			return true
		}
	}
	return false
}
