package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/polite-go/polite"
)

var t0 = time.Date(2026, 11, 23, 21, 0, 0, 0, time.UTC)

// events has one of each kind, with the inputs each carries.
func events() []polite.Event {
	h := http.Header{"Ratelimit": {`"default";r=0;t=30`}, "Ratelimit-Policy": {`"default";q=100;w=60`}}
	return []polite.Event{
		{Kind: polite.EventAttempt, Time: t0, Host: "a.test", ID: 7, Attempt: 1, Status: 429, Outcome: polite.Throttled,
			Latency: 12345 * time.Microsecond, Header: h},
		{Kind: polite.EventPause, Time: t0, Host: "a.test", ID: 7, Reason: polite.ReasonRetryAfter, Delay: 30 * time.Second,
			RetryAfter: "30", Requested: 30 * time.Second, Status: 429},
		{Kind: polite.EventRate, Time: t0, Host: "a.test", ID: 7, Reason: polite.ReasonAdaptive, Rate: 2.5, Prev: 5,
			Capacity: 3, Measured: true, Phase: "settled"},
		{Kind: polite.EventPause, Time: t0, Host: "a.test", ID: 8, Reason: polite.ReasonRateLimit, Delay: 30 * time.Second, Header: h},
		{Kind: polite.EventGiveUp, Time: t0, Host: "b.test", ID: 9, Reason: polite.ReasonRetryAfter, RetryAfter: "3600",
			Requested: time.Hour, Delay: time.Hour, Clamped: true},
		{Kind: polite.EventBreaker, Time: t0, Host: "b.test", Reason: polite.ReasonBreaker, Detail: "open"},
		{Kind: polite.EventWait, Time: t0, Host: "b.test", ID: 10, Reason: polite.ReasonRate, Delay: 250 * time.Millisecond},
		{Kind: polite.EventRobots, Time: t0, Host: "<script>alert(1)</script>", Reason: polite.ReasonRobots,
			Detail: "Disallow: /\xff\u2028\"x\""},
		{Kind: polite.EventBlocked, Time: t0, Host: "c.test", Reason: polite.ReasonBlock, Detail: "captcha",
			Err: errors.New(strings.Repeat("e", 500))},
	}
}

// TestRoundTrip: every event comes back from its line with its inputs,
// and lines are JSON safe to inline in HTML.
func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	l := New(&buf, Options{FlushInterval: -1})
	for _, e := range events() {
		l.Observe(e)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.ContainsAny(out, "<>&") {
		t.Errorf("log holds a raw <, > or &:\n%s", out)
	}
	var recs []Record
	if err := Read(strings.NewReader(out), func(r *Record) error { recs = append(recs, *r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(events()) {
		t.Fatalf("Read: %d records, want %d", len(recs), len(events()))
	}
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("line %d is not JSON: %s", i+1, line)
		}
	}
	at, pause, rate, rl, give := recs[0], recs[1], recs[2], recs[3], recs[4]
	if at.T != t0.UnixMilli() || at.Kind != "attempt" || at.ID != 7 || at.Status != 429 || at.Outcome != "throttled" || at.Latency != 12.345 {
		t.Errorf("attempt = %+v", at)
	}
	if pause.RA != "30" || pause.Req != 30000 || pause.Delay != 30000 || pause.Clamped || pause.Reason != "retry-after" {
		t.Errorf("pause = %+v", pause)
	}
	if rate.Rate == nil || *rate.Rate != 2.5 || rate.Prev != 5 || rate.Cap != 3 || !rate.Meas || rate.Phase != "settled" {
		t.Errorf("rate = %+v", rate)
	}
	if want := `Ratelimit: "default";r=0;t=30; Ratelimit-Policy: "default";q=100;w=60`; rl.RL != want {
		t.Errorf("ratelimit raw = %q, want %q", rl.RL, want)
	}
	if give.RA != "3600" || !give.Clamped || give.Req != 3600000 {
		t.Errorf("give-up = %+v", give)
	}
	if got := recs[7].Host; got != "<script>alert(1)</script>" {
		t.Errorf("host = %q, want the <script> name back", got)
	}
	if got := recs[7].Detail; got != "Disallow: /\ufffd\u2028\"x\"" {
		t.Errorf("detail = %q", got)
	}
	if got, want := recs[8].Err, strings.Repeat("e", maxErr)+"…(cut, 500 bytes)"; got != want {
		t.Errorf("error kept %q, want %q", got, want)
	}
	if avg := buf.Len() / len(recs); avg > 200 {
		t.Errorf("%d bytes a line on average, want compact lines", avg)
	}
}

// lineWriter checks that every write holds whole lines.
type lineWriter struct {
	mu     sync.Mutex // guards writes, bytes, partial
	writes int
	bytes  int
	split  bool
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	w.bytes += len(p)
	if len(p) == 0 || p[len(p)-1] != '\n' {
		w.split = true
	}
	return len(p), nil
}

func (w *lineWriter) state() (int, int, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes, w.bytes, w.split
}

// TestFlushInterval: lines wait in the buffer at most the interval, are
// all written at Close, and leave it only as whole lines; the buffer
// stays bounded however many come.
func TestFlushInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &lineWriter{}
		l := New(w, Options{FlushInterval: time.Second, BufferSize: 1024})
		e := events()[1]
		l.Observe(e)
		if n, _, _ := w.state(); n != 0 {
			t.Fatalf("%d writes before the interval, want 0", n)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if n, _, _ := w.state(); n != 1 {
			t.Fatalf("%d writes after the interval, want 1", n)
		}
		for range 10000 {
			l.Observe(e)
		}
		l.mu.Lock()
		held := cap(l.buf)
		l.mu.Unlock()
		if held > 2*1024 {
			t.Errorf("buffer holds %d bytes, want at most 2 KiB", held)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l.Observe(e) // after Close: dropped, no panic
		_, bytes, split := w.state()
		if split {
			t.Error("a write ended inside a line")
		}
		var one bytes0
		one.Write(appendEvent(nil, &e))
		if want := 10001 * one.n; bytes != want {
			t.Errorf("%d bytes written, want %d (10,001 lines)", bytes, want)
		}
		if got := l.Lines(); got != 10001 {
			t.Errorf("Lines() = %d, want 10001 (none after Close)", got)
		}
	})
}

type bytes0 struct{ n int }

func (b *bytes0) Write(p []byte) { b.n += len(p) }

// TestOpenAppends: Open appends to a log, cutting the partial line a
// killed writer left, and Read skips a partial last line.
func TestOpenAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	e := events()
	l, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	l.Observe(e[0])
	l.Observe(e[1])
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"t":1,"k":"wai`) // a kill mid-write
	f.Close()
	if n := count(t, path); n != 2 {
		t.Fatalf("Read of a log with a partial last line: %d records, want 2", n)
	}
	f, _ = os.Open(path)
	partial, err := ReadTail(f, func(*Record) error { return nil })
	f.Close()
	if err != nil || partial != len(`{"t":1,"k":"wai`) {
		t.Errorf("ReadTail = %d, %v; want the partial line's %d bytes, nil", partial, err, len(`{"t":1,"k":"wai`))
	}
	if l, err = Open(path, Options{}); err != nil {
		t.Fatal(err)
	}
	l.Observe(e[2])
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := count(t, path); n != 3 {
		t.Errorf("after a rerun: %d records, want 3", n)
	}
	if _, err := Open(filepath.Join(path, "x"), Options{}); err == nil || !strings.Contains(err.Error(), "audit:") {
		t.Errorf("Open(a path under a file) = %v, want an audit: error", err)
	}
}

func count(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	if err := Read(f, func(*Record) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// A server's 4 MB RateLimit fields were copied whole into each line (8 MB
// lines, a 410 MB log; issue 29, item 6). Every field a server chose is
// cut when the line is made, at a rune's start, and marked with its whole
// length.
func TestRawFieldsCut(t *testing.T) {
	const big = 4 << 20
	policy := strings.Repeat("x", big)
	detail := strings.Repeat("é", big/2) // a cut could fall inside a rune
	e := polite.Event{Kind: polite.EventPause, Time: t0, Host: "a.test", ID: 1, Reason: polite.ReasonRateLimit, Delay: time.Second,
		RetryAfter: policy, Detail: detail, Err: errors.New(policy),
		Header: http.Header{"Ratelimit-Policy": {policy}, "X-Ratelimit-Remaining": {"0"}}}
	var buf bytes.Buffer
	l := New(&buf, Options{FlushInterval: -1})
	l.Observe(e)
	l.Observe(events()[3]) // RateLimit fields of a sane size, kept whole
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(buf.String(), "\n")
	if len(line) > 8<<10 {
		t.Errorf("the line is %d bytes, want at most 8 KiB", len(line))
	}
	var recs []Record
	if err := Read(&buf, func(r *Record) error { recs = append(recs, *r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	r := recs[0]
	rlSize := len("Ratelimit-Policy: ") + big + len("; X-Ratelimit-Remaining: 0")
	for _, tc := range []struct {
		field, got, prefix string
		size               int
	}{
		{"ra", r.RA, "xxxx", big},
		{"rl", r.RL, "Ratelimit-Policy: xxxx", rlSize},
		{"det", r.Detail, "éé", len(detail)},
		{"err", r.Err, "xxxx", big},
	} {
		mark := fmt.Sprintf("…(cut, %d bytes)", tc.size)
		if !strings.HasPrefix(tc.got, tc.prefix) || !strings.HasSuffix(tc.got, mark) || strings.ContainsRune(tc.got, utf8.RuneError) {
			t.Errorf("%s = %.40q…%q, want %q… cut and marked %q", tc.field, tc.got, tc.got[max(0, len(tc.got)-40):], tc.prefix, mark)
		}
	}
	if want := `Ratelimit: "default";r=0;t=30; Ratelimit-Policy: "default";q=100;w=60`; recs[1].RL != want {
		t.Errorf("sane fields = %q, want %q whole", recs[1].RL, want)
	}
}

// TestReadErrors: a malformed whole line is an error naming its number.
func TestReadErrors(t *testing.T) {
	err := Read(strings.NewReader("{\"t\":1}\n{nope}\n"), func(*Record) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("Read(malformed line 2) = %v, want an error naming line 2", err)
	}
	long := "{\"det\":\"" + strings.Repeat("x", maxLine) + "\"}\n"
	if err := Read(strings.NewReader(long), func(*Record) error { return nil }); err == nil {
		t.Error("Read(an overlong line) = nil, want an error")
	}
}

// TestReadSkipping: lines that are too long or not records are skipped
// and counted, the first one's number named, and the records around them
// read; an overlong last line without its newline is a partial line.
func TestReadSkipping(t *testing.T) {
	long := "{\"det\":\"" + strings.Repeat("x", 2*maxLine) + "\"}"
	log := "{\"t\":1}\n{nope}\n" + long + "\n{\"t\":2}\n\n" + long + "\n{\"t\":3}\n" + long
	var ts []int64
	s, err := ReadSkipping(strings.NewReader(log), func(r *Record) error { ts = append(ts, r.T); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ts, []int64{1, 2, 3}) {
		t.Errorf("records %v, want [1 2 3]", ts)
	}
	if s.Lines != 3 || s.First == nil || !strings.Contains(s.First.Error(), "line 2") || s.Partial != len(long) {
		t.Errorf("ReadSkipping = %+v, want 3 lines skipped, the first line 2, a partial line of %d bytes", s, len(long))
	}
	if err := Read(strings.NewReader(log), func(*Record) error { return nil }); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("Read = %v, want the error of line 2", err)
	}
}

// TestFromTransport: a Log set as a Transport's Observer records its
// decisions.
func TestFromTransport(t *testing.T) {
	srv := newServer(t)
	var buf bytes.Buffer
	l := New(&buf, Options{FlushInterval: -1})
	tr := &polite.Transport{Observer: l, IgnoreRobots: true, Limits: polite.Limits{Rate: 1000, Burst: 10}}
	c := &http.Client{Transport: tr}
	resp, err := c.Get(srv)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"k":"attempt"`) || !strings.Contains(buf.String(), `"s":204`) {
		t.Errorf("log = %s, want the attempt", buf.String())
	}
}

func BenchmarkObserve(b *testing.B) {
	l := New(discard{}, Options{})
	e := events()[2]
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Observe(e)
		}
	})
	b.StopTimer()
	l.Close()
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	l := New(&buf, Options{FlushInterval: -1})
	for _, e := range events() {
		l.Observe(e)
	}
	l.Close()
	f.Add(buf.String())
	f.Add("{\"t\":1}\n{")
	f.Add("\n\n")
	f.Fuzz(func(t *testing.T, s string) {
		var strict, all int
		rerr := Read(strings.NewReader(s), func(*Record) error { strict++; return nil })
		sk, err := ReadSkipping(strings.NewReader(s), func(*Record) error { all++; return nil })
		if err != nil {
			t.Fatalf("ReadSkipping = %v", err)
		}
		if rerr == nil && (sk.Lines != 0 || all != strict) || all < strict {
			t.Errorf("Read: %d records (%v); ReadSkipping: %d, %+v", strict, rerr, all, sk)
		}
	})
}
