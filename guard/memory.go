package guard

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// MemoryOptions configure a Memory store. The zero value is the default.
type MemoryOptions struct {
	// MaxKeys bounds the buckets kept, over all levels: DefaultMaxKeys if
	// zero (each shard keeps at least 8). A bucket takes about 100 bytes,
	// key included, for an IPv6 /64.
	MaxKeys int
	// Shards is the number of independently locked parts, rounded up to a
	// power of two; 256 if zero.
	Shards int
}

// DefaultMaxKeys is the default bound on a Memory store's buckets.
const DefaultMaxKeys = 1 << 18

// Memory is a Store in this process's memory: sharded, each shard a map
// under its own mutex, so decisions on different keys rarely meet. A
// decision locks the shards of its keys in index order (no deadlock), checks
// every level, and commits all or none.
//
// The key count is bounded. When a shard is at its share of MaxKeys, it
// first drops the buckets that are full (no token taken since they last
// refilled): a new bucket starts full, so dropping them loses nothing. Only
// when that frees too little does it drop buckets still refilling, which
// forgets at most a burst for each (counted by Evicted).
//
// A Memory is safe for concurrent use; a decision does not allocate unless
// it adds a key.
type Memory struct {
	seed    maphash.Seed
	epoch   time.Time // the state's clock: ns since epoch, monotonic
	mask    uint64
	shards  []shard
	evicted atomic.Int64
}

// shard is a part of the store. Its map holds slots in tat, so updating a
// kept bucket writes an int64 and never the map (assigning through
// m[string(key)] would allocate the key every time).
type shard struct {
	mu   sync.Mutex        // guards m, tat and free
	m    map[string]uint32 // key -> slot
	tat  []int64           // slot -> ns since epoch when the bucket is full again
	free []uint32          // slots of dropped buckets
	max  int
	_    [40]byte // keep neighbouring shards' locks off one cache line
}

// get returns key's state, and whether it is kept.
func (s *shard) get(key []byte) (int64, bool) {
	if i, ok := s.m[string(key)]; ok {
		return s.tat[i], true
	}
	return 0, false
}

// set stores key's state; the caller has made room.
func (s *shard) set(key []byte, tat int64) {
	if i, ok := s.m[string(key)]; ok {
		s.tat[i] = tat
		return
	}
	var i uint32
	if n := len(s.free); n > 0 {
		i, s.free = s.free[n-1], s.free[:n-1]
		s.tat[i] = tat
	} else {
		i = uint32(len(s.tat))
		s.tat = append(s.tat, tat)
	}
	s.m[string(key)] = i
}

// drop forgets key.
func (s *shard) drop(key string, slot uint32) {
	delete(s.m, key)
	s.free = append(s.free, slot)
}

// NewMemory returns an empty Memory store.
func NewMemory(o MemoryOptions) *Memory {
	if o.MaxKeys <= 0 {
		o.MaxKeys = DefaultMaxKeys
	}
	n := 1
	for n < o.Shards || (o.Shards <= 0 && n < 256) {
		n <<= 1
	}
	per := max(8, o.MaxKeys/n)
	m := &Memory{seed: maphash.MakeSeed(), epoch: time.Now(), mask: uint64(n - 1), shards: make([]shard, n)}
	for i := range m.shards {
		m.shards[i].m = make(map[string]uint32)
		m.shards[i].max = per
	}
	return m
}

// Decide implements Store.
func (m *Memory) Decide(_ context.Context, r *Request, d *Decision) error {
	var idx, lv [NumLevels]int
	n := 0
	for i := range r.Levels {
		lv[i] = -1
		if r.Levels[i].Key == nil {
			continue
		}
		lv[i] = int(maphash.Bytes(m.seed, r.Levels[i].Key) & m.mask)
		idx[n] = lv[i]
		n++
	}
	// Lock each shard once, in index order.
	locked := sortUnique(&idx, n)
	for _, s := range idx[:locked] {
		m.shards[s].mu.Lock()
	}
	now := int64(time.Since(m.epoch))
	m.decideLocked(r, d, &lv, now)
	for _, s := range idx[:locked] {
		m.shards[s].mu.Unlock()
	}
	return nil
}

// decideLocked is Decide with the request's shards locked.
// lv holds each level's shard, -1 for a level not in play.
func (m *Memory) decideLocked(r *Request, d *Decision, lv *[NumLevels]int, now int64) {
	var tat, next [NumLevels]int64
	var sh [NumLevels]*shard
	d.Allowed = true
	for i := range r.Levels {
		b := &r.Levels[i]
		d.Debt[i], d.Interval[i] = 0, b.Interval
		if lv[i] < 0 {
			continue
		}
		sh[i] = &m.shards[lv[i]]
		t, ok := sh[i].get(b.Key)
		if !ok || t < now {
			t = now
		}
		tat[i] = t
		n, _, ok := gcra(t-now, r.Cost, int64(b.Interval), b.Burst*int64(b.Interval))
		next[i] = n
		if !ok {
			d.Allowed = false
		}
	}
	for i := range r.Levels {
		if sh[i] == nil {
			continue
		}
		if !d.Allowed {
			d.Debt[i] = time.Duration(tat[i] - now)
			continue
		}
		d.Debt[i] = time.Duration(next[i])
		k := r.Levels[i].Key
		if _, ok := sh[i].m[string(k)]; !ok && len(sh[i].m) >= sh[i].max {
			m.room(sh[i], r, now)
		}
		sh[i].set(k, now+next[i])
	}
}

// room makes space in a full shard: full buckets first, then, if that
// freed less than an eighth, any others but r's own.
func (m *Memory) room(s *shard, r *Request, now int64) {
	for k, i := range s.m {
		if s.tat[i] <= now {
			s.drop(k, i)
		}
	}
	keep := s.max - s.max/8
	if len(s.m) <= keep {
		return
	}
	for k, i := range s.m {
		if len(s.m) <= keep {
			break
		}
		if ownKey(r, k) {
			continue
		}
		s.drop(k, i)
		m.evicted.Add(1)
	}
}

func ownKey(r *Request, k string) bool {
	for i := range r.Levels {
		if string(r.Levels[i].Key) == k {
			return true
		}
	}
	return false
}

// sortUnique sorts the first n of idx and drops repeats; it returns how
// many remain.
func sortUnique(idx *[NumLevels]int, n int) int {
	for i := 1; i < n; i++ {
		for j := i; j > 0 && idx[j] < idx[j-1]; j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
	u := 0
	for i := 0; i < n; i++ {
		if u == 0 || idx[i] != idx[u-1] {
			idx[u] = idx[i]
			u++
		}
	}
	return u
}

// Len returns the number of buckets kept.
func (m *Memory) Len() int {
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}

// Evicted returns how many buckets were dropped while still refilling,
// each forgetting at most a burst.
func (m *Memory) Evicted() int64 { return m.evicted.Load() }

// state returns the bucket key's raw state (for tests): the instant it is
// full again, and whether it is kept.
func (m *Memory) state(key string) (int64, bool) {
	s := &m.shards[maphash.String(m.seed, key)&m.mask]
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.get([]byte(key))
}
