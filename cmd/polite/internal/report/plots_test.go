package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/audit"
)

// steadyJob is a job of one host answering 200 every 500 ms for 20 s, but
// not between 5 s and 15 s, with a 503 at 2 s; and a second host whose 40
// URLs half ended blocked after one request each.
func steadyJob(t *testing.T) *Data {
	t.Helper()
	t0 := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	var ev, res bytes.Buffer
	l := audit.New(&ev, audit.Options{FlushInterval: -1, BufferSize: 1 << 20})
	id := uint64(0)
	result := func(h, outcome string, status int) {
		id++
		line, _ := json.Marshal(map[string]any{"url": fmt.Sprintf("http://%s/%d", h, id), "host": h, "outcome": outcome,
			"status": status, "attempts": 1, "id": id})
		res.Write(append(line, '\n'))
	}
	for ms := 0; ms <= 20000; ms += 500 {
		if ms > 5000 && ms < 15000 {
			continue
		}
		st, out := 200, polite.OK
		if ms == 2000 {
			st, out = 503, polite.ServerError
		}
		l.Observe(polite.Event{Kind: polite.EventAttempt, Time: t0.Add(time.Duration(ms) * time.Millisecond), Host: "steady.test",
			ID: id + 1, Attempt: 1, Status: st, Outcome: out, Latency: 40 * time.Millisecond})
		result("steady.test", "ok", st)
	}
	l.Observe(polite.Event{Kind: polite.EventPause, Time: t0.Add(2 * time.Second), Host: "steady.test", Reason: polite.ReasonRetryAfter,
		Delay: time.Second, RetryAfter: "1", Requested: time.Second})
	l.Observe(polite.Event{Kind: polite.EventRate, Time: t0.Add(2 * time.Second), Host: "steady.test", Reason: polite.ReasonAdaptive,
		Rate: 2, Prev: 4, Capacity: 2, Measured: true, Phase: "settled"})
	for i := range 40 {
		if i < 20 {
			l.Observe(polite.Event{Kind: polite.EventAttempt, Time: t0.Add(time.Duration(i) * 100 * time.Millisecond), Host: "waf.test",
				ID: id + 1, Attempt: 1, Status: 200, Outcome: polite.OK, Latency: 30 * time.Millisecond})
			result("waf.test", "ok", 200)
			continue
		}
		if i < 22 {
			l.Observe(polite.Event{Kind: polite.EventAttempt, Time: t0.Add(time.Duration(i) * 100 * time.Millisecond), Host: "waf.test",
				ID: id + 1, Attempt: 1, Status: 200, Outcome: polite.Blocked, Latency: 30 * time.Millisecond})
		}
		result("waf.test", "blocked", 0)
	}
	l.Close()
	d, err := Read(&res, &ev, Job{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func page(t *testing.T, d *Data) string {
	t.Helper()
	var b strings.Builder
	if err := Write(&b, d); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func hostPlot(t *testing.T, page, name string) string {
	t.Helper()
	i := strings.Index(page, `aria-label="rates of `+name+`"`)
	if i < 0 {
		t.Fatalf("no plot of %s", name)
	}
	return page[i : i+strings.Index(page[i:], "</svg>")]
}

// TestAchievedIsARate: a host answering every 500 ms plots about 2 ok/s
// while it answers, not a square wave between 0 and a bucket's count over
// its width (buckets here are 167 ms).
func TestAchievedIsARate(t *testing.T) {
	d := steadyJob(t)
	plot := hostPlot(t, page(t, d), "steady.test")
	m := regexp.MustCompile(`data-series="ok" data-n="\d+" points="([^"]+)"`).FindStringSubmatch(plot)
	if m == nil {
		t.Fatal("no achieved line")
	}
	top, ht := 6.0, 150.0
	var ymax float64
	if y := regexp.MustCompile(`class="ymax"[^>]*>([0-9.]+)<`).FindStringSubmatch(plot); y != nil {
		ymax, _ = strconv.ParseFloat(y[1], 64)
	}
	if ymax == 0 {
		t.Fatal("no y maximum label")
	}
	for k, p := range strings.Fields(m[1]) {
		xy := strings.Split(p, ",")
		yv, _ := strconv.ParseFloat(xy[1], 64)
		v := (top + ht - yv) / ht * ymax
		at := time.Duration(k+1) * d.Width
		if at > 3200*time.Millisecond && at < 5*time.Second && (v < 1.4 || v > 2.6) {
			t.Errorf("achieved at %v: %.2f ok/s, want about 2 (the host answered every 500 ms)", at, v)
		}
		if at > 6500*time.Millisecond && at < 14*time.Second && v != 0 {
			t.Errorf("achieved at %v: %.2f ok/s during a spell of no answers", at, v)
		}
	}
}

// TestPlotMarks: a 503 gets its tick like a 429; the latency lines break
// where the host gave no answers instead of joining across (or dropping to
// 0 ms); the legend promises no error band when none is drawn; axis
// maxima sit in the margin, whole numbers without ".0".
func TestPlotMarks(t *testing.T) {
	d := steadyJob(t)
	p := page(t, d)
	plot := hostPlot(t, p, "steady.test")
	if n := strings.Count(plot, `data-series="503" data-n="1"`); n != 1 {
		t.Errorf("%d ticks for the one 503, want 1", n)
	}
	if n := strings.Count(plot, `<polyline class="lat"`); n != 4 {
		t.Errorf("%d latency lines, want 4 (p50 and p95, each broken by the 10 s without answers)", n)
	}
	if strings.Contains(p, "The band around it") {
		t.Error("the legend explains an error band no plot has")
	}
	for _, m := range regexp.MustCompile(`<text class="ymax" x="(\d+)"[^>]*>([^<]+)<`).FindAllStringSubmatch(p, -1) {
		if x, _ := strconv.Atoi(m[1]); x >= left {
			t.Errorf("axis maximum %q drawn at x=%d, inside the plot", m[2], x)
		}
		if strings.HasSuffix(m[2], ".0") {
			t.Errorf("axis maximum %q: a whole number printed as a float", m[2])
		}
	}
}

// TestHostsOKPerURL: the hosts table's ok % is of the host's URLs: a host
// whose 40 URLs half ended blocked reads 50 %, not the 91 % of its
// requests that were answered ok.
func TestHostsOKPerURL(t *testing.T) {
	p := page(t, steadyJob(t))
	row := regexp.MustCompile(`<tr><td>waf\.test</td><td data-v="\d+">[^<]*</td><td data-v="([0-9.]+)">`).FindStringSubmatch(p)
	if row == nil || row[1] != "50.000" {
		t.Errorf("waf.test ok %% cell %v, want 50.000 (20 of 40 URLs ok)", row)
	}
}

// TestStartingRate: a host whose rate never changed has the rate it was
// held at in the hosts table (its starting-rate event), and one without
// a limit reads ∞, not "–".
func TestStartingRate(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	var ev bytes.Buffer
	l := audit.New(&ev, audit.Options{FlushInterval: -1})
	for i, h := range []string{"ruled.test", "free.test"} {
		rate := 0.5
		if i == 1 {
			rate = math.Inf(1)
		}
		l.Observe(polite.Event{Kind: polite.EventRate, Time: t0, Host: h, ID: 1, Reason: polite.ReasonPolicy, Rate: rate, Detail: "rule " + h})
		l.Observe(polite.Event{Kind: polite.EventAttempt, Time: t0, Host: h, ID: 1, Attempt: 1, Status: 200, Outcome: polite.OK})
	}
	l.Close()
	d, err := Read(nil, &ev, Job{})
	if err != nil {
		t.Fatal(err)
	}
	p := page(t, d)
	for h, want := range map[string]string{"ruled.test": "0.5", "free.test": "∞"} {
		row := regexp.MustCompile(`<tr><td>` + regexp.QuoteMeta(h) + `</td>.*</tr>`).FindString(p)
		var cells []string
		for _, c := range strings.Split(row, "</td>") {
			cells = append(cells, regexp.MustCompile(`<[^>]*>`).ReplaceAllString(c, ""))
		}
		if len(cells) < 10 {
			t.Fatalf("%s: row %q", h, row)
		}
		// host, requests, ok %, 429s, 503s, p50, p95, rate, min, max
		if got := cells[7] + " " + cells[8] + " " + cells[9]; got != want+" "+want+" "+want {
			t.Errorf("%s: rate, min, max %q, want %s each", h, got, want)
		}
	}
}
