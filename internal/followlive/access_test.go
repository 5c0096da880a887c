package followlive

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polite-go/polite/testbed"
)

func TestParseNginx(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       testbed.Request
	}{
		{"proxy form", "1795740348.955 0.005 h00.site.test 200 196 GET http://h00.site.test/robots.txt HTTP/1.1",
			testbed.Request{Host: "h00.site.test", Method: "GET", URI: "/robots.txt", Status: 200, Bytes: 196}},
		{"origin form", "1795740348.955 0.000 H01.site.test 404 0 GET /gone/1.html?a=b HTTP/1.1",
			testbed.Request{Host: "h01.site.test", Method: "GET", URI: "/gone/1.html?a=b", Status: 404}},
		{"proxy form, no path", "1795740348.955 0.000 h02.site.test 200 10 GET http://h02.site.test HTTP/1.0",
			testbed.Request{Host: "h02.site.test", Method: "GET", URI: "/", Status: 200, Bytes: 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseNginx(tc.line)
			if err != nil {
				t.Fatal(err)
			}
			got.Time = time.Time{}
			if got != tc.want {
				t.Errorf("parseNginx(%q) = %+v, want %+v", tc.line, got, tc.want)
			}
		})
	}
	got, _ := parseNginx("1795740349.000 0.250 h 200 1 GET / HTTP/1.1")
	if want := time.Unix(1795740348, 750_000_000); got.Time.Sub(want).Abs() > time.Microsecond {
		t.Errorf("arrival = %v, want %v ($msec less $request_time)", got.Time, want)
	}
	if _, err := parseNginx("1795740349.000 h 200"); err == nil {
		t.Error("a short line parsed")
	}
}

func TestProblems(t *testing.T) {
	err := errors.Join(
		errors.New("testbed: 2 URLs expected, never answered: http://a/1, http://a/2"),
		errors.New("testbed: 1 URLs requested that must never be: http://a/nf/1.html (nofollow, 1 times)"),
	)
	p := problems(err)
	if p["expected, never answered"].N != 2 || p["requested that must never be"].N != 1 || len(p) != 2 {
		t.Errorf("problems = %+v", p)
	}
	if got, want := p.Short(), "2 expected, never answered; 1 requested that must never be"; got != want {
		t.Errorf("Short() = %q, want %q", got, want)
	}
	if got := problems(nil).Short(); got != "none" {
		t.Errorf("problems(nil).Short() = %q, want none", got)
	}
}

func TestWindows(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var reqs []testbed.Request
	// Host a: 12 at once, then one a second later. Host b: 13 within 0.5 s.
	for i := range 12 {
		reqs = append(reqs, testbed.Request{Time: t0.Add(time.Duration(i) * time.Millisecond), Host: "a", URI: "/p"})
	}
	reqs = append(reqs, testbed.Request{Time: t0.Add(1500 * time.Millisecond), Host: "a", URI: "/p"})
	for i := range 13 {
		reqs = append(reqs, testbed.Request{Time: t0.Add(time.Duration(i) * 40 * time.Millisecond), Host: "b", URI: "/robots.txt"})
	}
	w := windows(reqs, 10, 2)
	if w.Allowed != 12 || w.Worst != 13 || w.WorstHost != "b" || w.Over != 1 || w.WorstPages != 12 || len(w.Busiest) != 13 {
		t.Errorf("windows = %+v", w)
	}
	if got := peak([]time.Time{t0, t0.Add(time.Second), t0.Add(2 * time.Second)}); got != 2 {
		t.Errorf("peak = %d, want 2 (a closed window)", got)
	}
}

func TestReadResults(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "results.jsonl")
	lines := `{"url":"http://a/","outcome":"ok","status":200}` + "\n" + `{"url":"http://a/x","outcome":"ok","sta`
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	rs, err := readResults(path)
	if err != nil || len(rs) != 1 || rs[0].URL != "http://a/" {
		t.Errorf("readResults, last line cut = %+v, %v; want the first line alone", rs, err)
	}
	if err := os.WriteFile(path, []byte("nonsense\n"+`{"url":"http://a/"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readResults(path); err == nil {
		t.Error("readResults of a bad line before a good one: no error")
	}
}

func TestParseSizes(t *testing.T) {
	got, err := parseSizes("100000/100, 1000000/1000")
	if err != nil || len(got) != 2 || got[1] != (MemorySize{Pages: 1000000, Hosts: 1000}) {
		t.Errorf("parseSizes = %+v, %v", got, err)
	}
	for _, bad := range []string{"", "100", "x/1", "10/0"} {
		if _, err := parseSizes(bad); err == nil {
			t.Errorf("parseSizes(%q): no error", bad)
		}
	}
}

func TestWriteTable(t *testing.T) {
	var b strings.Builder
	WriteTable(&b, []Row{
		{Part: "site", Figure: "command", Measured: "polite fetch x"},
		{Part: "site", Figure: "429s", Measured: "3", Goal: "0", Bad: true},
		{Part: "kill", Figure: "kills", Measured: strings.Repeat("x", 200)},
	})
	out := b.String()
	for _, want := range []string{"== site\ncommand: $ polite fetch x\n", "✗ 3", "== kill", "…"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestByRun(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// Run 0 from 0 ms, killed at 1000 ms; run 1 from 1020 ms.
	kills := []Kill{{Started: at(0), After: time.Second}}
	starts := []time.Time{at(0), at(1020)}
	req := func(ms int, uri string, status int) testbed.Request {
		return testbed.Request{Time: at(ms), Host: "a", URI: uri, Status: status}
	}
	reqs := []testbed.Request{
		req(990, "/inflight", 200), req(1100, "/inflight", 200), // across the kill, 10 ms before it
		req(1001, "/late", 200), req(1200, "/late", 200), // logged 1 ms after the signal
		req(1300, "/twice", 200), req(1400, "/twice", 200), // twice in run 1
		req(1300, "/busy", 429), req(1400, "/busy", 200), // a retry
		req(10, "/robots.txt", 200), req(1030, "/robots.txt", 200), // each run reads it
	}
	same, across, before := byRun(reqs, starts, kills)
	if len(same) != 1 || same[0] != "http://a/twice" || across != 2 || before != 10*time.Millisecond {
		t.Errorf("byRun = %v, %d, %v; want [http://a/twice], 2, 10ms", same, across, before)
	}
}
