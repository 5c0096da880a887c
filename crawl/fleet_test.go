package crawl

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/testbed"
)

// memFrontier is a Frontier in memory with the semantics the job relies on
// (fencing tokens, refused late results), for the job's own tests; the
// Redis frontier has its own (redisstore).
type memFrontier struct {
	mu      sync.Mutex
	queue   []Leased         // pending, FIFO
	leased  map[string]int64 // url → current token
	leases  map[string]int
	done    map[string]int64 // url → the token its result was committed under
	records map[string][]byte
	commits map[string]int // accepted commits per URL: must end at 1
	tok     int64
	late    int
	// failCommits fails this many Commit calls.
	failCommits int
	// deferred and released record DeferHost and Release calls.
	deferred map[string]time.Time
	released map[string]time.Time
}

func (f *memFrontier) DeferHost(_ context.Context, host string, until time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.deferred == nil {
		f.deferred = map[string]time.Time{}
	}
	f.deferred[host] = until
	return nil
}

// held is how many URLs are leased and not committed.
func (f *memFrontier) held() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.leased)
}

func newMemFrontier(urls []string) *memFrontier {
	f := &memFrontier{leased: map[string]int64{}, leases: map[string]int{}, done: map[string]int64{},
		records: map[string][]byte{}, commits: map[string]int{}}
	for _, u := range urls {
		p, _ := url.Parse(u)
		f.queue = append(f.queue, Leased{URL: u, Host: p.Host})
	}
	return f
}

func (f *memFrontier) Lease(_ context.Context, max int, skip []string) ([]Leased, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	skipped := map[string]bool{}
	for _, h := range skip {
		skipped[h] = true
	}
	var out []Leased
	kept := f.queue[:0]
	for _, l := range f.queue {
		if len(out) < max && !skipped[l.Host] {
			f.tok++
			f.leases[l.URL]++
			l.Token, l.Leases, l.Expires = f.tok, f.leases[l.URL], time.Now().Add(time.Minute)
			f.leased[l.URL] = l.Token
			out = append(out, l)
			continue
		}
		kept = append(kept, l)
	}
	f.queue = kept
	return out, nil
}

func (f *memFrontier) Extend(_ context.Context, ls []Leased) ([]bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	lost := make([]bool, len(ls))
	for i, l := range ls {
		lost[i] = f.leased[l.URL] != l.Token
	}
	return lost, nil
}

func (f *memFrontier) Commit(_ context.Context, cs []Committed) ([]bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failCommits > 0 {
		f.failCommits--
		return nil, errors.New("frontier unreachable")
	}
	acc := make([]bool, len(cs))
	for i, c := range cs {
		switch {
		case f.leased[c.URL] == c.Token && c.Token != 0:
			delete(f.leased, c.URL)
			f.done[c.URL] = c.Token
			f.records[c.URL] = c.Record
			f.commits[c.URL]++
			acc[i] = true
		case f.done[c.URL] == c.Token:
			acc[i] = true // the same commit again
		default:
			f.late++
		}
	}
	return acc, nil
}

func (f *memFrontier) Release(_ context.Context, ls []Leased, notBefore time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.released == nil {
		f.released = map[string]time.Time{}
	}
	for _, l := range ls {
		if f.leased[l.URL] == l.Token {
			delete(f.leased, l.URL)
			f.queue = append(f.queue, Leased{URL: l.URL, Host: l.Host})
			f.released[l.URL] = notBefore
		}
	}
	return nil
}

func (f *memFrontier) Finished(context.Context) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.queue) == 0 && len(f.leased) == 0, nil
}

// expire takes u's lease away from its holder, as its expiry does, and
// puts u first in the queue.
func (f *memFrontier) expire(u string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.leased[u]; ok {
		delete(f.leased, u)
		p, _ := url.Parse(u)
		f.queue = append([]Leased{{URL: u, Host: p.Host}}, f.queue...)
	}
}

func (f *memFrontier) check(t *testing.T, urls []string) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, u := range urls {
		if f.commits[u] != 1 {
			t.Errorf("%s: %d committed results, want 1", u, f.commits[u])
		}
	}
	if len(f.commits) != len(urls) {
		t.Errorf("%d URLs committed, want %d", len(f.commits), len(urls))
	}
}

func runFleetJob(t *testing.T, ctx context.Context, dir string, tr *polite.Transport, fr Frontier, opts Options) (Summary, error) {
	t.Helper()
	opts.Transport, opts.Frontier = tr, fr
	j, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	return j.Run(ctx, nil)
}

// Three workers on one frontier: every URL fetched by one of them, one
// committed result each, and each worker's results are its own.
func TestFleetWorkersShareOneFrontier(t *testing.T) {
	srv := testbed.NewServer(testbed.HostConfig{Name: "a.test"}, testbed.HostConfig{Name: "b.test"},
		testbed.HostConfig{Name: "c.test", Rate: 50, Burst: 5})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var urls []string
	for i := range 60 {
		for _, h := range []string{"a.test", "b.test", "c.test"} {
			urls = append(urls, fmt.Sprintf("http://%s/page/%d", h, i))
		}
	}
	fr := newMemFrontier(urls)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	sums := make([]Summary, 3)
	dirs := make([]string, 3)
	for w := range 3 {
		dirs[w] = t.TempDir()
		tr := &polite.Transport{Base: srv.Transport(), Limits: polite.Limits{Rate: 200, Burst: 10, Concurrency: 4}}
		wg.Go(func() {
			sum, err := runFleetJob(t, ctx, dirs[w], tr, fr, Options{Workers: 4, FleetPoll: 20 * time.Millisecond})
			if err != nil {
				t.Error(err)
			}
			sums[w] = sum
		})
	}
	wg.Wait()
	fr.check(t, urls)
	accepted, seen := 0, map[string]bool{}
	for w, sum := range sums {
		if sum.Fleet == nil || sum.Fleet.Late != 0 || sum.Interrupted {
			t.Errorf("worker %d: %+v", w, sum)
			continue
		}
		accepted += sum.Fleet.Accepted
		for _, r := range readResults(t, dirs[w]) {
			if seen[r.URL] {
				t.Errorf("%s in two workers' results", r.URL)
			}
			seen[r.URL] = true
			if r.Outcome != OK {
				t.Errorf("%s: %s", r.URL, r.Outcome)
			}
		}
	}
	if accepted != len(urls) || len(seen) != len(urls) {
		t.Errorf("accepted %d, results %d, want %d", accepted, len(seen), len(urls))
	}
	// Hosts that refuse nothing (c.test's 429s are retried, and its
	// robots.txt may be among them) saw each of their URLs once.
	if got := pages(srv, "a.test") + pages(srv, "b.test"); got != int64(len(urls))*2/3 {
		t.Errorf("%d requests for %d URLs", got, len(urls)*2/3)
	}
}

// A worker whose lease went to another worker while its request was out:
// its result is refused (Late), the other's is the URL's, once.
func TestFleetLateResultRefused(t *testing.T) {
	const u = "/slow"
	arrived := make(chan struct{}, 2)
	release := make(chan struct{})
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			arrived <- struct{}{}
			<-release
		}
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	urls := []string{srv.URL + u}
	fr := newMemFrontier(urls)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tr := func() *polite.Transport {
		return &polite.Transport{Base: srv.Client().Transport}
	}
	first := make(chan Summary, 1)
	go func() {
		sum, err := runFleetJob(t, ctx, t.TempDir(), tr(), fr, Options{Workers: 1, FleetPoll: 20 * time.Millisecond})
		if err != nil {
			t.Error(err)
		}
		first <- sum
	}()
	<-arrived
	fr.expire(urls[0])
	second, err := runFleetJob(t, ctx, t.TempDir(), tr(), fr, Options{Workers: 1, FleetPoll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	close(release)
	sum := <-first
	fr.check(t, urls)
	if sum.Fleet.Late != 1 || sum.Fleet.Accepted != 0 || second.Fleet.Accepted != 1 {
		t.Errorf("first %+v, second %+v", sum.Fleet, second.Fleet)
	}
}

// Results the frontier could not take (it did not answer) are sent by the
// worker's next run, not fetched again.
func TestFleetResendsResultsAfterRestart(t *testing.T) {
	srv := testbed.NewServer(testbed.HostConfig{Name: "a.test"})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var urls []string
	for i := range 20 {
		urls = append(urls, fmt.Sprintf("http://a.test/page/%d", i))
	}
	fr := newMemFrontier(urls)
	fr.failCommits = 1 << 30
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j, err := Open(dir, Options{Transport: fastTransport(srv), Frontier: fr, Workers: 4, FleetPoll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	j.drain = 50 * time.Millisecond
	go func() {
		for pages(srv, "a.test") < int64(len(urls)) {
			time.Sleep(10 * time.Millisecond)
		}
		cancel() // every URL fetched; none taken by the frontier
	}()
	sum, err := j.Run(ctx, nil)
	j.Close()
	if err != nil {
		t.Fatal(err)
	}
	if sum.Fleet.Accepted != 0 || sum.DoneNow != len(urls) {
		t.Fatalf("first run: %+v %+v", sum, sum.Fleet)
	}
	fr.mu.Lock()
	fr.failCommits = 0
	fr.mu.Unlock()
	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Minute)
	defer cancel2()
	sum, err = runFleetJob(t, ctx2, dir, fastTransport(srv), fr, Options{Workers: 4, FleetPoll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	fr.check(t, urls)
	if got := pages(srv, "a.test"); got != int64(len(urls)) {
		t.Errorf("%d requests for %d URLs", got, len(urls))
	}
	if sum.Fleet.Accepted != len(urls) || sum.Interrupted {
		t.Errorf("second run: %+v %+v", sum, sum.Fleet)
	}
}

// A worker given a directory with a list of its own is refused: the list
// would never be fetched, nor the fleet's URLs kept apart from it.
func TestFleetRefusesAJobDir(t *testing.T) {
	dir := t.TempDir()
	j := loadJob(t, dir, "http://a.test/1\n", Options{})
	j.Close()
	_, err := runFleetJob(t, context.Background(), dir, &polite.Transport{}, newMemFrontier(nil), Options{})
	if err == nil || !strings.Contains(err.Error(), "directory of its own") {
		t.Fatalf("err = %v", err)
	}
}

// pages counts the page requests host answered (robots.txt and refusals
// left out).
func pages(srv *testbed.Server, host string) int64 {
	st := srv.Host(host).Stats()
	return st.Admitted - st.Robots
}

func fastTransport(srv *testbed.Server) *polite.Transport {
	return &polite.Transport{Base: srv.Transport(), Limits: polite.Limits{Rate: 500, Burst: 20, Concurrency: 4}}
}

// A host that names a long pause (Retry-After: 3) has its URLs not yet
// sent given back to the frontier, due when the pause ends, and is held
// back there: the fleet's leases go to hosts that can be sent to.
func TestFleetPausedHostHandedBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var urls []string
		for i := range 6 {
			urls = append(urls, fmt.Sprintf("http://paused.test/p/%d", i))
		}
		fr := newMemFrontier(urls)
		var (
			mu       sync.Mutex
			first    string    // the page that was refused
			refused  time.Time // when
			refusing atomic.Bool
		)
		rt := rtFunc(func(req *http.Request) (*http.Response, error) {
			w := httptest.NewRecorder()
			switch {
			case req.URL.Path == "/robots.txt":
				w.WriteHeader(http.StatusNotFound)
			case refusing.CompareAndSwap(false, true):
				// Answer once the job holds another of the host's URLs
				// unsent: a 429 that came back before the feeder
				// leased one would leave nothing to give back (it
				// leases no more of a paused host).
				for i := 0; i < 100 && fr.held() < 2; i++ {
					time.Sleep(time.Millisecond)
				}
				mu.Lock()
				first, refused = req.URL.String(), time.Now()
				mu.Unlock()
				w.Header().Set("Retry-After", "3")
				w.WriteHeader(http.StatusTooManyRequests)
			default:
				fmt.Fprint(w, "ok")
			}
			res := w.Result()
			res.Request = req
			return res, nil
		})
		tr := &polite.Transport{Base: rt, Limits: polite.Limits{Rate: 100, Burst: 1, Concurrency: 1}}
		sum, err := runFleetJob(t, context.Background(), t.TempDir(), tr, fr, Options{Workers: 4, FleetPoll: 20 * time.Millisecond, Bodies: BodiesNone})
		if err != nil {
			t.Fatal(err)
		}
		fr.check(t, urls)
		mu.Lock()
		defer mu.Unlock()
		fr.mu.Lock()
		defer fr.mu.Unlock()
		if until, ok := fr.deferred["paused.test"]; !ok || until.Sub(refused) < 3*time.Second || until.Sub(refused) > 3100*time.Millisecond {
			t.Errorf("host held back until %v after the 429 (%v), want 3 s on", until.Sub(refused), ok)
		}
		if len(fr.released) == 0 || sum.Fleet.Released == 0 {
			t.Errorf("nothing given back (released %v, summary %+v)", fr.released, sum.Fleet)
		}
		for u, nb := range fr.released {
			if u == first {
				t.Errorf("%s, already tried, was given back: its attempts are counted here", u)
			}
			if d := nb.Sub(refused); d < 3*time.Second || d > 3100*time.Millisecond {
				t.Errorf("%s given back due %v after the 429, want at the pause's end (3 s)", u, d)
			}
		}
	})
}

// rtFunc is an http.RoundTripper in memory: synctest's fake clock runs
// only while no goroutine waits on a real socket.
type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A fleet worker's credentials go only to the hosts its own list named
// (Options.CredentialsFor), never to another worker's URLs it leases.
func TestFleetCredentialsStayWithTheirHosts(t *testing.T) {
	var mu sync.Mutex
	auth := map[string]int{} // host → requests that carried Authorization
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			mu.Lock()
			auth[r.Host]++
			mu.Unlock()
		}
		fmt.Fprint(w, "ok")
	})
	mine, theirs := httptest.NewServer(handler), httptest.NewServer(handler)
	defer mine.Close()
	defer theirs.Close()
	var urls []string
	for i := range 4 {
		urls = append(urls, fmt.Sprintf("%s/p/%d", mine.URL, i), fmt.Sprintf("%s/p/%d", theirs.URL, i))
	}
	fr := newMemFrontier(urls)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	myHost := strings.TrimPrefix(mine.URL, "http://")
	tr := &polite.Transport{Base: http.DefaultTransport, IgnoreRobots: true, Limits: polite.Limits{Rate: 100, Burst: 5, Concurrency: 2}}
	_, err := runFleetJob(t, ctx, t.TempDir(), tr, fr, Options{Workers: 2, FleetPoll: 20 * time.Millisecond,
		Header:         http.Header{"Authorization": {"Bearer s3cret"}},
		CredentialsFor: func(host string) bool { return host == myHost }})
	if err != nil {
		t.Fatal(err)
	}
	fr.check(t, urls)
	mu.Lock()
	defer mu.Unlock()
	if auth[myHost] != 4 || auth[strings.TrimPrefix(theirs.URL, "http://")] != 0 {
		t.Errorf("requests with Authorization by host: %v; want 4 to %s and none to the other", auth, myHost)
	}
}

// `polite retry --redis` puts a committed URL back in the queue; when
// the worker that fetched it leases it again, it must fetch it again, not
// resend its old result.
func TestFleetRetriedURLFetchedAgain(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		if n.Add(1) == 1 {
			w.WriteHeader(http.StatusNotFound) // first fetch: some outcome to retry
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	urls := []string{srv.URL + "/x"}
	fr := newMemFrontier(urls)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr := func() *polite.Transport { return &polite.Transport{Base: srv.Client().Transport} }
	if _, err := runFleetJob(t, ctx, dir, tr(), fr, Options{Workers: 1, FleetPoll: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	// What Frontier.Retry does to a committed result: dropped, URL queued again.
	fr.mu.Lock()
	delete(fr.done, urls[0])
	fr.queue = append(fr.queue, newMemFrontier(urls).queue...)
	fr.mu.Unlock()
	if _, err := runFleetJob(t, ctx, dir, tr(), fr, Options{Workers: 1, FleetPoll: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if got := n.Load(); got != 2 {
		t.Errorf("%d requests for /x, want 2: the retried URL was not fetched again; committed record %s", got, fr.records[urls[0]])
	}
}

// A worker's directory used for a new crawl (another Frontier ID: a Redis
// that lost its data, or the next crawl on this --out) keeps its results,
// as a job's --out does for a rerun: each is sent to the new frontier when
// it leases the URL, not fetched again. Under the same crawl, a URL leased
// again after its result was taken is fetched anew (see
// TestFleetRetriedURLFetchedAgain).
func TestFleetNewCrawlSameDirKeepsResults(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, "version %d", n.Add(1))
	}))
	defer srv.Close()
	urls := []string{srv.URL + "/x"}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var fr *memFrontier
	for id := range int64(2) {
		fr = newMemFrontier(urls) // a crawl begun anew
		if _, err := runFleetJob(t, ctx, dir, &polite.Transport{Base: srv.Client().Transport}, fr,
			Options{Workers: 1, FleetPoll: 20 * time.Millisecond, FrontierID: id + 1}); err != nil {
			t.Fatal(err)
		}
	}
	fr.check(t, urls)
	if got := n.Load(); got != 1 || !strings.Contains(string(fr.records[urls[0]]), `"bytes":9`) {
		t.Errorf("%d requests over two crawls, record %s: want the first crawl's result sent to the second", got, fr.records[urls[0]])
	}
}

// A worker whose commits always fail (e.g. --wait-aof on a Redis
// without AOF, or before 7.2) should end, not spin forever.
func TestFleetCommitsAlwaysFailEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fr := newMemFrontier([]string{"http://a.test/x"})
		fr.failCommits = 1 << 30
		tr := &polite.Transport{Base: &pageLog{}}
		j, err := Open(t.TempDir(), Options{Transport: tr, Frontier: fr, Workers: 1, FleetPoll: 20 * time.Millisecond, Bodies: BodiesNone})
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		start := time.Now()
		_, err = j.Run(context.Background(), nil)
		// The give-up (2 minutes of refusals), then a backoff of at most
		// 5 s and the drain.
		if d := time.Since(start); d < fleetAckGiveUp || d > fleetAckGiveUp+10*time.Second || err == nil || !strings.Contains(err.Error(), "took no result") {
			t.Errorf("Run returned after %v with %v: want an error once the frontier took nothing for %v", d, err, fleetAckGiveUp)
		}
	})
}

// A lease that expires while this worker still holds its URL (in
// flight, or queued), re-leased to this same worker: two items with one id.
func TestFleetLeasedAgainWhileHeld(t *testing.T) {
	arrived := make(chan struct{}, 4)
	release := make(chan struct{})
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		k := n.Add(1)
		arrived <- struct{}{}
		if k == 1 {
			<-release
		}
		fmt.Fprintf(w, "fetch %d", k)
	}))
	defer srv.Close()
	urls := []string{srv.URL + "/slow"}
	fr := newMemFrontier(urls)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dir := t.TempDir()
	type out struct {
		sum Summary
		err error
	}
	done := make(chan out, 1)
	go func() {
		sum, err := runFleetJob(t, ctx, dir, &polite.Transport{Base: srv.Client().Transport}, fr, Options{Workers: 2, FleetPoll: 20 * time.Millisecond})
		done <- out{sum, err}
	}()
	<-arrived
	fr.expire(urls[0]) // the lease expired and was reclaimed; the same worker leases it again
	select {
	case <-arrived:
		t.Logf("the same worker fetched its own URL a second time while the first fetch was out")
	case <-time.After(2 * time.Second):
	}
	close(release)
	o := <-done
	t.Logf("err %v, summary %+v fleet %+v, requests %d", o.err, o.sum, o.sum.Fleet, n.Load())
	rs := readResults(t, dir)
	t.Logf("results.jsonl lines: %d", len(rs))
	fr.check(t, urls)
	if len(rs) != 1 || o.err != nil {
		t.Errorf("%d lines in results.jsonl for 1 URL (err %v)", len(rs), o.err)
	}
}

// A host whose URLs a fleet worker leases a few at a time is let go each
// time it runs out, and taken back when more come: one host in the
// progress table, its counts whole (make fleet-scale: "… and 4076 more
// hosts" for 1,000, hosts listed twice).
func TestFleetHostTakenBackWhole(t *testing.T) {
	srv := testbed.NewServer(testbed.HostConfig{Name: "a.test"}, testbed.HostConfig{Name: "b.test"})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var urls []string
	for i := range 10 {
		urls = append(urls, fmt.Sprintf("http://a.test/p/%d", i), fmt.Sprintf("http://b.test/p/%d", i))
	}
	fr := newMemFrontier(urls)
	j, err := Open(t.TempDir(), Options{Transport: fastTransport(srv), Frontier: fr, Workers: 1, LeaseAhead: 1, FleetPoll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := j.Run(ctx, nil); err != nil {
		t.Fatal(err)
	}
	fr.check(t, urls)
	p := j.Progress(-1)
	seen := map[string]int{}
	for _, h := range p.Hosts {
		seen[h.Host]++
		if h.Done != 10 {
			t.Errorf("%s: %d done in the progress table, want 10", h.Host, h.Done)
		}
	}
	if len(p.Hosts) != 2 || seen["a.test"] != 1 || seen["b.test"] != 1 {
		t.Errorf("progress table hosts %v, want a.test and b.test once each", seen)
	}
}
