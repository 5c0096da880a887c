package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/audit"
)

// TestStates: hosts by state per bucket, against counts worked out by
// hand: three hosts over 11.9 s (buckets of 100 ms), a host counted once
// per bucket in its highest state.
func TestStates(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	var buf bytes.Buffer
	l := audit.New(&buf, audit.Options{FlushInterval: -1})
	attempt := func(h string, end, lat int) {
		l.Observe(polite.Event{Kind: polite.EventAttempt, Time: at(end), Host: h, Attempt: 1, Status: 200, Latency: time.Duration(lat) * time.Millisecond})
	}
	breaker := func(h string, open, closed int) {
		l.Observe(polite.Event{Kind: polite.EventBreaker, Time: at(open), Host: h, Detail: "open"})
		l.Observe(polite.Event{Kind: polite.EventBreaker, Time: at(closed), Host: h, Detail: "half-open"})
	}
	attempt("a.test", 1000, 1000) // active 0–9
	l.Observe(polite.Event{Kind: polite.EventPause, Time: at(2000), Host: "a.test", Reason: polite.ReasonRetryAfter, Delay: time.Second})
	breaker("a.test", 5000, 6000)
	attempt("b.test", 3050, 50)
	l.Observe(polite.Event{Kind: polite.EventBlocked, Time: at(3000), Host: "b.test", Reason: polite.ReasonBlock, Detail: "captcha"})
	attempt("b.test", 11880, 80)
	attempt("c.test", 2000, 100)
	l.Observe(polite.Event{Kind: polite.EventPause, Time: at(2500), Host: "c.test", Reason: polite.ReasonBackoff, Delay: time.Second})
	breaker("c.test", 2800, 3100)
	l.Close()

	d, err := Read(nil, &buf, Job{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Width != 100*time.Millisecond {
		t.Fatalf("bucket width %v, want 100ms", d.Width)
	}
	var want [len(States)][Buckets]int
	set := func(s, from, to int) {
		for k := from; k <= to; k++ {
			want[s][k]++
		}
	}
	set(0, 0, 9)    // a active
	set(0, 19, 19)  // c active
	set(1, 20, 29)  // a paused
	set(1, 25, 27)  // c paused, until its breaker opens
	set(2, 28, 30)  // c's breaker open
	set(1, 31, 34)  // c paused again
	set(2, 50, 59)  // a's breaker open
	set(3, 30, 118) // b blocked from 3 s to the end
	for s, name := range States {
		if got := fmt.Sprint(d.States[s]); got != fmt.Sprint(want[s][:]) {
			t.Errorf("%s hosts per bucket:\n got %s\nwant %v", name, got, want[s][:])
		}
	}
	var page strings.Builder
	if err := Write(&page, d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), `data-series="state:blocked" data-n="1"`) {
		t.Error("the page does not draw the blocked host")
	}
}

// The capacity estimate's error band (issue 15): a rate event that carries
// the controller's error is drawn as capacity ± error, through the audit
// log; one without an error (a lower bound) gets no band.
func TestCapacityBand(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	l := audit.New(&buf, audit.Options{FlushInterval: -1})
	l.Observe(polite.Event{Kind: polite.EventAttempt, Time: t0, Host: "a.test", Attempt: 1, Status: 429, Outcome: polite.Throttled})
	l.Observe(polite.Event{Kind: polite.EventRate, Time: t0.Add(time.Second), Host: "a.test", Reason: polite.ReasonAdaptive,
		Rate: 9.7, Prev: 20, Capacity: 10, CapacityErr: 1.5, Measured: true, Phase: "settled"})
	l.Observe(polite.Event{Kind: polite.EventRate, Time: t0.Add(2 * time.Second), Host: "a.test", Reason: polite.ReasonAdaptive,
		Rate: 12, Prev: 9.7, Capacity: 12, Phase: "ramping"})
	l.Observe(polite.Event{Kind: polite.EventAttempt, Time: t0.Add(3 * time.Second), Host: "a.test", Attempt: 1, Status: 200, Outcome: polite.OK})
	l.Close()
	if !strings.Contains(buf.String(), `"cap_err":1.5`) {
		t.Fatalf("events.jsonl does not carry the error:\n%s", buf.String())
	}
	d, err := Read(nil, &buf, Job{})
	if err != nil {
		t.Fatal(err)
	}
	var page strings.Builder
	if err := Write(&page, d); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(page.String(), `class="capband"`); n != 1 {
		t.Errorf("%d capacity bands drawn, want 1 (the lower bound has none)", n)
	}
	if !strings.Contains(page.String(), "capacity 10.0 ± 1.5 req/s") {
		t.Error("the band does not say capacity 10.0 ± 1.5 req/s")
	}
}
