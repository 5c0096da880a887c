// Package inflight caps how many requests are in flight at once: a counting
// semaphore that honours contexts, serves waiters in FIFO order, and whose
// limit can move at run time (the adaptive controller moves it).
package inflight

import (
	"context"
	"sync"
	"sync/atomic"
)

// Max is the largest limit a Gate keeps; larger limits are clamped to it, and
// New(Max) is, for every practical purpose, unlimited.
const Max = 1<<21 - 1

// The state word packs three 21-bit counts so one compare-and-swap moves them
// together: held (slots taken), limit, and waiting (callers queued). The fast
// paths touch only this word; the mutex guards the queue.
const (
	bits      = 21
	mask      = 1<<bits - 1
	limitSh   = bits
	waitingSh = 2 * bits
	oneWaiter = 1 << waitingSh
)

func unpack(s uint64) (held, limit, waiting int) {
	return int(s & mask), int(s >> limitSh & mask), int(s >> waitingSh & mask)
}

func pack(held, limit, waiting int) uint64 {
	return uint64(held) | uint64(limit)<<limitSh | uint64(waiting)<<waitingSh
}

// Gate is a counting semaphore for requests in flight.
//
// Acquire takes a slot, waiting in FIFO order when none is free; Release
// gives it back. While anyone waits, newcomers queue behind them, so no waiter
// starves. SetLimit changes the number of slots at run time: raising it admits
// waiters at once, lowering it lets the excess drain as holders release.
//
// The zero Gate has limit 0 and admits nobody; use New. A Gate is safe for
// concurrent use; Acquire and Release without contention are one
// compare-and-swap each and do not allocate.
type Gate struct {
	state atomic.Uint64
	q     atomic.Pointer[queue] // allocated on first wait; 16 bytes per idle Gate in all
}

type queue struct {
	mu         sync.Mutex // guards head, tail and every waiter's links and granted
	head, tail *waiter
}

type waiter struct {
	ready      chan struct{} // closed when the slot is granted
	granted    bool
	prev, next *waiter
}

// New returns a Gate with limit slots (clamped to [0, Max]).
func New(limit int) *Gate {
	g := &Gate{}
	g.state.Store(pack(0, clamp(limit), 0))
	return g
}

func clamp(n int) int { return min(max(n, 0), Max) }

// Init sets the limit of a Gate that nobody uses yet, for Gates embedded by
// value. It must not race with other methods.
func (g *Gate) Init(limit int) { g.state.Store(pack(0, clamp(limit), 0)) }

// TryAcquire takes a slot if one is free and nobody is waiting.
func (g *Gate) TryAcquire() bool {
	for {
		s := g.state.Load()
		held, limit, waiting := unpack(s)
		if waiting > 0 || held >= limit {
			return false
		}
		if g.state.CompareAndSwap(s, s+1) {
			return true
		}
	}
}

// Acquire takes a slot, waiting for one in FIFO order. It returns ctx's error
// if ctx ends first, holding nothing.
func (g *Gate) Acquire(ctx context.Context) error {
	if g.TryAcquire() {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	q := g.queue()
	q.mu.Lock()
	for {
		s := g.state.Load()
		held, limit, waiting := unpack(s)
		if waiting == 0 && held < limit {
			if g.state.CompareAndSwap(s, s+1) {
				q.mu.Unlock()
				return nil
			}
			continue
		}
		if waiting == mask {
			break // absurd queue depth: wait without counting; Release still finds us
		}
		if g.state.CompareAndSwap(s, s+oneWaiter) {
			break
		}
	}
	w := &waiter{ready: make(chan struct{})}
	q.push(w)
	q.mu.Unlock()

	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	q.mu.Lock()
	if w.granted {
		// The slot arrived as ctx ended: pass it on.
		q.mu.Unlock()
		g.Release()
		return ctx.Err()
	}
	q.remove(w)
	g.addWaiting(-1)
	g.dispatchLocked(q)
	q.mu.Unlock()
	return ctx.Err()
}

// Release gives back a slot taken by Acquire or TryAcquire.
func (g *Gate) Release() {
	for {
		s := g.state.Load()
		held, _, waiting := unpack(s)
		if held == 0 {
			panic("inflight: Release without Acquire")
		}
		if waiting > 0 {
			break
		}
		if g.state.CompareAndSwap(s, s-1) {
			return
		}
	}
	q := g.queue()
	q.mu.Lock()
	for {
		s := g.state.Load()
		if g.state.CompareAndSwap(s, s-1) {
			break
		}
	}
	g.dispatchLocked(q)
	q.mu.Unlock()
}

// SetLimit changes the number of slots. Waiters are admitted at once if the
// limit rose; if it fell, holders above it keep their slots until they
// release.
func (g *Gate) SetLimit(limit int) {
	limit = clamp(limit)
	q := g.q.Load()
	if q == nil {
		// Nobody has ever waited; if someone starts now, they lock the queue
		// and re-read the state after this CAS.
		for {
			s := g.state.Load()
			held, _, waiting := unpack(s)
			if waiting > 0 {
				break
			}
			if g.state.CompareAndSwap(s, pack(held, limit, waiting)) {
				return
			}
		}
		q = g.queue()
	}
	q.mu.Lock()
	for {
		s := g.state.Load()
		held, _, waiting := unpack(s)
		if g.state.CompareAndSwap(s, pack(held, limit, waiting)) {
			break
		}
	}
	g.dispatchLocked(q)
	q.mu.Unlock()
}

// Limit returns the number of slots.
func (g *Gate) Limit() int { _, l, _ := unpack(g.state.Load()); return l }

// InFlight returns the number of slots held.
func (g *Gate) InFlight() int { h, _, _ := unpack(g.state.Load()); return h }

// Waiting returns the number of callers queued in Acquire.
func (g *Gate) Waiting() int { _, _, w := unpack(g.state.Load()); return w }

// Idle reports whether no slot is held and nobody waits.
func (g *Gate) Idle() bool {
	h, _, w := unpack(g.state.Load())
	return h == 0 && w == 0
}

// queue returns the waiter queue, creating it on first use.
func (g *Gate) queue() *queue {
	if q := g.q.Load(); q != nil {
		return q
	}
	g.q.CompareAndSwap(nil, &queue{})
	return g.q.Load()
}

// dispatchLocked grants slots to queued waiters, front first, while slots are
// free. q.mu must be held.
func (g *Gate) dispatchLocked(q *queue) {
	for q.head != nil {
		s := g.state.Load()
		held, limit, waiting := unpack(s)
		if held >= limit {
			return
		}
		if waiting > 0 {
			waiting--
		}
		if !g.state.CompareAndSwap(s, pack(held+1, limit, waiting)) {
			continue
		}
		w := q.head
		q.remove(w)
		w.granted = true
		close(w.ready)
	}
}

func (g *Gate) addWaiting(d int) {
	for {
		s := g.state.Load()
		held, limit, waiting := unpack(s)
		if waiting+d < 0 || waiting+d > mask {
			return
		}
		if g.state.CompareAndSwap(s, pack(held, limit, waiting+d)) {
			return
		}
	}
}

func (q *queue) push(w *waiter) {
	if q.tail == nil {
		q.head, q.tail = w, w
		return
	}
	w.prev = q.tail
	q.tail.next = w
	q.tail = w
}

func (q *queue) remove(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		q.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		q.tail = w.prev
	}
	w.prev, w.next = nil, nil
}
