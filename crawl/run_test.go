package crawl

import (
	"sync"
	"testing"

	"github.com/polite-go/polite"
)

// TestRetryCarriesPrevOutcome: a URL the job sends again says why on the
// Transport's events (PrevOutcome: the failed attempt's outcome), so that
// metrics count the crawl's retries by reason (issue 33, item 6: every
// retry was counted as "ok").
func TestRetryCarriesPrevOutcome(t *testing.T) {
	srv, list := twoHosts(t, 15)
	var mu sync.Mutex
	byPrev := map[polite.Outcome]int{}
	tr := &polite.Transport{Base: srv.Transport(), Limits: polite.Limits{Rate: 100, Burst: 10, Concurrency: 4},
		Observer: polite.ObserverFunc(func(e polite.Event) {
			if e.Kind == polite.EventAttempt && e.Attempt > 1 {
				mu.Lock()
				byPrev[e.PrevOutcome]++
				mu.Unlock()
			}
		})}
	runJob(t, t.TempDir(), tr, list, Options{Workers: 8})
	mu.Lock()
	defer mu.Unlock()
	if byPrev[polite.Throttled] == 0 || byPrev[polite.OK] != 0 {
		t.Errorf("retries by the outcome before them = %v, want some throttled (b.test's 429s) and none ok", byPrev)
	}
}
