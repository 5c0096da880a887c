package polite

// table is an open-addressing hash table of hosts (linear probing, deletion
// by backward shift, no tombstones), one per registry shard.
//
// It replaces a map[string]*Host for one reason, measured: with a million
// hosts a lookup is bound by cache misses, and Go's map costs four or five
// (control word, slot, key bytes, then the host); here a slot holds the full
// 64-bit hash beside the host pointer, and the host holds its key inline, so
// a lookup touches the slot and the host: two. The registry's shard lock
// guards it: readers under RLock, writers under Lock.
type table struct {
	slots []slot // len is a power of two, or 0
	n     int    // live slots
}

type slot struct {
	hash uint64 // 0 marks an empty slot; live hashes have the low bit set
	h    *Host
}

// get returns the host for key, or nil.
func (t *table) get(key string, hash uint64) *Host {
	if len(t.slots) == 0 {
		return nil
	}
	mask := uint64(len(t.slots) - 1)
	for i := hash & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.hash == hash && s.h.key == key {
			return s.h
		}
		if s.hash == 0 {
			return nil
		}
	}
}

// insert adds h, which must not be present. Growth keeps the load at most
// 7/8: a hit still probes about four slots (64 bytes, one or two cache
// lines), and a slot costs 16 to 37 bytes per host, 24 typically.
func (t *table) insert(h *Host, hash uint64) {
	if (t.n+1)*8 > len(t.slots)*7 {
		t.resize(max(16, 2*len(t.slots)))
	}
	t.place(slot{hash, h})
	t.n++
}

func (t *table) place(s slot) {
	mask := uint64(len(t.slots) - 1)
	for i := s.hash & mask; ; i = (i + 1) & mask {
		if t.slots[i].hash == 0 {
			t.slots[i] = s
			return
		}
	}
}

func (t *table) resize(size int) {
	old := t.slots
	t.slots = make([]slot, size)
	for _, s := range old {
		if s.hash != 0 {
			t.place(s)
		}
	}
}

// deleteAt empties slot i and shifts the rest of its cluster back, so no
// probe sequence is broken.
func (t *table) deleteAt(i uint64) {
	mask := uint64(len(t.slots) - 1)
	for j := (i + 1) & mask; t.slots[j].hash != 0; j = (j + 1) & mask {
		home := t.slots[j].hash & mask
		// The entry at j may fill the hole at i only if its home is not
		// cyclically within (i, j].
		if i <= j {
			if i < home && home <= j {
				continue
			}
		} else if i < home || home <= j {
			continue
		}
		t.slots[i] = t.slots[j]
		i = j
	}
	t.slots[i] = slot{}
	t.n--
}

// sweep deletes every host for which evict reports true, then shrinks the
// table if it is mostly empty, so memory follows the hosts held.
func (t *table) sweep(evict func(h *Host) bool) {
	for i := uint64(0); i < uint64(len(t.slots)); {
		if s := t.slots[i]; s.hash != 0 && evict(s.h) {
			t.deleteAt(i) // slot i may now hold a shifted entry: look again
			continue
		}
		i++
	}
	if len(t.slots) > 16 && t.n*8 < len(t.slots) {
		size := 16
		for size*7 < t.n*8*2 {
			size *= 2
		}
		t.resize(size)
	}
}
