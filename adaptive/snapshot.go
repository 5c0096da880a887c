package adaptive

import (
	"encoding"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// A snapshot is a Controller's state, so that a fleet of processes can keep
// replicas of one host's controller: each replica hears the same Observe and
// SetMax calls, and a process that joins late restores a snapshot and hears
// the rest. It is a version byte, then every field under the Controller's
// mutex in the order they are declared, fixed-width and little-endian:
// int64, float64 (IEEE 754 bits) and int as 8 bytes, int32 and float32 as
// 4, latCode as 2, phase as 1, and the bools as the bits of one uint16 (see
// fields). No reflection: the field list is fields, which both directions
// share, and TestSnapshotCoversEveryField fails on a field it leaves out.
//
// Config and the origin are not in it: they come from New, on the side that
// restores. Every other instant is nanoseconds since the origin, so a
// snapshot needs no translation between processes that made their
// Controllers with the same start.

// snapshotVersion is a snapshot's first byte. A change to the layout takes
// a new one: a snapshot is only restored by the layout that wrote it.
const snapshotVersion = 2

// snapshotSize is the length of a snapshot of version snapshotVersion.
const snapshotSize = 534

// maxAge bounds the clock a restored snapshot may carry: past about 200
// years the latency baseline's slot numbers overflow (see latencies), and
// nothing in a Controller lives a century.
const maxAge = int64(100 * 365 * 24 * time.Hour)

// maxAnswers bounds the OK answers a restored snapshot may have counted,
// far from overflow: latencies.add indexes by the count.
const maxAnswers = 1 << 62

var (
	_ encoding.BinaryMarshaler   = (*Controller)(nil)
	_ encoding.BinaryAppender    = (*Controller)(nil)
	_ encoding.BinaryUnmarshaler = (*Controller)(nil)
)

// MarshalBinary returns a snapshot of the Controller's state, for
// UnmarshalBinary to restore into another Controller. See AppendBinary.
func (c *Controller) MarshalBinary() ([]byte, error) {
	return c.AppendBinary(make([]byte, 0, snapshotSize))
}

// AppendBinary appends a snapshot of the Controller's state to b, as
// MarshalBinary returns it, and returns the extended slice; with room for
// it in b (534 bytes), it does not allocate. The error is always nil.
//
// The snapshot holds everything the Controller has learned and decided,
// but not its Config nor the instant it was made at: those come from New on
// the side that restores (see UnmarshalBinary).
func (c *Controller) AppendBinary(b []byte) ([]byte, error) {
	b = slices.Grow(b, snapshotSize)
	c.mu.Lock()
	defer c.mu.Unlock()
	s := codec{b: append(b, snapshotVersion)}
	c.fields(&s)
	return s.b, nil
}

// UnmarshalBinary replaces the Controller's state with the snapshot b,
// which MarshalBinary or AppendBinary made. It keeps the receiver's Config
// and the instant it was made at, so restore into a Controller made by New
// with the Config and the start of the one the snapshot was taken from:
//
//	c := adaptive.New(cfg, t0)
//	err := c.UnmarshalBinary(snap)
//
// A snapshot of a Controller made with another start reads every instant
// in it as shifted by the difference.
//
// The restored Controller then answers as the original would: fed the same
// calls from there on, the two return the same rates and report the same
// state at every step. That holds only when both sides' instants are equal
// as ns since their start: every now passed to either, and the start given
// to New, come from one clock and carry no monotonic reading, such as
// time.UnixMicro of a clock the fleet shares (a time.Time's Round(0)
// strips the reading). time.Now of two processes never agrees, nor does a
// time.Now start with a shared clock's instants.
//
// A snapshot that is short, too long, of another version, or whose state a
// Controller could not be in (a rate outside its Config's Min and Max or the
// ceiling, a NaN or infinite estimate, an unknown phase, latency history
// out of order) is refused with an error that says what was wrong, and the
// Controller is left as it was. UnmarshalBinary is safe to call while other
// goroutines use the Controller; they see its state before or after.
func (c *Controller) UnmarshalBinary(b []byte) error {
	if c.cfg == nil {
		return errors.New("adaptive: snapshot: restored into a Controller not made by New")
	}
	switch {
	case len(b) == 0:
		return errors.New("adaptive: snapshot: empty")
	case b[0] != snapshotVersion:
		return fmt.Errorf("adaptive: snapshot: version %d, want %d", b[0], snapshotVersion)
	case len(b) < snapshotSize:
		return fmt.Errorf("adaptive: snapshot: %d bytes, want %d (cut short)", len(b), snapshotSize)
	case len(b) > snapshotSize:
		return fmt.Errorf("adaptive: snapshot: %d bytes, want %d (%d bytes past its end)", len(b), snapshotSize, len(b)-snapshotSize)
	}
	// Read into a scratch Controller first, so that a snapshot refused
	// halfway through leaves the receiver as it was.
	var n Controller
	n.cfg = c.cfg
	s := codec{b: b[1:], dec: true}
	n.fields(&s)
	if s.err != nil {
		return s.err
	}
	if err := n.check(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fields(&codec{b: b[1:], dec: true})
	return nil
}

// fields visits every field under mu, in the order they are declared, for
// s to write or read. It is the snapshot's layout: a field added to
// Controller, rateMeter or latencies goes here too, with a new
// snapshotVersion and snapshotSize (TestSnapshotCoversEveryField fails until
// it does).
func (c *Controller) fields(s *codec) {
	s.i64(&c.last)
	s.f64(&c.ceil)
	s.f64(&c.rate)
	s.f64(&c.want)
	s.i64(&c.pubAt)
	s.f64(&c.capEst)
	s.f64(&c.capErr)

	s.i64(&c.cutAt)
	s.i64(&c.winEnd)
	s.i64(&c.firstThr)
	s.i64(&c.lastThr)
	s.i32(&c.okPost)
	s.i32(&c.thrPost)
	s.i32(&c.failPost)
	s.i32(&c.nPost)
	s.i32(&c.okAfter)
	s.i32(&c.decreases)

	s.i64(&c.okCum)
	s.i64(&c.emptyAt)
	s.i64(&c.markAt)
	s.i64(&c.markOK)
	s.i64(&c.pend.at)
	s.i64(&c.pend.due)
	s.i64(&c.mark.at)
	s.i64(&c.mark.ok)

	s.i64(&c.settleAt)
	s.i64(&c.probeWait)
	s.f64(&c.waitCap)
	s.i64(&c.probeAt)
	s.f64(&c.probeBase)
	s.f64(&c.stored)
	s.f64(&c.saved)
	s.i64(&c.pressedAt)
	s.i32(&c.probeOK)
	s.i32(&c.bareProbes)
	s.i32(&c.debt)

	s.u8((*uint8)(&c.phase))
	// The latencies' fresh flag rides with the Controller's: 11 bits of
	// one word.
	s.bools(&c.refine, &c.capLow, &c.latHold, &c.noBurst, &c.reacting,
		&c.byLatency, &c.blind, &c.falling, &c.pendOn, &c.markOn, &c.lat.fresh)

	s.i32(&c.meter.cur)
	for i := range c.meter.ok {
		s.u16(&c.meter.ok[i])
	}
	s.f32(&c.capSaved)

	l := &c.lat
	s.lats(l.ring[:])
	s.lats(l.all[:])
	s.lats(l.recent[:])
	n := int64(l.n)
	s.i64(&n)
	if s.dec {
		l.n = int(n)
	}
	s.u16((*uint16)(&l.med))
	s.u16((*uint16)(&l.newest))
	s.u16((*uint16)(&l.p95))
	for i := range l.base {
		b := &l.base[i]
		s.i32(&b.idx)
		s.u16((*uint16)(&b.min))
		s.u16((*uint16)(&b.spread))
	}
}

// check returns an error if a Controller just read from a snapshot is in a
// state no Controller of its Config could reach, one that could make it
// misbehave: an index out of its array, a NaN rate. It checks what the
// methods rely on, not every value a real history could leave (a
// snapshot's counts and instants are as its Controller had them).
func (c *Controller) check() error {
	cfg := c.cfg
	bad := func(format string, args ...any) error {
		return fmt.Errorf("adaptive: snapshot: "+format, args...)
	}
	if c.last < 0 || c.last > maxAge {
		return bad("clock at %d ns, want within [0, %d]", c.last, maxAge)
	}
	if c.phase > ramping {
		return bad("phase %d, want at most %d", c.phase, ramping)
	}
	// The rates: the ceiling is the Config's Max or less (SetMax), the
	// published and wanted rates lie between Min and the ceiling (publish,
	// SetMax). A ceiling outside the Config's bounds is a snapshot
	// restored into a Controller of another Config.
	if !(c.ceil >= cfg.Min && c.ceil <= cfg.Max) {
		return bad("ceiling %g outside the Config's [%g, %g]", c.ceil, cfg.Min, cfg.Max)
	}
	if !(c.rate >= cfg.Min && c.rate <= c.ceil) {
		return bad("rate %g outside [%g, %g]", c.rate, cfg.Min, c.ceil)
	}
	if !(c.want >= cfg.Min && c.want <= c.ceil) {
		return bad("wanted rate %g outside [%g, %g]", c.want, cfg.Min, c.ceil)
	}
	type field struct {
		name string
		v    float64
	}
	for _, f := range [...]field{{"capacity", c.capEst}, {"capacity error", c.capErr}, {"probe wait's capacity", c.waitCap}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return bad("%s %g, want a finite number", f.name, f.v)
		}
	}
	for _, f := range [...]field{{"probe base", c.probeBase}, {"saved", c.saved}, {"capacity saved", float64(c.capSaved)}} {
		if !(f.v >= 0) || math.IsInf(f.v, 1) {
			return bad("%s %g, want a finite number, 0 or more", f.name, f.v)
		}
	}
	// +Inf when a probe starts before the host's bucket was ever seen empty.
	if !(c.stored >= 0) {
		return bad("stored %g, want 0 or more", c.stored)
	}
	if (c.phase == probing || c.phase == ramping) && c.probeBase <= 0 {
		// probeRate would make a NaN of a long probe.
		return bad("%v from a capacity of %g, want one above 0", c.phase, c.probeBase)
	}
	// add indexes the slots by cur, which follows the clock.
	if cur := int64(c.meter.cur); cur < 0 || cur > c.last/slotSpan {
		return bad("rate meter at slot %d, want within [0, %d]", cur, c.last/slotSpan)
	}
	return c.lat.check(c.okCum)
}

// check returns an error unless l's arrays are what its n answers left:
// the ring holds the newest min(n, latRing), all the same in order, and
// recent the newest latRecent of them in order, the slots not yet used
// zero. add relies on it: replaceSorted looks for the value leaving.
// Every OK answer adds one, so n is okCum.
func (l *latencies) check(okCum int64) error {
	if int64(l.n) != okCum || l.n < 0 || int64(l.n) > maxAnswers {
		return fmt.Errorf("adaptive: snapshot: %d latencies for %d OK answers, want as many, within [0, %d]", l.n, okCum, maxAnswers)
	}
	k, r := min(l.n, latRing), min(l.n, latRecent)
	var sorted [latRing]latCode
	for i := range k {
		insertSorted(sorted[:i+1], l.ring[i])
	}
	if !slices.Equal(l.all[:k], sorted[:k]) || !zeros(l.ring[k:]) || !zeros(l.all[k:]) {
		return fmt.Errorf("adaptive: snapshot: latencies: the ring of %d answers and its sorted copy disagree", l.n)
	}
	for i := range r {
		insertSorted(sorted[:i+1], l.ring[(l.n-r+i)%latRing])
	}
	if !slices.Equal(l.recent[:r], sorted[:r]) || !zeros(l.recent[r:]) {
		return fmt.Errorf("adaptive: snapshot: latencies: the newest %d and their sorted copy disagree", r)
	}
	return nil
}

func zeros(a []latCode) bool {
	for _, v := range a {
		if v != 0 {
			return false
		}
	}
	return true
}

// codec writes a snapshot's fields (appending them to b) or reads them
// (from the front of b, which holds them all: UnmarshalBinary checks the
// length first). One type for both directions keeps the two in step.
type codec struct {
	b   []byte
	dec bool
	err error // reading: the first field found malformed
}

func (s *codec) u64(v uint64) {
	s.b = binary.LittleEndian.AppendUint64(s.b, v)
}

func (s *codec) next(n int) []byte {
	p := s.b[:n]
	s.b = s.b[n:]
	return p
}

func (s *codec) i64(v *int64) {
	if s.dec {
		*v = int64(binary.LittleEndian.Uint64(s.next(8)))
		return
	}
	s.u64(uint64(*v))
}

func (s *codec) f64(v *float64) {
	if s.dec {
		*v = math.Float64frombits(binary.LittleEndian.Uint64(s.next(8)))
		return
	}
	s.u64(math.Float64bits(*v))
}

func (s *codec) f32(v *float32) {
	if s.dec {
		*v = math.Float32frombits(binary.LittleEndian.Uint32(s.next(4)))
		return
	}
	s.b = binary.LittleEndian.AppendUint32(s.b, math.Float32bits(*v))
}

func (s *codec) i32(v *int32) {
	if s.dec {
		*v = int32(binary.LittleEndian.Uint32(s.next(4)))
		return
	}
	s.b = binary.LittleEndian.AppendUint32(s.b, uint32(*v))
}

func (s *codec) u16(v *uint16) {
	if s.dec {
		*v = binary.LittleEndian.Uint16(s.next(2))
		return
	}
	s.b = binary.LittleEndian.AppendUint16(s.b, *v)
}

func (s *codec) u8(v *uint8) {
	if s.dec {
		*v = s.next(1)[0]
		return
	}
	s.b = append(s.b, *v)
}

func (s *codec) lats(a []latCode) {
	for i := range a {
		s.u16((*uint16)(&a[i]))
	}
}

// bools writes or reads up to 16 flags as the bits of one uint16, the first
// the lowest; reading, a bit set past them is an error.
func (s *codec) bools(v ...*bool) {
	var w uint16
	if !s.dec {
		for i, p := range v {
			if *p {
				w |= 1 << i
			}
		}
	}
	s.u16(&w)
	if !s.dec {
		return
	}
	if w>>len(v) != 0 && s.err == nil {
		s.err = fmt.Errorf("adaptive: snapshot: flags %#04x, want none past bit %d", w, len(v)-1)
	}
	for i, p := range v {
		*p = w&(1<<i) != 0
	}
}
