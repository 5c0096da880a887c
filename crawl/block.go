package crawl

import (
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/polite-go/polite"
)

// Soft blocks (issue 29, item 1). A challenge page (a WAF, a bot manager,
// a captcha) ends the URL that met it "blocked", and the Transport then
// refuses the host's other URLs. What the job does next decides whether a
// host ends promptly and whether its good pages are lost:
//
//   - The host's other URLs wait BlockRecheck (DefaultBlockRecheck, 2 s),
//     not the backoff's cap: the job then lifts the mark and sends one URL
//     alone, the probe, taken from a part of the site (its first path
//     segment, the section) that has not been challenged, when the queue
//     holds one.
//   - Two challenges in a row on different sections (or blockRun in a row
//     anywhere), with no page answered in between, make the host a wall:
//     its remaining URLs end "blocked" at once, never sent. A host that
//     blocks everything so ends within a few seconds, at two requests.
//   - A probe answered with a page ends the block: the challenge was a rule
//     on part of the site, or passing. A section challenged
//     sectionChallenges times and never answered with a page is left
//     alone: its remaining URLs end "blocked", never sent. So a WAF rule on
//     /search costs two challenges, and the host's other pages are served.
//   - blockCap challenges in all, more than the pages answered, make the
//     host a wall too: however the host spreads its challenges, the job
//     asks it a bounded number of times.
//   - A throttle (429, 503) or a network error after a challenge is neither
//     a page nor a challenge: the probe is over, the URL waits as the
//     Transport says (Retry-After, backoff), and the count goes on.
//
// Every wait here is BlockRecheck after the latest challenge heard, so a
// soft-blocked host never holds its URLs longer than that between two
// requests. A host that challenges more URLs than it answers is asked at
// most blockCap times; one that answers more than it challenges (at
// random, say) keeps being asked, one probe per challenge.

// DefaultBlockRecheck is how long after a soft block a job asks the host
// again, with one URL from another part of the site (Options.BlockRecheck).
const DefaultBlockRecheck = 2 * time.Second

// Bounds on what a soft-blocked host is asked.
const (
	blockRun          = 3  // challenges in a row, whatever their sections, that make a wall
	sectionChallenges = 2  // challenges that close a section never answered with a page
	blockCap          = 10 // challenges in all that make a wall once they outnumber pages
)

// blockState is what the job has heard of a host's soft blocks this run.
// It is safe for concurrent use; a caller holding sched.mu may take mu
// (never the other way round).
type blockState struct {
	mu sync.Mutex
	// guards the fields below
	since    time.Time // the latest challenge heard (or the mark first seen); zero: none pending
	probing  bool      // a probe is out: the host's other URLs wait for it
	run      int       // challenges since the last page answered
	runSecs  int       // distinct sections among the last run (1 or 2: enough to tell)
	lastSec  string    // the section of the latest challenge
	total    int       // challenges this run
	pages    int       // pages answered this run (any answer but a challenge or a throttle)
	sections map[string]*sectionStat
	refusals int    // URLs refused by a mark the job did not hear set
	wall     string // non-empty: final; why the host's URLs end unsent
	first    string // the first challenge's reason, for messages
}

type sectionStat struct{ challenges, pages int }

// section is the part of the site target lies in: its first path segment
// ("/search?q=x" and "/search/a" are "search"; "/" and "" are "").
func section(target string) string {
	s := target
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	if i := strings.IndexAny(s, "/?#"); i >= 0 && s[i] == '/' {
		s = s[i+1:]
	} else {
		return ""
	}
	if i := strings.IndexAny(s, "/?#;"); i >= 0 {
		s = s[:i]
	}
	return s
}

func (b *blockState) sec(name string) *sectionStat {
	if b.sections == nil {
		b.sections = map[string]*sectionStat{}
	}
	st := b.sections[name]
	if st == nil {
		st = &sectionStat{}
		b.sections[name] = st
	}
	return st
}

// heard follows an attempt sent to the host for target.
func (b *blockState) heard(target string, o polite.Outcome, reason string, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.probing = false
	sec := section(target)
	switch o {
	case polite.Blocked:
		b.total++
		b.sec(sec).challenges++
		if b.first == "" {
			b.first = reason
		}
		switch {
		case b.run == 0:
			b.runSecs = 1
		case sec != b.lastSec:
			b.runSecs = 2
		}
		b.run++
		b.lastSec = sec
		b.since = now
		switch {
		case b.wall != "":
		case b.run >= 2 && b.runSecs >= 2:
			b.wall = fmt.Sprintf("it answered %d URLs in a row with a challenge (%s), on different paths, and no page in between", b.run, b.first)
		case b.run >= blockRun:
			b.wall = fmt.Sprintf("it answered %d URLs in a row with a challenge (%s), and no page in between", b.run, b.first)
		case b.total >= blockCap && b.total > b.pages:
			b.wall = fmt.Sprintf("it answered %d URLs with a challenge (%s) and only %d with a page", b.total, b.first, b.pages)
		}
	case polite.Throttled, polite.Overloaded, polite.NetworkError, polite.Canceled:
		// Neither a page nor a challenge: the run goes on.
	default:
		b.pages++
		if b.total > 0 { // sections are kept once the host has challenged
			b.sec(sec).pages++
		}
		b.run, b.runSecs, b.since = 0, 0, time.Time{}
	}
}

// closed says why a URL for target is not sent although the host is not a
// wall ("" when it may be): its section was challenged sectionChallenges
// times and never answered with a page.
func (b *blockState) closed(target string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.wall != "" {
		return b.wall
	}
	if b.sections == nil {
		return ""
	}
	st := b.sections[section(target)]
	if st == nil || st.pages > 0 || st.challenges < sectionChallenges {
		return ""
	}
	return fmt.Sprintf("its path /%s answered %d URLs with a challenge (%s) and none with a page", section(target), st.challenges, b.first)
}

// refused follows a URL the Transport refused for the host's block mark.
// Most were handed out just before a challenge set it, and wait for the
// probe like the rest. A refused probe met a mark the job did not hear
// set (a robots.txt fetch, another client of the Transport): the wait
// starts again, and blockCap such refusals make a wall, so that nothing
// loops.
func (b *blockState) refused(now time.Time, reason string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.first == "" {
		b.first = reason
	}
	switch {
	case b.probing:
		b.probing = false
		b.stillBlocked(now)
	case b.since.IsZero():
		b.since = now
	}
}

// blockReady answers ready for a host the Transport holds blocked: its
// URLs wait BlockRecheck after the latest challenge, then one goes alone
// (the mark lifted), chosen from a section not challenged yet; once the
// host is a wall they are handed out to be finished unsent. Called with
// the scheduler's lock held.
func (j *Job) blockReady(h *host, now time.Time) (time.Duration, polite.Reason) {
	b := &h.blk
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.wall != "" || j.opts.BlockRecheck < 0 {
		if b.wall == "" {
			b.wall = fmt.Sprintf("it answered with a challenge (%s), and re-checks are off", b.firstOr())
		}
		return 0, polite.ReasonBlock
	}
	if b.probing && h.inflight > 0 {
		return 0, polite.ReasonSlot // the probe goes alone; kicked when it ends
	}
	if b.since.IsZero() {
		b.since = now // the mark came from elsewhere (robots.txt, another client)
	}
	if d := b.since.Add(j.recheck()).Sub(now); d > 0 {
		return d, polite.ReasonBlock
	}
	if h.inflight > 0 {
		return 0, polite.ReasonSlot // their answers may settle it; kicked when they end
	}
	if key := j.budgetOf(h); !j.tr.Unblock(key) {
		// Another worker of a fleet (or another host under the same
		// budget) may have lifted it first: then the probe goes. If the
		// mark is still there, the wait starts again, at most blockCap
		// times (a Store that keeps blocks).
		if _, why := j.tr.Ready(key, now); why == polite.ReasonBlock {
			if b.stillBlocked(now) {
				return 0, polite.ReasonBlock
			}
			return j.recheck(), polite.ReasonBlock
		}
	}
	b.probing = true
	b.pickProbe(h)
	return 0, ""
}

// pickProbe makes the next URL of h a URL from a section with no
// challenge (one answered with pages first), if h has one queued, in
// whatever lane. Called with sched.mu and b.mu held.
func (b *blockState) pickProbe(h *host) {
	best, bestLane, bestScore := -1, LaneNormal, 0
lanes:
	for _, l := range [...]Lane{LaneInteractive, LaneNormal, LaneBulk} {
		q := &h.lanes[l]
		for i := q.head; i < len(q.queue); i++ {
			st := b.sections[section(nextURL(q.queue[i]))]
			score := 2 // a section not heard from
			switch {
			case st == nil:
			case st.challenges > 0:
				score = 0
			case st.pages > 0:
				score = 3
			}
			if score > bestScore {
				best, bestLane, bestScore = i, l, score
				if score == 3 {
					break lanes
				}
			}
		}
	}
	if best >= 0 {
		h.goesNext(bestLane, best)
	}
}

// ownHop reports whether a redirect hop to u stays with h's host.
func (j *Job) ownHop(h *host, u *url.URL) bool {
	k, err := polite.HostKey(strings.ToLower(u.Scheme), u.Host)
	return err == nil && k == h.key
}

// nextURL is the URL its next request goes to.
func nextURL(it *item) string {
	if it.cur != "" {
		return it.cur
	}
	return it.url
}

// recheck is the wait after a challenge before the host is asked again.
func (j *Job) recheck() time.Duration {
	if d := j.opts.BlockRecheck; d > 0 {
		return d
	}
	return DefaultBlockRecheck
}

// stillBlocked follows a re-check that found the mark still there without
// a challenge heard (a refused probe, a mark that could not be lifted):
// the wait starts again, and blockCap of them make the host a wall, which
// it reports. Called with mu held.
func (b *blockState) stillBlocked(now time.Time) bool {
	b.since = now
	b.refusals++
	if b.refusals >= blockCap && b.wall == "" {
		b.wall = fmt.Sprintf("it stayed blocked (%s) through %d re-checks", b.firstOr(), b.refusals)
	}
	return b.wall != ""
}

// firstOr is the first challenge's reason, or a stand-in. Called with mu
// held.
func (b *blockState) firstOr() string {
	if b.first == "" {
		return "a soft block"
	}
	return b.first
}

// recheckAt is when the host's URLs, held by a soft block, are next
// asked (its probe), after recheck from the latest challenge; the zero
// time when none waits for one: no challenge pending, a probe out, or a
// wall.
func (b *blockState) recheckAt(recheck time.Duration) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.since.IsZero() || b.probing || b.wall != "" {
		return time.Time{}
	}
	return b.since.Add(recheck)
}

// probeOut reports whether a probe of h is out, for ready.
func (h *host) probeOut() bool {
	h.blk.mu.Lock()
	defer h.blk.mu.Unlock()
	return h.blk.probing
}

// unsent is the error of a URL of a soft-blocked host finished unsent.
func unsent(key, why string) string {
	return fmt.Sprintf("not sent: host %s blocks this client: %s", key, why)
}
