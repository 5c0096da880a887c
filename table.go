package polite

import (
	"math/bits"
	"sync/atomic"
)

// table is an open-addressing hash table of hosts, one per registry shard,
// in groups of seven slots: a group is one 64-byte cache line, a control
// word holding a 7-bit tag of each slot's hash and the seven host pointers
// (the layout of Abseil's and Go's Swiss tables, with one group to a line).
// A key's hash picks its home group; when that is full the key goes to the
// next group, and the full one is marked so lookups go on past it. The
// table grows by half when 7/8 of its slots are taken, so its load stays
// within 7/12 and 7/8, and a million hosts' groups take 10 to 16 MB.
//
// It replaces a map[string]*Host for one reason, measured: with a million
// hosts a lookup is bound by cache and TLB misses, and Go's map costs four
// or five (control word, slot, key bytes, then the host). Here a lookup
// reads its home group, the line that holds both the tags and the pointer,
// then the host, which holds its key inline: two, as few as any index of
// pointers to hosts can. The misses on the index are TLB misses as well,
// and fewer pages of index miss less: slots of a 64-bit hash and a pointer
// at loads of 7/16 to 7/8 took 32 MB for a million hosts, four times an
// array of a million pointers.
//
// Writers hold the registry shard's lock. Readers take none: every word is
// an atomic, hosts never move within a group array, and a resize publishes a
// new array whole, so a reader always sees hosts that are or were in the
// table. What a reader can get wrong is bounded: it may miss a host a
// writer is inserting (get reports a miss and the caller retries under the
// lock), and from an array a resize replaced it may find a host since
// evicted (the caller sees it dead when it takes a reference). It never
// returns a host under another key: the key is compared on the host itself.
type table struct {
	arr  atomic.Pointer[[]group] // nil when empty
	n    int                     // live hosts; writers only
	hash func(key string) uint64 // the hash get and insert are given, for resizes
}

// group is seven slots. Byte i < 7 of ctrl is slot i's tag, 0 when the slot
// is empty; the top bit (passed) says an insert found the group full and
// went on, so a lookup must too. Only a resize clears it.
type group struct {
	ctrl atomic.Uint64
	h    [groupSlots]atomic.Pointer[Host]
}

const (
	groupSlots = 7
	passed     = 1 << 63
	lsbs       = 0x0001010101010101 // the low bit of each slot's byte
	msbs       = 0x0080808080808080 // the high bit of each slot's byte
)

// tagOf is the 7-bit tag of hash, with the top bit set so that no tag is 0.
// It takes bits the shard (the top 8) and the home group (the low 32) do
// not.
func tagOf(hash uint64) uint64 { return hash>>49&0x7f | 0x80 }

// homeOf is hash's home among n groups: the low 32 bits of hash scaled to
// n, so that n need not be a power of two.
func homeOf(hash uint64, n int) int { return int(hash & (1<<32 - 1) * uint64(n) >> 32) }

// matches returns a bit (the byte's top one) for each slot of ctrl whose
// tag is tag, and rarely for a slot whose tag is not (a borrow from a
// lower byte that matched): callers check the key anyway.
func matches(ctrl, tag uint64) uint64 {
	x := ctrl ^ lsbs*tag
	return (x - lsbs) &^ x & msbs
}

func (t *table) groups() []group {
	if p := t.arr.Load(); p != nil {
		return *p
	}
	return nil
}

// get returns the host for key, or nil. It is safe without the lock; see the
// type's comment for what a lock-free miss means.
func (t *table) get(key string, hash uint64) *Host {
	groups := t.groups()
	tag := tagOf(hash)
	for i, n := homeOf(hash, len(groups)), 0; n < len(groups); i, n = i+1, n+1 {
		if i == len(groups) {
			i = 0
		}
		g := &groups[i]
		ctrl := g.ctrl.Load()
		for m := matches(ctrl, tag); m != 0; m &= m - 1 {
			if h := g.h[bits.TrailingZeros64(m)>>3].Load(); h != nil && h.Key() == key {
				return h
			}
		}
		if ctrl&passed == 0 {
			return nil
		}
	}
	return nil // only a reader racing writers can go all the way round
}

// insert adds h, whose key hashes to hash and must not be present. Growth
// keeps the load at most 7/8 of the slots.
func (t *table) insert(h *Host, hash uint64) {
	if size := len(t.groups()); (t.n+1)*8 > size*groupSlots*7 {
		t.resize(max(2, size+size/2))
	}
	place(t.groups(), hash, h)
	t.n++
}

// place puts h in the first free slot from hash's home group on, marking
// the full groups it passes. The host goes in before its tag, so a reader
// that sees the tag sees a host.
func place(groups []group, hash uint64, h *Host) {
	for i := homeOf(hash, len(groups)); ; i++ {
		if i == len(groups) {
			i = 0
		}
		g := &groups[i]
		ctrl := g.ctrl.Load()
		for k := range groupSlots {
			if ctrl>>(8*k)&0xff == 0 {
				g.h[k].Store(h)
				g.ctrl.Store(ctrl | tagOf(hash)<<(8*k))
				return
			}
		}
		g.ctrl.Store(ctrl | passed)
	}
}

// resize moves every host to a new array of size groups and publishes it;
// readers still on the old one see it as it was.
func (t *table) resize(size int) {
	next := make([]group, size)
	t.each(func(h *Host) bool {
		place(next, t.hash(h.Key()), h)
		return true
	})
	t.arr.Store(&next)
}

// sweep deletes every host for which evict reports true, then, when any
// went, rebuilds the table, so that no full-group mark outlives the hosts
// that set it: at a load of 7/16 (room to grow) when it is mostly empty, so
// that memory follows the hosts held, else at its size.
func (t *table) sweep(evict func(h *Host) bool) {
	groups := t.groups()
	gone := 0
	for i := range groups {
		g := &groups[i]
		for k := range groupSlots {
			if h := g.h[k].Load(); h != nil && evict(h) {
				g.ctrl.Store(g.ctrl.Load() &^ (0xff << (8 * k)))
				g.h[k].Store(nil)
				t.n--
				gone++
			}
		}
	}
	if gone == 0 {
		return
	}
	size := len(groups)
	if t.n*8 < size*groupSlots {
		size = max(2, (t.n*16+groupSlots*7-1)/(groupSlots*7))
	}
	t.resize(size)
}

// each calls f for every host in the table until f returns false. Without the
// lock, a concurrent deletion may hide a host.
func (t *table) each(f func(h *Host) bool) bool {
	groups := t.groups()
	for i := range groups {
		for k := range groupSlots {
			if h := groups[i].h[k].Load(); h != nil && !f(h) {
				return false
			}
		}
	}
	return true
}
