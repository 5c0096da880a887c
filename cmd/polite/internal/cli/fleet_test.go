package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/polite-go/polite/crawl"
	"github.com/polite-go/polite/internal/redistest"
	"github.com/polite-go/polite/redisstore"
)

// TestRedisNote: what the progress line says of the fleet's Redis in each
// phase of an outage; once nothing is sent it stands in for the rate and
// the ETA (issue 29, item 2: "rate=0.0/s" and a stale ETA).
func TestRedisNote(t *testing.T) {
	since := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		st     redisstore.Status
		now    time.Time
		want   string
		halted bool
	}{
		{"answers", redisstore.Status{}, since, "", false},
		{"local", redisstore.Status{Degraded: true, Since: since, Mode: redisstore.Local, LocalUntil: since.Add(5 * time.Minute)}, since.Add(time.Minute),
			"Redis unreachable since 12:00:00Z: each host gets this worker's share until 12:05:00Z, then nothing", false},
		{"closed", redisstore.Status{Degraded: true, Since: since, Mode: redisstore.Closed, ClosedSince: since.Add(5 * time.Minute)}, since.Add(7 * time.Minute),
			"waiting for Redis (closed since 12:05:00Z, 2m0s; the job stops at 12:15:00Z unless it answers)", true},
		{"open", redisstore.Status{Degraded: true, Since: since, Mode: redisstore.Open}, since,
			"Redis unreachable since 12:00:00Z: each host gets its full rate from this worker (--outage open)", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, halted := redisNote(tc.st, 10*time.Minute, tc.now)
			if got != tc.want || halted != tc.halted {
				t.Errorf("redisNote(%+v) = %q, %v; want %q, %v", tc.st, got, halted, tc.want, tc.halted)
			}
		})
	}
}

// TestFleetRedisGone: a fleet worker whose Redis dies and never comes back
// says each phase (lost, local, closed), and once closed for
// --outage-closed-for stops with exit status 1 and a message that says
// why, every unfinished URL pending in state.db; run again with Redis
// back, it resumes and fetches each of those once (issue 29, item 2: the
// job never ended). Real time, about 4 s.
func TestFleetRedisGone(t *testing.T) {
	srv := redistest.StartServer(t)
	var hits atomic.Int32
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte("x"))
	}))
	defer site.Close()
	var paths []string
	for i := range 20 {
		paths = append(paths, "/"+string(rune('a'+i)))
	}
	list := urls(site.URL, paths...)
	out := t.TempDir()
	argv := []string{"--rate", "4", "--burst", "1", "--adaptive=false", "--robots=false", "--bodies", "none", "--grace", "500ms",
		"--redis", "redis://" + srv.Addr + "/0", "--fleet", "gone", "--outage-local-for", "300ms", "--outage-closed-for", "1s"}

	go func() {
		time.Sleep(600 * time.Millisecond)
		srv.Kill()
	}()
	start := time.Now()
	code, res, stderr := runHostile(t, out, list, argv...)
	took := time.Since(start)
	if code != ExitFatal || !strings.Contains(stderr, "(--outage-closed-for 1s): stopped with") ||
		!strings.Contains(stderr, "run the same command again to resume once Redis answers") {
		t.Errorf("exit %d, stderr:\n%s\nwant exit %d and why it stopped", code, stderr, ExitFatal)
	}
	for _, phase := range []string{"redis unreachable: degraded", "mode=local", "closed, nothing sent until it answers"} {
		if !strings.Contains(stderr, phase) {
			t.Errorf("stderr does not say %q:\n%s", phase, stderr)
		}
	}
	// Lost within about 0.6 s, 0.3 s local, 1 s closed, the grace, and
	// the watch's second.
	if took > 8*time.Second {
		t.Errorf("the job took %v to stop", took)
	}
	if len(res) == 0 || len(res) >= len(paths) {
		t.Fatalf("%d of %d URLs finished before the stop; want some, not all", len(res), len(paths))
	}
	first := len(res)
	for _, r := range res {
		if r.Outcome != crawl.OK {
			t.Errorf("%s ended %s: a URL not sent must stay pending", r.URL, r.Outcome)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "state.db")); err != nil {
		t.Fatal(err)
	}

	srv.Restart(t)
	before := hits.Load()
	code, res, stderr = runHostile(t, out, list, append(argv, "--rate", "50")...)
	if code != ExitOK || len(res) != len(paths) {
		t.Errorf("the rerun: exit %d, %d results, want 0 and %d\n%s", code, len(res), len(paths), stderr)
	}
	if got, want := int(hits.Load()-before), len(paths)-first; got != want {
		t.Errorf("the rerun sent %d requests, want %d (the URLs left pending)", got, want)
	}
	t.Logf("stopped %v after the start with %d of %d URLs finished; the rerun fetched the other %d", took.Round(10*time.Millisecond), first, len(paths), len(paths)-first)
}

// TestProgressWaitingForRedis: while a fleet's Redis is closed the
// progress line (log and bar) says so in place of the rate and the ETA;
// in local it adds its word to them; without a fleet it is as before.
func TestProgressWaitingForRedis(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	closed := noteFunc(func(time.Time) (string, bool) { return "waiting for Redis (closed since 11:55:00Z, 5m0s; …)", true })
	local := noteFunc(func(time.Time) (string, bool) { return "Redis unreachable since 11:59:00Z: …", false })
	est := estimate{eta: 48 * time.Second}
	for _, tc := range []struct {
		name string
		note noteFunc
		want string
	}{
		{"no fleet", nil, "[rate 0.0/s eta 48s]"},
		{"local", local, "[rate 0.0/s eta 48s redis Redis unreachable since 11:59:00Z: …]"},
		{"closed", closed, "[status waiting for Redis (closed since 11:55:00Z, 5m0s; …)]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fmt.Sprint(pace(0, est, tc.note, now)); got != tc.want {
				t.Errorf("pace = %s, want %s", got, tc.want)
			}
		})
	}
	m := &barModel{p: crawl.Progress{Done: 14, Total: 50}, width: 120, height: 24}
	m.redis, m.halted = closed.at(now)
	if v := m.render(); !strings.Contains(v, "14/50  waiting for Redis (closed since") || strings.Contains(v, "ETA") {
		t.Errorf("the bar view while closed:\n%s\nwant the wait in place of the rate and ETA", v)
	}
}
