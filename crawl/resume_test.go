package crawl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/adaptive"
	"github.com/polite-go/polite/bucket"
	"github.com/polite-go/polite/testbed"
)

// Origins names every scheme://host of a job's URLs, once each, so that a
// job resumed without its list knows what the list named (issue 33, item
// 13): http and https on a host key without a port are two origins.
func TestOrigins(t *testing.T) {
	j, err := Open(t.TempDir(), Options{Bodies: BodiesNone})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	list := "http://127.0.0.1:8080/a\nhttp://127.0.0.1:8080/b\nHTTPS://localhost/c\nhttp://localhost/d\nftp://x.test/\nnot a url\n"
	if _, err := j.Load(strings.NewReader(list)); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := j.Origins(func(o string) { got = append(got, o) }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want := []string{"http://127.0.0.1:8080", "http://localhost", "https://localhost"}
	if !slices.Equal(got, want) {
		t.Errorf("Origins = %q, want %q", got, want)
	}
}

// A job keeps its bodies where its first run did: a run with another
// Options.Bodies is refused as another method is, before anything is
// fetched (issue 33, item 10: the bodies were split between the WARC files
// and bodies/). A job from before the mark is told by its results.
func TestBodiesChangedRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("body")) }))
	defer srv.Close()
	tr := func() *polite.Transport {
		return &polite.Transport{Base: srv.Client().Transport, IgnoreRobots: true, Limits: polite.Limits{Rate: bucket.Inf, Concurrency: 4}}
	}
	for _, tc := range []struct {
		name     string
		first    Bodies
		unmarked bool // the mark deleted: a job from before it
	}{
		{"warc", BodiesWARC, false},
		{"files", BodiesFiles, false},
		{"none", BodiesNone, false},
		{"warc unmarked", BodiesWARC, true},
		{"files unmarked", BodiesFiles, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			runJob(t, dir, tr(), srv.URL+"/a\n", Options{Bodies: tc.first})
			if tc.unmarked {
				j, err := Open(dir, Options{Bodies: BodiesNone})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := j.st.db.Exec(`DELETE FROM meta WHERE key = ?`, metaBodies); err != nil {
					t.Fatal(err)
				}
				j.Close()
			}
			for _, b := range []Bodies{BodiesWARC, BodiesFiles, BodiesNone} {
				j, err := Open(dir, Options{Bodies: b, Transport: tr()})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := j.Load(strings.NewReader(srv.URL + "/b\n")); err != nil {
					t.Fatal(err)
				}
				err = j.CheckRequest()
				_, rerr := j.Run(context.Background(), nil)
				j.Close()
				var bc *BodiesChangedError
				switch {
				case b == tc.first && (err != nil || rerr != nil):
					t.Errorf("Bodies %s again: CheckRequest = %v, Run = %v; want nil", b, err, rerr)
				case b != tc.first && (!errors.As(err, &bc) || !errors.Is(rerr, ErrBodiesChanged)):
					t.Errorf("Bodies %s: CheckRequest = %v, Run = %v; want ErrBodiesChanged", b, err, rerr)
				case bc != nil && (bc.Job != tc.first || bc.Run != b):
					t.Errorf("Bodies %s: the refusal says %+v; want Job %s, Run %s", b, *bc, tc.first, b)
				}
			}
		})
	}
}

// A job records each host's learned rate in state.db while it runs (every
// RateCheckpoint, so a kill -9 keeps the last) and when it stops, and the
// next run's Transport starts there through StartRate instead of cold
// (issue 33, item 14). A job whose rates do not adapt records none.
func TestLearnedRatesKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		var list strings.Builder
		for i := range 1000 {
			fmt.Fprintf(&list, "http://a.test/%d\n", i)
		}
		start := time.Now()
		var mid map[string]float64
		rc := &pageLog{after: func(int) {
			if mid == nil && time.Since(start) > RateCheckpoint+time.Second {
				var err error
				if mid, err = ReadRates(dir); err != nil {
					t.Error(err)
				}
			}
		}}
		tr := func() *polite.Transport {
			return &polite.Transport{Base: rc, Limits: polite.Limits{Rate: 2, Concurrency: 4}, Adaptive: &adaptive.Config{Max: 20}}
		}
		first := tr()
		j := loadJob(t, dir, list.String(), Options{Transport: first, Bodies: BodiesNone})
		ctx, cancel := context.WithTimeout(context.Background(), RateCheckpoint+3*time.Second)
		defer cancel()
		if _, err := j.Run(ctx, nil); err != nil {
			t.Fatal(err)
		}
		j.Close()
		if mid["a.test"] <= 2 {
			t.Errorf("rates recorded %v into the run: want a.test's, above its start of 2", mid)
		}
		rates, err := ReadRates(dir)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := first.State("a.test")
		if rates["a.test"] != st.Rate {
			t.Errorf("rates recorded at the end %v, want a.test's last, %v", rates, st.Rate)
		}

		// Resumed: a.test starts where it was, not cold as without
		// StartRate: the rate in force when its first page is asked for.
		var onPage func()
		rc.after = func(int) {
			if onPage != nil {
				onPage()
				onPage = nil
			}
		}
		resume := func(start func(string) float64) (first float64) {
			tr := tr()
			tr.StartRate = start
			j, err := Open(dir, Options{Transport: tr, Bodies: BodiesNone})
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			onPage = func() { st, _ := tr.State("a.test"); first = st.Rate }
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if _, err := j.Run(ctx, nil); err != nil {
				t.Fatal(err)
			}
			return first
		}
		if cold := resume(nil); cold != 2 {
			t.Errorf("resumed without StartRate, a.test started at %v/s, want its Limits.Rate, 2", cold)
		}
		if warm := resume(func(key string) float64 { return rates[key] }); warm != rates["a.test"] {
			t.Errorf("resumed with StartRate, a.test started at %v/s, want the %v it had learned", warm, rates["a.test"])
		}

		// Rates that do not adapt are not recorded.
		fixed := t.TempDir()
		j = loadJob(t, fixed, "http://a.test/x\n", Options{Transport: &polite.Transport{Base: rc}, Bodies: BodiesNone})
		if _, err := j.Run(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		j.Close()
		if r, err := ReadRates(fixed); err != nil || len(r) != 0 {
			t.Errorf("a job without adaptive rates recorded %v, %v; want none", r, err)
		}
	})
}

// LoadContext stops when its context ends, keeping the batches it
// committed, and Progress says how far it is meanwhile (issue 33, item 9).
func TestLoadContextStops(t *testing.T) {
	j, err := Open(t.TempDir(), Options{Bodies: BodiesNone})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const stopAt = loadBatch + 5000
	var seen Progress
	n := 0
	list := readerFunc(func(p []byte) (int, error) {
		n++
		switch n {
		case loadBatch / 2:
			seen = j.Progress(0)
		case stopAt:
			cancel()
		case 2 * loadBatch:
			return 0, io.EOF
		}
		return copy(p, fmt.Sprintf("http://a.test/%d\n", n)), nil
	})
	added, err := j.LoadContext(ctx, list)
	if !errors.Is(err, context.Canceled) || added != loadBatch {
		t.Errorf("LoadContext = %d, %v; want %d and context.Canceled", added, err, loadBatch)
	}
	if got, _ := j.Len(); got != loadBatch {
		t.Errorf("the job kept %d URLs, want the first batch's %d", got, loadBatch)
	}
	if !seen.Loading || seen.Read < loadBatch/2-1 {
		t.Errorf("Progress while loading = Loading %v, Read %d; want true and about %d", seen.Loading, seen.Read, loadBatch/2)
	}
	if p := j.Progress(0); p.Loading || p.Read < stopAt-1 || p.Read > stopAt+1024 {
		t.Errorf("Progress after = Loading %v, Read %d; want false and about %d", p.Loading, p.Read, stopAt)
	}
	// The job knows it holds part of its list, until a Load reads one to
	// its end.
	if stopped, err := j.LoadStopped(); !stopped || err != nil {
		t.Errorf("LoadStopped after a stopped Load = %v, %v; want true", stopped, err)
	}
	if _, err := j.Load(strings.NewReader("http://a.test/last\n")); err != nil {
		t.Fatal(err)
	}
	if stopped, err := j.LoadStopped(); stopped || err != nil {
		t.Errorf("LoadStopped after a whole Load = %v, %v; want false", stopped, err)
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// While a soft-blocked host waits for its re-check, Slowest counts the
// wait and says what it is, instead of its URLs left at its rate, which
// read "<1s" all along and then jumped (issue 33, item 15).
func TestSlowestCountsBlockRecheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := testbed.NewServer(testbed.HostConfig{Name: "waf.test", SoftBlock: testbed.SoftBlock{After: 2}})
		srv.StartInMemory()
		defer srv.Close()
		var list strings.Builder
		for i := range 10 {
			fmt.Fprintf(&list, "http://waf.test/p/%d\n", i)
		}
		tr := &polite.Transport{Base: srv.Transport(), Limits: polite.Limits{Rate: 10, Concurrency: 1}, IgnoreRobots: true}
		const recheck = 30 * time.Second
		j := loadJob(t, t.TempDir(), list.String(), Options{Transport: tr, Workers: 1, Bodies: BodiesNone, BlockRecheck: recheck})
		defer j.Close()
		ctx, cancel := context.WithCancel(context.Background())
		var got Slowest
		var ok bool
		time.AfterFunc(10*time.Second, func() {
			got, ok = j.Slowest()
			cancel()
		})
		if _, err := j.Run(ctx, nil); err != nil {
			t.Fatal(err)
		}
		// The challenge came within the first second: its re-check is
		// due some 20 s after the look, and the 7 URLs left at 10/s
		// follow.
		if !ok || got.HeldBy != "block re-check" || got.Held < 19*time.Second || got.Held > recheck ||
			got.ETA < got.Held || got.ETA > got.Held+time.Second {
			t.Errorf("Slowest at 10 s = %+v, %v; want about 20 s held by the block re-check, then 0.7 s", got, ok)
		}
	})
}

// A line is its URL alone: text after it makes the line invalid, never a
// URL fetched with the text in its path; an invalid line's result names
// its line; lines repeating a URL are counted as dropped (issue 33, item
// 12).
func TestListLineContract(t *testing.T) {
	list := "# comment\n\nhttp://a.test/x  trailing words\nhttp://a.test/y\tz\nhttp://a.test/ok\nnot a url\nHTTP://a.test/ok#top\nhttp://a.test/ok\n{\"url\": \"http://a.test/j\"}\n"
	var got []Line
	if err := ReadLines(strings.NewReader(list), 0, func(l Line) error { got = append(got, l); return nil }); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		number  int
		text    string
		problem string
	}{
		{3, "http://a.test/x  trailing words", "text after the URL"},
		{4, "http://a.test/y\tz", "text after the URL"},
		{5, "http://a.test/ok", ""},
		{6, "not a url", "no scheme"},
		{7, "http://a.test/ok", ""},
		{8, "http://a.test/ok", ""},
		{9, "http://a.test/j", ""},
	}
	if len(got) != len(want) {
		t.Fatalf("ReadLines = %d lines %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Number != w.number || g.Text != w.text || (w.problem == "") != (g.Problem == "") || !strings.Contains(g.Problem, w.problem) {
			t.Errorf("line %d = %+v, want number %d, text %q, problem %q", i, g, w.number, w.text, w.problem)
		}
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.URL.Path) }))
	defer srv.Close()
	dir := t.TempDir()
	host := strings.TrimPrefix(srv.URL, "http://")
	j := loadJob(t, dir, strings.ReplaceAll(strings.ReplaceAll(list, "http://a.test", srv.URL), "HTTP://a.test", "HTTP://"+host), Options{Bodies: BodiesNone})
	if p := j.Progress(0); p.Read != 7 || p.Dropped != 2 {
		t.Errorf("Progress after Load: read %d, dropped %d; want 7 and 2", p.Read, p.Dropped)
	}
	j.Close()
	tr := &polite.Transport{Base: srv.Client().Transport, IgnoreRobots: true, Limits: polite.Limits{Rate: bucket.Inf, Concurrency: 4}}
	runJob(t, dir, tr, "", Options{Bodies: BodiesNone})
	st, err := ReadStatus(dir, 10)
	if err != nil {
		t.Fatal(err)
	}
	var errs []string
	for _, r := range st.Dead {
		errs = append(errs, r.Error)
	}
	for _, w := range []string{"invalid URL: line 3: text after the URL", "invalid URL: line 4: text after the URL", "invalid URL: line 6: no scheme"} {
		if !strings.Contains(strings.Join(errs, "\n"), w) {
			t.Errorf("invalid_url errors %q: want one saying %q", errs, w)
		}
	}
	if st.Total != 5 || st.Outcomes[OK] != 2 {
		t.Errorf("the job has %d URLs, %v; want 5, 2 of them ok", st.Total, st.Outcomes)
	}
}
