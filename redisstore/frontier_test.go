package redisstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/polite-go/polite/internal/redistest"
)

// fakeClock is a clock the test moves by hand; the scripts read it
// through FrontierOptions.Clock.
type fakeClock struct{ us atomic.Int64 }

func newClock() *fakeClock {
	c := &fakeClock{}
	c.us.Store(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC).UnixMicro())
	return c
}

func (c *fakeClock) Now() time.Time          { return time.UnixMicro(c.us.Load()) }
func (c *fakeClock) Advance(d time.Duration) { c.us.Add(d.Microseconds()) }

// newFrontier starts a redis-server and returns a Frontier on it with
// o's settings and a fake clock.
func newFrontier(t testing.TB, o FrontierOptions) (*Frontier, *fakeClock, redis.UniversalClient) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: redistest.Start(t)})
	t.Cleanup(func() { c.Close() })
	clk := newClock()
	if o.Clock == nil {
		o.Clock = clk.Now
	}
	f, err := NewFrontier(c, o)
	if err != nil {
		t.Fatal(err)
	}
	return f, clk, c
}

func urls(host string, from, to int) []Entry {
	var es []Entry
	for i := from; i < to; i++ {
		es = append(es, Entry{URL: fmt.Sprintf("https://%s/p/%d", host, i), Host: host})
	}
	return es
}

func mustEnqueue(t testing.TB, f *Frontier, es []Entry) int {
	t.Helper()
	n, err := f.Enqueue(context.Background(), es)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func mustLease(t testing.TB, f *Frontier, worker string, max int) []Lease {
	t.Helper()
	ls, err := f.Lease(context.Background(), worker, max)
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

func mustCommit(t testing.TB, f *Frontier, worker, outcome string, ls ...Lease) []bool {
	t.Helper()
	cs := make([]Commit, len(ls))
	for i, l := range ls {
		cs[i] = Commit{Lease: l, Outcome: outcome, Worker: worker, Record: []byte(`{"url":"` + l.URL + `"}`)}
	}
	ok, err := f.Commit(context.Background(), cs)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func mustStats(t testing.TB, f *Frontier) FrontierStats {
	t.Helper()
	st, err := f.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestNormalizeURL(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"HTTP://Example.COM", "http://example.com/"},
		{"http://example.com:80/a", "http://example.com/a"},
		{"https://example.com:443/a", "https://example.com/a"},
		{"https://example.com:8443/a", "https://example.com:8443/a"},
		{"http://example.com:443/a", "http://example.com:443/a"},
		{"https://example.com/a#frag", "https://example.com/a"},
		{"https://example.com/a/./b/../c", "https://example.com/a/c"},
		{"https://example.com/a/b/..", "https://example.com/a/"},
		{"https://example.com/../../x", "https://example.com/x"},
		{"https://example.com/a//b", "https://example.com/a//b"},
		{"https://example.com/A?B=C&a=b", "https://example.com/A?B=C&a=b"},
		{"https://example.com/%7Efoo", "https://example.com/%7Efoo"},
		{"https://[::1]:443/", "https://[::1]/"},
	} {
		got, err := NormalizeURL(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("NormalizeURL(%q) = %q, %v, want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"ftp://example.com/", "/relative", "https://", "http://%zz/"} {
		if got, err := NormalizeURL(bad); err == nil {
			t.Errorf("NormalizeURL(%q) = %q, want an error", bad, got)
		}
	}
}

// Two enqueuers at once, with overlapping halves, and again: each URL is
// added once.
func TestFrontierEnqueueDedupe(t *testing.T) {
	f, _, _ := newFrontier(t, FrontierOptions{})
	var es []Entry
	for h := range 20 {
		es = append(es, urls(fmt.Sprintf("h%d.example", h), 0, 150)...)
	}
	a, b := es[:2000], es[1000:] // 1000 in both
	var wg sync.WaitGroup
	var added atomic.Int64
	for _, part := range [][]Entry{a, b, a, b} {
		wg.Go(func() {
			n, err := f.Enqueue(context.Background(), part)
			if err != nil {
				t.Error(err)
			}
			added.Add(int64(n))
		})
	}
	wg.Wait()
	if got := added.Load(); got != int64(len(es)) {
		t.Errorf("added %d, want %d", got, len(es))
	}
	// The same URL spelled otherwise is a duplicate too.
	if n := mustEnqueue(t, f, []Entry{{URL: "HTTPS://h0.example:443/p/0#x", Host: "h0.example"}}); n != 0 {
		t.Errorf("Enqueue(a spelling of a known URL) = %d, want 0", n)
	}
	if st := mustStats(t, f); st.Pending != int64(len(es)) {
		t.Errorf("Pending = %d, want %d", st.Pending, len(es))
	}
	// Leased, then done: still known.
	ls := mustLease(t, f, "w", 1000)
	seen := map[string]bool{}
	for _, l := range ls {
		if seen[l.URL] {
			t.Fatalf("%s leased twice", l.URL)
		}
		seen[l.URL] = true
	}
	mustCommit(t, f, "w", "ok", ls...)
	if n := mustEnqueue(t, f, es); n != 0 {
		t.Errorf("Enqueue(all again, some done) = %d, want 0", n)
	}
}

func TestFrontierLeaseExtendCommit(t *testing.T) {
	f, clk, _ := newFrontier(t, FrontierOptions{LeaseTTL: 10 * time.Second})
	mustEnqueue(t, f, urls("a.example", 0, 3))
	ls := mustLease(t, f, "w1", 10)
	if len(ls) != 2 { // PerHost 2
		t.Fatalf("Lease = %d leases, want 2 (PerHost)", len(ls))
	}
	if ls[0].URL != "https://a.example/p/0" || ls[1].URL != "https://a.example/p/1" || ls[0].Leases != 1 {
		t.Errorf("Lease = %+v, want p/0 and p/1 first, leased once", ls)
	}
	if want := clk.Now().Add(10 * time.Second); !ls[0].Expires.Equal(want) {
		t.Errorf("Expires = %v, want %v", ls[0].Expires, want)
	}
	if ls[0].Token == ls[1].Token {
		t.Errorf("two leases share token %d", ls[0].Token)
	}
	st := mustStats(t, f)
	if st.Leased != 2 || st.Pending != 1 || st.Workers["w1"].Leased != 2 {
		t.Errorf("Stats = %+v, want 2 leased (by w1), 1 pending", st)
	}
	clk.Advance(8 * time.Second)
	lost, err := f.Extend(context.Background(), ls)
	if err != nil || slices.Contains(lost, true) {
		t.Fatalf("Extend = %v, %v, want none lost", lost, err)
	}
	clk.Advance(8 * time.Second) // past the first expiry, not the extended one
	if got := mustLease(t, f, "w2", 10); len(got) != 1 || got[0].URL != "https://a.example/p/2" {
		t.Fatalf("Lease after extending = %+v, want only p/2", got)
	}
	if ok := mustCommit(t, f, "w1", "ok", ls...); !ok[0] || !ok[1] {
		t.Fatalf("Commit = %v, want both accepted", ok)
	}
	if ok := mustCommit(t, f, "w1", "ok", ls[0]); !ok[0] {
		t.Errorf("Commit again = %v, want accepted", ok)
	}
	st = mustStats(t, f)
	if st.Done != 2 || st.Leased != 1 || st.Outcomes["ok"] != 2 || st.Workers["w1"] != (WorkerStats{Committed: 2}) ||
		st.Hosts["a.example"] != (HostStats{Pending: 1, Done: 2}) || st.Late != 0 {
		t.Errorf("Stats = %+v, want 2 done once each by w1, 1 leased", st)
	}
	if lost, _ := f.Extend(context.Background(), ls[:1]); !lost[0] {
		t.Errorf("Extend(committed) lost = %v, want true", lost)
	}
	got := map[string]string{}
	err = f.Results(context.Background(), func(u string, rec []byte) error { got[u] = string(rec); return nil })
	if err != nil || len(got) != 2 || got["https://a.example/p/0"] != `{"url":"https://a.example/p/0"}` {
		t.Errorf("Results = %v, %v", got, err)
	}
}

// An expired lease is reclaimed and leased again under a new token; its
// first holder's commit is refused and counted late.
func TestFrontierReclaim(t *testing.T) {
	f, clk, _ := newFrontier(t, FrontierOptions{LeaseTTL: 30 * time.Second})
	mustEnqueue(t, f, urls("a.example", 0, 1))
	old := mustLease(t, f, "slow", 1)
	if len(old) != 1 {
		t.Fatal("nothing leased")
	}
	clk.Advance(29 * time.Second)
	if got := mustLease(t, f, "fast", 1); len(got) != 0 {
		t.Fatalf("Lease before expiry = %+v, want none", got)
	}
	clk.Advance(time.Second)
	re := mustLease(t, f, "fast", 1)
	if len(re) != 1 || re[0].URL != old[0].URL || re[0].Token == old[0].Token || re[0].Leases != 2 {
		t.Fatalf("Lease after expiry = %+v, want %s again, new token, leased twice", re, old[0].URL)
	}
	if lost, _ := f.Extend(context.Background(), old); !lost[0] {
		t.Error("Extend(reclaimed lease) not lost")
	}
	if ok := mustCommit(t, f, "slow", "ok", old...); ok[0] {
		t.Error("Commit(reclaimed lease) accepted")
	}
	if ok := mustCommit(t, f, "fast", "ok", re...); !ok[0] {
		t.Error("Commit(current lease) refused")
	}
	if ok := mustCommit(t, f, "slow", "ok", old...); ok[0] {
		t.Error("Commit(reclaimed lease, after the current one's) accepted")
	}
	st := mustStats(t, f)
	if st.Late != 2 || st.Reclaimed != 1 || st.Done != 1 || st.Workers["slow"] != (WorkerStats{}) ||
		st.Workers["fast"] != (WorkerStats{Committed: 1}) {
		t.Errorf("Stats = %+v, want 2 late, 1 reclaimed, 1 done by fast", st)
	}
}

// Property: whatever the interleaving of leases, expiries, extensions,
// releases and commits by several workers, every URL ends with exactly
// one committed result, and the counters agree.
func TestFrontierExactlyOnce(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { exactlyOnce(t, seed) })
	}
}

func exactlyOnce(t *testing.T, seed uint64) {
	f, clk, _ := newFrontier(t, FrontierOptions{LeaseTTL: 10 * time.Second, Shards: 4, MaxLeases: 1000})
	var es []Entry
	for h := range 7 {
		es = append(es, urls(fmt.Sprintf("h%d.example", h), 0, 30)...)
	}
	mustEnqueue(t, f, es)
	rnd := rand.New(rand.NewPCG(seed, 2))
	held := make([][]Lease, 4)
	accepted := map[string]int64{} // URL -> the token accepted
	commit := func(w int, ls []Lease) {
		ok := mustCommit(t, f, fmt.Sprint("w", w), "ok", ls...)
		for i, l := range ls {
			if !ok[i] {
				continue
			}
			if tok, dup := accepted[l.URL]; dup && tok != l.Token {
				t.Fatalf("%s committed under tokens %d and %d", l.URL, tok, l.Token)
			}
			accepted[l.URL] = l.Token
		}
	}
	for step := 0; step < 3000; step++ {
		if done, _ := f.Finished(context.Background()); done {
			break
		}
		w := rnd.IntN(len(held))
		switch rnd.IntN(6) {
		case 0, 1:
			held[w] = append(held[w], mustLease(t, f, fmt.Sprint("w", w), 1+rnd.IntN(5))...)
		case 2: // commit some, possibly stale
			if len(held[w]) > 0 {
				k := 1 + rnd.IntN(len(held[w]))
				commit(w, held[w][:k])
				if rnd.IntN(4) > 0 { // sometimes keep them, to commit again
					held[w] = held[w][k:]
				}
			}
		case 3:
			clk.Advance(time.Duration(rnd.IntN(12)) * time.Second)
		case 4:
			if _, err := f.Extend(context.Background(), held[w]); err != nil {
				t.Fatal(err)
			}
		case 5:
			if len(held[w]) > 0 && rnd.IntN(3) == 0 {
				if err := f.Release(context.Background(), held[w][:1], time.Time{}); err != nil {
					t.Fatal(err)
				}
				held[w] = held[w][1:]
			}
		}
	}
	// Drain: whatever is left, one worker finishes, after every lease expired.
	for range 1000 {
		if done, _ := f.Finished(context.Background()); done {
			break
		}
		clk.Advance(11 * time.Second)
		commit(9, mustLease(t, f, "w9", 50))
	}
	if done, _ := f.Finished(context.Background()); !done {
		t.Fatal("not finished")
	}
	if len(accepted) != len(es) {
		t.Errorf("%d URLs committed, want %d", len(accepted), len(es))
	}
	results := map[string]int{}
	err := f.Results(context.Background(), func(u string, _ []byte) error { results[u]++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		u, _ := NormalizeURL(e.URL)
		if results[u] != 1 {
			t.Errorf("%s has %d results, want 1", u, results[u])
		}
	}
	st := mustStats(t, f)
	var committed int64
	for _, w := range st.Workers {
		committed += w.Committed
		if w.Leased != 0 {
			t.Errorf("a worker still holds %d leases", w.Leased)
		}
	}
	if st.Done != int64(len(es)) || committed != st.Done || st.Pending != 0 || st.Leased != 0 {
		t.Errorf("Stats = %+v, want %d done", st, len(es))
	}
	t.Logf("late %d, reclaimed %d", st.Late, st.Reclaimed)
}

// Lanes: 6 interactive, 3 normal, 1 bulk in every round of ten, FIFO
// within each; bulk alone is leased at full speed.
func TestFrontierLanes(t *testing.T) {
	f, _, _ := newFrontier(t, FrontierOptions{PerHost: 10})
	var es []Entry
	for _, lane := range []Lane{LaneBulk, LaneNormal, LaneInteractive} { // the worst order
		for i := range 40 {
			es = append(es, Entry{URL: fmt.Sprintf("https://a.example/%s/%d", lane, i), Host: "a.example", Lane: lane})
		}
	}
	mustEnqueue(t, f, es)
	next := map[Lane]int{}
	for round := range 4 {
		ls := mustLease(t, f, "w", 10)
		count := map[Lane]int{}
		for _, l := range ls {
			count[l.Lane]++
			if want := fmt.Sprintf("https://a.example/%s/%d", l.Lane, next[l.Lane]); l.URL != want {
				t.Errorf("round %d: leased %s, want %s (FIFO)", round, l.URL, want)
			}
			next[l.Lane]++
		}
		if count[LaneInteractive] != 6 || count[LaneNormal] != 3 || count[LaneBulk] != 1 {
			t.Errorf("round %d: lanes %v, want 6 interactive, 3 normal, 1 bulk", round, count)
		}
	}
	// 24 interactive gone of 40: after the next two rounds and a bit
	// interactive is empty and its turns pass to the others.
	total := map[Lane]int{}
	for range 8 {
		for _, l := range mustLease(t, f, "w", 10) {
			total[l.Lane]++
		}
	}
	if total[LaneInteractive] != 16 || total[LaneNormal] != 28 || total[LaneBulk] != 36 {
		t.Errorf("drain: %v, want the 80 left (16 interactive, 28 normal, 36 bulk)", total)
	}
}

func TestFrontierHostGap(t *testing.T) {
	f, clk, _ := newFrontier(t, FrontierOptions{HostGap: 5 * time.Second, PerHost: 2})
	mustEnqueue(t, f, urls("a.example", 0, 10))
	mustEnqueue(t, f, urls("b.example", 0, 1))
	if ls := mustLease(t, f, "w", 10); len(ls) != 3 {
		t.Fatalf("Lease = %d, want 3 (2 of a, 1 of b)", len(ls))
	}
	clk.Advance(4 * time.Second)
	if ls := mustLease(t, f, "w", 10); len(ls) != 0 {
		t.Fatalf("Lease within the gap = %+v, want none", ls)
	}
	clk.Advance(time.Second)
	if ls := mustLease(t, f, "w", 10); len(ls) != 2 || ls[0].Host != "a.example" {
		t.Fatalf("Lease after the gap = %+v, want 2 of a", ls)
	}
}

// One Lease call takes at most PerHost URLs from a host, however many
// times it visits the host's shard.
func TestFrontierPerHost(t *testing.T) {
	f, _, _ := newFrontier(t, FrontierOptions{PerHost: 3})
	for h := range 3 {
		mustEnqueue(t, f, urls(fmt.Sprintf("h%d.example", h), 0, 10))
	}
	for round := range 3 {
		ls := mustLease(t, f, "w", 100)
		per := map[string]int{}
		for _, l := range ls {
			per[l.Host]++
		}
		if len(per) != 3 || per["h0.example"] != 3 || per["h1.example"] != 3 || per["h2.example"] != 3 {
			t.Errorf("round %d: Lease took %v, want 3 of each host", round, per)
		}
	}
}

func TestFrontierDeferHost(t *testing.T) {
	f, clk, _ := newFrontier(t, FrontierOptions{LeaseTTL: time.Hour})
	ctx := context.Background()
	if err := f.DeferHost(ctx, "a.example", clk.Now().Add(time.Minute)); err != nil { // before it has URLs
		t.Fatal(err)
	}
	mustEnqueue(t, f, urls("a.example", 0, 4))
	mustEnqueue(t, f, urls("b.example", 0, 4))
	if err := f.DeferHost(ctx, "b.example", clk.Now().Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := f.DeferHost(ctx, "b.example", clk.Now().Add(time.Second)); err != nil { // earlier: ignored
		t.Fatal(err)
	}
	if ls := mustLease(t, f, "w", 10); len(ls) != 0 {
		t.Fatalf("Lease of deferred hosts = %+v, want none", ls)
	}
	clk.Advance(time.Minute)
	if ls := mustLease(t, f, "w", 10); len(ls) != 2 || ls[0].Host != "a.example" {
		t.Fatalf("Lease after a's deferral = %+v, want 2 of a", ls)
	}
	clk.Advance(time.Minute)
	if ls := mustLease(t, f, "w", 10); len(ls) != 4 {
		t.Fatalf("Lease after b's deferral = %+v, want 2 of a and 2 of b", ls)
	}
}

func TestFrontierRelease(t *testing.T) {
	f, clk, _ := newFrontier(t, FrontierOptions{})
	mustEnqueue(t, f, urls("a.example", 0, 1))
	ls := mustLease(t, f, "w", 1)
	if err := f.Release(context.Background(), ls, clk.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if ok := mustCommit(t, f, "w", "ok", ls...); ok[0] {
		t.Error("Commit(released lease) accepted")
	}
	if st := mustStats(t, f); st.Pending != 1 || st.Leased != 0 {
		t.Errorf("Stats = %+v, want 1 pending", st)
	}
	if got := mustLease(t, f, "w", 1); len(got) != 0 {
		t.Fatalf("Lease before notBefore = %+v", got)
	}
	clk.Advance(time.Minute)
	if got := mustLease(t, f, "w", 1); len(got) != 1 || got[0].Leases != 1 {
		t.Fatalf("Lease at notBefore = %+v, want it, the release uncounted", got)
	}
}

// A URL leased MaxLeases times without a commit is a dead letter; Retry
// queues it again, and committed failures too.
func TestFrontierDeadLetterRetry(t *testing.T) {
	f, clk, _ := newFrontier(t, FrontierOptions{MaxLeases: 2, LeaseTTL: time.Second})
	ctx := context.Background()
	mustEnqueue(t, f, urls("a.example", 0, 1))
	for range 2 {
		if ls := mustLease(t, f, "w", 1); len(ls) != 1 || ls[0].Host != "a.example" {
			t.Fatalf("Lease = %+v, want a's URL", ls)
		}
		clk.Advance(time.Second)
	}
	mustEnqueue(t, f, urls("b.example", 0, 2))
	bs := mustLease(t, f, "w", 5)
	if len(bs) != 2 || bs[0].Host != "b.example" {
		t.Fatalf("Lease after a died = %+v, want b's 2 only", bs)
	}
	mustCommit(t, f, "w", "ok", bs[0])
	mustCommit(t, f, "w", "error", bs[1])
	var dead []DeadLetter
	if err := f.DeadLetters(ctx, func(d DeadLetter) error { dead = append(dead, d); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(dead) != 1 || dead[0].URL != "https://a.example/p/0" || dead[0].Leases != 2 || dead[0].Reason == "" {
		t.Fatalf("DeadLetters = %+v", dead)
	}
	if st := mustStats(t, f); st.Dead != 1 || st.Pending != 0 || st.Leased != 0 {
		t.Errorf("Stats = %+v, want 1 dead", st)
	}
	if done, _ := f.Finished(ctx); !done {
		t.Error("Finished = false with only dead letters and results left")
	}
	n, err := f.Retry(ctx, RetryFilter{Dead: true, Outcomes: []string{"error"}})
	if err != nil || n != 2 {
		t.Fatalf("Retry = %d, %v, want 2", n, err)
	}
	st := mustStats(t, f)
	if st.Dead != 0 || st.Pending != 2 || st.Done != 1 || st.Outcomes["error"] != 0 || st.Outcomes["ok"] != 1 {
		t.Errorf("Stats after Retry = %+v", st)
	}
	ls := mustLease(t, f, "w", 5)
	if len(ls) != 2 || ls[0].Leases != 1 || ls[1].Leases != 1 {
		t.Fatalf("Lease after Retry = %+v, want both, leased once", ls)
	}
	if ok := mustCommit(t, f, "w", "ok", ls...); !ok[0] || !ok[1] {
		t.Error("Commit after Retry refused")
	}
	if n, err := f.Retry(ctx, RetryFilter{Dead: true, Outcomes: []string{"error"}}); n != 0 || err != nil {
		t.Errorf("Retry with nothing to retry = %d, %v", n, err)
	}
	results := 0
	f.Results(ctx, func(string, []byte) error { results++; return nil })
	if results != 3 {
		t.Errorf("%d results, want 3", results)
	}
}

func TestFrontierFinished(t *testing.T) {
	f, clk, _ := newFrontier(t, FrontierOptions{LeaseTTL: time.Second})
	ctx := context.Background()
	finished := func(want bool) {
		t.Helper()
		if got, err := f.Finished(ctx); got != want || err != nil {
			t.Fatalf("Finished = %v, %v, want %v", got, err, want)
		}
	}
	finished(true)
	mustEnqueue(t, f, urls("a.example", 0, 1))
	finished(false) // queued
	ls := mustLease(t, f, "w", 1)
	finished(false) // leased
	f.Release(ctx, ls, clk.Now().Add(time.Hour))
	finished(false) // delayed
	clk.Advance(time.Hour)
	if got := mustLease(t, f, "w", 1); len(got) != 1 {
		t.Fatalf("Lease = %+v, want the released URL", got)
	}
	clk.Advance(time.Second)
	finished(false) // expired, not yet reclaimed
	ls = mustLease(t, f, "w", 1)
	mustCommit(t, f, "w", "ok", ls...)
	finished(true)
}

func TestFrontierShardsRecorded(t *testing.T) {
	f, _, c := newFrontier(t, FrontierOptions{Shards: 8})
	_ = f
	_, err := NewFrontier(c, FrontierOptions{Shards: 16})
	if !errors.Is(err, ErrShards) {
		t.Fatalf("NewFrontier(16 shards where 8 are recorded) = %v, want ErrShards", err)
	}
	t.Log(err)
	if _, err := NewFrontier(c, FrontierOptions{Shards: 8}); err != nil {
		t.Fatal(err)
	}
}

// With appendonly yes and fsync always, a Redis killed and started again
// keeps the frontier: queues, leases, results and counters; the scripts
// are loaded again.
func TestFrontierRestart(t *testing.T) {
	srv := redistest.StartServer(t, "--appendonly", "yes", "--appendfsync", "always")
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	clk := newClock()
	f, err := NewFrontier(c, FrontierOptions{Clock: clk.Now, PerHost: 10})
	if err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, f, urls("a.example", 0, 10))
	ls := mustLease(t, f, "w", 4)
	if len(ls) != 4 {
		t.Fatalf("Lease = %d, want 4", len(ls))
	}
	mustCommit(t, f, "w", "ok", ls[:2]...)
	srv.Restart(t)
	st := mustStats(t, f)
	if st.Pending != 6 || st.Leased != 2 || st.Done != 2 {
		t.Fatalf("Stats after restart = %+v, want 6 pending, 2 leased, 2 done", st)
	}
	if ok := mustCommit(t, f, "w", "ok", ls...); !slices.Equal(ok, []bool{true, true, true, true}) {
		t.Errorf("Commit after restart = %v, want all accepted", ok)
	}
	if n := mustEnqueue(t, f, urls("a.example", 0, 10)); n != 0 {
		t.Errorf("Enqueue after restart = %d, want 0", n)
	}
	if got := mustLease(t, f, "w", 10); len(got) != 6 {
		t.Errorf("Lease after restart = %d, want 6", len(got))
	}
}

// WaitAOF on a Redis without WAITAOF (before 7.2), or without AOF, is an
// error: the write is not confirmed.
func TestFrontierWaitAOF(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: redistest.Start(t)})
	defer c.Close()
	// Redis without its append-only file (or, before 7.2, without
	// WAITAOF): refused at once, not at every later commit.
	_, err := NewFrontier(c, FrontierOptions{WaitAOF: 100 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "WaitAOF needs Redis 7.2") {
		t.Fatalf("NewFrontier with WaitAOF and no append-only file: %v", err)
	}
	t.Log(err)
}

// Frontier.ID: one number for every worker of a crawl, another once the
// crawl's keys are gone.
func TestFrontierID(t *testing.T) {
	f, _, c := newFrontier(t, FrontierOptions{})
	ctx := context.Background()
	a, err := f.ID(ctx)
	if err != nil || a == 0 {
		t.Fatalf("ID = %d, %v", a, err)
	}
	g, err := NewFrontier(c, FrontierOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := g.ID(ctx); err != nil || b != a {
		t.Fatalf("another worker's ID = %d, %v, want %d", b, err, a)
	}
	if err := c.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if b, err := f.ID(ctx); err != nil || b == a {
		t.Fatalf("ID after the crawl's keys went = %d, %v, want a new one", b, err)
	}
}

// Every call on a 3-node Cluster: no CROSSSLOT, shards spread.
func TestFrontierCluster(t *testing.T) {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: redistest.StartCluster(t, 3)})
	defer c.Close()
	clk := newClock()
	f, err := NewFrontier(c, FrontierOptions{Clock: clk.Now, LeaseTTL: time.Second, MaxLeases: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var es []Entry
	for h := range 30 {
		es = append(es, urls(fmt.Sprintf("h%d.example", h), 0, 3)...)
	}
	if n := mustEnqueue(t, f, es); n != len(es) {
		t.Fatalf("Enqueue = %d, want %d", n, len(es))
	}
	roots := []string{"https://h0.example/", "https://h1.example/"}
	if err := f.AddRoots(ctx, roots); err != nil {
		t.Fatalf("AddRoots: %v", err)
	}
	if rs, err := f.Roots(ctx); err != nil || !slices.Equal(rs, roots) {
		t.Fatalf("Roots = %q, %v, want %q", rs, err, roots)
	}
	if a, b := c.ClusterKeySlot(ctx, f.rootsKey()).Val(), c.ClusterKeySlot(ctx, f.keys(0)[0]).Val(); a != b {
		t.Errorf("the roots' key is in slot %d, shard 0's in %d", a, b)
	}
	ls := mustLease(t, f, "w", 200)
	if len(ls) != 60 {
		t.Fatalf("Lease = %d, want 60 (2 per host)", len(ls))
	}
	if lost, err := f.Extend(ctx, ls); err != nil || slices.Contains(lost, true) {
		t.Fatalf("Extend = %v, %v", lost, err)
	}
	if err := f.Release(ctx, ls[:1], time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := f.DeferHost(ctx, "h0.example", clk.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	ok := mustCommit(t, f, "w", "error", ls[1:]...)
	if slices.Contains(ok, false) {
		t.Fatalf("Commit = %v", ok)
	}
	rest := mustLease(t, f, "w", 200)
	clk.Advance(time.Second)
	mustLease(t, f, "w", 200) // reclaims: MaxLeases 1, so dead letters
	st := mustStats(t, f)
	if st.Done != 59 || st.Dead != int64(len(rest)) || st.Pending != 1 {
		t.Fatalf("Stats = %+v, want 59 done, %d dead, 1 pending (deferred)", st, len(rest))
	}
	if n, err := f.Retry(ctx, RetryFilter{Dead: true, Outcomes: []string{"error"}}); err != nil || n != 59+len(rest) {
		t.Fatalf("Retry = %d, %v", n, err)
	}
	if done, err := f.Finished(ctx); done || err != nil {
		t.Fatalf("Finished = %v, %v", done, err)
	}
	n := 0
	if err := f.Results(ctx, func(string, []byte) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("Results = %d, %v", n, err)
	}
	if err := f.DeadLetters(ctx, func(DeadLetter) error { return nil }); err != nil {
		t.Fatal(err)
	}
	nodes := map[string]bool{}
	for s := range f.o.Shards {
		node, err := c.MasterForKey(ctx, f.keys(s)[0])
		if err != nil {
			t.Fatal(err)
		}
		nodes[node.String()] = true
	}
	if len(nodes) < 2 {
		t.Errorf("the %d shards live on %d node, want them spread", f.o.Shards, len(nodes))
	}
}

// Hosts take turns by when they are next due: a host leased from goes
// behind those that were due before.
func TestFrontierHostOrder(t *testing.T) {
	f, clk, _ := newFrontier(t, FrontierOptions{Shards: 1, PerHost: 1})
	for _, h := range []string{"a.example", "b.example", "c.example"} {
		mustEnqueue(t, f, urls(h, 0, 2))
		clk.Advance(time.Second)
	}
	var order []string
	for range 6 {
		ls := mustLease(t, f, "w", 1)
		if len(ls) != 1 {
			t.Fatalf("Lease = %+v, want 1", ls)
		}
		order = append(order, ls[0].Host[:1])
		clk.Advance(time.Millisecond)
	}
	if got := fmt.Sprint(order); got != "[a b c a b c]" {
		t.Errorf("hosts leased in order %s, want [a b c a b c]", got)
	}
}

// A Lease call reclaims at most leaseChores expired leases of a shard.
func TestFrontierReclaimBounded(t *testing.T) {
	f, clk, _ := newFrontier(t, FrontierOptions{Shards: 1, PerHost: 100, LeaseTTL: time.Second})
	mustEnqueue(t, f, urls("a.example", 0, 100))
	if ls := mustLease(t, f, "w", 100); len(ls) != 100 {
		t.Fatalf("Lease = %d, want 100", len(ls))
	}
	clk.Advance(time.Second)
	ls := mustLease(t, f, "w", 1)
	if st := mustStats(t, f); st.Reclaimed != leaseChores || st.Leased != 100-leaseChores+1 {
		t.Errorf("after one Lease: %d reclaimed, %d leased, want %d and %d", st.Reclaimed, st.Leased,
			leaseChores, 100-leaseChores+1)
	}
	if ls[0].Token < clk.Now().UnixMicro() {
		t.Errorf("token %d lags the clock %d", ls[0].Token, clk.Now().UnixMicro())
	}
}

// An entry without a host key is queued under its URL's host.
func TestFrontierDefaultHost(t *testing.T) {
	f, _, _ := newFrontier(t, FrontierOptions{})
	mustEnqueue(t, f, []Entry{{URL: "https://user@A.example:8443/x?q=1"}, {URL: "http://b.example/"}})
	hosts := map[string]bool{}
	for _, l := range mustLease(t, f, "w", 10) {
		hosts[l.Host] = true
	}
	if !hosts["a.example:8443"] || !hosts["b.example"] || len(hosts) != 2 {
		t.Errorf("leased hosts %v, want a.example:8443 and b.example", hosts)
	}
}

// Workers racing for real, each with its own connection pool as separate
// processes would have, some of them dropping leases as if killed, while
// the clock runs: every URL ends with one result, committed under one
// token.
func TestFrontierConcurrentWorkers(t *testing.T) {
	addr := redistest.Start(t)
	clk := newClock()
	open := func() *Frontier {
		c := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { c.Close() })
		f, err := NewFrontier(c, FrontierOptions{Clock: clk.Now, LeaseTTL: 5 * time.Second, MaxLeases: 1000, Shards: 8})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	var es []Entry
	for h := range 40 {
		es = append(es, urls(fmt.Sprintf("h%d.example", h), 0, 25)...)
	}
	mustEnqueue(t, open(), es)
	var mu sync.Mutex
	accepted := map[string]int64{}
	ctx := context.Background()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() { // the clock
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
				clk.Advance(time.Second)
			}
		}
	})
	var workers sync.WaitGroup
	for w := range 4 {
		f := open()
		name := fmt.Sprint("w", w)
		rnd := rand.New(rand.NewPCG(uint64(w), 7))
		workers.Go(func() {
			var slow []Lease // leases held past their time, committed late
			for range 2000 {
				if done, err := f.Finished(ctx); err != nil || done {
					return
				}
				ls, err := f.Lease(ctx, name, 10)
				if err != nil {
					t.Error(err)
					return
				}
				switch rnd.IntN(10) {
				case 0:
					continue // killed: these leases expire
				case 1:
					slow = append(slow, ls...) // stalled: committed some time later
					continue
				case 2:
					ls, slow = append(ls, slow...), nil
				}
				cs := make([]Commit, len(ls))
				for i, l := range ls {
					cs[i] = Commit{Lease: l, Outcome: "ok", Worker: name}
				}
				ok, err := f.Commit(ctx, cs)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for i, l := range ls {
					if !ok[i] {
						continue
					}
					if tok, dup := accepted[l.URL]; dup && tok != l.Token {
						t.Errorf("%s committed under tokens %d and %d", l.URL, tok, l.Token)
					}
					accepted[l.URL] = l.Token
				}
				mu.Unlock()
			}
		})
	}
	workers.Wait()
	close(stop)
	wg.Wait()
	f := open()
	if done, err := f.Finished(ctx); !done || err != nil {
		t.Fatalf("Finished = %v, %v", done, err)
	}
	n := 0
	if err := f.Results(ctx, func(string, []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != len(es) || len(accepted) != len(es) {
		t.Errorf("%d results, %d URLs accepted, want %d", n, len(accepted), len(es))
	}
	st := mustStats(t, f)
	t.Logf("done %d, late %d, reclaimed %d", st.Done, st.Late, st.Reclaimed)
}

// Stats lists a bounded number of hosts and says so; HostStats reads any.
func TestFrontierStatsHosts(t *testing.T) {
	f, _, _ := newFrontier(t, FrontierOptions{Shards: 2})
	var es []Entry
	for h := range 3000 {
		es = append(es, urls(fmt.Sprintf("h%d.example", h), 0, 1)...)
	}
	mustEnqueue(t, f, es)
	st := mustStats(t, f)
	if len(st.Hosts) == 0 || len(st.Hosts) > StatsHosts || !st.HostsTruncated || st.Pending != 3000 {
		t.Errorf("Stats: %d hosts, truncated %v, pending %d; want 1..%d, true, 3000", len(st.Hosts), st.HostsTruncated,
			st.Pending, StatsHosts)
	}
	hs, err := f.HostStats(context.Background(), "h2999.example")
	if err != nil || hs != (HostStats{Pending: 1}) {
		t.Errorf("HostStats = %+v, %v, want 1 pending", hs, err)
	}
}

// LeaseExcept takes nothing of the hosts skipped, which keep their turn.
func TestFrontierLeaseExcept(t *testing.T) {
	f, _, _ := newFrontier(t, FrontierOptions{Shards: 1, PerHost: 1})
	for _, h := range []string{"a.example", "b.example", "c.example"} {
		mustEnqueue(t, f, urls(h, 0, 2))
	}
	ls, err := f.LeaseExcept(context.Background(), "w", 10, []string{"a.example", "c.example"})
	if err != nil || len(ls) != 1 || ls[0].Host != "b.example" {
		t.Fatalf("LeaseExcept(a, c) = %+v, %v, want one of b", ls, err)
	}
	if ls := mustLease(t, f, "w", 1); len(ls) != 1 || ls[0].Host != "a.example" {
		t.Fatalf("Lease = %+v, want a's (it kept its turn)", ls)
	}
	if f.Interactive() {
		t.Error("Interactive before any interactive URL was enqueued")
	}
	// Of a skipped host, an interactive URL, one, and nothing else: it
	// goes ahead of what the worker holds.
	hot := urls("c.example", 10, 12)
	for i := range hot {
		hot[i].Lane = LaneInteractive
	}
	mustEnqueue(t, f, hot)
	ls, err = f.LeaseExcept(context.Background(), "w", 10, []string{"a.example", "c.example"})
	if err != nil {
		t.Fatal(err)
	}
	if !f.Interactive() {
		t.Error("not Interactive after a lease from a shard with interactive URLs")
	}
	var fromC []Lease
	for _, l := range ls {
		if l.Host == "c.example" {
			fromC = append(fromC, l)
		}
	}
	if len(fromC) != 1 || fromC[0].Lane != LaneInteractive || fromC[0].URL != hot[0].URL {
		t.Fatalf("LeaseExcept(a, c) took %+v of c, want its first interactive URL alone", fromC)
	}
}

// scriptCounter counts the scripts a client sends.
type scriptCounter struct{ n atomic.Int64 }

func (h *scriptCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *scriptCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.count(cmd)
		return next(ctx, cmd)
	}
}
func (h *scriptCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			h.count(c)
		}
		return next(ctx, cmds)
	}
}
func (h *scriptCounter) count(c redis.Cmder) {
	if name := c.Name(); name == "evalsha" || name == "eval" {
		h.n.Add(1)
	}
}

// A shard with nothing due is passed over for a while: a crawl of one
// host whose worker holds its URLs costs a script a Lease, not one per
// shard; a URL enqueued there by this Frontier is leased at once.
func TestFrontierIdleShardsPassedOver(t *testing.T) {
	f, clk, c := newFrontier(t, FrontierOptions{Shards: 16, PerHost: 1})
	sc := &scriptCounter{}
	c.(*redis.Client).AddHook(sc)
	mustEnqueue(t, f, urls("a.example", 0, 10))
	ctx := context.Background()
	if ls, err := f.LeaseExcept(ctx, "w", 4, nil); err != nil || len(ls) != 1 {
		t.Fatalf("LeaseExcept = %+v, %v", ls, err)
	}
	before := sc.n.Load()
	for range 5 {
		if ls, err := f.LeaseExcept(ctx, "w", 4, []string{"a.example"}); err != nil || len(ls) != 0 {
			t.Fatalf("LeaseExcept(skip a) = %+v, %v", ls, err)
		}
	}
	if n := sc.n.Load() - before; n > 5 {
		t.Errorf("5 Leases sent %d scripts, want 1 each (the other 15 shards have nothing due)", n)
	}
	mustEnqueue(t, f, urls("b.example", 0, 1))
	if ls, err := f.LeaseExcept(ctx, "w", 4, []string{"a.example"}); err != nil || len(ls) != 1 || ls[0].Host != "b.example" {
		t.Fatalf("LeaseExcept after b's enqueue = %+v, %v, want b's URL at once", ls, err)
	}
	// Another process's enqueue is seen within shardRest.
	clk.Advance(shardRest)
	before = sc.n.Load()
	f.LeaseExcept(ctx, "w", 4, nil)
	if n := sc.n.Load() - before; n < 16 {
		t.Errorf("after shardRest a Lease visited %d shards, want all 16", n)
	}
}

// Retry of a committed result takes it off its worker's count: the
// workers' counts add up to Done, as polite status shows them.
func TestFrontierRetryWorkerCounts(t *testing.T) {
	f, _, _ := newFrontier(t, FrontierOptions{PerHost: 10})
	mustEnqueue(t, f, urls("a.example", 0, 3))
	ls := mustLease(t, f, "w1", 3)
	mustCommit(t, f, "w1", "timeout", ls...)
	if _, err := f.Retry(context.Background(), RetryFilter{Outcomes: []string{"timeout"}}); err != nil {
		t.Fatal(err)
	}
	ls = mustLease(t, f, "w2", 3)
	mustCommit(t, f, "w2", "ok", ls...)
	st := mustStats(t, f)
	sum := int64(0)
	for _, w := range st.Workers {
		sum += w.Committed
	}
	if sum != st.Done || st.Workers["w1"].Committed != 0 {
		t.Errorf("workers' committed sum to %d, Done = %d (%+v)", sum, st.Done, st.Workers)
	}
}

// A discovered URL's depth and page found on (issue 35) go with it
// through every state: leased, released, delayed, reclaimed after
// expiry, a dead letter retried, committed and retried; enqueued again
// it keeps the depth it was first enqueued at.
func TestFrontierDepthFoundOn(t *testing.T) {
	f, clk, _ := newFrontier(t, FrontierOptions{LeaseTTL: time.Second, MaxLeases: 2, PerHost: 10})
	ctx := context.Background()
	const page = "https://a.example/?q=1&r=%C3%A9"
	es := []Entry{
		{URL: "https://a.example/", Host: "a.example"},
		{URL: "https://a.example/p/1", Host: "a.example", Depth: 1, FoundOn: page},
		{URL: "https://a.example/p/2", Host: "a.example", Depth: 7},
		{URL: "https://a.example/p/3", Host: "a.example", FoundOn: "https://sitemap.example/s.xml"},
		{URL: "https://a.example/p/4", Host: "a.example", Depth: 2, FoundOn: page},
	}
	if n := mustEnqueue(t, f, es); n != len(es) {
		t.Fatalf("Enqueue = %d, want %d", n, len(es))
	}
	// Known URLs enqueued again, deeper or shallower: nothing changes.
	again := []Entry{
		{URL: "https://a.example/p/1", Host: "a.example", Depth: 5, FoundOn: "https://elsewhere.example/"},
		{URL: "https://a.example/p/2", Host: "a.example"},
	}
	if n := mustEnqueue(t, f, again); n != 0 {
		t.Fatalf("Enqueue(known URLs at other depths) = %d, want 0", n)
	}
	// want checks ls has es's URLs (a release puts them back in front:
	// in another order) with their depths and pages.
	want := func(step string, ls []Lease, leases int) { // es is in URL order
		t.Helper()
		if len(ls) != len(es) {
			t.Fatalf("%s: Lease = %d leases, want %d", step, len(ls), len(es))
		}
		slices.SortFunc(ls, func(a, b Lease) int { return strings.Compare(a.URL, b.URL) })
		for i, l := range ls {
			e := es[i]
			if l.URL != e.URL || l.Depth != e.Depth || l.FoundOn != e.FoundOn || l.Leases != leases {
				t.Errorf("%s: lease %d = %s depth %d found on %q leased %d, want %s depth %d found on %q leased %d",
					step, i, l.URL, l.Depth, l.FoundOn, l.Leases, e.URL, e.Depth, e.FoundOn, leases)
			}
		}
	}
	ls := mustLease(t, f, "w1", 10)
	want("first lease", ls, 1)
	if err := f.Release(ctx, ls, time.Time{}); err != nil {
		t.Fatal(err)
	}
	ls = mustLease(t, f, "w1", 10)
	want("after a release", ls, 1)
	if err := f.Release(ctx, ls, clk.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	ls = mustLease(t, f, "w1", 10)
	want("after a delayed release", ls, 1)
	clk.Advance(time.Second)
	ls = mustLease(t, f, "w2", 10) // reclaims them
	want("reclaimed after expiry", ls, 2)
	clk.Advance(time.Second)
	if got := mustLease(t, f, "w2", 10); len(got) != 0 { // MaxLeases 2: dead letters
		t.Fatalf("Lease after MaxLeases = %+v, want none", got)
	}
	dead := map[string]DeadLetter{}
	if err := f.DeadLetters(ctx, func(d DeadLetter) error { dead[d.URL] = d; return nil }); err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if d := dead[e.URL]; d.Depth != e.Depth || d.FoundOn != e.FoundOn {
			t.Errorf("dead letter %s = %+v, want depth %d, found on %q", e.URL, d, e.Depth, e.FoundOn)
		}
	}
	if n, err := f.Retry(ctx, RetryFilter{Dead: true}); err != nil || n != len(es) {
		t.Fatalf("Retry(dead) = %d, %v", n, err)
	}
	ls = mustLease(t, f, "w3", 10)
	want("a dead letter retried", ls, 1)
	mustCommit(t, f, "w3", "error", ls...)
	results := map[string]Result{}
	if err := f.EachResult(ctx, func(r Result) error { results[r.URL] = r; return nil }); err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if r := results[e.URL]; r.Depth != e.Depth || r.FoundOn != e.FoundOn || r.Outcome != "error" {
			t.Errorf("result %s = %+v, want depth %d, found on %q", e.URL, r, e.Depth, e.FoundOn)
		}
	}
	if n, err := f.Retry(ctx, RetryFilter{Outcomes: []string{"error"}}); err != nil || n != len(es) {
		t.Fatalf("Retry(results) = %d, %v", n, err)
	}
	ls = mustLease(t, f, "w4", 10)
	want("a result retried", ls, 1)
	if ok := mustCommit(t, f, "w4", "ok", ls...); slices.Contains(ok, false) {
		t.Errorf("Commit = %v", ok)
	}
	if n := mustEnqueue(t, f, append(again, es...)); n != 0 {
		t.Errorf("Enqueue(done URLs) = %d, want 0", n)
	}
}

// A host's queue keeps the order of the entries enqueued, whatever their
// depths and pages: groups of one depth and page go in turn.
func TestFrontierDepthOrder(t *testing.T) {
	f, _, _ := newFrontier(t, FrontierOptions{PerHost: 100})
	var es []Entry
	for i := range 30 {
		es = append(es, Entry{URL: fmt.Sprintf("https://a.example/p/%d", i), Depth: i % 3, FoundOn: fmt.Sprintf("https://a.example/f/%d", i/4),
			Sitemap: i%5 == 0, Hops: i % 4})
	}
	mustEnqueue(t, f, es)
	ls := mustLease(t, f, "w", 100)
	if len(ls) != len(es) {
		t.Fatalf("Lease = %d, want %d", len(ls), len(es))
	}
	for i, l := range ls {
		if l.URL != es[i].URL || l.Depth != es[i].Depth || l.FoundOn != es[i].FoundOn || l.Sitemap != es[i].Sitemap || l.Hops != es[i].Hops {
			t.Errorf("lease %d = %s (depth %d, on %s, sitemap %v), want %+v", i, l.URL, l.Depth, l.FoundOn, l.Sitemap, es[i])
		}
	}
	if _, err := f.Enqueue(context.Background(), []Entry{{URL: "https://a.example/x", Depth: -1}}); err == nil {
		t.Error("Enqueue(depth -1): no error")
	}
	if _, err := f.Enqueue(context.Background(), []Entry{{URL: "https://a.example/x", Depth: maxEntryDepth + 1}}); err == nil {
		t.Error("Enqueue(depth past the bound): no error")
	}
}

// A frontier written before discovery (records and results with no
// depth or page found on) keeps working: its URLs lease at depth 0,
// found on "", through reclaim, commit and retry. A listed URL's record
// is still written byte for byte as then.
func TestFrontierOldRecords(t *testing.T) {
	f, clk, c := newFrontier(t, FrontierOptions{LeaseTTL: time.Second, Shards: 1, PerHost: 10})
	ctx := context.Background()
	k := f.keys(0)
	mustEnqueue(t, f, []Entry{{URL: "https://a.example/new"}})
	if v := c.HGet(ctx, k[0], fingerprint("https://a.example/new")).Val(); v != "q00,0,9:a.example0:https://a.example/new" {
		t.Errorf("a listed URL's record = %q, want the format from before discovery", v)
	}
	// As a frontier from before wrote them: a queued URL, a leased one
	// whose lease has expired, a committed one and its result.
	queued, leased, done := "https://a.example/q", "https://a.example/l", "https://a.example/c"
	pl := c.TxPipeline()
	pl.HSet(ctx, k[0], fingerprint(queued), "q00,0,9:a.example0:"+queued)
	pl.RPush(ctx, f.o.Prefix+"{f0}:q0:a.example", fingerprint(queued))
	pl.HSet(ctx, k[0], fingerprint(leased), "l01,5,9:a.example2:w0"+leased)
	pl.ZAdd(ctx, k[1], redis.Z{Score: float64(clk.Now().Add(-time.Second).UnixMicro()), Member: fingerprint(leased)})
	pl.HSet(ctx, k[0], fingerprint(done), "c01,6,")
	pl.HSet(ctx, k[5], fingerprint(done), "01,6,9:a.example"+fmt.Sprintf("%d:%s", len(done), done)+"2:w02:no{}")
	pl.HIncrBy(ctx, k[4], "pending", 1)
	pl.HIncrBy(ctx, k[4], "leased", 1)
	pl.HIncrBy(ctx, k[4], "wl:w0", 1)
	pl.HIncrBy(ctx, k[4], "done", 1)
	pl.HIncrBy(ctx, k[4], "o:no", 1)
	pl.HIncrBy(ctx, k[4], "wc:w0", 1)
	pl.HIncrBy(ctx, k[7], "a.example", 3)
	pl.HIncrBy(ctx, k[8], "a.example", 1)
	if _, err := pl.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if n := mustEnqueue(t, f, []Entry{{URL: queued, Depth: 3, FoundOn: "x"}, {URL: leased}, {URL: done}}); n != 0 {
		t.Errorf("Enqueue(old URLs) = %d, want 0", n)
	}
	ls := mustLease(t, f, "w", 10)
	got := map[string]Lease{}
	for _, l := range ls {
		got[l.URL] = l
	}
	for _, u := range []string{"https://a.example/new", queued, leased} {
		if l, ok := got[u]; !ok || l.Depth != 0 || l.FoundOn != "" {
			t.Errorf("lease of %s = %+v, %v, want it at depth 0, found on \"\"", u, l, ok)
		}
	}
	if got[leased].Leases != 2 {
		t.Errorf("the reclaimed old lease: leased %d times, want 2", got[leased].Leases)
	}
	mustCommit(t, f, "w", "ok", ls...)
	var rs []Result
	if err := f.EachResult(ctx, func(r Result) error { rs = append(rs, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(rs) != 4 {
		t.Fatalf("%d results, want 4", len(rs))
	}
	for _, r := range rs {
		if r.Depth != 0 || r.FoundOn != "" {
			t.Errorf("result %+v, want depth 0, found on \"\"", r)
		}
	}
	if n, err := f.Retry(ctx, RetryFilter{Outcomes: []string{"no"}}); err != nil || n != 1 {
		t.Fatalf("Retry(the old result) = %d, %v", n, err)
	}
	if ls := mustLease(t, f, "w", 10); len(ls) != 1 || ls[0].URL != done || ls[0].Depth != 0 || ls[0].FoundOn != "" {
		t.Fatalf("Lease after Retry = %+v, want %s at depth 0", ls, done)
	}
	st := mustStats(t, f)
	if st.Pending != 0 || st.Leased != 1 || st.Done != 3 || st.Late != 0 {
		t.Errorf("Stats = %+v, want 1 leased, 3 done", st)
	}
}
