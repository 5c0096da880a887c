package crawl

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/audit"
	"github.com/polite-go/polite/testbed"
)

// TestEventsFile: a job writes its Transport's decisions to events.jsonl,
// each under the id of its URL's line in results.jsonl, and a second run
// appends to it.
func TestEventsFile(t *testing.T) {
	srv, list := twoHosts(t, 20)
	dir := t.TempDir()
	tr := &polite.Transport{Base: srv.Transport(), Limits: polite.Limits{Rate: 100, Burst: 10, Concurrency: 4}}
	runJob(t, dir, tr, list, Options{Workers: 8})
	if tr.Observer != nil {
		t.Error("the job changed its Transport's Observer")
	}
	ids := map[uint64]string{}
	for _, r := range readResults(t, dir) {
		if r.ID == 0 {
			t.Fatalf("result %s has no id", r.URL)
		}
		ids[uint64(r.ID)] = r.Host
	}
	recs := readEvents(t, dir)
	attempts, throttled := 0, 0
	for _, r := range recs {
		if r.Kind != "attempt" || r.Host == "" {
			continue
		}
		attempts++
		if r.Status == 429 {
			throttled++
		}
		if r.Host != "a.test" && r.Host != "b.test" {
			continue // robots.txt
		}
		if h, ok := ids[r.ID]; !ok || h != r.Host {
			t.Errorf("attempt to %s has id %d, which results.jsonl gives to %q", r.Host, r.ID, h)
		}
	}
	waits := 0
	for _, r := range recs {
		if r.Kind == "wait" && r.ID != 0 {
			waits++
		}
	}
	if waits == 0 {
		t.Error("events.jsonl holds none of the job's own waits (URLs put off for a retry)")
	}
	if attempts < 40 || throttled == 0 {
		t.Errorf("events.jsonl: %d attempts, %d throttled; want ≥ 40 and some 429s from b.test", attempts, throttled)
	}
	// A second job run on the same folder appends.
	f, _ := os.OpenFile(filepath.Join(dir, EventsFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"t":1,"k":"att`) // a kill mid-line
	f.Close()
	runJob(t, dir, &polite.Transport{Base: srv.Transport()}, "http://a.test/extra\n", Options{})
	if got := len(readEvents(t, dir)); got <= len(recs) {
		t.Errorf("after a rerun %d events, want more than %d", got, len(recs))
	}
}

// TestDoneEvents: each finished URL is an EventDone to the Transport's
// Observer (for the logical-duration metric): its id, attempts, status and
// its time from first attempt to result, retries included.
func TestDoneEvents(t *testing.T) {
	srv, list := twoHosts(t, 15)
	var mu sync.Mutex
	done := map[uint64]polite.Event{}
	tr := &polite.Transport{Base: srv.Transport(), Limits: polite.Limits{Rate: 100, Burst: 10, Concurrency: 4},
		Observer: polite.ObserverFunc(func(e polite.Event) {
			if e.Kind == polite.EventDone && e.ID != 0 && e.ID < polite.OwnIDs { // not robots.txt
				mu.Lock()
				done[e.ID] = e
				mu.Unlock()
			}
		})}
	dir := t.TempDir()
	runJob(t, dir, tr, list, Options{Workers: 8})
	res := readResults(t, dir)
	mu.Lock()
	defer mu.Unlock()
	retried := 0
	for _, r := range res {
		e, ok := done[uint64(r.ID)]
		if !ok {
			t.Errorf("%s: no EventDone", r.URL)
			continue
		}
		if e.Host != r.Host || e.Attempt != r.Attempts || e.Status != r.Status || e.Latency != r.Finished.Sub(r.Started) {
			t.Errorf("%s: EventDone %s, %d attempts, status %d, %v; result %s, %d, %d, %v", r.URL, e.Host, e.Attempt, e.Status,
				e.Latency, r.Host, r.Attempts, r.Status, r.Finished.Sub(r.Started))
		}
		if r.Attempts > 1 {
			retried++
		}
	}
	if len(done) != len(res) || len(res) != 30 || retried == 0 {
		t.Errorf("%d EventDone for %d results (want 30, some retried: %d)", len(done), len(res), retried)
	}
}

// twoHosts serves a.test and b.test (20 req/s, 429 with Retry-After
// beyond) and returns a list of n pages of each.
func twoHosts(t *testing.T, n int) (*testbed.Server, string) {
	t.Helper()
	srv := testbed.NewServer(
		testbed.HostConfig{Name: "a.test"},
		testbed.HostConfig{Name: "b.test", Rate: 20, Burst: 2, RetryAfter: testbed.RetryAfterSeconds},
	)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	var list strings.Builder
	for i := range n {
		fmt.Fprintf(&list, "http://a.test/p/%d\nhttp://b.test/p/%d\n", i, i)
	}
	return srv, list.String()
}

func readEvents(t *testing.T, dir string) []audit.Record {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []audit.Record
	if err := audit.Read(f, func(r *audit.Record) error { out = append(out, *r); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestWaitReason: why a URL waits, as a reason waits are summed by.
func TestWaitReason(t *testing.T) {
	for why, want := range map[string]polite.Reason{
		"paused (retry-after)": polite.ReasonRetryAfter, "breaker open": polite.ReasonBreaker,
		"503 Service Unavailable, retry budget spent": polite.ReasonBudget, "robots.txt unreachable": polite.ReasonRobots,
		"waiting for robots.txt": polite.ReasonRobots, "429 Too Many Requests": polite.ReasonBackoff, "timeout": polite.ReasonBackoff,
	} {
		if got := waitReason(why); got != want {
			t.Errorf("waitReason(%q) = %q, want %q", why, got, want)
		}
	}
}
