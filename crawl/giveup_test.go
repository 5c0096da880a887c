package crawl

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/polite-go/polite"
)

// A host that answers every request 429 with Retry-After: 10 never opened
// its breaker: five failures 10 s apart do not fall within the breaker's
// 30 s window, so --host-give-up never started counting, and each URL
// spent its retries one 10 s pause at a time (found by polite fetch on 100
// URLs with --retries 3 --host-give-up 30s: 6 finished after 3½ minutes, the
// rest due in 50). Failures in a row, each heard after the one before, now
// count as the breaker's would, however far apart the host spaces them.
func TestThrottledForeverHostGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res := giveUpJob(t, "http://slow.test/", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", fmt.Sprint(retryAfter.Seconds()))
			w.WriteHeader(http.StatusTooManyRequests)
		})
		given := 0
		for _, r := range res {
			if strings.Contains(r.Error, "host given up") && strings.Contains(r.Error, "429") {
				given++
			}
		}
		if given == 0 {
			t.Errorf("no URL given up with the reason: %v", res)
		}
	})
}

// retryAfter is the pause giveUpJob's hosts name, giveUpAfter its
// --host-give-up.
const retryAfter, giveUpAfter = 10 * time.Second, time.Minute

// giveUpJob runs, in a synctest bubble, a job of 30 URLs under prefix
// (0, 1, …) against hosts that serve answer (robots.txt is not found),
// with --retries 3, and checks that every URL ends throttled, within the
// breaker's five failures in a row, --host-give-up and a pause or two,
// where their retries one pause at a time would take 30 × 4 × 10 s.
func giveUpJob(t *testing.T, prefix string, answer http.HandlerFunc) []Result {
	t.Helper()
	const urls = 30
	rt := rtFunc(func(req *http.Request) (*http.Response, error) {
		w := httptest.NewRecorder()
		if req.URL.Path == "/robots.txt" {
			w.WriteHeader(http.StatusNotFound)
		} else {
			answer(w, req)
		}
		res := w.Result()
		res.Request = req
		return res, nil
	})
	tr := &polite.Transport{Base: rt, Limits: polite.Limits{Rate: 10, Burst: 1, Concurrency: 2},
		MaxRetryAfter: time.Minute, Breaker: BreakerFor(time.Second)}
	var list strings.Builder
	for i := range urls {
		fmt.Fprintf(&list, "%s%d\n", prefix, i)
	}
	dir := t.TempDir()
	j := loadJob(t, dir, list.String(), Options{Transport: tr, Workers: 4, Retries: 3, Bodies: BodiesNone,
		MaxRetryAfter: time.Minute, HostGiveUp: giveUpAfter})
	defer j.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	start := time.Now()
	sum, err := j.Run(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if took, limit := time.Since(start), 5*retryAfter+giveUpAfter+2*retryAfter; sum.Interrupted || took > limit {
		t.Errorf("Run took %v (interrupted %v), want the host given up within %v", took, sum.Interrupted, limit)
	}
	res := readResults(t, dir)
	for _, r := range res {
		if r.Outcome != Throttled {
			t.Errorf("%s: %s %q, want throttled", r.URL, r.Outcome, r.Error)
		}
	}
	if len(res) != urls {
		t.Errorf("%d results, want %d", len(res), urls)
	}
	return res
}

// A URL whose redirect went to a host paused beyond --max-retry-after had
// the pause kept in state.db as its own host's, so the next run (a resume
// after a kill, or a rerun with new URLs) finished every URL of the
// redirecting host throttled, unsent, until the other host's pause ended
// (found by polite retry and a rerun: a.test's /to-hang and /to-503 ended
// "host paused until 2030" because /to-ra went to a host that said so).
// The pause is the other host's: the redirecting host's URLs go out.
func TestHopsPauseNotKeptAsItsHosts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sent sync.Map // host+path → true
		rt := rtFunc(func(req *http.Request) (*http.Response, error) {
			w := httptest.NewRecorder()
			switch {
			case req.URL.Path == "/robots.txt":
				w.WriteHeader(http.StatusNotFound)
			case req.URL.Host == "b.test":
				w.Header().Set("Retry-After", "3600")
				w.WriteHeader(http.StatusTooManyRequests)
			case req.URL.Path == "/to-b":
				time.Sleep(time.Second) // b.test has paused by then
				http.Redirect(w, req, "http://b.test/from-a", http.StatusFound)
			default:
				fmt.Fprint(w, "ok")
			}
			sent.Store(req.URL.Host+req.URL.Path, true)
			res := w.Result()
			res.Request = req
			return res, nil
		})
		tr := func() *polite.Transport {
			return &polite.Transport{Base: rt, Limits: polite.Limits{Rate: 10, Concurrency: 2}, MaxRetryAfter: time.Minute}
		}
		dir := t.TempDir()
		opts := Options{Workers: 4, Bodies: BodiesNone, MaxRetryAfter: time.Minute}
		runJob(t, dir, tr(), "http://b.test/x\nhttp://a.test/to-b\n", opts)
		runJob(t, dir, tr(), "http://b.test/x\nhttp://a.test/to-b\nhttp://a.test/new\n", opts)
		res := map[string]Result{}
		for _, r := range readResults(t, dir) {
			res[r.URL] = r
		}
		if r := res["http://a.test/to-b"]; r.Outcome != Throttled {
			t.Errorf("a.test/to-b: %s %q, want throttled (its redirect's host paused)", r.Outcome, r.Error)
		}
		if r := res["http://a.test/new"]; r.Outcome != OK {
			t.Errorf("rerun: a.test/new %s %q, want ok: b.test's pause is not a.test's", r.Outcome, r.Error)
		}
		if _, ok := sent.Load("a.test/new"); !ok {
			t.Errorf("a.test/new was not sent")
		}
	})
}

// A host whose every URL redirects to a host that answers 429 with
// Retry-After: 10 forever (a link shortener in front of it) kept the job
// going one pause at a time: each followed redirect was a success of the
// redirecting host, so its failures in a row never reached the breaker's
// threshold and --host-give-up never began (found by polite fetch on 30
// such URLs, --retries 3 --host-give-up 30s: killed after 400 s, 10
// finished). A redirect followed says nothing of a host's health either
// way; its hops' failures count.
func TestRedirectsToThrottledForeverHostGiveUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		giveUpJob(t, "http://short.test/", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Host == "short.test" {
				http.Redirect(w, r, "http://slow.test"+r.URL.Path, http.StatusFound)
				return
			}
			w.Header().Set("Retry-After", fmt.Sprint(retryAfter.Seconds()))
			w.WriteHeader(http.StatusTooManyRequests)
		})
	})
}
