package scope

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"sync"

	"golang.org/x/net/publicsuffix"
)

// Mode is what "in scope" means relative to the seeds. The zero Mode is
// Host.
type Mode uint8

const (
	// Host takes a link whose host (host:port as normalised, so
	// "a.example" and "a.example:8080" differ, and the scheme does not
	// matter) is a seed's host. The default.
	Host Mode = iota
	// Domain takes a link whose registrable domain is a seed's: the
	// public suffix list's eTLD+1 (golang.org/x/net/publicsuffix, private
	// suffixes included, so "a.github.io" and "b.github.io" differ while
	// "a.example.co.uk" and "b.example.co.uk" share "example.co.uk"). An
	// IP address, a single-label host ("localhost") and a public suffix
	// itself are their own domain. The port does not matter.
	Domain
	// Prefix takes a link that starts with a seed's URL up to and
	// including the last '/' of its path, as wget --no-parent does:
	// "http://h/docs/a.html" takes "http://h/docs/…" but not "http://h/"
	// or "https://h/docs/".
	Prefix
	// Any takes a link on any host; depth, include, exclude, the trap
	// rules and the caller's caps still bound the crawl.
	Any
)

var modeNames = [...]string{Host: "host", Domain: "domain", Prefix: "prefix", Any: "any"}

// ParseMode parses "host", "domain", "prefix" or "any", in any case; ""
// is Host.
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return Host, nil
	}
	for m, n := range modeNames {
		if strings.EqualFold(s, n) {
			return Mode(m), nil
		}
	}
	return 0, fmt.Errorf("scope: mode %q: want host, domain, prefix or any", s)
}

// String returns "host", "domain", "prefix" or "any".
func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", m)
}

// Reason is why a link is skipped; OK ("") means it is taken. The strings
// go into reports and JSON: they are snake_case and stable.
type Reason string

// The reasons, in the order Check tries them, then those its caller
// decides.
const (
	OK          Reason = ""
	BadURL      Reason = "bad_url"       // not an absolute http(s) URL, or does not parse
	TooLong     Reason = "too_long"      // longer than Rules.MaxURLLength
	OffScope    Reason = "off_scope"     // outside the Mode's scope
	Excluded    Reason = "excluded"      // matches an Exclude regexp
	NotIncluded Reason = "not_included"  // Include given and none matches
	MaxDepth    Reason = "max_depth"     // deeper than Rules.MaxDepth
	TrapDepth   Reason = "trap_segments" // more than Rules.MaxSegments path segments (Heritrix TooManyPathSegmentsDecideRule)
	TrapRepeat  Reason = "trap_repeat"   // a path segment more than Rules.MaxRepeats times (Heritrix PathologicalPathDecideRule)
	TrapPattern Reason = "trap_pattern"  // too many URLs of one Pattern on one host; decided by the caller
	MaxPerHost  Reason = "max_per_host"  // the host's cap reached; decided by the caller
	MaxURLs     Reason = "max_urls"      // the crawl's cap reached; decided by the caller
	NoFollow    Reason = "nofollow"      // rel=nofollow or a robots meta nofollow; decided by the caller
)

// Reasons lists every Reason but OK, in a fixed order (for reports): those
// Check returns, in the order it tries them, then the caller's.
var Reasons = []Reason{BadURL, TooLong, OffScope, Excluded, NotIncluded, MaxDepth, TrapDepth, TrapRepeat,
	TrapPattern, MaxPerHost, MaxURLs, NoFollow}

// Rules say which links a crawl takes. The zero value takes every http(s)
// link on a seed's host, at any depth, within the default trap limits.
// Negative limits switch a rule off.
type Rules struct {
	// Mode is what a seed's scope is. Zero means Host.
	Mode Mode
	// Include, when not empty, takes only links whose normalised URL one
	// of them matches.
	Include []*regexp.Regexp
	// Exclude skips a link whose normalised URL one of them matches; it
	// wins over Include.
	Exclude []*regexp.Regexp
	// MaxDepth bounds the links' depth: a seed is at depth 0, a link found
	// on a page at depth d is at d+1, and a link deeper than MaxDepth is
	// skipped. Zero (or negative) means no limit.
	MaxDepth int
	// MaxSegments bounds the number of path segments, counted as the
	// '/' in the path: "/" has 1, "/a/b" 2, "/a/b/" and "/a//b" 3. Zero
	// means 32.
	MaxSegments int
	// MaxRepeats bounds how often one segment may occur in a path: each
	// non-empty segment is counted wherever it is (not only in a row), as
	// it stands in the normalised path (so case-sensitively), the last one
	// included and empty ones ignored. "/a/b/a/b/a/" has "a" three
	// times, which is more than the default. Zero means 2.
	MaxRepeats int
	// MaxURLLength bounds the normalised URL's length in bytes. Zero
	// means 2048.
	MaxURLLength int
	// Norm are the options Check and AddSeed normalise with.
	Norm NormOptions
}

// Scope decides which discovered links a crawl takes: Rules and the roots
// of the seeds (their hosts, domains or URL prefixes, by Mode). Build one
// with New and add seeds with AddSeed, or roots with AddRoot on resume.
// A Scope is safe for concurrent use: AddSeed and AddRoot may run while
// Check does.
type Scope struct {
	r                      Rules
	maxSeg, maxRep, maxLen int // resolved: <= 0 means off

	// mu guards roots and byOrigin.
	mu sync.RWMutex
	// roots holds the roots: host[:port] (Host), domain (Domain) or
	// prefix (Prefix).
	roots map[string]struct{}
	// byOrigin holds the Prefix roots by their "scheme://host/".
	byOrigin map[string][]string

	// dmu guards domains.
	dmu sync.RWMutex
	// domains caches domainOf in Domain mode, whose public suffix lookup
	// allocates; it is cleared when it reaches maxDomains hosts.
	domains map[string]string
}

// maxDomains bounds Scope.domains: a few MB of hosts at most.
const maxDomains = 1 << 16

// New returns a Scope with rules r (copied) and no roots. It panics on an
// unknown Mode, a programmer's error: ParseMode refuses those.
func New(r Rules) *Scope {
	if r.Mode > Any {
		panic(fmt.Sprintf("scope: New: unknown %v", r.Mode))
	}
	r.Include = slices.DeleteFunc(slices.Clone(r.Include), func(re *regexp.Regexp) bool { return re == nil })
	r.Exclude = slices.DeleteFunc(slices.Clone(r.Exclude), func(re *regexp.Regexp) bool { return re == nil })
	r.Norm.StripParams = slices.Clone(r.Norm.StripParams)
	return &Scope{
		r:        r,
		maxSeg:   limit(r.MaxSegments, 32),
		maxRep:   limit(r.MaxRepeats, 2),
		maxLen:   limit(r.MaxURLLength, 2048),
		roots:    map[string]struct{}{},
		byOrigin: map[string][]string{},
		domains:  map[string]string{},
	}
}

func limit(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// Mode returns the scope's Mode.
func (s *Scope) Mode() Mode { return s.r.Mode }

// AddSeed adds the root of the seed raw (normalised first) to the scope:
// its host, domain or URL prefix by Mode; in Any mode nothing. Adding a
// root twice is a no-op. The error names raw.
func (s *Scope) AddSeed(raw string) error {
	n, err := normalize(raw, &s.r.Norm)
	if err != nil {
		return fmt.Errorf("scope: seed %s: %w", quote(raw), err)
	}
	if s.r.Mode == Any {
		return nil
	}
	s.add(rootOf(s.r.Mode, n))
	return nil
}

// AddRoot adds a root as Roots returned it, to restore a scope. It fails,
// naming root, when root is not one this Mode makes: a host[:port] in
// normal form (Host), a registrable domain in normal form (Domain), a
// normalised URL without a query that ends in '/' (Prefix); Any has no
// roots.
func (s *Scope) AddRoot(root string) error {
	var want string
	var err error
	switch s.r.Mode {
	case Host:
		want, err = normalHostPort(root)
	case Domain:
		if want, err = normalHostPort(root); err == nil && want == root {
			want = domainOf(root)
		}
	case Prefix:
		if want, err = normalize(root, &NormOptions{}); err == nil {
			want = rootOf(Prefix, want)
		}
	case Any:
		err = errors.New("mode any has no roots")
	}
	switch {
	case err != nil:
		return fmt.Errorf("scope: root %s: %w", quote(root), err)
	case want != root:
		return fmt.Errorf("scope: root %s: not a root of mode %v (%q would be)", quote(root), s.r.Mode, want)
	}
	s.add(root)
	return nil
}

// normalHostPort returns the normal form of a host[:port] without a scheme:
// no port is dropped as a default.
func normalHostPort(hp string) (string, error) {
	for i := 0; i < len(hp); i++ {
		if c := hp[i]; c == '/' || c == '\\' || c == '?' || c == '#' || c == '@' {
			return "", fmt.Errorf("character %q in a host", c)
		}
	}
	var buf [64]byte
	b, err := appendAuthority(buf[:0], hp, 0)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func (s *Scope) add(root string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.roots[root]; ok {
		return
	}
	s.roots[root] = struct{}{}
	if s.r.Mode == Prefix {
		o := originOf(root)
		s.byOrigin[o] = append(s.byOrigin[o], root)
	}
}

// Roots returns the roots added, sorted: a crawl stores them and calls
// AddRoot with each on resume.
func (s *Scope) Roots() []string {
	s.mu.RLock()
	rs := make([]string, 0, len(s.roots))
	for r := range s.roots {
		rs = append(rs, r)
	}
	s.mu.RUnlock()
	slices.Sort(rs)
	return rs
}

// Check normalises raw, a link found on a page at depth depth (a seed's
// page is at depth 0), and decides whether the crawl takes it. It returns
// the normalised URL ("" when raw does not normalise) and OK or the first
// Reason that applies, tried in this order: BadURL, TooLong, OffScope,
// Excluded, NotIncluded, MaxDepth, TrapDepth, TrapRepeat. For a link
// already in normal form it allocates nothing.
func (s *Scope) Check(raw string, depth int) (norm string, why Reason) {
	norm, err := normalize(raw, &s.r.Norm)
	if err != nil {
		return "", BadURL
	}
	if s.maxLen > 0 && len(norm) > s.maxLen {
		return norm, TooLong
	}
	if !s.in(norm) {
		return norm, OffScope
	}
	for _, re := range s.r.Exclude {
		if re.MatchString(norm) {
			return norm, Excluded
		}
	}
	if len(s.r.Include) > 0 {
		found := false
		for _, re := range s.r.Include {
			if found = re.MatchString(norm); found {
				break
			}
		}
		if !found {
			return norm, NotIncluded
		}
	}
	if s.r.MaxDepth > 0 && depth >= s.r.MaxDepth {
		return norm, MaxDepth
	}
	path := pathOf(norm)
	if s.maxSeg > 0 && strings.Count(path, "/") > s.maxSeg {
		return norm, TrapDepth
	}
	if s.maxRep > 0 && repeats(path, s.maxRep) {
		return norm, TrapRepeat
	}
	return norm, OK
}

// in reports whether the normalised URL n is within a root.
func (s *Scope) in(n string) bool {
	if s.r.Mode == Any {
		return true
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	switch s.r.Mode {
	case Host:
		_, ok := s.roots[hostOf(n)]
		return ok
	case Domain:
		_, ok := s.roots[s.domainOf(hostOf(n))]
		return ok
	case Prefix:
		for _, p := range s.byOrigin[originOf(n)] {
			if strings.HasPrefix(n, p) {
				return true
			}
		}
	}
	return false
}

// rootOf returns the root of the normalised URL n in mode m.
func rootOf(m Mode, n string) string {
	switch m {
	case Domain:
		return domainOf(hostOf(n))
	case Prefix:
		p := n[:len(originOf(n))-1] + pathOf(n)
		return p[:strings.LastIndexByte(p, '/')+1]
	}
	return hostOf(n)
}

// hostOf returns the host[:port] of a normalised URL.
func hostOf(n string) string {
	o := originOf(n)
	return o[strings.Index(o, "://")+3 : len(o)-1]
}

// originOf returns a normalised URL up to and including the '/' that
// starts its path: "http://h:8080/".
func originOf(n string) string {
	i := strings.Index(n, "://") + 3
	j := strings.IndexByte(n[i:], '/')
	if j < 0 { // not normalised: no path
		return n + "/"
	}
	return n[:i+j+1]
}

// pathOf returns the path of a normalised URL.
func pathOf(n string) string {
	p := n[len(originOf(n))-1:]
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	return p
}

// domainOf is domainOf, cached.
func (s *Scope) domainOf(host string) string {
	s.dmu.RLock()
	d, ok := s.domains[host]
	s.dmu.RUnlock()
	if ok {
		return d
	}
	host = strings.Clone(host) // not a piece of the URL, which it would keep
	d = domainOf(host)
	s.dmu.Lock()
	if len(s.domains) >= maxDomains {
		clear(s.domains)
	}
	s.domains[host] = d
	s.dmu.Unlock()
	return d
}

// domainOf returns the registrable domain of a normalised host (without a
// port): its eTLD+1, or the host itself for an IP address, a single label
// or a public suffix.
func domainOf(host string) string {
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.HasSuffix(host, "]") {
		host = host[:i]
	}
	if strings.HasPrefix(host, "[") || strings.IndexByte(host, '.') < 0 {
		return host
	}
	// An IPv4 address ends in a digit; a name hardly ever does, and
	// ParseAddr's error allocates.
	if c := host[len(host)-1]; '0' <= c && c <= '9' {
		if _, err := netip.ParseAddr(host); err == nil {
			return host
		}
	}
	// publicsuffix.EffectiveTLDPlusOne, without its error's allocation.
	suffix, _ := publicsuffix.PublicSuffix(host)
	if len(host) <= len(suffix) {
		return host
	}
	i := strings.LastIndexByte(host[:len(host)-len(suffix)-1], '.')
	return host[i+1:]
}

// repeats reports whether a non-empty segment of path occurs more than max
// times.
func repeats(path string, max int) bool {
	for rest := path; rest != ""; {
		var seg string
		seg, rest = nextSegment(rest)
		if seg == "" {
			continue
		}
		n := 1
		for r := rest; r != "" && n <= max; {
			var t string
			t, r = nextSegment(r)
			if t == seg {
				n++
			}
		}
		if n > max {
			return true
		}
	}
	return false
}

// nextSegment splits the path p, which starts with '/', into its first
// segment and the rest, which starts with '/' or is empty.
func nextSegment(p string) (seg, rest string) {
	p = p[1:]
	if i := strings.IndexByte(p, '/'); i >= 0 {
		return p[:i], p[i:]
	}
	return p, ""
}
