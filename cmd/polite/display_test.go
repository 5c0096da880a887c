package main_test

// The live display as a user meets it (issue 18, item 4): the binary in a
// real terminal (tmux), its screen captured and read.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/polite-go/polite/testbed"
)

// term is a tmux session running one command in a window of a given size.
type term struct {
	t    *testing.T
	name string
}

// needTmux skips without tmux, except under CI, where a missing tmux fails
// (the Makefile's deps target installs it).
func needTmux(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux not found (make deps installs it): the display tests need a terminal")
		}
		t.Skip("tmux not found")
	}
}

// startTerm runs argv in a new detached tmux session of width × height on a
// server of the test's own, and ends it with the test. The command's exit
// status is printed after it ends ("EXIT=n"), and the window kept.
func startTerm(t *testing.T, width, height int, argv ...string) *term {
	t.Helper()
	needTmux(t)
	tm := &term{t: t, name: fmt.Sprintf("polite-%d", time.Now().UnixNano())}
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	// The shell catches SIGINT (a handler, which the command does not
	// inherit) so that Ctrl-C ends only the command.
	script := "trap true INT; " + strings.Join(quoted, " ") + `; echo "EXIT=$?"; sleep 120`
	tm.tmux("new-session", "-d", "-s", tm.name, "-x", strconv.Itoa(width), "-y", strconv.Itoa(height), "sh", "-c", script)
	t.Cleanup(func() { exec.Command("tmux", "-L", tm.name, "kill-server").Run() })
	return tm
}

func (tm *term) tmux(args ...string) string {
	tm.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", tm.name, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %q: %v\n%s", args, err, out)
	}
	return string(out)
}

// screen is what the window shows now; with history, the lines scrolled
// off it too.
func (tm *term) screen(history bool) string {
	args := []string{"capture-pane", "-p", "-t", tm.name}
	if history {
		args = append(args, "-S", "-")
	}
	return tm.tmux(args...)
}

// await captures the screen every 100 ms until ok accepts it, at most
// within d, and returns the last capture and whether ok accepted it.
func (tm *term) await(d time.Duration, ok func(screen string) bool) (string, bool) {
	deadline := time.Now().Add(d)
	for {
		s := tm.screen(false)
		if ok(s) {
			return s, true
		}
		if time.Now().After(deadline) {
			return s, false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

var barLine = regexp.MustCompile(`(\d+)/(\d+)  (\d+)/s  ETA (.*)`)

// The display tells the truth about a job with one slow host, one paused by
// its server and one fast: the ETA is the slow host's, each row shows the
// rate it gets beside its limit and why it waits, the paused host's URLs
// count as waiting, and Ctrl-C's notice does not break the screen.
func TestDisplayTellsTheTruth(t *testing.T) {
	t.Parallel()
	fast := startSite(t, testbed.HostConfig{Name: "fast"})
	slow := startSite(t, testbed.HostConfig{Name: "slow"})
	// Rate 1 with an honest Retry-After: once polite's 5/s outruns it, the
	// host pauses it for a second at a time.
	paused := startSite(t, testbed.HostConfig{Name: "paused", Rate: 1, Burst: 1, RetryAfter: testbed.RetryAfterSeconds})
	key := func(s *site) string { return strings.TrimPrefix(s.url, "http://") }
	rules := writeFile(t, "rules.toml", fmt.Sprintf("[[rule]]\nhosts = %q\nrate = 2\nburst = 1\n\n[[rule]]\nhosts = %q\nrate = 100\n",
		key(slow), key(fast)))
	list := urls(t, "", 60, fast, slow, paused)
	tm := startTerm(t, 130, 30, bin, "fetch", "--out", t.TempDir(), "--config", rules, "--rate", "5", "--adaptive=false",
		"--retries", "20", "--robots=false", "--progress", "bar", list)

	slowRow := regexp.MustCompile(regexp.QuoteMeta(key(slow)) + `\s+(\d+\.\d)/2\.0 .*rate 2/s \(rule `)
	pausedRow := regexp.MustCompile(regexp.QuoteMeta(key(paused)) + `\s+\d+\.\d/5\.0 .*paused [0-9.]+m?s \(server's Retry-After\)`)
	waiting := regexp.MustCompile(`waiting ([1-9]\d*)`)
	if s, ok := tm.await(20*time.Second, func(s string) bool {
		return strings.Contains(s, "(slowest: "+key(slow)) && slowRow.MatchString(s)
	}); !ok {
		t.Errorf("no frame shows the ETA of the slow host and its row at 2/s (rule):\n%s", s)
	}
	if s, ok := tm.await(20*time.Second, func(s string) bool {
		return pausedRow.MatchString(s) && waiting.MatchString(s)
	}); !ok {
		t.Errorf("no frame shows the paused host with its URLs waiting:\n%s", s)
	}
	// The slow host gets about its limit: read once it has sent a while.
	if s, ok := tm.await(20*time.Second, func(s string) bool {
		m := slowRow.FindStringSubmatch(s)
		if m == nil {
			return false
		}
		got, _ := strconv.ParseFloat(m[1], 64)
		return got >= 1.5 && got <= 2.5
	}); !ok {
		t.Errorf("the slow host's row never showed it getting about 2/s:\n%s", s)
	}

	tm.tmux("send-keys", "-t", tm.name, "C-c")
	s, ok := tm.await(30*time.Second, func(s string) bool { return strings.Contains(s, "EXIT=") })
	if !ok || !strings.Contains(s, "EXIT=1") {
		t.Fatalf("after Ctrl-C the job did not end with exit 1:\n%s", s)
	}
	all := tm.screen(true)
	notice := "polite: stopping: letting requests in flight finish (Ctrl-C again to stop now)"
	found := false
	for _, line := range strings.Split(all, "\n") {
		if strings.Contains(line, "polite: stopping") {
			if strings.TrimSpace(line) != notice {
				t.Errorf("the notice shares its line: %q", line)
			}
			found = true
		}
	}
	if !found {
		t.Errorf("Ctrl-C's notice is not on the screen:\n%s", all)
	}
	if !strings.Contains(all, "interrupted with") {
		t.Errorf("no closing message:\n%s", all)
	}
}

// A terminal of 40 × 4 gets a view that fits: the progress and the counts
// stay on top, and the host table gives way (a view taller than the window
// loses its top lines).
func TestDisplaySmallTerminal(t *testing.T) {
	t.Parallel()
	a := startSite(t, testbed.HostConfig{Name: "a"})
	b := startSite(t, testbed.HostConfig{Name: "b"})
	list := urls(t, "", 40, a, b)
	tm := startTerm(t, 40, 4, bin, "fetch", "--out", t.TempDir(), "--rate", "10", "--adaptive=false", "--robots=false",
		"--progress", "bar", list)
	progress := regexp.MustCompile(`^\S*\s?\d+/80  \d+/s  ETA`)
	frames := 0
	s, _ := tm.await(20*time.Second, func(s string) bool {
		if strings.Contains(s, "EXIT=") {
			return true
		}
		lines := strings.Split(s, "\n")
		if len(lines) < 2 || strings.TrimSpace(s) == "" {
			return false
		}
		frames++
		if !progress.MatchString(lines[0]) && !strings.HasPrefix(lines[0], "loading") && !strings.HasPrefix(lines[0], "reading the job's state") || !strings.HasPrefix(lines[1], "in flight ") {
			t.Errorf("a 40 × 4 frame lost the progress or the counts:\n%s", s)
			return true
		}
		return frames >= 10
	})
	if frames == 0 {
		t.Errorf("no frame of the display in 20 s:\n%s", s)
	}
}

// A resumed job's rate and ETA start from what this run does, not from the
// URLs finished before it (which made the first reading thousands a second).
func TestDisplayResumeBaseline(t *testing.T) {
	t.Parallel()
	s := startSite(t, testbed.HostConfig{Name: "resume"})
	list := urls(t, "", 80, s)
	out := t.TempDir()
	args := []string{bin, "fetch", "--out", out, "--rate", "8", "--burst", "1", "--adaptive=false", "--robots=false", "--progress", "bar", list}
	first := startTerm(t, 120, 20, args...)
	if sc, ok := first.await(20*time.Second, func(sc string) bool {
		m := barLine.FindStringSubmatch(sc)
		done, _ := strconv.Atoi(m2(m, 1))
		return done >= 40
	}); !ok {
		t.Fatalf("the first run never reached 40 URLs:\n%s", sc)
	}
	first.tmux("send-keys", "-t", first.name, "C-c")
	if sc, ok := first.await(30*time.Second, func(sc string) bool { return strings.Contains(sc, "EXIT=") }); !ok {
		t.Fatalf("the first run did not end:\n%s", sc)
	}
	second := startTerm(t, 120, 20, args...)
	frames := 0
	sc, _ := second.await(15*time.Second, func(sc string) bool {
		m := barLine.FindStringSubmatch(sc)
		if m == nil {
			return strings.Contains(sc, "EXIT=")
		}
		frames++
		if rate, _ := strconv.Atoi(m[3]); rate > 16 {
			t.Errorf("a resumed run at 8/s showed %d/s: %q", rate, m[0])
			return true
		}
		return strings.Contains(sc, "EXIT=")
	})
	if frames == 0 {
		t.Errorf("no frame of the resumed run:\n%s", sc)
	}
}

func m2(m []string, i int) string {
	if len(m) <= i {
		return ""
	}
	return m[i]
}
