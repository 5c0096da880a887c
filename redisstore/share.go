package redisstore

import (
	"hash/fnv"
	"math"
	"sync"
	"time"

	"github.com/polite-go/polite"
)

// While Redis is out in Local mode each worker limits each host on its own,
// and the workers' limits must add up to no more than the host's: no
// sliding second may see more than rate×1s + burst requests (issue 29,
// item 4). Dividing the rate by the worker count is not enough: every
// worker's bucket then holds a burst of its own, so n workers add n − 1
// requests to every second, and the lateness of each request (timers,
// dials) lets each worker's stream put one more into a second.
//
// So a host's allowance for a second, floor(rate×1s + burst), is dealt out
// among the workers as whole requests, and each worker's rate is set so that
// its stream stays within its part over any window of one second plus
// shareJitter: a bucket of burst b at rate r grants at most b − 1 +
// ceil(L×r) requests in a window of length L. When the allowance is smaller
// than the worker count, only that many workers send to the host (which
// ones depends on the host, so the hosts are spread over the fleet) and the
// others wait for Redis. Only the heartbeat's worker list is shared, so
// workers that saw different lists (one joined or died within workerTTL of
// the outage) may deal differently; the bound is as good as the count.

// The same bound holds across the end of an outage: the requests a worker
// sent on its own in the outage's last second are not in Redis's bucket, so
// for shareTail after it is back on Redis each worker's grants come from
// Redis and from its share both. shareTail covers a second plus the jitter
// and the spread of the workers' recoveries (each probes every probeEvery).

// shareTail is how long a worker's shares still apply once Redis is back.
const shareTail = 2 * time.Second

// shareJitter is the lateness of a request after its grant that the share
// allows for: the bound holds for arrivals up to this late.
const shareJitter = 100 * time.Millisecond

// share is one worker's part of a host's limits while Redis is out.
type share struct {
	rate  float64 // requests per second; 0: this worker sends the host nothing
	burst int
}

// shareOf deals a host's rate and burst out among n workers: the part of
// the worker of the given rank (0 ≤ rank < n) for a host whose key hashes
// to hh. rate must be finite and positive.
func shareOf(rate float64, burst, n, rank int, hh uint32) share {
	burst = max(burst, 1)
	if n < 1 || rank < 0 || rank >= n {
		n, rank = 1, 0
	}
	// The whole requests a second may see, and the workers that send.
	allow := int(min(math.Floor(rate+float64(burst)+1e-9), 1<<40)) // far beyond any worker count
	m := min(n, allow)
	o := (rank + n - int(hh%uint32(n))) % n // this worker's place for the host
	if o >= m {
		return share{}
	}
	a := allow / m // this worker's requests in any second
	if o < allow%m {
		a++
	}
	b := 1
	if m <= burst { // the burst goes round; otherwise each keeps one
		b = burst / m
		if o < burst%m {
			b++
		}
	}
	b = min(b, a)
	l := 1 + shareJitter.Seconds()
	return share{rate: min(rate/float64(m), float64(a-b+1)/l), burst: b}
}

// gcra is one worker's bucket for a host during an outage: the generic cell
// rate algorithm on a theoretical arrival time, with exact give-backs. It
// starts empty: the shared bucket was spent up to the outage, and a full
// one here would add its burst to the second the outage began in. It is
// safe for concurrent use.
type gcra struct {
	share
	interval time.Duration // ceil(1s/rate)

	mu  sync.Mutex // guards tat
	tat time.Time  // theoretical arrival time of the next token; full when ≤ now − (burst−1)·interval
}

func newGCRA(sh share, now time.Time) *gcra {
	iv := time.Duration(math.Ceil(float64(time.Second) / sh.rate))
	return &gcra{share: sh, interval: iv, tat: now.Add(time.Duration(sh.burst) * iv)}
}

// take reserves n tokens at now and returns when they are there: now, or
// later. n must not exceed the burst.
func (g *gcra) take(now time.Time, n int) time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	at := g.tat.Add(time.Duration(n-g.burst) * g.interval)
	if at.Before(now) {
		at = now
	}
	g.tat = later(g.tat, at).Add(time.Duration(n) * g.interval)
	return at
}

// tokens returns what the bucket holds at now, and when it next holds one
// (the zero time when it does).
func (g *gcra) tokens(now time.Time) (float64, time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	// Empty at tat − burst·interval, a token more each interval since.
	n := min(float64(now.Sub(g.tat.Add(-time.Duration(g.burst)*g.interval)))/float64(g.interval), float64(g.burst))
	if n >= 1 {
		return n, time.Time{}
	}
	return max(n, 0), g.tat.Add(-time.Duration(g.burst-1) * g.interval)
}

// giveBack returns n tokens taken by take that will not be used.
func (g *gcra) giveBack(n int) {
	g.mu.Lock()
	g.tat = g.tat.Add(-time.Duration(n) * g.interval)
	g.mu.Unlock()
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// hostHash places a host among the workers.
func hostHash(key string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(key))
	return h.Sum32()
}

// shareNow returns this worker's share of h's limits as the workers last
// counted stand; false for a host without a rate limit.
func (s *Store) shareNow(h *polite.Host) (share, bool) {
	l := s.reg.LimitsFor(h.Key())
	if l.Rate <= 0 || math.IsInf(l.Rate, 1) || l.Rate >= math.MaxFloat64 {
		return share{}, false
	}
	s.health.mu.Lock() // count and rank together
	n, rank := int(s.health.workers.Load()), int(s.health.rank.Load())
	s.health.mu.Unlock()
	return shareOf(l.Rate, l.Burst, n, rank, hostHash(h.Key())), true
}

// shareAdmit answers an admission in Local mode: the worker's share of the
// host first, then the local store (block mark, pause, breaker, and its own
// bucket at the host's full limits, which the share keeps from binding).
func (s *Store) shareAdmit(h *polite.Host, q polite.Query) polite.Admission {
	key := h.Key()
	sh, ok := s.shareNow(h)
	if !ok {
		return s.health.local.Admit(h, q)
	}
	cost := max(q.Cost, 1)
	if sh.rate == 0 || cost > sh.burst {
		// Not this worker's host while Redis is out (or a request heavier
		// than its part of the burst): it waits for Redis.
		return polite.Admission{Wait: closedPoll, Poll: closedPoll, Reason: polite.ReasonStore}
	}
	v, ok := s.shares.Load(key)
	g, _ := v.(*gcra)
	if !ok || g.share != sh {
		// First use in this outage, or the count changed.
		g = newGCRA(sh, q.Now)
		if ok {
			s.shares.CompareAndSwap(key, v, g)
		} else if v, loaded := s.shares.LoadOrStore(key, g); loaded {
			g = v.(*gcra)
		}
	}
	at := g.take(q.Now, cost)
	d := at.Sub(q.Now)
	poll := min(max(g.interval, minPoll), maxHold)
	if d > min(poll, q.MaxWait) {
		g.giveBack(cost)
		return polite.Admission{Wait: d, Poll: min(max(d-poll, minPoll), maxHold), Reason: polite.ReasonRate}
	}
	a := s.health.local.Admit(h, q)
	if !a.Granted {
		g.giveBack(cost)
		return a
	}
	if a.At.Before(at) {
		a.At = at
	}
	return a
}

// tailShare returns h's share during the tail of an outage, nil when there
// is none (no tail, or the worker sent h nothing on its own). The tail is
// timed on the callers' clock, from the first admission after recovery.
func (s *Store) tailShare(h *polite.Host, now time.Time) *gcra {
	t := s.health.tail.Load()
	if t == 0 {
		return nil
	}
	ns := now.UnixNano()
	if t == tailNext {
		if s.health.tail.CompareAndSwap(tailNext, ns+int64(shareTail)) {
			t = ns + int64(shareTail)
		} else if t = s.health.tail.Load(); t == 0 || t == tailNext {
			return nil // another admission started (or ended) the tail meanwhile
		}
	}
	if ns >= t {
		if s.health.tail.CompareAndSwap(t, 0) && !s.health.degraded.Load() {
			s.shares.Clear()
		}
		return nil
	}
	v, _ := s.shares.Load(h.Key())
	g, _ := v.(*gcra)
	return g
}

// tailNext marks a tail that starts at the next admission.
const tailNext = -1

// tailAdmit admits through Redis and within g, h's share, both.
func (s *Store) tailAdmit(h *polite.Host, q polite.Query, g *gcra) polite.Admission {
	cost := max(q.Cost, 1)
	if cost > g.burst {
		return s.sharedAdmit(h, q)
	}
	// Only a token there now: Redis is asked at the instant the request
	// is to go, so that its bucket counts the request when it is sent.
	if d := g.take(q.Now, cost).Sub(q.Now); d > 0 {
		g.giveBack(cost)
		return polite.Admission{Wait: d, Poll: d, Reason: polite.ReasonRate}
	}
	a := s.sharedAdmit(h, q)
	if !a.Granted {
		g.giveBack(cost)
	}
	return a
}
