package cli

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/polite-go/polite/crawl"
)

// The live view shows a host's name and what holds it back, which may
// quote a server (a custom BlockDetector's reason, say): as escapes.
func TestBarViewQuoted(t *testing.T) {
	m := &barModel{p: crawl.Progress{Total: 2, Hosts: []crawl.HostProgress{{Host: "h.test\u202e", Why: "blocked: " + evilReason, Left: 1}}},
		notice: "polite: \x1b]0;pwned\a", width: 120, height: 24}
	out := m.render()
	noControls(t, "the live view", out)
	if want := `\x1b[2J`; !strings.Contains(out, want) {
		t.Errorf("the live view does not say %q:\n%s", want, out)
	}
}

// The error Main prints last is quoted line by line: a usage error's own
// second line stays a line, a control in it does not reach the terminal.
func TestErrorLinesKept(t *testing.T) {
	code, _, stderr := politeCmd(t, "status")
	if code != ExitUsage || !strings.Contains(stderr, "\nRun 'polite status --help' for usage.") || strings.Contains(stderr, `\n`) {
		t.Errorf("status without DIR: exit %d, stderr %q, want the usage error on two lines", code, stderr)
	}
	var b strings.Builder
	exitStatus(&exitError{code: ExitFatal, err: errors.New("line one \x1b[2J\nline two \a")}, &b)
	if want := "polite: line one \\x1b[2J\nline two \\a\n"; b.String() != want {
		t.Errorf("exitStatus wrote %q, want %q", b.String(), want)
	}
}

// A job's closing line gives its pace with the digits it needs: 37 URLs
// in 74 s is 0.5/s, not "0/s" (issue 33, item 5).
func TestSummaryPace(t *testing.T) {
	var b strings.Builder
	writeSummary(&b, crawl.Progress{}, crawl.Summary{Total: 37, Done: 37, DoneNow: 37, Elapsed: 74 * time.Second}, "out", 10)
	if !strings.Contains(b.String(), "37 finished in 1m14s (0.5/s)") {
		t.Errorf("summary:\n%s\nwant \"37 finished in 1m14s (0.5/s)\"", b.String())
	}
	for r, want := range map[float64]string{0: "0", 0.5: "0.5", 2.345: "2.3", 9.96: "10", 150.4: "150", 1900: "1900"} {
		if got := perSecond(r); got != want {
			t.Errorf("perSecond(%v) = %q, want %q", r, got, want)
		}
	}
}

// Closing figures people read: bytes humanised, a missing status said
// as such ("none×24" read as nothing; issue 33, item 5).
func TestStatsWording(t *testing.T) {
	var b strings.Builder
	writeStats(&b, crawl.Stats{Statuses: map[int]int{0: 24, 200: 3}, Bytes: 3 << 20})
	for _, want := range []string{"status (this run): no answer×24 200×3", "bytes kept (this run): 3.0 MiB"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("stats:\n%s\nwant %q", b.String(), want)
		}
	}
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 50 << 20: "50 MiB", 12 << 30: "12 GiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// The closing hosts table fits the terminal: on 80 columns the demo's
// rows do (they were 84 wide), and on a narrow one long names are cut in
// their middle and the least telling columns left out, said under it
// (issue 33, item 5). Without a terminal nothing is cut.
func TestHostTableFits(t *testing.T) {
	hosts := func() []crawl.HostProgress {
		return []crawl.HostProgress{
			{Host: "fast.test", Requests: 300, Done: 300, P95: 21 * time.Millisecond, Rate: 19.8},
			{Host: "a-very-long-host-name.cdn.example-shop.test", Requests: 40, Done: 38, Failed: 2, Throttled: 3, P95: 103 * time.Millisecond, Rate: 4.9},
			{Host: "robots.test", Requests: 16, Done: 20, Failed: 4, Rate: 1},
		}
	}
	for _, width := range []int{80, 60, 40} {
		var b strings.Builder
		writeHostTable(&b, hosts(), 10, width)
		for _, l := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
			if n := len([]rune(l)); n > width {
				t.Errorf("width %d: a %d-rune line: %q", width, n, l)
			}
		}
		if !strings.Contains(b.String(), "a-ver") || !strings.Contains(b.String(), "p.test") || !strings.Contains(b.String(), "…") {
			t.Errorf("width %d: the long name is not cut in its middle:\n%s", width, b.String())
		}
		if width == 40 && !strings.Contains(b.String(), "left out to fit 40 columns") {
			t.Errorf("width 40: no word on the columns left out:\n%s", b.String())
		}
	}
	var b strings.Builder
	writeHostTable(&b, []crawl.HostProgress{{Host: "fast.test", Requests: 300, Done: 300}, {Host: "knee.test", Requests: 80, Done: 80},
		{Host: "robots.test", Requests: 16, Done: 20}}, 10, 80)
	if strings.Contains(b.String(), "left out") || strings.Contains(b.String(), "…") {
		t.Errorf("the demo's hosts on 80 columns lost something:\n%s", b.String())
	}
	b.Reset()
	writeHostTable(&b, hosts(), 10, 0)
	if !strings.Contains(b.String(), "a-very-long-host-name.cdn.example-shop.test") || strings.Contains(b.String(), "left out") {
		t.Errorf("no terminal: the table was cut:\n%s", b.String())
	}
}
