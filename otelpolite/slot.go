package otelpolite

import (
	"math"
	"net"
	"strconv"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/polite-go/polite"
)

// A slot is one server.address value (a tracked host, or _other) and the
// attribute sets recorded with it, each made once: recording then costs no
// allocation.
type slot struct {
	name  string               // the host key (the Transport's), or _other
	addr  []attribute.KeyValue // server.address, and server.port when the key names one
	plain *opts                // server.address (and server.port) alone

	actives  [len(methods)]atomic.Pointer[opts]
	attempts [len(methods)]atomic.Pointer[[600 + len(errorTypes)]atomic.Pointer[opts]]
	reasons  [2][len(reasons) + 1]atomic.Pointer[opts] // [wait, pause][reason]
	caps     [2]atomic.Pointer[opts]
	retries  [numOutcomes + 1]atomic.Pointer[opts] // [outcome], _OTHER last

	rate, capacity atomic.Uint64 // float64 bits; capacity's sign bit: measured
}

func newSlot(name string) *slot {
	s := &slot{name: name, addr: addrAttrs(name)}
	s.plain = newOpts(s.set())
	return s
}

// addrAttrs are a host key's server.address and server.port: a key keeps a
// port that is not its scheme's default ("example.com:8080",
// "[2001:db8::1]:8443"), which the semantic conventions put in
// server.port; a key without one (the default port, a registrable domain)
// has no server.port.
func addrAttrs(key string) []attribute.KeyValue {
	if host, port, err := net.SplitHostPort(key); err == nil {
		if p, err := strconv.Atoi(port); err == nil && p > 0 && p < 1<<16 {
			return []attribute.KeyValue{attribute.String("server.address", host), attribute.Int("server.port", p)}
		}
	}
	return []attribute.KeyValue{attribute.String("server.address", key)}
}

// set returns the attribute set of the slot's address and kv.
func (s *slot) set(kv ...attribute.KeyValue) attribute.Set {
	all := make([]attribute.KeyValue, 0, len(s.addr)+len(kv))
	return attribute.NewSet(append(append(all, s.addr...), kv...)...)
}

// methods are the methods named in http.request.method; others are _OTHER.
var methods = [...]string{"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "_OTHER"}

func methodIndex(m string) int {
	switch m {
	case "GET", "":
		return 0
	case "HEAD":
		return 1
	case "POST":
		return 2
	case "PUT":
		return 3
	case "DELETE":
		return 4
	case "PATCH":
		return 5
	case "OPTIONS":
		return 6
	}
	return 7
}

// errorTypes are the error.type values (see the package doc).
var errorTypes = [...]string{"network", "timeout", "canceled", "polite", "_OTHER"}

// numOutcomes is how many polite.Outcome values are named (OK through
// Canceled); others are _OTHER.
const numOutcomes = int(polite.Canceled) + 1

// retry returns the set of polite.request.retries: the host and why the
// request was resent (the previous attempt's outcome).
//
// A retry after an ok answer is one whose reason was not told (the
// Transport never resends after one; a Try caller that does not set
// TryOptions.Prev): it is _OTHER, not "ok".
func (s *slot) retry(prev polite.Outcome) *opts {
	i := numOutcomes
	if prev > polite.OK && int(prev) < numOutcomes {
		i = int(prev)
	}
	return load(&s.retries[i], func() attribute.Set {
		name := "_OTHER"
		if i < numOutcomes {
			name = prev.String()
		}
		return s.set(attribute.String("polite.retry.reason", name))
	})
}

// reasons are the polite.Reason values recorded by name; others are
// _OTHER (the last index).
var reasons = [...]polite.Reason{polite.ReasonRate, polite.ReasonSlot, polite.ReasonCrawlDelay, polite.ReasonRetryAfter,
	polite.ReasonBackoff, polite.ReasonRateLimit, polite.ReasonBudget, polite.ReasonBreaker, polite.ReasonBlock,
	polite.ReasonAdaptive, polite.ReasonRobots, polite.ReasonAttempts, polite.ReasonStore, polite.ReasonPriority}

func reasonIndex(r polite.Reason) int {
	for i, x := range reasons {
		if x == r {
			return i
		}
	}
	return len(reasons)
}

func reasonName(i int) string {
	if i < len(reasons) {
		return string(reasons[i])
	}
	return "_OTHER"
}

// opts are an attribute set and the options that record with it, made
// once: a measurement with them allocates nothing.
type opts struct {
	set attribute.Set
	add []metric.AddOption
	rec []metric.RecordOption
	obs []metric.ObserveOption
}

func newOpts(set attribute.Set) *opts {
	o := metric.WithAttributeSet(set)
	return &opts{set: set, add: []metric.AddOption{o}, rec: []metric.RecordOption{o}, obs: []metric.ObserveOption{o}}
}

// load returns *p, making it with mk the first time.
func load(p *atomic.Pointer[opts], mk func() attribute.Set) *opts {
	if o := p.Load(); o != nil {
		return o
	}
	p.CompareAndSwap(nil, newOpts(mk()))
	return p.Load()
}

// active returns the set of http.client.active_requests.
func (s *slot) active(method string) *opts {
	i := methodIndex(method)
	return load(&s.actives[i], func() attribute.Set {
		return s.set(attribute.String("http.request.method", methods[i]))
	})
}

// attempt returns the set of http.client.request.duration: with the
// status when there was one, else with error.type errType.
func (s *slot) attempt(method string, status int, errType string) *opts {
	mi := methodIndex(method)
	tab := s.attempts[mi].Load()
	if tab == nil {
		s.attempts[mi].CompareAndSwap(nil, new([600 + len(errorTypes)]atomic.Pointer[opts]))
		tab = s.attempts[mi].Load()
	}
	i := 599 // an out-of-range status
	if status >= 0 && status < 599 {
		i = status
	}
	if errType != "" {
		i = 600 + len(errorTypes) - 1
		for k, t := range errorTypes {
			if t == errType {
				i = 600 + k
			}
		}
	}
	return load(&tab[i], func() attribute.Set {
		if i >= 600 {
			return s.set(attribute.String("http.request.method", methods[mi]), attribute.String("error.type", errorTypes[i-600]))
		}
		return s.set(attribute.String("http.request.method", methods[mi]), attribute.Int("http.response.status_code", status))
	})
}

// reason returns the set of a wait (key polite.wait.reason) or a pause
// (polite.pause.reason).
func (s *slot) reason(r polite.Reason, key string) *opts {
	kind := 0
	if key == "polite.pause.reason" {
		kind = 1
	}
	i := reasonIndex(r)
	return load(&s.reasons[kind][i], func() attribute.Set {
		return s.set(attribute.String(key, reasonName(i)))
	})
}

func (s *slot) capSet(measured bool) *opts {
	i := 0
	if measured {
		i = 1
	}
	return load(&s.caps[i], func() attribute.Set {
		return s.set(attribute.Bool("polite.capacity.measured", measured))
	})
}

// setRate keeps a host's latest rate and capacity estimate, for the
// gauges; _other keeps none.
func (s *slot) setRate(rate, capacity float64, measured bool) {
	if s.name == Other {
		return
	}
	s.rate.Store(math.Float64bits(rate))
	if capacity > 0 {
		c := capacity
		if measured {
			c = -c
		}
		s.capacity.Store(math.Float64bits(c))
	}
}

func (s *slot) rates() (rate, capacity float64, measured bool) {
	rate = math.Float64frombits(s.rate.Load())
	c := math.Float64frombits(s.capacity.Load())
	return rate, math.Abs(c), c < 0
}

// attrCache holds attribute sets of labels without a host, by their
// values: a copy-on-write map, so looking one up takes no lock and no
// allocation, and only a new combination (rare: the labels are few) copies.
type attrCache struct {
	mu sync.Mutex // serialises writers
	m  atomic.Pointer[map[cacheKey]*opts]
}

type cacheKey struct{ k1, v1, k2, v2 string }

func (c *attrCache) get(k cacheKey) *opts {
	if m := c.m.Load(); m != nil {
		if s, ok := (*m)[k]; ok {
			return s
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	next := make(map[cacheKey]*opts)
	if old != nil {
		if s, ok := (*old)[k]; ok {
			return s
		}
		for kk, v := range *old {
			next[kk] = v
		}
	}
	kv := []attribute.KeyValue{attribute.String(k.k1, k.v1)}
	if k.k2 != "" {
		kv = append(kv, attribute.String(k.k2, k.v2))
	}
	o := newOpts(attribute.NewSet(kv...))
	next[k] = o
	c.m.Store(&next)
	return o
}

func (c *attrCache) one(k, v string) *opts { return c.get(cacheKey{k1: k, v1: v}) }

func (c *attrCache) two(k1, v1, k2, v2 string) *opts {
	return c.get(cacheKey{k1, v1, k2, v2})
}

func (c *attrCache) pause(r polite.Reason, clamped bool) *opts {
	cl := "false"
	if clamped {
		cl = "true"
	}
	return c.two("polite.pause.reason", reasonName(reasonIndex(r)), "polite.pause.clamped", cl)
}
