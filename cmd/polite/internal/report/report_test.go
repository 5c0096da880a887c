package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/audit"
)

// synth writes a job of urls URLs over hosts hosts: results.jsonl and
// events.jsonl as the crawl job writes them (events through audit.Log),
// with some hosts throttling (429 with Retry-After, pauses, rate cuts,
// breaker openings).
func synth(urls, hosts int, name func(i int) string) (results, events []byte) {
	var rb bytes.Buffer
	var eb bytes.Buffer
	l := audit.New(&eb, audit.Options{FlushInterval: -1, BufferSize: 1 << 20})
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Date(2026, 11, 23, 20, 0, 0, 0, time.UTC)
	rates := make([]float64, hosts)
	for i := range rates {
		rates[i] = 10
	}
	for u := range urls {
		hi := u % hosts
		h := name(hi)
		id := uint64(u + 1)
		at := t0.Add(time.Duration(u) * 3 * time.Millisecond)
		throttles := hi%10 == 0 // one host in ten throttles
		attempts := 1
		status := 200
		if throttles && rng.IntN(4) == 0 {
			attempts = 2
		}
		for a := 1; a <= attempts; a++ {
			st := 200
			if a < attempts {
				st = 429
			}
			if rng.IntN(50) == 0 && st == 200 {
				st = []int{404, 500, 503, 0, 301}[rng.IntN(5)]
			}
			out := polite.OK
			switch {
			case st == 429:
				out = polite.Throttled
			case st == 0:
				out = polite.NetworkError
			case st >= 500:
				out = polite.ServerError
			case st >= 400:
				out = polite.ClientError
			}
			if rng.IntN(3) == 0 {
				l.Observe(polite.Event{Kind: polite.EventWait, Time: at, Host: h, ID: id, Reason: polite.ReasonRate, Delay: 80 * time.Millisecond})
			}
			l.Observe(polite.Event{Kind: polite.EventAttempt, Time: at, Host: h, ID: id, Attempt: a, Status: st, Outcome: out,
				Latency: time.Duration(20+rng.IntN(200)) * time.Millisecond})
			if st == 429 {
				l.Observe(polite.Event{Kind: polite.EventPause, Time: at, Host: h, ID: id, Reason: polite.ReasonRetryAfter,
					Delay: 2 * time.Second, RetryAfter: "2", Requested: 2 * time.Second})
				prev := rates[hi]
				rates[hi] = prev * 0.7
				l.Observe(polite.Event{Kind: polite.EventRate, Time: at, Host: h, ID: id, Reason: polite.ReasonAdaptive,
					Rate: rates[hi], Prev: prev, Capacity: prev * 0.8, Measured: true, Phase: "settled"})
				if rng.IntN(30) == 0 {
					l.Observe(polite.Event{Kind: polite.EventGiveUp, Time: at, Host: h, ID: id, Reason: polite.ReasonRetryAfter,
						RetryAfter: "7200", Requested: 2 * time.Hour, Clamped: true})
				}
				if rng.IntN(60) == 0 {
					l.Observe(polite.Event{Kind: polite.EventPause, Time: at, Host: h, ID: id, Reason: polite.ReasonRetryAfter,
						Delay: 10 * time.Minute, RetryAfter: "3600", Requested: time.Hour, Clamped: true})
				}
				if hi%50 == 0 && rng.IntN(100) == 0 {
					l.Observe(polite.Event{Kind: polite.EventBlocked, Time: at, Host: h, ID: id, Reason: polite.ReasonBlock, Detail: "captcha"})
				}
				if rng.IntN(40) == 0 {
					l.Observe(polite.Event{Kind: polite.EventBreaker, Time: at, Host: h, Reason: polite.ReasonBreaker, Detail: "open"})
					l.Observe(polite.Event{Kind: polite.EventBreaker, Time: at.Add(time.Second), Host: h, Reason: polite.ReasonBreaker, Detail: "half-open"})
				}
			} else if throttles && rng.IntN(20) == 0 {
				prev := rates[hi]
				rates[hi] = prev * 1.1
				l.Observe(polite.Event{Kind: polite.EventRate, Time: at, Host: h, ID: id, Reason: polite.ReasonAdaptive,
					Rate: rates[hi], Prev: prev, Phase: "probing"})
			}
			status = st
			at = at.Add(2 * time.Second)
		}
		outcome, errText := "ok", ""
		switch {
		case status == 0:
			outcome, errText = "network_error", fmt.Sprintf(`Get "http://%s/p/%d": dial tcp 127.0.0.1:%d: connection refused`, h, u, 1000+u)
		case status >= 400:
			outcome = "http_error"
		}
		line, _ := json.Marshal(map[string]any{"url": "http://" + h + "/p/" + strconv.Itoa(u), "host": h, "outcome": outcome,
			"status": status, "attempts": attempts, "id": id, "error": errText})
		rb.Write(line)
		rb.WriteByte('\n')
	}
	l.Close()
	return rb.Bytes(), eb.Bytes()
}

func build(t testing.TB, results, events []byte) string {
	t.Helper()
	d, err := Read(bytes.NewReader(results), bytes.NewReader(events), Job{Total: 10, Pending: 0})
	if err != nil {
		t.Fatal(err)
	}
	d.Dir = "job"
	var out strings.Builder
	if err := Write(&out, d); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

var seriesRe = regexp.MustCompile(`data-series="([^"]+)" data-n="(\d+)"`)

// TestSeriesSumToTotals: the counts every plotted series carries add up to
// the totals the tables show: the throughput bars and the status bars to
// the requests sent, each host's 429 ticks to its row's 429s, and its
// achieved-rate line to its ok answers.
func TestSeriesSumToTotals(t *testing.T) {
	res, ev := synth(20000, 200, func(i int) string { return fmt.Sprintf("h%03d.test", i) })
	page := build(t, res, ev)
	d, _ := Read(bytes.NewReader(res), bytes.NewReader(ev), Job{})
	if d.Requests == 0 || d.Statuses[429] == 0 {
		t.Fatalf("synthetic job: %d requests, %d 429s", d.Requests, d.Statuses[429])
	}
	sums := map[string]int{}
	for _, m := range seriesRe.FindAllStringSubmatch(section(t, page, "throughput"), -1) {
		n, _ := strconv.Atoi(m[2])
		sums["throughput"] += n
		sums["class "+m[1]] += n
	}
	for _, m := range seriesRe.FindAllStringSubmatch(section(t, page, "statuses"), -1) {
		n, _ := strconv.Atoi(m[2])
		sums["statuses"] += n
	}
	// The sections that plot one series each (the per-host plots are
	// checked below): their counts against the totals.
	for _, id := range []string{"states", "inflight", "retry-after", "retries", "errors"} {
		for _, m := range seriesRe.FindAllStringSubmatch(section(t, page, id), -1) {
			n, _ := strconv.Atoi(m[2])
			sums[m[1]] += n
		}
	}
	if urls := atoiAttr(t, page, `id="urls" data-n="`); sums["retries"] != urls || urls != 20000 {
		t.Errorf("retries histogram sums to %d URLs, the totals say %d (of 20,000)", sums["retries"], urls)
	}
	if failed := atoiAttr(t, page, `id="failed" data-n="`); sums["errors"] != failed || failed == 0 || d.ErrsCut != 0 {
		t.Errorf("error groups sum to %d URLs, the totals say %d failed (%d groups cut)", sums["errors"], failed, d.ErrsCut)
	}
	pauses, giveUps := atoiAttr(t, page, `id="ra-pauses" data-n="`), atoiAttr(t, page, `id="ra-giveups" data-n="`)
	if sums["ra-requested"] != pauses+giveUps || sums["ra-applied"] != pauses || giveUps == 0 || d.RA.Clamped == 0 {
		t.Errorf("Retry-After histogram: %d asked, %d applied; totals: %d pauses, %d give-ups (%d clamped)",
			sums["ra-requested"], sums["ra-applied"], pauses, giveUps, d.RA.Clamped)
	}
	wire := int64(atoiAttr(t, page, `id="wire" data-n="`))
	var perBucket int64
	for _, v := range strings.Split(regexp.MustCompile(`data-series="inflight-us" data-n="\d+" data-v="([0-9,]+)"`).FindStringSubmatch(page)[1], ",") {
		n, _ := strconv.ParseInt(v, 10, 64)
		perBucket += n
	}
	if int64(sums["inflight-us"]) != wire || perBucket != wire || wire != d.Wire || wire == 0 {
		t.Errorf("in-flight line sums to %d µs (its buckets %d), the totals' time on the wire is %d (data %d)", sums["inflight-us"], perBucket, wire, d.Wire)
	}
	for s, name := range States {
		want := 0
		for k := range Buckets {
			want += d.States[s][k]
		}
		if sums["state:"+name] != want || want == 0 {
			t.Errorf("hosts-by-state %s plotted %d host-buckets, data %d (want some)", name, sums["state:"+name], want)
		}
	}
	for k := range Buckets {
		n := 0
		for s := range States {
			n += d.States[s][k]
		}
		if n > len(d.AllHosts) {
			t.Errorf("bucket %d stacks %d hosts, more than the %d there are", k, n, len(d.AllHosts))
		}
	}
	requests := atoiAttr(t, page, `id="requests" data-n="`)
	if sums["throughput"] != requests || sums["statuses"] != requests || requests != d.Requests {
		t.Errorf("throughput bars sum to %d, status bars to %d, the totals say %d requests (data %d)",
			sums["throughput"], sums["statuses"], requests, d.Requests)
	}
	if sums["class 429"] != d.Statuses[429] {
		t.Errorf("429 bars sum to %d, want %d", sums["class 429"], d.Statuses[429])
	}
	tableSum := 0
	for _, h := range d.Hosts {
		tableSum += h.Requests
	}
	if tableSum != requests {
		t.Errorf("hosts table requests sum to %d, want %d", tableSum, requests)
	}
	if len(d.Detail) != DetailHosts {
		t.Fatalf("%d detail plots, want %d", len(d.Detail), DetailHosts)
	}
	for i, h := range d.Detail {
		start := strings.Index(page, fmt.Sprintf(`id="host-%d"`, i))
		plot := page[start : start+strings.Index(page[start:], "</svg>")]
		got := map[string]int{}
		for _, m := range seriesRe.FindAllStringSubmatch(plot, -1) {
			n, _ := strconv.Atoi(m[2])
			got[m[1]] += n
		}
		if got["429"] != h.S429 || got["503"] != h.S503 || got["ok"] != h.OK {
			t.Errorf("%s: plot has %d 429 ticks, %d 503 ticks and %d ok answers, table %d, %d and %d", h.Name, got["429"], got["503"], got["ok"], h.S429, h.S503, h.OK)
		}
		row := regexp.MustCompile(`<tr><td>` + regexp.QuoteMeta(h.Name) + `</td><td data-v="(\d+)">[^<]*</td><td[^>]*>[^<]*</td><td data-v="(\d+)"`).FindStringSubmatch(page)
		if row == nil || row[1] != strconv.Itoa(h.Requests) || row[2] != strconv.Itoa(h.S429) {
			t.Errorf("%s: table row %v, want requests %d, 429s %d", h.Name, row, h.Requests, h.S429)
		}
	}
}

// section returns the part of page from the element with id to the next
// <h2>.
func section(t *testing.T, page, id string) string {
	t.Helper()
	i := strings.Index(page, `id="`+id+`"`)
	if i < 0 {
		t.Fatalf("page has no %s", id)
	}
	end := strings.Index(page[i:], "<h2>")
	if end < 0 {
		end = len(page) - i
	}
	return page[i : i+end]
}

func atoiAttr(t *testing.T, page, prefix string) int {
	t.Helper()
	i := strings.Index(page, prefix)
	if i < 0 {
		t.Fatalf("page has no %s", prefix)
	}
	s := page[i+len(prefix):]
	n, err := strconv.Atoi(s[:strings.IndexByte(s, '"')])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestEscaped: host names and URLs that hold markup come out as text, and
// the page fetches nothing.
func TestEscaped(t *testing.T) {
	evil := func(i int) string { return fmt.Sprintf(`<script>alert(%d)</script>"x'.test`, i) }
	res, ev := synth(200, 10, evil)
	page := build(t, res, ev)
	if strings.Contains(page, "<script>alert") || strings.Contains(page, `"x'`) {
		t.Error("a host name came out unescaped")
	}
	if !strings.Contains(page, "&lt;script&gt;alert(0)&lt;/script&gt;&#34;x&#39;.test") {
		t.Error("the escaped host name is missing")
	}
	if n := strings.Count(page, "<script>"); n != 1 {
		t.Errorf("%d <script> elements, want the page's own one", n)
	}
	for _, bad := range []string{`src="http`, `href="http`, `src="//`, `href="//`, "url(", "@import"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q: it must fetch nothing", bad)
		}
	}
	if !strings.Contains(page, `content="default-src &#39;none&#39;`) {
		t.Error("no Content-Security-Policy forbidding fetches")
	}
}

// A failed URL's error quotes the server's reason phrase, and its URL is
// the list's line: written into the page raw, their escape sequences
// reached the terminal of whoever ran cat or grep on report.html, and a
// bidi override reversed the page's text (issue 29, item 5). They come
// out as Go escapes, as on a terminal.
func TestServerTextQuotedInPage(t *testing.T) {
	res := `{"url":"http://h.test/a\u001b]0;pwned\u0007","host":"h.test","outcome":"throttled","status":503,"attempts":2,` +
		`"error":"throttled: 503 Unavailable \u001b[2J\u001b]52;c;cHduZWQ=\u0007\u009b31m\u202eevil after N attempts"}` + "\n"
	page := build(t, []byte(res), nil)
	for _, bad := range []string{"\x1b", "\a", "\u009b", "\u202e"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q raw", bad)
		}
	}
	for _, want := range []string{`\x1b[NJ\x1b]N;c;cHduZWQ=\a\u009bNm\u202eevil`, `http://h.test/a\x1b]0;pwned\a`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not say %q", want)
		}
	}
}

// TestEmpty: a job with no results and no events yet still has a page.
func TestEmpty(t *testing.T) {
	d, err := Read(nil, nil, Job{Total: 5, Pending: 5})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := Write(&out, d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "running") {
		t.Error("a job with pending URLs is not shown running")
	}
}

// TestPartialLines: a results or events file cut mid-line (a job writing
// it) reads up to its last whole line.
func TestPartialLines(t *testing.T) {
	res, ev := synth(100, 5, func(i int) string { return fmt.Sprintf("h%d.test", i) })
	d, err := Read(bytes.NewReader(append(res, `{"url":"http://h`...)), bytes.NewReader(append(ev, `{"t":17`...)), Job{})
	if err != nil {
		t.Fatal(err)
	}
	if d.URLs != 100 {
		t.Errorf("%d URLs, want 100", d.URLs)
	}
}

// One events.jsonl line over 1 MiB (a server's 4 MB RateLimit fields,
// copied whole by an older build) made the whole report fail (issue 29,
// item 6). Lines that cannot be read, in events.jsonl or results.jsonl,
// are skipped and counted, and the page says so.
func TestUnreadableLinesSkipped(t *testing.T) {
	res, ev := synth(100, 5, func(i int) string { return fmt.Sprintf("h%d.test", i) })
	n := bytes.Count(ev, []byte("\n"))
	long := `{"t":1,"k":"pause","h":"h1.test","r":"ratelimit","rl":"` + strings.Repeat("x", 2<<20) + "\"}\n"
	cut := bytes.IndexByte(ev, '\n') + 1
	ev = append(append(append([]byte(nil), ev[:cut]...), long+"{not json}\n"...), ev[cut:]...)
	res = append([]byte("{not json}\n"), res...)
	d, err := Read(bytes.NewReader(res), bytes.NewReader(ev), Job{})
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if d.Events != n || d.URLs != 100 {
		t.Errorf("%d events and %d URLs read, want %d and 100", d.Events, d.URLs, n)
	}
	if d.Unread.Lines != 2 || !strings.Contains(d.Unread.First.Error(), "line 2") || d.ResultsUnread != 1 {
		t.Errorf("unread %+v and %d results lines, want 2 events lines from line 2, 1 results line", d.Unread, d.ResultsUnread)
	}
	var page bytes.Buffer
	if err := Write(&page, d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2 lines of events.jsonl could not be read", "1 line of results.jsonl could not be read"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the page does not say %q", want)
		}
	}
}

// TestBigJobSize: a 100,000-URL, 1,000-host job's page stays under 3 MB
// (BenchmarkBuild times it).
func TestBigJobSize(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 100,000-URL job")
	}
	res, ev := synth(100000, 1000, func(i int) string { return fmt.Sprintf("host-%04d.example", i) })
	page := build(t, res, ev)
	if len(page) > 3<<20 {
		t.Errorf("page is %d bytes, want ≤ 3 MB", len(page))
	}
	t.Logf("100,000 URLs, 1,000 hosts: %d events bytes, page %d bytes", len(ev), len(page))
}

// BenchmarkBuild reads and renders a 100,000-URL, 1,000-host job.
func BenchmarkBuild(b *testing.B) {
	res, ev := synth(100000, 1000, func(i int) string { return fmt.Sprintf("host-%04d.example", i) })
	b.ResetTimer()
	var size int
	for b.Loop() {
		d, err := Read(bytes.NewReader(res), bytes.NewReader(ev), Job{})
		if err != nil {
			b.Fatal(err)
		}
		var out bytes.Buffer
		if err := Write(&out, d); err != nil {
			b.Fatal(err)
		}
		size = out.Len()
	}
	b.ReportMetric(float64(size), "page-bytes")
}
