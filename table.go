package polite

import "sync/atomic"

// table is an open-addressing hash table of hosts (linear probing, deletion
// by backward shift, no tombstones), one per registry shard.
//
// It replaces a map[string]*Host for one reason, measured: with a million
// hosts a lookup is bound by cache misses, and Go's map costs four or five
// (control word, slot, key bytes, then the host); here a slot holds the full
// 64-bit hash beside the host pointer, and the host holds its key inline, so
// a lookup touches the slot and the host: two.
//
// Writers hold the registry shard's lock. Readers take none: every slot word
// is an atomic, and a resize publishes a new array whole, so a reader always
// sees hosts that are or were in the table. What a reader can get wrong is
// bounded: while a writer shifts a cluster back, it may miss a host that is
// there (get reports a miss and the caller retries under the lock), and from
// an array a resize replaced it may find a host since evicted (the caller
// sees it dead when it takes a reference). It never returns a host under
// another key: the key is compared on the host itself.
type table struct {
	arr atomic.Pointer[[]slot] // len is a power of two; nil when empty
	n   int                    // live slots; writers only
}

type slot struct {
	hash atomic.Uint64 // 0 marks an empty slot; live hashes have the low bit set
	h    atomic.Pointer[Host]
}

// home is the first slot of hash's probe sequence. It skips the hash's low
// bit, which is always set (it tells a live slot from an empty one): taken
// with it, every home was odd, half the slots were homes to none, and
// clusters ran twice as long.
func home(hash, mask uint64) uint64 { return hash >> 1 & mask }

func (t *table) slots() []slot {
	if p := t.arr.Load(); p != nil {
		return *p
	}
	return nil
}

// get returns the host for key, or nil. It is safe without the lock; see the
// type's comment for what a lock-free miss means.
func (t *table) get(key string, hash uint64) *Host {
	slots := t.slots()
	if len(slots) == 0 {
		return nil
	}
	mask := uint64(len(slots) - 1)
	for i, n := home(hash, mask), 0; n < len(slots); i, n = (i+1)&mask, n+1 {
		s := &slots[i]
		switch s.hash.Load() {
		case 0:
			return nil
		case hash:
			if h := s.h.Load(); h != nil && h.key == key {
				return h
			}
		}
	}
	return nil // only a reader racing writers can go all the way round
}

// insert adds h, which must not be present. Growth keeps the load at most
// 7/8: a hit still probes about four slots (64 bytes, one or two cache
// lines), and a slot costs 16 to 37 bytes per host, 24 typically.
func (t *table) insert(h *Host, hash uint64) {
	if (t.n+1)*8 > len(t.slots())*7 {
		t.resize(max(16, 2*len(t.slots())))
	}
	place(t.slots(), hash, h)
	t.n++
}

// place puts h in the first free slot of its probe sequence. The host goes
// in before the hash, so a reader that sees the hash sees a host.
func place(slots []slot, hash uint64, h *Host) {
	mask := uint64(len(slots) - 1)
	for i := home(hash, mask); ; i = (i + 1) & mask {
		if slots[i].hash.Load() == 0 {
			slots[i].h.Store(h)
			slots[i].hash.Store(hash)
			return
		}
	}
}

// resize moves every host to a new array of size slots and publishes it;
// readers still on the old one see it as it was.
func (t *table) resize(size int) {
	next := make([]slot, size)
	for i := range t.slots() {
		s := &t.slots()[i]
		if hash := s.hash.Load(); hash != 0 {
			place(next, hash, s.h.Load())
		}
	}
	t.arr.Store(&next)
}

// deleteAt empties slot i and shifts the rest of its cluster back, so no
// probe sequence is broken.
func (t *table) deleteAt(i uint64) {
	slots := t.slots()
	mask := uint64(len(slots) - 1)
	for j := (i + 1) & mask; slots[j].hash.Load() != 0; j = (j + 1) & mask {
		// The entry at j may fill the hole at i only if its home is not
		// cyclically within (i, j].
		at := home(slots[j].hash.Load(), mask)
		if i <= j {
			if i < at && at <= j {
				continue
			}
		} else if i < at || at <= j {
			continue
		}
		slots[i].h.Store(slots[j].h.Load())
		slots[i].hash.Store(slots[j].hash.Load())
		i = j
	}
	slots[i].hash.Store(0)
	slots[i].h.Store(nil)
	t.n--
}

// sweep deletes every host for which evict reports true, then shrinks the
// table if it is mostly empty, so memory follows the hosts held.
func (t *table) sweep(evict func(h *Host) bool) {
	slots := t.slots()
	for i := uint64(0); i < uint64(len(slots)); {
		if s := &slots[i]; s.hash.Load() != 0 && evict(s.h.Load()) {
			t.deleteAt(i) // slot i may now hold a shifted entry: look again
			continue
		}
		i++
	}
	if len(slots) > 16 && t.n*8 < len(slots) {
		size := 16
		for size*7 < t.n*8*2 {
			size *= 2
		}
		t.resize(size)
	}
}

// each calls f for every host in the table until f returns false. Without the
// lock, a concurrent deletion may show a host twice or hide it.
func (t *table) each(f func(h *Host) bool) bool {
	slots := t.slots()
	for i := range slots {
		if slots[i].hash.Load() == 0 {
			continue
		}
		if h := slots[i].h.Load(); h != nil && !f(h) {
			return false
		}
	}
	return true
}
