package guard

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polite-go/polite"
)

// Config configures a Guard. The zero Config gives every client address
// (IPv6 grouped by /64) DefaultRate requests per second in bursts of
// DefaultBurst, kept in a Memory store, every route costing 1.
type Config struct {
	// Identity is each identity's budget; DefaultRate and DefaultBurst if
	// its Rate is zero. Tenant is each tenant's and Global everyone's; a
	// zero Rate leaves that level out. A request needs a token from every
	// level in play.
	Identity, Tenant, Global Limit
	// AdvertiseGlobal puts the global level in the RateLimit fields too;
	// by default it is not advertised (a client can do nothing about it,
	// and it tells everyone the whole service's load).
	AdvertiseGlobal bool

	// Costs maps http.ServeMux patterns ("POST /upload", "/search/",
	// "GET /items/{id}") to the tokens a matching request takes; the most
	// specific pattern wins, as in a ServeMux. Unmatched requests cost 1;
	// cost 0 lets a route through unlimited and unannounced.
	Costs map[string]int

	// Identify names the authenticated user and tenant of a request, from
	// what an authentication middleware ahead of the guard left in it. An
	// empty User means anonymous: the identity is the client's address
	// (with the Tenant, if any, still counted). Nil: everyone is
	// anonymous, unless UserHeader is set.
	Identify func(*http.Request) Who
	// UserHeader and TenantHeader name request headers an authenticating
	// proxy sets; they are read only from requests that came through a
	// TrustedProxies address.
	UserHeader, TenantHeader string

	// TrustedProxies are the addresses and CIDRs of the proxies in front
	// of the guard. Only a request whose TCP peer is one of them is read
	// for its client address, from the rightmost ProxyHeader entry that is
	// not one of them. Empty: the TCP peer is the client.
	TrustedProxies []string
	// ProxyHeader is HeaderXForwardedFor (the default) or
	// HeaderForwarded.
	ProxyHeader string
	// IPv4Prefix and IPv6Prefix group client addresses: 32 and 64 if zero
	// (one IPv6 subscriber holds at least a /64; RIPE-690 gives homes a
	// /56, businesses a /48).
	IPv4Prefix, IPv6Prefix int

	// Store keeps the buckets; a Memory store bounded at MaxKeys if nil.
	Store   Store
	MaxKeys int

	// DryRun counts, observes and logs refusals but lets every request
	// through, and sends no rate-limit fields: a shadow run of a policy.
	DryRun bool

	// CloseRefused answers every refusal (429, and 503 while the store
	// fails) with Connection: close, so a client over its budget holds no
	// idle connection open: a flood from one address cannot pile up
	// keep-alive connections until the server runs out of file
	// descriptors (issue 29). False keeps them, as net/http does.
	CloseRefused bool

	// Secret keys the partition-key hashes of the RateLimit fields. Give
	// every guard of a fleet the same one so a client sees one pk; a
	// random one per process if nil.
	Secret []byte

	// Observer receives an EventRefuse for every refusal (and dry-run
	// refusal). Logger, if set, logs each refusal at Debug; a Logger not
	// enabled at Debug logs them at Info, at most one line per warnEvery
	// (10 s), as nginx logs its refusals but without a line for each
	// request of a flood. Store failures are logged at Warn, at most one
	// line per 10 s. A line after some were left out says how many
	// (suppressed=N).
	Observer polite.Observer
	Logger   *slog.Logger
}

// Who names a request's user and tenant.
type Who struct {
	User, Tenant string
}

// Guard is rate-limit middleware: per identity, tenant and global token
// buckets, honest 429s and RateLimit fields. It is safe for concurrent use.
type Guard struct {
	levels   [NumLevels]limit
	inPlay   [NumLevels]bool // the level is configured
	advert   [NumLevels]bool // the level is advertised
	policies [1 << NumLevels]string
	prefixes [NumLevels]string // each level's RateLimit item up to r=
	trust    trust
	costs    *http.ServeMux // nil: every request costs 1
	identify func(*http.Request) Who
	user     string // canonical UserHeader
	tenant   string // canonical TenantHeader
	store    Store
	dryRun   bool
	close    bool
	bodies   [NumLevels]refusalBody
	secret   []byte
	observer polite.Observer
	logger   *slog.Logger
	pool     sync.Pool
	warns    LogThrottle // store failures' Warn lines
	refusals LogThrottle // refusals' Info lines

	refused, shadowed, tooCostly, storeErrors atomic.Int64

	refusedBy [NumLevels]atomic.Int64 // refused and shadowed, by the refusing level
}

// cost is a route's cost, registered on the cost ServeMux.
type cost int64

func (cost) ServeHTTP(http.ResponseWriter, *http.Request) {}

// New checks c and returns its Guard. Every error names the setting and
// what is wrong with it.
func New(c Config) (*Guard, error) {
	g := &Guard{identify: c.Identify, store: c.Store, dryRun: c.DryRun, close: c.CloseRefused,
		observer: c.Observer, logger: c.Logger, secret: c.Secret}
	if c.Identity.Rate == 0 {
		c.Identity.Rate = DefaultRate
		if c.Identity.Burst == 0 {
			c.Identity.Burst = DefaultBurst
		}
	}
	for i, l := range [NumLevels]Limit{c.Identity, c.Tenant, c.Global} {
		lv, err := compile(l, Level(i).String())
		if err != nil {
			return nil, err
		}
		g.levels[i], g.inPlay[i] = lv, lv.Rate > 0
	}
	for i := range g.levels {
		for j := range i {
			if g.inPlay[i] && g.inPlay[j] && g.levels[i].Name == g.levels[j].Name {
				return nil, fmt.Errorf("guard: levels %s and %s share the name %q", Level(j), Level(i), g.levels[i].Name)
			}
		}
	}
	for i := range g.levels {
		g.prefixes[i] = limitPrefix(g.levels[i].Name)
		g.bodies[i] = newRefusalBody(g.levels[i].Name)
	}
	g.advert = [NumLevels]bool{true, g.inPlay[Tenant], g.inPlay[Global] && c.AdvertiseGlobal}
	for mask := range g.policies {
		var b []byte
		for i := range g.levels {
			if mask&(1<<i) != 0 && g.advert[i] {
				if len(b) > 0 {
					b = appendSeparator(b)
				}
				b = appendPolicyItem(b, &g.levels[i])
			}
		}
		g.policies[mask] = string(b)
	}
	var err error
	if g.trust, err = newTrust(&c); err != nil {
		return nil, err
	}
	g.user, g.tenant = http.CanonicalHeaderKey(c.UserHeader), http.CanonicalHeaderKey(c.TenantHeader)
	if g.costs, err = costMux(c.Costs); err != nil {
		return nil, err
	}
	if g.store == nil {
		if c.MaxKeys < 0 {
			return nil, fmt.Errorf("guard: MaxKeys %d: must be positive (0 for the default)", c.MaxKeys)
		}
		g.store = NewMemory(MemoryOptions{MaxKeys: c.MaxKeys})
	}
	switch {
	case g.secret == nil:
		g.secret = make([]byte, 32)
		rand.Read(g.secret)
	case len(g.secret) > 64:
		sum := sha256.Sum256(g.secret) // keeps partitionKey's buffer on the stack
		g.secret = sum[:]
	}
	g.pool.New = func() any { return &scratch{body: make([]byte, 0, 512)} }
	return g, nil
}

// costMux registers each pattern with its cost. ServeMux panics on a bad
// or conflicting pattern; that becomes the error.
func costMux(costs map[string]int) (mux *http.ServeMux, err error) {
	if len(costs) == 0 {
		return nil, nil
	}
	mux = http.NewServeMux()
	for p, n := range costs {
		if n < 0 || n > maxBurst {
			return nil, fmt.Errorf("guard: Costs[%q] = %d: want 0 to %d", p, n, maxBurst)
		}
		if err := register(mux, p, cost(n)); err != nil {
			return nil, err
		}
	}
	return mux, nil
}

func register(mux *http.ServeMux, pattern string, c cost) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("guard: Costs pattern %q: %v", pattern, r)
		}
	}()
	mux.Handle(pattern, c)
	return nil
}

// Middleware is New(c) as func(http.Handler) http.Handler.
func Middleware(c Config) (func(http.Handler) http.Handler, error) {
	g, err := New(c)
	if err != nil {
		return nil, err
	}
	return g.Handler, nil
}

// Handler returns next behind the guard.
func (g *Guard) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { g.serve(w, r, next) })
}

// Stats are a Guard's counts since it was made.
type Stats struct {
	Refused     int64 // answered 429 (over budget)
	Shadowed    int64 // would have been refused, let through by DryRun
	TooCostly   int64 // cost above a level's burst: can never pass (also in Refused or Shadowed)
	StoreErrors int64 // the store failed; answered 503 (let through by DryRun)
	// RefusedBy splits Refused and Shadowed by the level that refused
	// (the one whose wait was longest, or whose burst the cost exceeds).
	RefusedBy [NumLevels]int64
}

// Stats returns the guard's counts.
func (g *Guard) Stats() Stats {
	s := Stats{Refused: g.refused.Load(), Shadowed: g.shadowed.Load(),
		TooCostly: g.tooCostly.Load(), StoreErrors: g.storeErrors.Load()}
	for i := range s.RefusedBy {
		s.RefusedBy[i] = g.refusedBy[i].Load()
	}
	return s
}

// scratch is one decision's working memory, pooled so a decision does not
// allocate.
type scratch struct {
	req  Request
	dec  Decision
	keys [NumLevels][]byte
	pk   [NumLevels][pkLen]byte
	body []byte // a refusal's body, written before s goes back
}

// routeCost returns r's cost.
func (g *Guard) routeCost(r *http.Request) int64 {
	if g.costs == nil {
		return 1
	}
	if h, _ := g.costs.Handler(r); h != nil {
		if c, ok := h.(cost); ok {
			return int64(c)
		}
	}
	return 1
}

// fill builds r's request to the store in s.
func (g *Guard) fill(r *http.Request, s *scratch, c int64) {
	var who Who
	addr, proxied, ok := g.trust.client(r)
	switch {
	case g.identify != nil:
		who = g.identify(r)
	case g.user != "" && proxied:
		who.User = r.Header.Get(g.user)
		if g.tenant != "" {
			who.Tenant = r.Header.Get(g.tenant)
		}
	}
	k := s.keys[Identity][:0]
	switch {
	case who.User != "":
		k = appendName(k, "iu", who.User)
	case ok:
		k = g.trust.appendAddrKey(append(k, "ia:"...), addr)
	default:
		k = append(k, "i?"...) // no address (a RemoteAddr that is none): one shared bucket
	}
	s.keys[Identity] = k
	s.req = Request{Cost: c, Tag: k[1:]}
	s.req.Levels[Identity] = g.bucket(Identity, k)
	if g.inPlay[Tenant] && who.Tenant != "" {
		t := appendName(s.keys[Tenant][:0], "t", who.Tenant)
		s.keys[Tenant] = t
		s.req.Tag = t[1:]
		s.req.Levels[Tenant] = g.bucket(Tenant, t)
	}
	if g.inPlay[Global] {
		s.req.Levels[Global] = g.bucket(Global, globalKey)
	}
}

var globalKey = []byte("g")

// maxName is the longest user or tenant name kept as it is in a key;
// longer ones are kept as their SHA-256, so a bucket's size stays bounded
// whatever an authentication layer hands over.
const maxName = 128

// appendName appends a user or tenant key: prefix ":" name, or prefix "#"
// and the hex SHA-256 of a long name.
func appendName(b []byte, prefix, name string) []byte {
	b = append(b, prefix...)
	if len(name) <= maxName {
		return append(append(b, ':'), name...)
	}
	sum := sha256.Sum256([]byte(name))
	return hex.AppendEncode(append(b, '#'), sum[:])
}

func (g *Guard) bucket(l Level, key []byte) Bucket {
	return Bucket{Key: key, Burst: int64(g.levels[l].Burst), Interval: time.Duration(g.levels[l].interval)}
}

// verdict is what the decision means for the answer.
type verdict struct {
	allowed bool
	binding Level // the level that refused (the longest wait)
	retry   int64 // Retry-After in seconds; -1 for none (cost above burst)
	wait    time.Duration
}

// decide runs the admission of s.req.
func (g *Guard) decide(ctx context.Context, s *scratch) (verdict, error) {
	v := verdict{binding: Identity, retry: -1}
	for i := range s.req.Levels {
		if s.req.Levels[i].Key != nil && s.req.Cost > s.req.Levels[i].Burst {
			// It can never pass: no Retry-After would be true.
			v.binding = Level(i)
			return v, nil
		}
	}
	if err := g.store.Decide(ctx, &s.req, &s.dec); err != nil {
		return v, err
	}
	if s.dec.Allowed {
		v.allowed = true
		return v, nil
	}
	var worst int64 = -1
	for i := range s.req.Levels {
		b := &s.req.Levels[i]
		if b.Key == nil {
			continue
		}
		iv := int64(s.dec.Interval[i])
		_, w, ok := gcra(int64(s.dec.Debt[i]), s.req.Cost, iv, b.Burst*iv)
		if !ok && w > worst {
			worst, v.binding = w, Level(i)
		}
	}
	v.wait = time.Duration(max(worst, 0))
	v.retry = ceilSeconds(int64(v.wait))
	return v, nil
}

// serve is the middleware.
func (g *Guard) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	c := g.routeCost(r)
	if c == 0 {
		next.ServeHTTP(w, r)
		return
	}
	s := g.pool.Get().(*scratch)
	g.fill(r, s, c)
	v, err := g.decide(r.Context(), s)
	switch {
	case err != nil && r.Context().Err() != nil:
		g.pool.Put(s) // the client went away while the store decided: no one to answer
		return
	case err != nil:
		g.storeErrors.Add(1)
		g.event(r.Context(), s, v, polite.ReasonStore, http.StatusServiceUnavailable, err)
		g.pool.Put(s)
		if g.dryRun {
			next.ServeHTTP(w, r)
			return
		}
		g.unavailable(w)
		return
	case v.allowed:
		if !g.dryRun {
			g.setFields(w.Header(), s, v)
		}
		g.pool.Put(s)
		next.ServeHTTP(w, r)
		return
	}
	if v.retry < 0 {
		g.tooCostly.Add(1)
	}
	g.refusedBy[v.binding].Add(1)
	if g.dryRun {
		g.shadowed.Add(1)
		g.event(r.Context(), s, v, polite.ReasonRate, http.StatusOK, nil)
		g.pool.Put(s)
		next.ServeHTTP(w, r)
		return
	}
	g.refused.Add(1)
	g.event(r.Context(), s, v, polite.ReasonRate, http.StatusTooManyRequests, nil)
	g.refuse(w, s, v)
	g.pool.Put(s)
}

// refuse answers 429: the RateLimit fields, Retry-After (none when the
// cost is above the burst: waiting cannot help) and a problem body naming
// the policy, in as many allocations as an admission's fields.
func (g *Guard) refuse(w http.ResponseWriter, s *scratch, v verdict) {
	var arr [512]byte
	f := g.appendFields(fieldValues{b: arr[:0]}, s, v)
	if v.retry >= 0 {
		f.b = strconv.AppendInt(f.b, v.retry, 10)
		f.end(slotRetryAfter)
	}
	s.body = s.body[:0]
	g.bodies[v.binding].append(&s.body, s.req.Cost, s.req.Levels[v.binding].Burst, v.retry)
	f.b = strconv.AppendInt(f.b, int64(len(s.body)), 10)
	f.end(slotLength)
	h := w.Header()
	f.set(h)
	g.problemHeader(h)
	w.WriteHeader(http.StatusTooManyRequests)
	w.Write(s.body)
}

// problemHeader sets the fields every problem answer of the guard shares.
func (g *Guard) problemHeader(h http.Header) {
	h["Content-Type"] = valProblem
	h["Cache-Control"] = valNoStore
	if g.close {
		h["Connection"] = valClose
	}
}

// The 503 of a failing store, whole: while the store is down every
// request gets it.
var (
	unavailableBody = appendProblem(nil, http.StatusServiceUnavailable, problemCapacity, "", "the rate-limit store is unavailable")
	unavailableLen  = []string{strconv.Itoa(len(unavailableBody))}
)

// unavailable answers 503, retry in a second.
func (g *Guard) unavailable(w http.ResponseWriter) {
	h := w.Header()
	h[fieldRetryAfter] = valOne
	h["Content-Length"] = unavailableLen
	g.problemHeader(h)
	w.WriteHeader(http.StatusServiceUnavailable)
	w.Write(unavailableBody)
}

// setFields sets the RateLimit fields and the legacy X-RateLimit fields,
// with two allocations: one string holding every value and one slice of
// them.
func (g *Guard) setFields(h http.Header, s *scratch, v verdict) {
	var arr [512]byte
	f := g.appendFields(fieldValues{b: arr[:0]}, s, v)
	f.set(h)
}

// appendFields appends the values of the RateLimit fields and the legacy
// X-RateLimit fields to f; none when no level is advertised. f goes by
// value: a store through a pointer would move its buffer, on the caller's
// stack, to the heap.
//
// The X-RateLimit fields tell one level's story in the IETF fields' terms
// (Limit is its RateLimit-Policy q, Remaining its r, Reset the Unix time of
// its t): the tightest level's (least left, then the longest to wait), on
// a refusal the refusing one's, so that they agree with Retry-After.
//
// A refusal by a level not advertised (global, by default) is told by the
// levels that are: none left until the Retry-After.
//
// A request costing more than a level's burst is refused before the store
// is asked: no level's tokens are known, and none would admit it. Its
// answer has the policies and X-RateLimit-Limit only, no RateLimit: a t=0
// there would tell a client following the draft to retry at once, for
// ever (issue 33, item 8).
func (g *Guard) appendFields(f fieldValues, s *scratch, v verdict) fieldValues {
	costly := !v.allowed && v.retry < 0
	// Refused by a level the fields do not show (the global one, unless
	// AdvertiseGlobal): the levels shown tell the refusal's story, nothing
	// to send until its Retry-After, or a client reading r and t would
	// send at once into the same refusal.
	hidden := !v.allowed && !costly && !g.advert[v.binding]
	mask := 0
	tight := -1
	var tightR, tightT int64
	for i := range s.req.Levels {
		bk := &s.req.Levels[i]
		if bk.Key == nil || !g.advert[i] {
			continue
		}
		mask |= 1 << i
		binding := !v.allowed && Level(i) == v.binding
		if costly {
			if tight < 0 || binding {
				tight = i
			}
			continue
		}
		debt, iv := int64(s.dec.Debt[i]), int64(s.dec.Interval[i])
		r, t := tokens(int(bk.Burst), debt, iv), nextToken(debt, iv)
		switch {
		case binding:
			t = v.retry
		case hidden:
			r, t = 0, max(t, v.retry)
		}
		switch {
		case binding:
			tight, tightR, tightT = i, r, t
		case tight >= 0 && !v.allowed && Level(tight) == v.binding:
		case tight < 0 || r < tightR || r == tightR && t > tightT:
			tight, tightR, tightT = i, r, t
		}
		var pk []byte
		if Level(i) != Global {
			g.partitionKey(&s.pk[i], bk.Key)
			pk = s.pk[i][:]
		}
		if mask != 1<<i {
			f.b = appendSeparator(f.b)
		}
		f.b = appendLimitItem(f.b, g.prefixes[i], r, t, pk)
	}
	if tight < 0 {
		return f
	}
	if !costly {
		f.end(slotRateLimit)
	}
	f.b = append(f.b, g.policies[mask]...)
	f.end(slotPolicy)
	f.b = strconv.AppendInt(f.b, g.levels[tight].quota, 10)
	f.end(slotXLimit)
	if costly {
		return f
	}
	f.b = strconv.AppendInt(f.b, tightR, 10)
	f.end(slotXRemaining)
	f.b = strconv.AppendInt(f.b, time.Now().Unix()+tightT, 10)
	f.end(slotXReset)
	return f
}

// partitionKey writes the pk of a level's key: the first bytes of
// SHA-256(secret ‖ key). Without the secret it cannot be reversed even
// for the small space of IPv4 addresses.
func (g *Guard) partitionKey(dst *[pkLen]byte, key []byte) {
	var buf [256]byte
	b := append(append(buf[:0], g.secret...), key...)
	sum := sha256.Sum256(b)
	copy(dst[:], sum[:pkLen])
}

// event reports a refusal (or a store failure) to the observer and logger.
// It builds nothing when neither would take it: a refusal logged at Debug
// under an Info logger costs a call to Enabled.
func (g *Guard) event(ctx context.Context, s *scratch, v verdict, why polite.Reason, status int, err error) {
	level := slog.LevelDebug
	throttle := (*LogThrottle)(nil) // nil: every line
	if err != nil {
		level, throttle = slog.LevelWarn, &g.warns
	}
	logging := g.logger != nil && g.logger.Enabled(ctx, level)
	if !logging && err == nil && g.logger != nil && g.logger.Enabled(ctx, slog.LevelInfo) {
		level, throttle, logging = slog.LevelInfo, &g.refusals, true
	}
	if g.observer == nil && !logging {
		return
	}
	now := time.Now()
	var suppressed int64
	if logging && throttle != nil {
		logging, suppressed = throttle.Allow(now)
	}
	if g.observer == nil && !logging {
		return
	}
	detail := g.levels[v.binding].Name
	if g.dryRun {
		detail += " (dry-run)"
	}
	e := polite.Event{Kind: polite.EventRefuse, Time: now, Host: string(s.keys[Identity][1:]),
		Reason: why, Delay: v.wait, Status: status, Detail: detail, Err: err}
	if g.observer != nil {
		g.observer.Observe(e)
	}
	if !logging {
		return
	}
	attrs := []slog.Attr{slog.String("identity", e.Host), slog.String("reason", string(why)),
		slog.Int("status", status), slog.String("detail", detail), slog.Int64("cost", s.req.Cost)}
	if v.retry >= 0 {
		attrs = append(attrs, slog.Duration("delay", v.wait))
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	if suppressed > 0 {
		attrs = append(attrs, slog.Int64("suppressed", suppressed))
	}
	g.logger.LogAttrs(ctx, level, "guard refuse", attrs...)
}

// warnEvery is the least time between two of the guard's Warn lines: a
// store that is down fails every request, and a flood would otherwise
// write a line for each (issue 29: 1,001 lines in 5 s at 200 req/s).
const warnEvery = 10 * time.Second

// LogThrottle lets one log line through per warnEvery (10 s) and counts
// the others, for lines a flood would repeat (a store or an upstream that
// is down fails every request). The zero value is ready; it is safe for
// concurrent use: the line that moves next by a compare-and-swap is the
// one written.
type LogThrottle struct {
	next       atomic.Int64 // Unix ns before which lines are left out
	suppressed atomic.Int64 // lines left out since the last one written
}

// Allow reports whether a line may be written at now, and how many were
// left out since the last one written.
func (t *LogThrottle) Allow(now time.Time) (bool, int64) {
	n, ns := t.next.Load(), now.UnixNano()
	if ns < n {
		t.suppressed.Add(1)
		return false, 0
	}
	// The count is taken before the line is claimed: a line left out
	// between the claim and the count was counted to the line written
	// and lost to the next (TestThrottleConcurrent: 7998 of 7999). Taken
	// first, what is left out after it is the next line's, and a claim
	// lost puts back what it took.
	c := t.suppressed.Swap(0)
	if !t.next.CompareAndSwap(n, ns+int64(warnEvery)) {
		t.suppressed.Add(c + 1)
		return false, 0
	}
	return true, c
}
