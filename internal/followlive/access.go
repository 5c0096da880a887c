package followlive

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/polite-go/polite/internal/fleetscale"
	"github.com/polite-go/polite/testbed"
)

// readTestbedLog reads a testbed --access-log: one testbed.Request a line.
func readTestbedLog(path string) ([]testbed.Request, error) {
	return readLog(path, testbed.ParseRequest)
}

// readNginxLog reads an access log in nginxFormat.
func readNginxLog(path string) ([]testbed.Request, error) { return readLog(path, parseNginx) }

// readLog reads the access log at path, one request a line, by parse.
func readLog(path string, parse func(string) (testbed.Request, error)) ([]testbed.Request, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []testbed.Request
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		r, err := parse(sc.Text())
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

// nginxFormat is the access log format of the nginx serving the static
// copy: $msec is when the answer ended, $request_time how long it took
// (so arrival is their difference), $request last as it holds spaces. A
// forward-proxy request's $request names an absolute URI.
const nginxFormat = `$msec $request_time $host $status $body_bytes_sent $request`

// parseNginx reads one line in nginxFormat as a testbed.Request (URI the
// path and query, an absolute URI's scheme and authority cut).
func parseNginx(line string) (testbed.Request, error) {
	f := strings.Fields(line)
	if len(f) < 7 {
		return testbed.Request{}, fmt.Errorf("nginx log line %q: want 8 fields", line)
	}
	end, err1 := strconv.ParseFloat(f[0], 64)
	took, err2 := strconv.ParseFloat(f[1], 64)
	status, err3 := strconv.Atoi(f[3])
	n, err4 := strconv.ParseInt(f[4], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return testbed.Request{}, fmt.Errorf("nginx log line %q: bad number", line)
	}
	uri := f[6]
	if rest, ok := strings.CutPrefix(uri, "http://"); ok {
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			uri = rest[i:]
		} else {
			uri = "/"
		}
	}
	at := time.Unix(0, int64((end-took)*1e9)).UTC()
	return testbed.Request{Time: at, Host: strings.ToLower(f[2]), Method: f[5], URI: uri, Status: status, Bytes: n}, nil
}

func urlOf(r testbed.Request) string { return "http://" + r.Host + r.URI }

// retried reports whether an answer is one a polite client asks again
// (over capacity, shed): Check does not count it as an answer either.
func retried(status int) bool { return status == 429 || status == 503 || status == 504 }

// Windows is each host's busiest 1-second window of arrivals.
type Windows struct {
	// Allowed is the bound asked: rate + burst.
	Allowed int
	// Worst is the busiest window of any host and WorstHost that host;
	// WorstPages the same over pages only (no robots.txt).
	Worst, WorstPages int
	WorstHost         string
	// Over counts the hosts whose busiest window went beyond Allowed.
	Over int
	// Slack is the most scheduling slack any host's arrivals need to fit
	// a token bucket of the rate and burst asked (≤ 0: they fit).
	Slack     time.Duration
	SlackHost string
	// Busiest is the worst host's busiest window: its requests, in
	// order of arrival.
	Busiest []testbed.Request
}

// windows measures reqs per host against rate and burst.
func windows(reqs []testbed.Request, rate float64, burst int) Windows {
	all := map[string][]time.Time{}
	pages := map[string][]time.Time{}
	for _, r := range reqs {
		all[r.Host] = append(all[r.Host], r.Time)
		if r.URI != "/robots.txt" {
			pages[r.Host] = append(pages[r.Host], r.Time)
		}
	}
	w := Windows{Allowed: int(rate) + burst, Slack: -time.Hour}
	for _, h := range slices.Sorted(maps.Keys(all)) {
		e := fleetscale.Measure(all[h], rate, burst)
		if e.Window > w.Worst {
			w.Worst, w.WorstHost = e.Window, h
			w.Busiest = busiest(reqs, h)
		}
		if e.Slack > w.Slack {
			w.Slack, w.SlackHost = e.Slack, h
		}
		if e.Window > w.Allowed {
			w.Over++
		}
		w.WorstPages = max(w.WorstPages, fleetscale.Measure(pages[h], rate, burst).Window)
	}
	return w
}

// busiest returns host's requests in its busiest 1-second window.
func busiest(reqs []testbed.Request, host string) []testbed.Request {
	var rs []testbed.Request
	for _, r := range reqs {
		if r.Host == host {
			rs = append(rs, r)
		}
	}
	slices.SortFunc(rs, func(a, b testbed.Request) int { return a.Time.Compare(b.Time) })
	bi, bn, j := 0, 0, 0
	for i := range rs {
		for j < len(rs) && rs[j].Time.Sub(rs[i].Time) <= time.Second {
			j++
		}
		if j-i > bn {
			bi, bn = i, j-i
		}
	}
	return rs[bi : bi+bn]
}

// Problems is what Expectation.Check found, by kind: how many URLs, and
// the first few.
type Problems map[string]Problem

// Problem is one kind of Check's findings.
type Problem struct {
	N        int    `json:"n"`
	Examples string `json:"examples"`
}

var checkLine = regexp.MustCompile(`^testbed: (\d+) URLs ([^:]+): (.*)$`)

// problems splits Check's joined error into its kinds: "expected, never
// answered", "answered more than once", "requested that must never be",
// "requested that no correct crawl requests".
func problems(err error) Problems {
	p := Problems{}
	if err == nil {
		return p
	}
	for line := range strings.Lines(err.Error()) {
		m := checkLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			p["other"] = Problem{N: p["other"].N + 1, Examples: strings.TrimSpace(line)}
			continue
		}
		n, _ := strconv.Atoi(m[1])
		p[m[2]] = Problem{N: n, Examples: m[3]}
	}
	return p
}

// Short is "none" or each kind's count.
func (p Problems) Short() string {
	if len(p) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(p)) {
		parts = append(parts, fmt.Sprintf("%d %s", p[k].N, k))
	}
	return strings.Join(parts, "; ")
}

// Result is the part of a results.jsonl line the measurement reads.
type Result struct {
	URL     string `json:"url"`
	Outcome string `json:"outcome"`
	Status  int    `json:"status"`
	Depth   int    `json:"depth"`
	Kind    string `json:"kind"`
	// LatencyMS is the time polite measured from sending to the answer.
	LatencyMS float64 `json:"latency_ms"`
}

// readResults reads a job's results.jsonl; a last line cut short (a
// process killed while writing it) is left out.
func readResults(path string) ([]Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Result
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var bad error
	for sc.Scan() {
		if bad != nil {
			return nil, bad // a bad line with more after it
		}
		var r Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			bad = fmt.Errorf("%s: %q: %w", path, sc.Text(), err)
			continue
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

// resultSet is the URLs with a result and how many lines each has.
func resultSet(rs []Result) map[string]int {
	m := make(map[string]int, len(rs))
	for _, r := range rs {
		m[r.URL]++
	}
	return m
}

// outcomes counts results by outcome.
func outcomes(rs []Result) map[string]int {
	m := map[string]int{}
	for _, r := range rs {
		m[r.Outcome]++
	}
	return m
}

// diff is how two URL sets differ: URLs only in a, only in b, the first
// of each.
func diff(a, b map[string]int) (onlyA, onlyB int, exA, exB string) {
	for _, u := range slices.Sorted(maps.Keys(a)) {
		if b[u] == 0 {
			if onlyA == 0 {
				exA = u
			}
			onlyA++
		}
	}
	for _, u := range slices.Sorted(maps.Keys(b)) {
		if a[u] == 0 {
			if onlyB == 0 {
				exB = u
			}
			onlyB++
		}
	}
	return
}

// statuses counts requests by status.
func statuses(reqs []testbed.Request) map[int]int {
	m := map[int]int{}
	for _, r := range reqs {
		m[r.Status]++
	}
	return m
}

// fmtCounts formats a count map in key order: "200×9803 301×72".
func fmtCounts[K int | string](m map[K]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%v×%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// repeats is the URLs answered (a status other than 429/503/504) more
// than once, robots.txt aside (each run reads it), sorted, with their
// counts.
func repeats(reqs []testbed.Request) []string {
	n := map[string]int{}
	for _, r := range reqs {
		if !retried(r.Status) && r.URI != "/robots.txt" {
			n[urlOf(r)]++
		}
	}
	var out []string
	for _, u := range slices.Sorted(maps.Keys(n)) {
		if n[u] > 1 {
			out = append(out, fmt.Sprintf("%s (%d)", u, n[u]))
		}
	}
	return out
}

// first returns up to n of list, joined.
func first(list []string, n int) string {
	if len(list) > n {
		return strings.Join(list[:n], ", ") + ", …"
	}
	return strings.Join(list, ", ")
}
