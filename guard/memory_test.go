package guard

import (
	"context"
	"encoding/binary"
	"net/netip"
	"runtime"
	"testing"
	"testing/synctest"
	"time"
)

// A flood of distinct identities (rotating IPv6 /64s, 10 million of them;
// 1 million under the race detector) keeps the store at its bound, and the
// heap with it.
func TestMemoryBoundedUnderFlood(t *testing.T) {
	n := 10_000_000
	if raceEnabled || testing.Short() {
		n = 1_000_000
	}
	const maxKeys = 100_000
	m := NewMemory(MemoryOptions{MaxKeys: maxKeys})
	tr, _ := newTrust(&Config{})
	l, _ := compile(Limit{Rate: 10, Burst: 20}, "identity")
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	req := Request{Cost: 1}
	var d Decision
	var raw [16]byte
	buf := make([]byte, 0, 64)
	peak := 0
	for i := range n {
		binary.BigEndian.PutUint32(raw[0:4], 0x20010db8)
		binary.BigEndian.PutUint32(raw[4:8], uint32(i)) // a new /64 each time
		binary.BigEndian.PutUint64(raw[8:16], uint64(i)*0x9e3779b97f4a7c15)
		buf = tr.appendAddrKey(append(buf[:0], "ia:"...), netip.AddrFrom16(raw))
		req.Levels[Identity] = Bucket{Key: buf, Burst: int64(l.Burst), Interval: time.Duration(l.interval)}
		m.Decide(context.Background(), &req, &d)
		if !d.Allowed {
			t.Fatalf("flood request %d refused: each is a new identity", i)
		}
		if i%(n/20) == 0 {
			peak = max(peak, m.Len())
		}
	}
	peak = max(peak, m.Len())
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d distinct /64s: %d buckets kept at most (bound %d), heap grew %.1f MB (%.0f B per kept bucket), %d evicted while refilling",
		n, peak, maxKeys, float64(grown)/1e6, float64(grown)/float64(max(peak, 1)), m.Evicted())
	if peak > maxKeys {
		t.Errorf("kept %d buckets, bound %d", peak, maxKeys)
	}
	if grown > 40<<20 {
		t.Errorf("heap grew %d bytes for %d buckets", grown, peak)
	}
}

// Full buckets go first: a flood of identities that each come back full
// never forces out one still refilling.
func TestEvictsFullFirst(t *testing.T) { synctest.Test(t, evictsFullFirst) }

func evictsFullFirst(t *testing.T) {
	m := NewMemory(MemoryOptions{MaxKeys: 64, Shards: 1})
	fast, _ := compile(Limit{Rate: 1e9, Burst: 1}, "identity") // full again 1 ns after a take
	slow, _ := compile(Limit{Rate: 0.001, Burst: 2}, "identity")
	var d Decision
	victim := Request{Cost: 1, Levels: [NumLevels]Bucket{{Key: []byte("iv"), Burst: 2, Interval: time.Duration(slow.interval)}}}
	m.Decide(context.Background(), &victim, &d) // one token left
	for i := range 10_000 {
		k := []byte{'i', byte(i), byte(i >> 8)}
		req := Request{Cost: 1, Levels: [NumLevels]Bucket{{Key: k, Burst: 1, Interval: time.Duration(fast.interval)}}}
		m.Decide(context.Background(), &req, &d)
		time.Sleep(time.Microsecond)
	}
	if _, ok := m.state("iv"); !ok || m.Evicted() != 0 {
		t.Fatalf("victim kept %v, %d evicted while refilling: want kept, 0", ok, m.Evicted())
	}
	m.Decide(context.Background(), &victim, &d)
	if m.Decide(context.Background(), &victim, &d); d.Allowed {
		t.Error("victim's spent budget came back")
	}
}
