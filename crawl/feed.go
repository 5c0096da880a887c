package crawl

import (
	"context"
	"fmt"
	"time"

	"github.com/polite-go/polite"
)

// Pending work is streamed from state.db (issue 17, defect 3: a
// 1,000,000-URL job held every pending URL in memory, 378 MB). The
// scheduler holds at most Options.MaxHosts hosts at a time, each with a few
// dozen of its URLs (lowWater, refillTo) besides those in flight; the
// feeder, one goroutine, takes hosts in (in host-key order, one index seek
// each) as others are let go, and refills a host's URLs when they run
// low, with indexed queries on urls_pending over a read-only connection of
// its own, so the committer's transactions never hold it up. Nothing about
// durability changes: a URL is pending in the database until the
// transaction that records it done commits, and the feeder reads each
// pending URL once per run (its cursor moves past it), so a URL in memory
// is never read twice and a crash loses only what was in memory.

// feed runs the feeder until the scheduler stops. An error reading the
// database is fatal to the run: it is returned, and the fetchers stopped.
func (j *Job) feed(ctx context.Context, paused map[string]hostPause) error {
	s := j.sched
	after := "" // the last host taken in; "" sorts before every host key
	for {
		s.mu.Lock()
		for !s.stopping && len(s.want) == 0 && (s.hostsOut || len(s.hosts) >= s.maxHosts) {
			s.feedCond.Wait()
		}
		if s.stopping {
			s.mu.Unlock()
			return nil
		}
		var err error
		if len(s.want) > 0 {
			h := s.want[0]
			s.want[0] = nil
			s.want = s.want[1:]
			n, cursor := refillTo-h.queued()-h.delayed, h.cursor
			s.mu.Unlock()
			err = j.refill(ctx, h, cursor, n)
		} else {
			s.mu.Unlock()
			after, err = j.takeIn(ctx, after, paused)
		}
		if err != nil {
			s.mu.Lock()
			stopping := s.stopping
			s.mu.Unlock()
			if stopping {
				return nil
			}
			return fmt.Errorf("crawl: reading pending URLs from %s: %w", StateFile, err)
		}
	}
}

// refill reads up to n more of h's URLs, after the id cursor.
func (j *Job) refill(ctx context.Context, h *host, cursor int64, n int) error {
	rows := make([]row, 0, max(n, 0))
	err := j.st.window(ctx, h.key, cursor, max(n, 1), func(r row) { rows = append(rows, r) })
	s := j.sched
	s.mu.Lock()
	defer s.mu.Unlock()
	h.refill = false
	if err != nil {
		return err
	}
	now := time.Now()
	if len(rows) == 0 {
		h.unloaded = 0 // the count was off: nothing more to read
	}
	s.take(h, rows, now)
	s.low(h)
	s.letGo(h, now)
	return nil
}

// takeIn takes in the next host after after with URLs left, and returns its
// key; when there is none, it marks every host taken in.
func (j *Job) takeIn(ctx context.Context, after string, paused map[string]hostPause) (string, error) {
	key, err := j.st.nextHost(ctx, after)
	if err != nil {
		return after, err
	}
	s := j.sched
	if key == "" {
		s.mu.Lock()
		s.hostsOut = true
		if len(s.hosts) == 0 {
			s.stop()
		}
		s.mu.Unlock()
		return after, nil
	}
	n, err := j.st.hostPending(ctx, key)
	if err != nil {
		return after, err
	}
	h := &host{key: key, unloaded: n}
	if p, ok := paused[key]; ok {
		h.pausedUntil, h.pauseWhy = p.until, polite.Reason(p.reason)
		h.persisted.Store(p.until.UnixMilli())
	}
	var rows []row
	if err := j.st.window(ctx, key, 0, refillTo, func(r row) { rows = append(rows, r) }); err != nil {
		return after, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hosts[key] = h
	now := time.Now()
	if len(rows) < refillTo {
		h.unloaded = len(rows) // nothing more to read after these
	}
	s.take(h, rows, now)
	s.low(h)
	s.letGo(h, now)
	return key, nil
}
