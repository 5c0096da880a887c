package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/polite-go/polite/crawl"
)

// slowList is a URL list that gives one line a millisecond: 100,000 lines
// take 100 s to read, as a million-line list took its 12 s to load.
type slowList struct{ n, max int }

func (l *slowList) Read(p []byte) (int, error) {
	if l.n == l.max {
		return 0, errors.New("slowList: read to its end")
	}
	time.Sleep(time.Millisecond)
	l.n++
	return copy(p, fmt.Sprintf("http://a.test/%d\n", l.n)), nil
}

// A long list's loading shows on the progress display from the first
// seconds, --max-time counts it, and Ctrl-C stops it (issue 33, item 9:
// 12-15 s of blank terminal, Ctrl-C waited for the load, --max-time began
// after it).
func TestLoadingShownAndStopped(t *testing.T) {
	for _, tc := range []struct {
		name   string
		argv   []string
		cancel time.Duration // the job's context ends (Ctrl-C) this long in; 0: never
		want   string
		within time.Duration
	}{
		{"max-time", []string{"--max-time", "6s"}, 0, "stopped by --max-time 6s while loading", 7 * time.Second},
		{"ctrl-c", nil, 6 * time.Second, "interrupted while loading", 7 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				argv := append([]string{"fetch", "--progress", "log", "--out", t.TempDir()}, append(tc.argv, "-")...)
				got, code, stderr := parse(t, argv...)
				if code != 0 {
					t.Fatalf("%q: exit %d: %s", argv, code, stderr)
				}
				o := got.(*fetchOptions)
				o.noSignals = true
				o.list = &slowList{max: 100_000}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tc.cancel > 0 {
					time.AfterFunc(tc.cancel, cancel)
				}
				var out, errb bytes.Buffer
				start := time.Now()
				err := runFetch(ctx, &env{stdout: &out, stderr: &errb}, o)
				took := time.Since(start)
				var ee *exitError
				if !errors.As(err, &ee) || ee.code != ExitFatal || !strings.Contains(ee.Error(), tc.want) {
					t.Errorf("runFetch = %v; want exit %d and %q", err, ExitFatal, tc.want)
				}
				if took > tc.within {
					t.Errorf("the job took %v to stop, want %v at most", took, tc.within)
				}
				// One a second while it loads: the first within the
				// first second, not after the log's 5 s.
				if n := strings.Count(errb.String(), "msg=loading read="); n < 5 {
					t.Errorf("stderr %q: %d loading lines in 6 s; want one a second while the list loads", errb.String(), n)
				}
			})
		})
	}
}

// The terminal view says how far the list's loading is, then that the
// job's state is read, before its first figures.
func TestBarViewLoading(t *testing.T) {
	for _, tc := range []struct {
		p    crawl.Progress
		want string
	}{
		{crawl.Progress{Loading: true, Read: 412_000}, "loading the URL list: 412,000 lines read…"},
		{crawl.Progress{Loading: true, Read: 1}, "loading the URL list: 1 line read…"},
		{crawl.Progress{}, "reading the job's state…"},
		{crawl.Progress{Total: 3}, "0/3"},
	} {
		m := &barModel{p: tc.p, width: 120, height: 24}
		if out := m.render(); !strings.Contains(out, tc.want) {
			t.Errorf("render(%+v) =\n%s\nwant %q", tc.p, out, tc.want)
		}
	}
}

// Junk after a URL is not fetched as part of it, an invalid line's result
// names its line, and repeated lines are said on stderr and in the
// summary (issue 33, item 12).
func TestListLinesSaid(t *testing.T) {
	srv, got := recordServer(t, func(r *http.Request) string { return r.URL.RawPath + r.URL.Path })
	out := t.TempDir()
	list := srv.URL + "/a\n" + srv.URL + "/x  trailing words\n" + srv.URL + "/a\n\n" + srv.URL + "/a\nftp://nope/\n"
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"fetch", "--progress", "none", "--out", out, "-"}, strings.NewReader(list), &stdout, &stderr)
	if code != ExitFailures {
		t.Fatalf("exit %d, want %d: %s", code, ExitFailures, stderr.String())
	}
	if strings.Join(got(), " ") != "/a" {
		t.Errorf("the server was asked for %q, want /a alone", got())
	}
	st, err := crawl.ReadStatus(out, 10)
	if err != nil {
		t.Fatal(err)
	}
	var errs []string
	for _, r := range st.Dead {
		errs = append(errs, r.Error)
	}
	if e := strings.Join(errs, "\n"); !strings.Contains(e, "line 2: text after the URL") || !strings.Contains(e, "line 6: scheme") {
		t.Errorf("invalid_url errors %q: want lines 2 and 6 named", errs)
	}
	if !strings.Contains(stderr.String(), "2 lines of the list repeated") || !strings.Contains(stdout.String(), "2 lines of the list repeated") {
		t.Errorf("stderr %q, stdout %q: want both to say 2 repeated lines were dropped", stderr.String(), stdout.String())
	}
}
