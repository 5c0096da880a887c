package crawl

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/bucket"
	"github.com/polite-go/polite/inflight"
)

// TestPendingStreamed: a job holds a bounded number of URLs in memory
// whatever its size (issue 17, defect 3: every pending URL was loaded at
// Run's start), and with more hosts than MaxHosts every URL is still
// fetched exactly once, over an interrupted run and its resumption.
func TestPendingStreamed(t *testing.T) {
	const hosts, perHost, maxHosts, workers = 30, 80, 4, 8
	srv, list := manyHosts(t, hosts, perHost)
	list += "not a url\n"
	dir := t.TempDir()
	tr := &polite.Transport{Base: srv.Transport(), Limits: polite.Limits{Rate: bucket.Inf, Concurrency: inflight.Max}}
	opts := Options{Transport: tr, Workers: workers, MaxHosts: maxHosts, Bodies: BodiesNone}
	bound := maxHosts*refillTo + workers

	run := func(stopAfter int) Summary {
		t.Helper()
		j := loadJob(t, dir, list, opts)
		defer j.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if stopAfter > 0 {
			go func() {
				for j.Progress(0).DoneNow < stopAfter && ctx.Err() == nil {
					time.Sleep(time.Millisecond) // polling a real job's progress, not timing it
				}
				cancel()
			}()
		}
		sum, err := j.Run(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		j.sched.mu.Lock()
		peak := j.sched.peakLoaded
		j.sched.mu.Unlock()
		if peak > bound {
			t.Errorf("run: %d URLs in memory at most, want at most %d (%d hosts × %d + %d workers)", peak, bound, maxHosts, refillTo, workers)
		}
		if p := j.Progress(-1); p.HostCount == 0 || len(p.Hosts) == 0 {
			t.Errorf("Progress after Run: %d hosts, %d shown; want some", p.HostCount, len(p.Hosts))
		}
		return sum
	}
	first := run(hosts * perHost / 3)
	if !first.Interrupted || first.Done >= first.Total {
		t.Fatalf("first run: %+v, want it interrupted part way", first)
	}
	second := run(0)
	if second.Interrupted || second.Done != hosts*perHost+1 {
		t.Fatalf("second run: %+v, want all %d done", second, hosts*perHost+1)
	}
	seen := map[string]int{}
	for _, r := range readResults(t, dir) {
		seen[r.URL]++
		if r.URL != "not a url" && r.Outcome != OK {
			t.Errorf("%s: %s %s", r.URL, r.Outcome, r.Error)
		}
	}
	if len(seen) != hosts*perHost+1 {
		t.Errorf("results name %d URLs, want %d", len(seen), hosts*perHost+1)
	}
	for u, n := range seen {
		if n != 1 {
			t.Errorf("%s: %d results, want 1", u, n)
		}
	}
	var sent int64
	for _, h := range srv.Hosts() {
		st := h.Stats()
		sent += st.Arrivals - st.Robots
	}
	// Only URLs in flight when the first run stopped may be sent twice.
	if sent < hosts*perHost || sent > hosts*perHost+workers {
		t.Errorf("hosts received %d page requests, want %d (+ at most %d in flight at the interruption)", sent, hosts*perHost, workers)
	}
}

// A host's queue that the feeder tops up before it empties kept every
// element it ever held (the ready list too, with work for every host): 80 MB
// over a 10,000,000-URL job. It stays as long as what it holds.
func TestQueueStaysCompact(t *testing.T) {
	h := &host{}
	for i := range 100_000 {
		h.push(&item{id: int64(i)}, false)
		if i >= 10 {
			if it := h.pop(); it.id != int64(i-10) {
				t.Fatalf("pop = %d, want %d", it.id, i-10)
			}
		}
	}
	if q := h.lanes[LaneNormal].queue; h.queued() != 10 || cap(q) > 1024 {
		t.Errorf("after 100,000 pushes: %d queued in a slice of %d, want 10 in at most 1024", h.queued(), cap(q))
	}
}

// BenchmarkWindow is the feeder's reads of pending URLs: 10,000 fresh URLs
// over 100 hosts, each host's read in windows of 64, as Run streams them.
func BenchmarkWindow(b *testing.B) {
	var list strings.Builder
	for i := range 10_000 {
		fmt.Fprintf(&list, "http://h%d.test/page/%d\n", i%100, i)
	}
	j, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	if _, err := j.Load(strings.NewReader(list.String())); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for h := range 100 {
			host := fmt.Sprintf("h%d.test", h)
			for after := int64(0); ; {
				var last row
				k := 0
				if err := j.st.window(ctx, host, LaneNormal, after, 64, func(r row) { last = r; k++ }); err != nil {
					b.Fatal(err)
				}
				n += k
				if k < 64 {
					break
				}
				after = last.id
			}
		}
		if n != 10_000 {
			b.Fatalf("read %d rows, want 10000", n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10_000, "ns/url")
}

// TestWindowPlainThenRich: a window whose rows are all plain (listed,
// never tried) is read in three columns; one with a row that is not is
// read whole, that row's attempts and reason included, in id order.
func TestWindowPlainThenRich(t *testing.T) {
	j, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if _, err := j.Load(strings.NewReader("http://a.test/1\nhttp://a.test/2\nhttp://a.test/3\n")); err != nil {
		t.Fatal(err)
	}
	read := func() []row {
		t.Helper()
		var rows []row
		if err := j.st.window(context.Background(), "a.test", LaneNormal, 0, 10, func(r row) { rows = append(rows, r) }); err != nil {
			t.Fatal(err)
		}
		return rows
	}
	if rows := read(); len(rows) != 3 || rows[0].url != "http://a.test/1" || rows[2].id != 3 || j.st.rich.Load() {
		t.Fatalf("plain window = %+v (rich %v), want 3 rows in order", rows, j.st.rich.Load())
	}
	if _, err := j.st.db.Exec(`UPDATE urls SET attempts = 2, reason = 'overloaded' WHERE id = 2`); err != nil {
		t.Fatal(err)
	}
	rows := read()
	if len(rows) != 3 || rows[1].attempts != 2 || rows[1].reason != "overloaded" || rows[0].attempts != 0 || rows[2].url != "http://a.test/3" {
		t.Fatalf("rich window = %+v, want row 2 with its attempts and reason", rows)
	}
	if !j.st.rich.Load() {
		t.Error("after a rich window, rich = false, want true")
	}
	if _, err := j.st.db.Exec(`UPDATE urls SET attempts = 0, reason = '' WHERE id = 2`); err != nil {
		t.Fatal(err)
	}
	if rows := read(); len(rows) != 3 || j.st.rich.Load() {
		t.Errorf("plain again: %d rows, rich %v; want 3, false", len(rows), j.st.rich.Load())
	}
}
