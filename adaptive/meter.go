package adaptive

import (
	"math"
	"math/bits"
	"time"
)

// Both meters are fixed-size arrays, so a Controller never allocates after
// New, and their times are nanoseconds since the Controller's origin. What
// they keep is narrow (16-bit counts and latencies): a crawl keeps a
// controller per host, a million of them.

const (
	slotSpan  = int64(125 * time.Millisecond)
	slotCount = 8 // slotCount*slotSpan = 1 s
)

// rateMeter counts answers over the last second in slots of 125 ms: the OK
// rate is what the host served lately, by the time the answers came back.
// It holds the counts of the slots cur-slotCount+1 through cur, slot j at
// j%slotCount: 20 bytes, where a slot number beside each count took 64.
type rateMeter struct {
	cur int32             // the latest slot counted into (125 ms slots: 8 years)
	ok  [slotCount]uint16 // OK answers per slot, saturating at 65,535 (524k a second)
}

func (m *rateMeter) add(t int64, ok bool) {
	i := max(int32(t/slotSpan), m.cur) // t never goes back (see clock)
	for j := m.cur + 1; j <= min(i, m.cur+slotCount); j++ {
		m.ok[j%slotCount] = 0 // slots passed since the last answer
	}
	m.cur = i
	if k := &m.ok[i%slotCount]; ok && *k < math.MaxUint16 {
		*k++
	}
}

// okRate returns the OK answers per second over the second before t (or
// since the origin, when younger than that).
func (m *rateMeter) okRate(t int64) float64 {
	return m.okRateOver(t, slotCount)
}

// okRateOver returns the OK answers per second over the last n slots before
// t, the current one partly.
func (m *rateMeter) okRateOver(t int64, n int64) float64 {
	cur := t / slotSpan
	var sum int32
	for j := max(cur-n, int64(m.cur)-slotCount, -1) + 1; j <= min(cur, int64(m.cur)); j++ {
		sum += int32(m.ok[j%slotCount])
	}
	span := (n-1)*slotSpan + t%slotSpan
	span = max(min(span, t), slotSpan)
	return float64(sum) * 1e9 / float64(span)
}

const (
	latRing     = 32 // recent OK latencies kept; the p95 is taken from all
	latRecent   = 16 // the median is taken from the newest latRecent
	latNewest   = 4  // the least of the newest latNewest shows a queue sooner than the median
	baseSlots   = 10 // the baseline is the least median over baseSlots slots
	baseSlotDur = int64(3 * time.Second)
)

// latencies tracks OK latencies: the median of the newest answers (what the
// host is like now), the p95 of a few more, and a baseline, the
// least of those medians over the last half minute (a min filter, as TCP
// Vegas's BaseRTT and BBR's RTprop: what the host is like unloaded).
// Comparing the median with the baseline reads a queue before the host sheds
// load; the spread the baseline's medians came with keeps noise from passing
// for one.
type latencies struct {
	ring [latRing]latCode
	// The ring's latencies and its newest latRecent, each kept in order as
	// answers come and go: one answer moves a few values, where sorting
	// them afresh on every answer costs quadratic time once latencies vary.
	all    [latRing]latCode
	recent [latRecent]latCode
	n      int // answers ever added
	med    latCode
	newest latCode // the least of the newest latNewest: all of them took at least this
	p95    latCode
	fresh  bool // answers were added since the last update
	// Per slot: the least median, and the spread when it was taken (the
	// noise of the host unloaded; a queue widens the spread as it grows).
	base [baseSlots]struct {
		idx         int32 // 3 s slots: 200 years
		min, spread latCode
	}
}

// latCode is a latency in 16 bits, in the order of the latencies: whole
// microseconds up to 4,095, above that 12 significant bits (rounded: within
// 1/4096), up to 35 minutes. A host's history is 100 of them, and a crawl
// keeps a controller per host, a million of them (issue 12).
type latCode uint16

const latExact = 1 << 12 // codes under this are microseconds

func toLatCode(ns int64) latCode {
	us := uint32(min(max((min(ns, math.MaxInt64-500)+500)/1000, 0), math.MaxInt32))
	if us < latExact {
		return latCode(us)
	}
	e := uint32(bits.Len32(us)) - 12
	m := (us + 1<<(e-1)) >> e
	if m == latExact {
		m, e = m>>1, e+1
	}
	return latCode(e<<11 + m)
}

func (c latCode) ns() int64 {
	if c < latExact {
		return int64(c) * 1000
	}
	e := uint32(c)>>11 - 1
	return int64(uint32(c)-e<<11) << e * 1000
}

func (l *latencies) add(ns int64) {
	d := toLatCode(ns)
	if l.n < latRing {
		insertSorted(l.all[:l.n+1], d)
	} else {
		replaceSorted(l.all[:], l.ring[l.n%latRing], d)
	}
	if l.n < latRecent {
		insertSorted(l.recent[:l.n+1], d)
	} else {
		replaceSorted(l.recent[:], l.ring[(l.n-latRecent)%latRing], d)
	}
	l.ring[l.n%latRing] = d
	l.n++
	l.fresh = true
}

// newestMean is the mean of the newest latNewest latencies, in ns (0
// with none): how long ours wait at the host now.
func (l *latencies) newestMean() int64 {
	k := min(l.n, latNewest)
	if k == 0 {
		return 0
	}
	var sum int64
	for i := range k {
		sum += l.ring[(l.n-1-i)%latRing].ns()
	}
	return sum / int64(k)
}

// update recomputes the statistics at t if anything was added since.
func (l *latencies) update(t int64) {
	if !l.fresh {
		return
	}
	l.fresh = false
	k := min(l.n, latRing)
	l.p95 = l.all[(k*95-1)/100]
	r := min(l.n, latRecent)
	l.med = l.recent[r/2]
	l.newest = math.MaxUint16
	for k := range min(l.n, latNewest) {
		l.newest = min(l.newest, l.ring[(l.n-1-k)%latRing])
	}
	if r < latRecent/4 {
		return // too few to call it a baseline
	}
	i := int32(t / baseSlotDur)
	s := &l.base[i%baseSlots]
	if s.idx != i || s.min <= 0 || l.med < s.min {
		// The noise is that of the answers the median came from: the
		// ring's older ones may hold a queue that is draining (or, at a
		// cold start, building), which is not noise. And noise wider than
		// the baseline itself is a queue too.
		med := l.recent[r/2]
		s.idx, s.min, s.spread = i, med, min(toLatCode(l.recent[r*3/4].ns()-l.recent[r/4].ns()), med)
	}
}

// baseline returns the least median of the last baseSlots slots at t, and
// the widest of the spreads taken with each slot's least median: the noise
// of the host at its least loaded, which a queue growing now does not widen
// (one that lasted a whole slot would). Zeros when there is none yet.
func (l *latencies) baseline(t int64) (base, spread int64) {
	cur := t / baseSlotDur
	for k := range l.base {
		s := &l.base[k]
		if idx := int64(s.idx); idx > cur-baseSlots && idx <= cur && s.min > 0 {
			if base == 0 || s.min.ns() < base {
				base = s.min.ns()
			}
			spread = max(spread, s.spread.ns())
		}
	}
	return base, min(spread, base)
}

// insertSorted puts v in order into a, sorted but for its last element,
// which is free.
func insertSorted(a []latCode, v latCode) {
	i := len(a) - 1
	for i > 0 && a[i-1] > v {
		a[i] = a[i-1]
		i--
	}
	a[i] = v
}

// replaceSorted replaces one element equal to old in the sorted a with v,
// keeping a sorted. Only the values between old and v move.
func replaceSorted(a []latCode, old, v latCode) {
	i := 0
	for a[i] != old {
		i++
	}
	for i+1 < len(a) && a[i+1] < v {
		a[i] = a[i+1]
		i++
	}
	for i > 0 && a[i-1] > v {
		a[i] = a[i-1]
		i--
	}
	a[i] = v
}
