package polite

import (
	"fmt"
	"hash/maphash"
	"math"
	"path"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/polite-go/polite/bucket"
	"github.com/polite-go/polite/inflight"
)

// Defaults for Limits fields left zero.
const (
	DefaultRate        = 2.0 // requests per second per host
	DefaultBurst       = 1
	DefaultConcurrency = 2 // requests in flight per host
	DefaultIdleTimeout = 5 * time.Minute
)

// Limits are the per-host budget: a rate, a burst and a cap on requests in
// flight. Zero fields take the registry's defaults (for a Rule) or the
// package defaults (for Registry.Limits).
type Limits struct {
	// Rate is requests per second. Zero means DefaultRate; bucket.Inf means
	// no rate limit.
	Rate float64
	// Burst is how many requests may go at once after an idle spell. Zero
	// means DefaultBurst.
	Burst int
	// Concurrency caps requests in flight to the host. Zero means
	// DefaultConcurrency; inflight.Max means no cap.
	Concurrency int
	// Smooth spaces requests evenly (burst 1) for hosts that must not see
	// bursts.
	Smooth bool
	// MaxRate is the most an adaptive rate may reach for these hosts, below
	// the Transport's Adaptive.Max: a rate the user named for a fragile
	// host is a ceiling, not a starting point. Zero means Adaptive.Max.
	MaxRate float64
}

func (l Limits) or(d Limits) Limits {
	if l.Rate == 0 {
		l.Rate = d.Rate
	}
	if l.Burst == 0 {
		l.Burst = d.Burst
	}
	if l.Concurrency == 0 {
		l.Concurrency = d.Concurrency
	}
	l.Smooth = l.Smooth || d.Smooth
	if l.MaxRate == 0 {
		l.MaxRate = d.MaxRate
	}
	return l
}

// Rule sets Limits for the hosts whose key matches Pattern: an exact key
// ("api.example.com"), a glob ("*.example.com", matched with path.Match, so
// "*" also spans dots), or "*" for every host. An exact key beats any glob;
// among globs the longest pattern wins, then the earlier rule.
type Rule struct {
	Pattern string
	Limits
}

// Host is the entry polite keeps for one destination: its key, the gate for
// its requests in flight, and the local store's state (a token bucket and
// the rest of its policy). A Host is safe for concurrent use. Get it from
// Registry.Get and give it back with Registry.Put; read its state with a
// Store's State, or Transport.Hosts.
//
// A Host is 48 bytes, and its key follows it in the same allocation (see
// newHost): with a key of up to 16 bytes that is 64, one cache line, so a
// lookup that finds the Host reads its key, its reference count and its
// bucket in one miss. The Host holds no pointer to its key, which would be a
// second, dependent miss (the key bytes could not be read before the
// pointer arrived).
type Host struct {
	bucket bucket.Bucket
	refs   atomic.Int32 // Get without Put yet; a Host with refs is never evicted; deadRefs once evicted
	meta   uint32       // the key's length (low 8 bits; longKey when kept apart) and the rule index + 1 (the rest)
	gate   inflight.Gate
	pol    atomic.Pointer[hostPolicy] // the rest of its state, once a Transport sends to the host
}

// Host.meta: the low 8 bits hold the length of a key kept right after the
// Host, or longKey for a key longer than maxInline, kept in an allocation of
// its own whose string header follows the Host instead. The bits above
// hold the rule index + 1, so 0 means the defaults; maxRules rules fit.
const (
	maxInline = 64
	longKey   = 0xff
	ruleShift = 8
	maxRules  = 1<<(32-ruleShift) - 1
)

// withKey is a Host followed by room for its key, in one allocation.
type withKey[B any] struct {
	h   Host
	buf B
}

// newHost returns a Host for a copy of key, with rule ri. A key of up to 64
// bytes is kept right after the Host, in the smallest size class that fits
// both (a 48-byte Host with a 16-byte key takes 64 bytes, with a 64-byte key
// 112): no second allocation, and a lookup's key check reads the bytes next
// to the Host. A longer key gets an allocation of its own. The copy matters:
// a key is often a substring of a request's URL, and the registry must not
// pin a whole URL for as long as the host lives.
func newHost(key string, ri int32) *Host {
	var h *Host
	switch n := len(key); {
	case n <= 16:
		h = keyed[[16]byte](key)
	case n <= 32:
		h = keyed[[32]byte](key)
	case n <= 48:
		h = keyed[[48]byte](key)
	case n <= maxInline:
		h = keyed[[maxInline]byte](key)
	default:
		w := &withKey[string]{buf: strings.Clone(key)}
		w.h.meta = longKey
		h = &w.h
	}
	h.meta |= uint32(ri+1) << ruleShift
	return h
}

func keyed[B any](key string) *Host {
	w := new(withKey[B])
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&w.buf)), unsafe.Sizeof(w.buf))
	w.h.meta = uint32(copy(buf, key)) // buf is never written again
	return &w.h
}

// tail is what follows h in its allocation: its key's bytes, or the header
// of a long key. Only a Host newHost made has one.
func (h *Host) tail() unsafe.Pointer {
	return unsafe.Add(unsafe.Pointer(h), unsafe.Sizeof(Host{}))
}

// Key returns the host's key.
func (h *Host) Key() string {
	switch n := h.meta & longKey; n {
	case 0:
		return "" // and a zero Host, made outside a Registry, has no tail to read
	case longKey:
		return *(*string)(h.tail())
	default:
		return unsafe.String((*byte)(h.tail()), n)
	}
}

// rule is the index of the host's rule, -1 for the defaults.
func (h *Host) rule() int32 { return int32(h.meta>>ruleShift) - 1 }

// AllowN reports whether n tokens can be taken from the host's bucket at
// now, and takes them if so: a Registry used on its own as a per-key rate
// limiter needs nothing more. A Transport's hosts are admitted through its
// Store instead (see Transport.Ready and Transport.State).
func (h *Host) AllowN(now time.Time, n int) bool { return h.bucket.AllowN(now, n) }

// InFlight returns the requests in flight to the host and their cap (the
// host's gate): what a Store other than the local one reports in HostState.
func (h *Host) InFlight() (n, limit int) { return h.gate.InFlight(), h.gate.Limit() }

// idleSince reports whether the host holds nothing a new Host would not: no
// request in flight or waiting, no reference, a bucket full since since, and
// nothing pending in its extended state.
func (h *Host) idleSince(since, now time.Time) bool {
	if !h.gate.Idle() || !h.bucket.Full(since) {
		return false
	}
	if p := h.pol.Load(); p != nil && !p.idle(now) {
		return false
	}
	return true
}

const shardCount = 256

type shard struct {
	mu        sync.Mutex // serializes writers of tab, and guards sweepAt
	tab       table
	sweepAt   int // sweep for idle hosts when the table holds this many
	evictions atomic.Int64
	_         [16]byte // keep neighbouring shards' locks off one cache line
}

// Registry holds per-host state, created on first touch and evicted when idle.
//
// Hosts are spread over 256 shards, each with its own lock, so lookups of
// different hosts do not contend. A host is evicted once it has been idle for
// IdleTimeout: nothing in flight, no pause pending, its bucket full. Since a
// new Host starts with a full bucket too, eviction and re-creation never grant
// a host more than one full bucket. Eviction is amortised into insertions (a
// shard sweeps when it has doubled since the last sweep): no goroutine, no
// timer, and memory stays proportional to the hosts active within
// IdleTimeout.
//
// Fields are read at first use and must not change afterwards. The zero
// Registry uses the package defaults. A Registry is safe for concurrent use.
type Registry struct {
	// Limits are the defaults for every host; zero fields take the package
	// defaults (DefaultRate, DefaultBurst, DefaultConcurrency).
	Limits Limits
	// Rules override Limits for matching hosts.
	Rules []Rule
	// IdleTimeout is how long a host must be idle before it may be evicted.
	// Zero means DefaultIdleTimeout.
	IdleTimeout time.Duration

	once    sync.Once
	seed    maphash.Seed
	shards  [shardCount]shard
	base    resolved
	rules   []resolved                 // in Rules order
	exact   map[string]int32           // exact pattern → rule index
	globs   []int32                    // glob rule indexes, most specific first
	pats    []string                   // the rules' patterns, trimmed and lower-cased
	initErr error                      // a bad pattern, reported by Check
	now     func() time.Time           // for tests; nil = time.Now
	local   atomic.Pointer[localStore] // the first local store built over the registry (see policy)
}

// resolved is a rule's Limits with defaults filled in and bucket settings
// prepared once, shared by every host the rule covers.
type resolved struct {
	limits   Limits
	settings bucket.Settings
}

func resolve(l Limits) resolved {
	burst := l.Burst
	return resolved{limits: l, settings: bucket.NewSettings(l.Rate, burst, l.Smooth).Pacing()}
}

func (r *Registry) init() {
	r.once.Do(func() {
		r.seed = maphash.MakeSeed()
		def := r.Limits.or(Limits{Rate: DefaultRate, Burst: DefaultBurst, Concurrency: DefaultConcurrency})
		r.base = resolve(def)
		r.exact = map[string]int32{}
		for i, rule := range r.Rules {
			if i >= maxRules {
				r.initErr = fmt.Errorf("polite: %d rules, more than the %d a Registry holds: the rest are ignored", len(r.Rules), maxRules)
				break
			}
			r.rules = append(r.rules, resolve(rule.Limits.or(def)))
			p := strings.ToLower(strings.TrimSpace(rule.Pattern))
			r.pats = append(r.pats, p)
			if _, err := path.Match(p, ""); err != nil {
				r.initErr = fmt.Errorf("polite: rule %d: pattern %q: %w", i, rule.Pattern, err)
				continue
			}
			if strings.ContainsAny(p, "*?[\\") {
				r.globs = append(r.globs, int32(i))
				continue
			}
			if _, dup := r.exact[p]; !dup {
				r.exact[p] = int32(i)
			}
		}
		sort.SliceStable(r.globs, func(a, b int) bool {
			return len(r.pats[r.globs[a]]) > len(r.pats[r.globs[b]])
		})
		for i := range r.shards {
			r.shards[i].sweepAt = 64
			r.shards[i].tab.hash = r.hash
		}
	})
}

// Check reports a rule whose pattern is malformed; such a rule is ignored.
func (r *Registry) Check() error {
	r.init()
	return r.initErr
}

// RuleIndex returns the index in Rules of the rule that applies to key, as
// the Registry chooses it for its hosts (an exact key, then the key without
// its port, then the longest glob, then the earlier rule), or -1 when none
// does and Limits apply. Callers that keep more per rule than Limits (the
// CLI's retries, say) look theirs up by it.
func (r *Registry) RuleIndex(key string) int {
	r.init()
	return int(r.ruleFor(key))
}

// ruleFor returns the index of the rule for key, or -1 for the defaults.
func (r *Registry) ruleFor(key string) int32 {
	if i, ok := r.exact[key]; ok {
		return i
	}
	host, _ := splitHostPort(key)
	if host != key {
		if i, ok := r.exact[host]; ok {
			return i
		}
	}
	for _, i := range r.globs {
		p := r.pats[i]
		if ok, _ := path.Match(p, key); ok {
			return i
		}
		if host != key {
			if ok, _ := path.Match(p, host); ok {
				return i
			}
		}
	}
	return -1
}

func (r *Registry) rule(i int32) *resolved {
	if i < 0 {
		return &r.base
	}
	return &r.rules[i]
}

// LimitsFor returns the limits a host with this key gets.
func (r *Registry) LimitsFor(key string) Limits {
	r.init()
	return r.rule(r.ruleFor(key)).limits
}

// RuleFor returns the pattern of the rule a host with this key gets its
// limits from, "" for the defaults.
func (r *Registry) RuleFor(key string) string {
	r.init()
	if i := r.ruleFor(key); i >= 0 {
		return r.pats[i]
	}
	return ""
}

func (r *Registry) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

// Get returns the Host for key, creating it on first touch, and holds a
// reference to it until Put: a referenced Host is never evicted. Every Get
// must be matched by exactly one Put.
func (r *Registry) Get(key string) *Host {
	h, hash, s := r.find(key)
	if h != nil {
		return h
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if h = s.tab.get(key, hash); h != nil {
		h.refs.Add(1)
		return h
	}
	if s.tab.n >= s.sweepAt {
		r.sweep(s)
		s.sweepAt = max(64, 2*s.tab.n)
	}
	ri := r.ruleFor(key)
	rs := r.rule(ri)
	h = newHost(key, ri)
	h.bucket.Init(rs.settings)
	h.gate.Init(rs.limits.Concurrency)
	h.refs.Store(1)
	s.tab.insert(h, hash)
	return h
}

func (r *Registry) hash(key string) uint64 { return maphash.String(r.seed, key) }

// find returns the Host for key holding a reference to it, or nil when the
// registry holds none; with the key's hash and shard for Get to insert.
func (r *Registry) find(key string) (*Host, uint64, *shard) {
	r.init()
	hash := r.hash(key)
	s := &r.shards[hash>>56%shardCount] // top bits pick the shard, low bits the group
	h := s.tab.get(key, hash)
	if h != nil && h.refs.Add(1) <= 0 {
		// Evicted, or being looked at by a sweep: Get asks again under
		// the lock, after the sweep.
		h.refs.Add(-1)
		h = nil
	}
	return h, hash, s
}

// deadRefs is what refs holds while a sweep looks at a host, and forever
// once it evicted it: so far below zero that no count of readers adding
// and taking back their reference brings it up to one.
const deadRefs = math.MinInt32 / 2

// Put releases the reference Get took.
func (r *Registry) Put(h *Host) {
	if h.refs.Add(-1) < 0 {
		panic("polite: Registry.Put without Get")
	}
}

// sweep evicts idle hosts from s. s.mu must be held for writing.
func (r *Registry) sweep(s *shard) {
	now := r.clock()
	idle := r.IdleTimeout
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	since := now.Add(-idle)
	s.tab.sweep(func(h *Host) bool {
		// Claim the host first, so that no Get can take it between the
		// look and the eviction: a Get racing the claim sees it dead and
		// asks again under the lock, after the sweep.
		if !h.refs.CompareAndSwap(0, deadRefs) {
			return false
		}
		if !h.idleSince(since, now) {
			h.refs.Add(-deadRefs) // readers that raced the claim keep their count
			return false
		}
		s.evictions.Add(1)
		return true
	})
}

// Sweep evicts every idle host now. Registries sweep by themselves as they
// grow; Sweep is for callers that want memory back sooner.
func (r *Registry) Sweep() {
	r.init()
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		r.sweep(s)
		s.mu.Unlock()
	}
}

// Len returns the number of hosts held.
func (r *Registry) Len() int {
	r.init()
	n := 0
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		n += s.tab.n
		s.mu.Unlock()
	}
	return n
}

// Evictions returns the number of hosts evicted so far.
func (r *Registry) Evictions() int64 {
	r.init()
	var n int64
	for i := range r.shards {
		n += r.shards[i].evictions.Load()
	}
	return n
}

// Range calls f for each host until f returns false: each host the registry
// held throughout, once. Hosts may be added or evicted meanwhile. f runs
// under no lock, and may call Get and Put.
func (r *Registry) Range(f func(h *Host) bool) {
	r.init()
	var hosts []*Host
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		hosts = hosts[:0]
		s.tab.each(func(h *Host) bool { hosts = append(hosts, h); return true })
		s.mu.Unlock()
		for _, h := range hosts {
			if !f(h) {
				return
			}
		}
	}
}
