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
// low, with indexed queries on urls_lanes over a read-only connection of
// its own, so the committer's transactions never hold it up. Nothing about
// durability changes: a URL is pending in the database until the
// transaction that records it done commits, and the feeder reads each
// pending URL once per run (its cursor moves past it), so a URL in memory
// is never read twice and a crash loses only what was in memory.
//
// Each lane of a host is read apart (by host, lane and id), with a cursor of
// its own, so that a host's interactive URLs are in memory for their turns
// even when thousands of its bulk URLs came before them in the list.

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
		if s.rescan {
			// Links were found for hosts the scan has passed (or let
			// go): scan again from the start.
			s.rescan = false
			after = ""
		}
		var err error
		if len(s.want) > 0 {
			h := s.want[0]
			s.want[0] = nil
			s.want = s.want[1:]
			asks := h.asks()
			h.reading(asks)
			s.mu.Unlock()
			err = j.refill(ctx, h, asks)
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

// reading notes that the lanes of asks are about to be read: the URLs
// discovery adds from now on may be missed by the read. Called with mu
// held, or before h is shared.
func (h *host) reading(asks []laneAsk) {
	for _, a := range asks {
		h.lanes[a.lane].found = 0
	}
}

// refill reads more of h's URLs, as asks say.
func (j *Job) refill(ctx context.Context, h *host, asks []laneAsk) error {
	rows, err := j.read(ctx, h.key, asks)
	s := j.sched
	s.mu.Lock()
	defer s.mu.Unlock()
	h.refill = false
	if err != nil {
		return err
	}
	now := time.Now()
	s.take(h, asks, rows, now)
	s.low(h)
	s.letGo(h, now)
	return nil
}

// read reads the windows of host's URLs that asks name. The rows are
// the feeder's until its next read: a buffer kept from read to read,
// where one grown anew for each was 0.9 KB a URL (issue 34, part 2).
func (j *Job) read(ctx context.Context, host string, asks []laneAsk) ([]row, error) {
	rows := j.rows[:0]
	for _, a := range asks {
		if err := j.st.window(ctx, host, a.lane, a.after, a.n, func(r row) { rows = append(rows, r) }); err != nil {
			return nil, err
		}
	}
	j.rows = rows
	return rows, nil
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
		if !s.rescan {
			s.hostsOut = true
			s.stopIfDone()
		}
		s.mu.Unlock()
		return after, nil
	}
	s.mu.Lock()
	_, in := s.hosts[key]
	if !in {
		s.taking, s.takingFound = key, [numLanes]int{}
	}
	s.mu.Unlock()
	if in {
		return key, nil // in memory already (a scan again, for links found)
	}
	defer func() {
		s.mu.Lock()
		s.taking = ""
		s.mu.Unlock()
	}()
	n, err := j.st.hostPending(ctx, key)
	if err != nil {
		return after, err
	}
	s.mu.Lock()
	h := s.gone.revive(key, s.goneByKey)
	s.mu.Unlock()
	fresh := h == nil
	if fresh {
		h = &host{key: key}
	}
	for l := range h.lanes {
		h.lanes[l].unloaded = n[l]
	}
	if p, ok := paused[key]; ok && fresh {
		h.pausedUntil, h.pauseWhy = p.until, polite.Reason(p.reason)
		h.persisted.Store(p.until.UnixMilli())
	}
	asks := h.asks() // h is not shared yet
	h.reading(asks)
	rows, err := j.read(ctx, key, asks)
	if err != nil {
		return after, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hosts[key] = h
	now := time.Now()
	s.take(h, asks, rows, now)
	// URLs discovery added to the host while it was read: maybe read,
	// maybe not; one more read tells.
	for l, k := range s.takingFound {
		h.lanes[l].unloaded += k
		h.lanes[l].found += k
	}
	s.taking = ""
	s.low(h)
	s.letGo(h, now)
	return key, nil
}
