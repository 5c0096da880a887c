package crawl

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/audit"
)

// EventsFile is the job's audit log: one line per decision the Transport
// made for the job's requests (package audit), appended to by every run;
// each line's id is the id of its URL's line in results.jsonl.
const EventsFile = "events.jsonl"

// openEvents opens the job's audit log. The job's requests carry it as
// their Observer (polite.WithObserver), so a Transport shared with others
// logs only the job's.
func (j *Job) openEvents() error {
	l, err := audit.Open(filepath.Join(j.dir, EventsFile), audit.Options{})
	if err != nil {
		return err
	}
	j.events = l
	return nil
}

// logDeferred writes the job's own wait to events.jsonl: a URL put off
// until notBefore (the zero time: left for the next run, not logged), for
// why it last waited.
func (j *Job) logDeferred(it *item, notBefore time.Time) {
	if j.events == nil || notBefore.IsZero() || it.host == nil {
		return
	}
	now := time.Now()
	j.events.Observe(polite.Event{Kind: polite.EventWait, Time: now, Host: it.host.key, ID: uint64(it.id),
		Reason: waitReason(it.reason), Delay: max(notBefore.Sub(now), 0), Attempt: it.attempts + 1, Detail: it.reason})
}

// logHeld writes to events.jsonl, and hands the Transport's Observer
// (metrics), an EventWait for each spell the URL's host held it back before
// the scheduler handed it out: its rate, its in-flight cap, a pause, an
// open breaker (issue 33, item 2: the time a rule's 0.5/s cost is the
// crawl's politeness cost, and it sent no wait events). Time is when the
// spell began and Delay how long it lasted: each spell is a host's, with a
// URL in hand, so their sum is the time hosts were held, not a sum over
// every URL queued behind.
func (j *Job) logHeld(it *item) {
	if len(it.held) == 0 || it.host == nil {
		return
	}
	var obs polite.Observer
	if j.tr != nil {
		obs = j.tr.Observer
	}
	for _, s := range it.held {
		e := polite.Event{Kind: polite.EventWait, Time: s.from, Host: it.host.key, ID: uint64(it.id), Reason: s.why,
			Delay: s.d, Attempt: it.attempts + 1}
		if j.events != nil {
			j.events.Observe(e)
		}
		if obs != nil {
			obs.Observe(e)
		}
	}
	it.held = nil
}

// logStartRate writes to events.jsonl, once a run per host, the rate the
// host's first request of the run went at: an EventRate for
// ReasonPolicy, Detail naming the rule it comes from. Without it a host
// whose rate never changed (held by a rule, a crawl-delay, a RateLimit
// header) had no rate in the report (issue 33, item 3).
func (j *Job) logStartRate(it *item) {
	h := it.host
	if j.events == nil || j.tr == nil || h == nil || h.rateLogged.Load() {
		return
	}
	st, ok := j.tr.State(j.budgetOf(h))
	if !ok || !h.rateLogged.CompareAndSwap(false, true) {
		return // not known yet (the next URL asks again), or logged meanwhile
	}
	why := "rule " + st.Rule
	switch {
	case st.CeilingWhy != "" && st.Ceiling > 0 && st.Ceiling <= st.Rate:
		why = string(st.CeilingWhy)
	case st.Rule == "":
		why = "defaults"
	}
	j.events.Observe(polite.Event{Kind: polite.EventRate, Time: time.Now(), Host: h.key, ID: uint64(it.id),
		Reason: polite.ReasonPolicy, Rate: st.Rate, Detail: why})
}

// logDone hands the Transport's Observer (metrics, say) an EventDone for
// a finished URL: its logical duration, from its first attempt's start (in
// this run or an earlier one) to its result, every wait and retry of the
// job's included; its attempts and final status. The job fetches with
// Transport.Try, one attempt a call, so the Transport cannot tell when a
// URL is done; the job can. The audit log skips EventDone (results.jsonl
// has the same).
func (j *Job) logDone(it *item, res *Result) {
	if j.tr == nil || j.tr.Observer == nil || it.host == nil {
		return
	}
	obs := j.tr.Observer
	e := polite.Event{Kind: polite.EventDone, Time: res.Finished, Host: it.host.key, ID: uint64(it.id), Status: res.Status,
		Attempt: res.Attempts, Latency: max(res.Finished.Sub(res.Started), 0), Method: http.MethodGet}
	switch {
	case res.Outcome == OK, res.Outcome == NotModified:
	case res.Outcome == Timeout:
		e.Outcome, e.Err = polite.Overloaded, context.DeadlineExceeded
	case res.Outcome == NetworkError:
		e.Outcome, e.Err = polite.NetworkError, errors.New(res.Error)
	case res.Status == 0:
		e.Err = errors.New(res.Error)
	}
	obs.Observe(e)
}

// waitReason maps why a URL waits (item.reason) to a polite.Reason, so
// that waits sum by a few reasons.
func waitReason(why string) polite.Reason {
	switch {
	case strings.HasPrefix(why, "paused ("):
		return polite.Reason(strings.TrimSuffix(strings.TrimPrefix(why, "paused ("), ")"))
	case why == "breaker open":
		return polite.ReasonBreaker
	case strings.HasSuffix(why, "retry budget spent"):
		return polite.ReasonBudget
	case strings.Contains(why, "robots.txt"):
		return polite.ReasonRobots
	}
	return polite.ReasonBackoff
}
