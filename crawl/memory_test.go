package crawl

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/bucket"
)

// With WARC on, a job holds at most Workers × MaxBody of bodies being read
// and MaxBacklog of bodies waiting for the committer (issue 29, item 14;
// the README's formula). A body announced longer than MaxBody was read
// into a buffer that doubled past it, 1.6 × MaxBody kept and 2.4 × while
// it grew, per worker. Here 32 workers read 6 MiB bodies capped at 5 MiB,
// and the live heap, sampled after every collection, grows by no more
// than the formula plus 24 MiB for the rest (the server's page, the job's
// state). A soft memory limit above that makes the collector run often
// enough for the samples to catch the peak (polite fetch sets one too).
func TestBodyMemoryBound(t *testing.T) {
	const (
		workers = 32
		maxBody = 5 << 20
		backlog = maxBody
		rest    = 24 << 20
		bound   = workers*maxBody + backlog + rest
	)
	page := make([]byte, 6<<20)
	base := serveAll(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(page)))
		w.Write(page)
	})
	var list strings.Builder
	for i := range 4 * workers {
		fmt.Fprintf(&list, "http://h%d.test/%d\n", i%(workers/2), i)
	}
	tr := &polite.Transport{Base: base, Limits: polite.Limits{Rate: bucket.Inf, Concurrency: 2}}

	// What the process held before (other tests' leftovers too) is not
	// the job's.
	runtime.GC()
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(live)
	before := live[0].Value.Uint64()
	old := debug.SetMemoryLimit(int64(before) + bound + 64<<20)
	defer debug.SetMemoryLimit(old)
	var peak atomic.Uint64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	dir := t.TempDir()
	j := loadJob(t, dir, list.String(), Options{Transport: tr, Workers: workers, MaxBody: maxBody, MaxBacklog: backlog, Bodies: BodiesWARC})
	defer j.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sum, err := j.Run(ctx, nil)
	close(done)
	<-sampled
	if err != nil {
		t.Fatal(err)
	}
	if sum.Outcomes[OK] != 4*workers {
		t.Fatalf("summary %+v, want every URL ok", sum)
	}
	t.Logf("peak live heap %.1f MiB over the %.1f MiB before, bound %d MiB", float64(peak.Load()-before)/(1<<20), float64(before)/(1<<20), bound>>20)
	if p := peak.Load() - before; p > bound {
		t.Errorf("peak live heap %.1f MiB over %d workers × %d MiB + %d MiB backlog + %d MiB = %d MiB",
			float64(p)/(1<<20), workers, maxBody>>20, backlog>>20, rest>>20, bound>>20)
	}
}
