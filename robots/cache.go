package robots

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polite-go/polite/internal/nanos"
	"golang.org/x/net/idna"
)

// Defaults for the zero fields of Cache.
const (
	DefaultTTL      = 24 * time.Hour
	DefaultErrorTTL = time.Minute
	DefaultTimeout  = time.Minute
)

// maxRedirects is how many consecutive redirects a fetch follows; RFC 9309
// §2.3.1.2 asks for at least five.
const maxRedirects = 5

// maxErrorTTL caps the growing retry interval after consecutive failures, so
// a host that comes back is noticed within the hour.
const maxErrorTTL = time.Hour

var errTooManyRedirects = errors.New("robots: more than 5 redirects")

// Cache fetches robots.txt files and keeps them per origin (scheme, host and
// port), applying the status rules of RFC 9309 §2.3.1:
//
//   - 2xx: the body (up to MaxBytes) is parsed.
//   - 4xx other than 429: there is no robots.txt; everything is allowed.
//   - 5xx, 429, a network error or more than five redirects: the file is
//     unreachable and everything is disallowed, unless an earlier good copy
//     (2xx or 4xx) is cached, which is kept. It is retried after ErrorTTL,
//     doubling with each consecutive failure up to an hour (or TTL).
//
// Redirects are followed, across hosts too, and the result counts for the
// origin first asked for (§2.3.1.2). Treating a sixth redirect as
// unreachable is stricter than the RFC's "MAY assume unavailable" (allow
// all) and than Google; a polite crawler does not guess it is welcome.
//
// Concurrent Gets for one origin share one fetch. The fetch runs detached
// from the callers' contexts (keeping their values), bounded by Timeout, so
// a caller that gives up neither cancels it for the others nor gets a
// "disallow everything" for its own impatience.
//
// The zero value is ready to use. Fields must not be changed after the first
// Get. A Cache is safe for concurrent use. A Get answered from the cache
// does not allocate for a host name in lower-case ASCII (an IP address or an
// origin over 64 bytes costs one) and takes the cache's read lock; a caller
// on a hot path keeps a Ref per host and calls GetRef, which takes no lock,
// as Transport does.
type Cache struct {
	// Client fetches robots.txt. If nil, http.DefaultClient is used. To
	// count the fetch against the host's budget, use a client whose
	// transport is the host's limiter; that transport must let requests
	// for which IsFetch reports true through without consulting this
	// Cache. Its CheckRedirect, if any, is called as well.
	Client *http.Client
	// UserAgent, if not empty, is sent as the User-Agent header.
	UserAgent string
	// TTL is how long a fetched robots.txt (2xx or 4xx) is used before it
	// is fetched again. If zero, DefaultTTL (24 h; RFC 9309 §2.4 says not
	// to use a copy longer than that) is used.
	TTL time.Duration
	// ErrorTTL is how long an unreachable result stands before the next
	// fetch. It doubles with each consecutive failure, up to an hour or
	// TTL, whichever is shorter (but never below ErrorTTL itself). If zero,
	// DefaultErrorTTL (1 min) is used.
	ErrorTTL time.Duration
	// MaxErrorTTL, if positive, caps the doubling of ErrorTTL (an hour
	// otherwise): a crawl whose URLs wait for an unreachable robots.txt
	// to come back re-fetches it at least this often.
	MaxErrorTTL time.Duration
	// Timeout bounds one fetch, redirects and body included. If zero,
	// DefaultTimeout (1 min) is used.
	Timeout time.Duration
	// MaxBytes bounds how much of the body is read and parsed. If zero,
	// MaxSize (500 KiB, the RFC 9309 §2.5 minimum) is used.
	MaxBytes int
	// Logger receives a Debug record per fetch and a Warn record per failed
	// one. If nil, nothing is logged.
	Logger *slog.Logger
	// Record, if set, is called with every robots.txt answer (the last of
	// its redirects) and the bytes of its body read (a 2xx's, up to
	// MaxBytes; none otherwise), before the Cache uses them: an archive
	// keeps robots.txt next to the pages it let through (crawl writes it to
	// its WARC files). It runs on the fetch's goroutine and must not keep
	// resp.Body.
	Record func(resp *http.Response, body []byte)
	// Shared, if set, keeps robots.txt answers for a fleet of Caches (in
	// the fleet's Redis, say): a Cache asks it before fetching and gives
	// it each answer it fetched that stands for TTL (a 2xx, or a 4xx other
	// than 429), so one worker of a fleet fetches an origin's robots.txt,
	// not each, and a server that counts robots.txt against its rate sees
	// it once. An answer taken from it is used no longer than it has left
	// (RFC 9309 §2.4: a day at most); Record is not called for it.
	Shared SharedStore

	now func() time.Time // for tests outside a synctest bubble; nil = time.Now

	// mu guards entries, calls and sweepAt. A slot's current entry is
	// read without it.
	mu      sync.RWMutex
	entries map[string]*slot // by Origin
	calls   map[string]*call // by Origin
	sweepAt int
}

// slot holds the current entry of one origin. The entry is replaced, not
// changed, so a lock-free reader sees a whole one.
type slot struct {
	cur    atomic.Pointer[entry]
	origin string // its key in Cache.entries
}

// names reports whether u is spelled as s's origin is: scheme and host as
// Origin writes them. Origin is then s.origin (it returns a spelling it
// wrote unchanged), so a Ref may answer for u without building it. Other
// spellings take the locked path.
func (s *slot) names(u *url.URL) bool {
	o, n := s.origin, len(u.Scheme)
	return len(o) == n+len("://")+len(u.Host) && o[:n] == u.Scheme && o[n:n+3] == "://" && o[n+3:] == u.Host &&
		strings.IndexByte(u.Host, '%') < 0 // a zone is written %25 in an origin
}

// SharedStore keeps robots.txt answers shared by many Caches (see
// Cache.Shared). Its errors are its own to bound and to hide: a Load that
// fails reports no answer (the Cache fetches), a Store that fails keeps
// nothing.
type SharedStore interface {
	// Load returns origin's answer (its status and, for a 2xx, its body)
	// and how much longer it stands.
	Load(ctx context.Context, origin string) (status int, body []byte, left time.Duration, ok bool)
	// Store keeps origin's answer for ttl.
	Store(ctx context.Context, origin string, status int, body []byte, ttl time.Duration)
}

// entry is the cached answer for one origin. It is immutable.
type entry struct {
	robots   *Robots
	expires  int64 // instant (see nanos.Of), by the cache's clock
	failures int32 // consecutive Unreachable fetches
}

// call is a fetch in flight; done is closed once robots and slot are set.
type call struct {
	done   chan struct{}
	robots *Robots
	slot   *slot
}

// A Ref remembers the origin a caller last asked a Cache about, so that the
// next question about it is answered without the cache's lock or map: a
// Transport keeps one per host and asks on every request. The zero Ref is
// ready to use; a Ref must be used with one Cache only. It is 8 bytes.
type Ref struct {
	s atomic.Pointer[slot]
}

type fetchKey struct{}

// IsFetch reports whether req is a robots.txt fetch made by a Cache, or a
// redirect it follows. A RoundTripper that checks every request against a
// Cache must not check these (they may still count against the host's
// rate): a fetch that waited for its own robots.txt, or for that of the
// host it is redirected to, could wait forever.
func IsFetch(req *http.Request) bool {
	return req.Context().Value(fetchKey{}) != nil
}

// Origin returns the cache key for u, "scheme://host[:port]" in lower case
// with a default port dropped, and the robots.txt URL is Origin + "/robots.txt".
// It fails for a URL that is not http or https or has no host.
func Origin(u *url.URL) (string, error) {
	var buf [64]byte
	b, err := appendOrigin(buf[:0], u)
	return string(b), err
}

// appendOrigin appends Origin(u) to dst.
func appendOrigin(dst []byte, u *url.URL) ([]byte, error) {
	var scheme string
	switch {
	case strings.EqualFold(u.Scheme, "http"):
		scheme = "http"
	case strings.EqualFold(u.Scheme, "https"):
		scheme = "https"
	default:
		return dst, fmt.Errorf("robots: unsupported scheme %q", u.Scheme)
	}
	host, port := canonicalHost(u.Hostname()), u.Port()
	if host == "" {
		return dst, fmt.Errorf("robots: no host in URL")
	}
	if strings.ContainsAny(host, "[]") {
		// Only a hand-built URL has them: url.Parse takes the brackets
		// of an IPv6 literal off.
		return dst, fmt.Errorf("robots: bracket in host %q", host)
	}
	if port == "80" && scheme == "http" || port == "443" && scheme == "https" {
		port = ""
	}
	dst = append(append(dst, scheme...), "://"...)
	v6 := strings.IndexByte(host, ':') >= 0
	if v6 {
		dst = append(dst, '[')
	}
	if i := strings.IndexByte(host, '%'); i >= 0 {
		// An IPv6 zone ("fe80::1%en0") is written %25 in a URL (RFC 6874);
		// unescaped, the robots.txt URL built on the origin would not parse.
		dst = append(append(append(dst, host[:i]...), "%25"...), host[i+1:]...)
	} else {
		dst = append(dst, host...)
	}
	if v6 {
		dst = append(dst, ']')
	}
	if port != "" {
		dst = append(append(dst, ':'), port...)
	}
	return dst, nil
}

// canonicalHost returns the one spelling of a host an origin is keyed by,
// so that robots.txt is fetched once per origin however its URLs spell it
// (issue 17, defect 12): an IP address in its canonical form (IPv4-mapped
// IPv6 as IPv4, "0:0::1" as "::1"), a name lower-cased and in its ASCII
// (punycode) form. A name IDNA rejects is kept lower-cased.
func canonicalHost(host string) string {
	// Only what may be an address is parsed as one: a failed parse
	// allocates its error, and Get should not.
	if host != "" && (host[0] >= '0' && host[0] <= '9' || strings.IndexByte(host, ':') >= 0) {
		if a, err := netip.ParseAddr(host); err == nil {
			return a.Unmap().String()
		}
	}
	host = strings.ToLower(host)
	if !isASCII(host) {
		if h, err := idna.Lookup.ToASCII(host); err == nil {
			return h
		}
	}
	return host
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// Get returns the robots.txt rules for u's origin, fetching them if they are
// not cached or have expired. A failed fetch is not an error: it yields a
// Robots whose Source is Unreachable and that disallows everything (or the
// earlier good copy). Get fails only for a URL it cannot fetch robots.txt
// for (see Origin) or when ctx is done first.
func (c *Cache) Get(ctx context.Context, u *url.URL) (*Robots, error) {
	return c.get(ctx, u, nil)
}

// GetRef is Get for a caller that keeps ref for u's host: when u is spelled
// as its origin (see Origin) and that origin is the one ref last named and
// is cached, it answers without a lock or an allocation. Otherwise it does
// what Get does and makes ref name u's origin.
func (c *Cache) GetRef(ctx context.Context, u *url.URL, ref *Ref) (*Robots, error) {
	if rb, ok := c.Cached(u, ref); ok {
		return rb, nil
	}
	return c.get(ctx, u, ref)
}

// Cached returns u's origin's robots.txt when ref points at it and it is
// fresh, without a lookup or an allocation: GetRef's fast path, for a
// caller that prepares the context of a fetch only when one may be due.
func (c *Cache) Cached(u *url.URL, ref *Ref) (*Robots, bool) {
	if s := ref.s.Load(); s != nil && s.names(u) {
		if e := s.cur.Load(); nanos.Of(c.clock()) < e.expires {
			return e.robots, true
		}
	}
	return nil, false
}

// Peek returns u's origin's robots.txt as last fetched, fresh or not,
// and false when it was never fetched (or u has no origin). It never
// fetches.
func (c *Cache) Peek(u *url.URL) (*Robots, bool) {
	var buf [64]byte
	b, err := appendOrigin(buf[:0], u)
	if err != nil {
		return nil, false
	}
	s := c.slotOf(b)
	if s == nil {
		return nil, false
	}
	e := s.cur.Load()
	if e == nil || e.robots == nil {
		return nil, false
	}
	return e.robots, true
}

// slotOf returns the slot of the origin b, nil when there is none; the
// lookup on b's bytes does not copy them.
func (c *Cache) slotOf(b []byte) *slot {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.entries[string(b)]
}

// get is Get; it points ref, if not nil, at u's origin.
func (c *Cache) get(ctx context.Context, u *url.URL, ref *Ref) (*Robots, error) {
	// The origin is built on the stack, and the map lookup on its bytes
	// does not copy them: a cached answer costs no allocation.
	var buf [64]byte
	b, err := appendOrigin(buf[:0], u)
	if err != nil {
		return nil, err
	}
	if s := c.slotOf(b); s != nil {
		if ref != nil && ref.s.Load() != s {
			ref.s.Store(s)
		}
		if e := s.cur.Load(); nanos.Of(c.clock()) < e.expires {
			return e.robots, nil
		}
	}
	key := string(b)
	c.mu.Lock()
	cl := c.calls[key]
	if cl == nil {
		if s := c.entries[key]; s != nil {
			// Fetched while the lock was not held.
			if e := s.cur.Load(); nanos.Of(c.clock()) < e.expires {
				c.mu.Unlock()
				if ref != nil {
					ref.s.Store(s)
				}
				return e.robots, nil
			}
		}
		cl = &call{done: make(chan struct{})}
		if c.calls == nil {
			c.calls = make(map[string]*call)
		}
		c.calls[key] = cl
		go c.run(context.WithoutCancel(ctx), key, cl)
	}
	c.mu.Unlock()

	select {
	case <-cl.done:
		if ref != nil {
			ref.s.Store(cl.slot)
		}
		return cl.robots, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// run fetches key's robots.txt, stores the outcome and wakes the callers.
func (c *Cache) run(ctx context.Context, key string, cl *call) {
	r, ttl := c.fetch(ctx, key)

	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock()
	s := c.entries[key]
	var prev *entry
	if s != nil {
		prev = s.cur.Load()
	}
	e := &entry{robots: r, expires: nanos.Add(nanos.Of(now), ttl)}
	if r.source == Unreachable {
		e.failures = 1
		if prev != nil {
			e.failures = prev.failures + 1
			if prev.robots.source != Unreachable {
				e.robots = prev.robots // keep the good copy
			}
		}
		wait := c.errorTTL(int(e.failures))
		e.expires = nanos.Add(nanos.Of(now), wait)
		c.log(ctx, slog.LevelWarn, "robots.txt unreachable", key, r.status,
			slog.String("reason", r.err.Error()), slog.Duration("delay", wait),
			slog.Bool("stale", e.robots != r))
	}
	if s == nil {
		s = &slot{origin: key}
		if c.entries == nil {
			c.entries = make(map[string]*slot)
		}
		c.entries[key] = s
	}
	s.cur.Store(e)
	delete(c.calls, key)
	cl.robots, cl.slot = e.robots, s
	close(cl.done)
	c.sweep(now)
}

// sweep drops entries that expired more than a TTL ago, once the map has
// doubled since the last sweep: memory stays proportional to the origins in
// use and the cost per Get stays constant. An expired entry is kept a while
// because it is the good copy a failing fetch falls back on.
func (c *Cache) sweep(now time.Time) {
	if len(c.entries) < c.sweepAt {
		return
	}
	cutoff := nanos.Add(nanos.Of(now), -c.ttl())
	for k, s := range c.entries {
		if s.cur.Load().expires < cutoff {
			delete(c.entries, k)
		}
	}
	c.sweepAt = max(2*len(c.entries), 1024)
}

// fetch gets key + "/robots.txt" (from Shared when it has it) and turns
// the outcome into a Robots, with how long it stands (ErrorTTL's doubling
// is run's).
func (c *Cache) fetch(ctx context.Context, key string) (*Robots, time.Duration) {
	ctx = context.WithValue(ctx, fetchKey{}, true)
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	if c.Shared != nil {
		if code, data, left, ok := c.Shared.Load(ctx, key); ok && stands(code) && left > 0 {
			c.log(ctx, slog.LevelDebug, "robots.txt from the shared store", key, code)
			return c.answer(code, data[:min(len(data), c.maxBytes()+1)]), min(left, c.ttl())
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, key+"/robots.txt", nil)
	if err != nil {
		return disallowAll(0, err), c.ttl()
	}
	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	resp, err := c.client().Do(req)
	if err != nil {
		return disallowAll(0, err), c.ttl()
	}
	defer resp.Body.Close()
	code := resp.StatusCode
	c.log(ctx, slog.LevelDebug, "robots.txt fetched", key, code)
	if c.Record != nil && (code < 200 || code > 299) {
		c.Record(resp, nil)
	}
	var data []byte
	if code >= 200 && code <= 299 {
		data, err = io.ReadAll(io.LimitReader(resp.Body, int64(c.maxBytes())+1))
		if err != nil {
			return disallowAll(code, fmt.Errorf("robots: reading body: %w", err)), c.ttl()
		}
		if c.Record != nil {
			c.Record(resp, data)
		}
	}
	if c.Shared != nil && stands(code) {
		c.Shared.Store(ctx, key, code, data, c.ttl())
	}
	return c.answer(code, data), c.ttl()
}

// stands reports whether an answer with this status stands for TTL (and is
// shared): a 2xx, or a 4xx other than 429.
func stands(code int) bool {
	return code >= 200 && code <= 299 || code >= 400 && code <= 499 && code != http.StatusTooManyRequests
}

// answer turns a robots.txt answer into a Robots: code, and for a 2xx the
// body read (at most maxBytes + 1 bytes).
func (c *Cache) answer(code int, data []byte) *Robots {
	switch {
	case code >= 200 && code <= 299:
		r := parse(data, c.maxBytes())
		if r.groups == nil && r.star == nil && r.sitemaps == nil {
			return shared(&emptyParsed, code, func() *Robots { return &Robots{status: code} })
		}
		r.status = code
		return r
	case code == http.StatusTooManyRequests:
		// A 4xx by number but "slow down" by meaning; Google treats it
		// as a server error too. Allowing everything would be the worst
		// answer to a host asking for less.
		return disallowAll(code, fmt.Errorf("robots: status %d", code))
	case code >= 400 && code <= 499:
		return shared(&unavailable, code, func() *Robots { return allowAll(code) })
	}
	return disallowAll(code, fmt.Errorf("robots: status %d", code))
}

// The answers that carry nothing but their status, one per status, shared by
// every origin that gives them: most hosts answer robots.txt with a 404 or
// an empty file, and a crawl of a million hosts should not hold a million
// copies of "allow everything".
var emptyParsed, unavailable [100]atomic.Pointer[Robots]

// shared returns the copy for code (in a block of 100 starting at a multiple
// of 100) in set, made by mk the first time.
func shared(set *[100]atomic.Pointer[Robots], code int, mk func() *Robots) *Robots {
	p := &set[code%100]
	if r := p.Load(); r != nil {
		return r
	}
	p.CompareAndSwap(nil, mk())
	return p.Load()
}

// client returns a copy of the configured client that stops after
// maxRedirects redirects.
func (c *Cache) client() *http.Client {
	cl := http.DefaultClient
	if c.Client != nil {
		cl = c.Client
	}
	cp := *cl
	check := cl.CheckRedirect
	cp.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > maxRedirects {
			return errTooManyRedirects
		}
		if check != nil {
			return check(req, via)
		}
		return nil
	}
	return &cp
}

func (c *Cache) log(ctx context.Context, level slog.Level, msg, key string, status int, attrs ...slog.Attr) {
	if c.Logger == nil {
		return
	}
	attrs = append([]slog.Attr{slog.String("host", key), slog.Int("status", status)}, attrs...)
	c.Logger.LogAttrs(ctx, level, msg, attrs...)
}

func (c *Cache) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

func (c *Cache) ttl() time.Duration {
	if c.TTL > 0 {
		return c.TTL
	}
	return DefaultTTL
}

// errorTTL is the wait after the n-th consecutive failure: ErrorTTL doubled
// n-1 times, capped.
func (c *Cache) errorTTL(n int) time.Duration {
	d := c.ErrorTTL
	if d <= 0 {
		d = DefaultErrorTTL
	}
	limit := max(min(maxErrorTTL, c.ttl()), d)
	if c.MaxErrorTTL > 0 {
		limit = max(min(limit, c.MaxErrorTTL), d)
	}
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

func (c *Cache) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

func (c *Cache) maxBytes() int {
	if c.MaxBytes > 0 {
		return c.MaxBytes
	}
	return MaxSize
}
