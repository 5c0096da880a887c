package robots

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unsafe"
)

// MaxSize is the parse limit of RFC 9309 §2.5: Parse ignores everything after
// the last line that ends within the first MaxSize bytes (500 KiB).
const MaxSize = 500 << 10

// ErrDisallowed is the error a disallowed request wraps. Branch on it with
// errors.Is; a *DisallowedError carries the URL and the rule.
var ErrDisallowed = errors.New("robots: disallowed")

// DisallowedError reports a URL that robots.txt disallows and the rule that
// did it. It unwraps to ErrDisallowed.
type DisallowedError struct {
	// URL is the URL that was refused, as the caller chose to record it
	// (strip query strings that may hold secrets before logging).
	URL string
	// Rule is the rule that applied; see Rule.Line for implied rules.
	Rule Rule
}

func (e *DisallowedError) Error() string {
	if e.Rule.Line == 0 {
		return fmt.Sprintf("robots: %s disallowed by implied rule %q", e.URL, e.Rule)
	}
	return fmt.Sprintf("robots: %s disallowed by line %d %q", e.URL, e.Rule.Line, e.Rule)
}

// Unwrap returns ErrDisallowed.
func (e *DisallowedError) Unwrap() error { return ErrDisallowed }

// Rule is one allow or disallow line of a group.
type Rule struct {
	// Allow is true for an allow rule, false for a disallow rule.
	Allow bool
	// Pattern is the rule's path pattern in normalised form (see the
	// package documentation), which may differ in escaping from the file.
	Pattern string
	// Line is the rule's 1-based line number in the robots.txt file, or 0
	// for a rule no line wrote: the "allowed, nothing matched" of an empty
	// Rule, the always-allowed /robots.txt, or the "Disallow: /" implied by
	// an unreachable robots.txt.
	Line int
}

// String formats r as a robots.txt line, such as "Disallow: /private/".
// The zero Rule, "no rule matched", formats as "(none)".
func (r Rule) String() string {
	if r == (Rule{}) {
		return "(none)"
	}
	if r.Allow {
		return "Allow: " + r.Pattern
	}
	return "Disallow: " + r.Pattern
}

// Verdict is the outcome of a check: whether the path may be crawled and
// which rule decided it. When no rule matched, Allowed is true and Rule is
// the zero Rule.
type Verdict struct {
	Allowed bool
	Rule    Rule
}

// Source says how a Robots came to be: the three outcomes of fetching a
// robots.txt in RFC 9309 §2.3.1.
type Source uint8

const (
	// Parsed means the rules come from a robots.txt body: Parse, or a
	// fetch answered with a 2xx status.
	Parsed Source = iota
	// Unavailable means the fetch got a 4xx status (other than 429): there
	// is no robots.txt, and everything is allowed (§2.3.1.3).
	Unavailable
	// Unreachable means the fetch failed: a 5xx or 429 status, a network
	// error, more than five redirects. Everything is disallowed (§2.3.1.4)
	// until a later fetch succeeds.
	Unreachable
)

func (s Source) String() string {
	switch s {
	case Parsed:
		return "parsed"
	case Unavailable:
		return "unavailable"
	case Unreachable:
		return "unreachable"
	}
	return fmt.Sprintf("Source(%d)", uint8(s))
}

// Robots is a parsed robots.txt: its user-agent groups and sitemaps. It is
// immutable and safe for concurrent use. A nil *Robots allows everything.
type Robots struct {
	groups   map[string]*Group // lower-case product token -> merged group
	star     *Group            // the merged "*" groups, or nil
	sitemaps []string

	source Source
	status int
	err    error
}

// Group is the set of rules that applies to one user agent: every group of
// the file that names its product token, merged as RFC 9309 §2.2.1
// requires, or the merged "*" groups when none names it. It is immutable and
// safe for concurrent use. A nil *Group is "no group applies": it allows
// everything and has no delay.
type Group struct {
	agent string     // product token as first written, or "*"
	line  int        // line of the first user-agent line naming it
	parts []*ruleSet // one per group of the file naming the agent, file order
	pace
}

// pace holds a group's valid Crawl-delay and Request-rate. Where a file
// gives several (repeated lines, merged groups), the slowest is kept: the
// politer reading of a file that contradicts itself.
type pace struct {
	crawlDelay    time.Duration
	hasCrawlDelay bool
	rateN         int
	ratePer       time.Duration
	hasRate       bool
}

func (p *pace) addCrawlDelay(d time.Duration) {
	if !p.hasCrawlDelay || d > p.crawlDelay {
		p.crawlDelay, p.hasCrawlDelay = d, true
	}
}

func (p *pace) addRequestRate(n int, per time.Duration) {
	if !p.hasRate || per/time.Duration(n) > p.ratePer/time.Duration(p.rateN) {
		p.rateN, p.ratePer, p.hasRate = n, per, true
	}
}

func (p *pace) merge(q pace) {
	if q.hasCrawlDelay {
		p.addCrawlDelay(q.crawlDelay)
	}
	if q.hasRate {
		p.addRequestRate(q.rateN, q.ratePer)
	}
}

// Parse parses a robots.txt file. It never fails: lines it cannot read are
// ignored, as RFC 9309 §2.2 asks, and so is everything past MaxSize.
func Parse(data []byte) *Robots {
	return parse(data, MaxSize)
}

// rawGroup is one group as written: its user-agent lines and members.
type rawGroup struct {
	agents     []string // product tokens
	agentLines []int
	rules      []Rule
	members    bool // a member line (rule, crawl-delay, request-rate) was seen
	pace
}

type directive uint8

const (
	unknown directive = iota
	userAgent
	allow
	disallow
	sitemap
	crawlDelay
	requestRate
)

// directives maps lower-case keys to directives. RFC 9309 §2.2 names
// user-agent, allow and disallow; sitemap, crawl-delay and request-rate are
// the non-standard lines crawlers rely on. The misspellings are the ones
// Google's parser accepts (its kAllowFrequentTypos), plus obvious spellings
// of the non-standard keys; a misspelled disallow is still meant as one.
var directives = map[string]directive{
	"user-agent": userAgent, "useragent": userAgent, "user agent": userAgent,
	"allow":    allow,
	"disallow": disallow, "dissallow": disallow, "dissalow": disallow,
	"disalow": disallow, "diasllow": disallow, "disallaw": disallow,
	"sitemap": sitemap, "site-map": sitemap,
	"crawl-delay": crawlDelay, "crawldelay": crawlDelay, "crawl delay": crawlDelay,
	"crawl_delay":  crawlDelay,
	"request-rate": requestRate, "requestrate": requestRate, "request rate": requestRate,
	"request_rate": requestRate,
}

func lookupDirective(key string) directive {
	var buf [16]byte
	if len(key) > len(buf) {
		return unknown
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return directives[string(buf[:len(key)])]
}

// lowerASCII lowers A-Z only, as Group's allocation-free path does: agent
// names match case-insensitively in ASCII (RFC 9309 product tokens are
// ASCII), and Parse and Group must fold them alike.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\v' || c == '\f' }

func trimSpace(s string) string {
	for len(s) > 0 && isSpace(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isSpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

// splitLine splits a line (comment already removed, trimmed) into key and
// value. The separator is the first ':'. Like Google's parser it also takes
// "disallow /x", with whitespace instead of the colon, when the line has
// exactly two words, because the meaning is plain.
func splitLine(line string) (key, value string, ok bool) {
	if k, v, found := strings.Cut(line, ":"); found {
		return trimSpace(k), trimSpace(v), true
	}
	i := strings.IndexFunc(line, func(r rune) bool { return r < 0x80 && isSpace(byte(r)) })
	if i < 0 {
		return line, "", true // "disallow" alone: an empty value
	}
	key, value = line[:i], trimSpace(line[i:])
	if strings.ContainsAny(value, " \t\v\f") {
		return "", "", false
	}
	return key, value, true
}

// productToken returns the product token of a user-agent string, the name a
// robots.txt group is matched by (RFC 9309 §2.2.1): what comes before the
// first '/' or whitespace, so "polite/1.0 (+https://example.com/bot)" is
// "polite". The same cut is applied to the user-agent lines of the file,
// which is more lenient than the RFC's grammar: a group for "Foo Bar" or
// "foo/2.0" is obeyed by "foo", as Google does for the first.
func productToken(ua string) string {
	ua = trimSpace(ua)
	for i := 0; i < len(ua); i++ {
		if c := ua[i]; c == '/' || isSpace(c) {
			return ua[:i]
		}
	}
	return ua
}

// cutLine returns the first line of s and the rest, treating CR, LF and CRLF
// as line ends (RFC 9309 §2.2: EOL).
func cutLine(s string) (line, rest string) {
	i := strings.IndexAny(s, "\r\n")
	if i < 0 {
		return s, ""
	}
	if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
		return s[:i], s[i+2:]
	}
	return s[:i], s[i+1:]
}

// parse is Parse with a size limit.
func parse(data []byte, limit int) *Robots {
	if len(data) > limit {
		// Drop the line cut in two by the limit: half a pattern can allow
		// or disallow far more than the whole one.
		data = data[:limit]
		if i := bytes.LastIndexAny(data, "\r\n"); i >= 0 {
			data = data[:i+1]
		} else {
			data = nil
		}
	}
	text := string(data)
	// A UTF-8 byte order mark, or the start of one, is skipped (Google's
	// parser does the same); elsewhere it is junk.
	for _, bom := range []string{"\xef\xbb\xbf", "\xef\xbb", "\xef"} {
		if strings.HasPrefix(text, bom) {
			text = text[len(bom):]
			break
		}
	}

	r := &Robots{}
	var (
		groups []*rawGroup
		cur    *rawGroup
	)
	for n := 1; text != ""; n++ {
		var line string
		line, text = cutLine(text)
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		line = trimSpace(line)
		if line == "" {
			continue
		}
		key, value, ok := splitLine(line)
		if !ok {
			continue
		}
		d := lookupDirective(key)
		switch d {
		case userAgent:
			// Consecutive user-agent lines, blank lines between them
			// included, start one group; one after a member ends it.
			if cur == nil || cur.members {
				cur = &rawGroup{}
				groups = append(groups, cur)
			}
			if tok := productToken(value); tok != "" {
				cur.agents = append(cur.agents, tok)
				cur.agentLines = append(cur.agentLines, n)
			}
			continue
		case sitemap:
			// Sitemaps belong to the file, not to a group (§2.2.4).
			if value != "" {
				r.sitemaps = append(r.sitemaps, value)
			}
			continue
		case unknown:
			continue
		}
		if cur == nil {
			continue // a member line before any user-agent line
		}
		cur.members = true
		switch d {
		case allow, disallow:
			// An empty value is no rule: "Disallow:" allows everything,
			// and "Allow:" adds nothing to that.
			if value != "" {
				cur.rules = append(cur.rules, Rule{Allow: d == allow, Pattern: normalise(value), Line: n})
			}
		case crawlDelay:
			if d, ok := parseCrawlDelay(value); ok {
				cur.addCrawlDelay(d)
			}
		case requestRate:
			if k, per, ok := parseRequestRate(value); ok {
				cur.addRequestRate(k, per)
			}
		}
	}

	// Merge: every group naming a token adds its rules to that token's
	// Group (§2.2.1). A Group keeps one ruleSet per source group rather
	// than a merged copy, so a file naming thousands of agents on one big
	// group cannot make Parse copy the group thousands of times.
	for _, g := range groups {
		if len(g.agents) == 0 {
			continue
		}
		set := newRuleSet(g.rules)
		for i, tok := range g.agents {
			key := lowerASCII(tok)
			mg := r.star
			if key != "*" {
				mg = r.groups[key]
			}
			if mg == nil {
				mg = &Group{agent: tok, line: g.agentLines[i]}
				if key == "*" {
					r.star = mg
				} else {
					if r.groups == nil {
						r.groups = make(map[string]*Group)
					}
					r.groups[key] = mg
				}
			}
			if len(mg.parts) > 0 && mg.parts[len(mg.parts)-1] == set {
				continue // the same group names the agent twice
			}
			mg.parts = append(mg.parts, set)
			mg.merge(g.pace)
		}
	}
	return r
}

// allowAll is the Robots of a 4xx answer; disallowAll that of an
// unreachable robots.txt: a "*" group with a "Disallow: /" written nowhere.
func allowAll(status int) *Robots {
	return &Robots{source: Unavailable, status: status}
}

func disallowAll(status int, err error) *Robots {
	set := &ruleSet{rules: []Rule{{Pattern: "/"}}}
	return &Robots{
		star:   &Group{agent: "*", parts: []*ruleSet{set}},
		source: Unreachable,
		status: status,
		err:    err,
	}
}

// Source reports how r was obtained. It is Parsed for the result of Parse.
func (r *Robots) Source() Source {
	if r == nil {
		return Parsed
	}
	return r.source
}

// StatusCode is the HTTP status of the fetch that produced r, or 0 when
// there was none (Parse, or a fetch that got no response).
func (r *Robots) StatusCode() int {
	if r == nil {
		return 0
	}
	return r.status
}

// Err is why the fetch that produced r failed, for an Unreachable r; nil
// otherwise.
func (r *Robots) Err() error {
	if r == nil {
		return nil
	}
	return r.err
}

// Sitemaps returns the values of the file's Sitemap lines, in file order.
// They are not validated. The caller must not modify the slice.
func (r *Robots) Sitemaps() []string {
	if r == nil {
		return nil
	}
	return r.sitemaps
}

// Group returns the group that applies to userAgent: the one (merged from
// every group) whose user-agent lines name the product token of userAgent,
// compared case-insensitively; failing that the "*" group; failing that nil,
// meaning no rules apply (RFC 9309 §2.2.1). userAgent may be a full
// User-Agent header such as "polite/1.0 (+https://example.com/bot)": only its
// product token, "polite", counts.
func (r *Robots) Group(userAgent string) *Group {
	if r == nil {
		return nil
	}
	tok := productToken(userAgent)
	if tok != "" && tok != "*" && r.groups != nil {
		var buf [64]byte
		if len(tok) <= len(buf) {
			for i := 0; i < len(tok); i++ {
				c := tok[i]
				if 'A' <= c && c <= 'Z' {
					c += 'a' - 'A'
				}
				buf[i] = c
			}
			if g := r.groups[string(buf[:len(tok)])]; g != nil {
				return g
			}
		} else if g := r.groups[lowerASCII(tok)]; g != nil {
			return g
		}
	}
	return r.star
}

// Test reports whether userAgent may fetch pathAndQuery and which rule
// decided it. pathAndQuery is the request target as sent: the escaped path
// and, if any, "?" and the query (url.URL.RequestURI); a fragment is ignored
// and "" means "/". A value not starting with '/' is read as Allowed reads
// it. Test does not allocate unless the path needs normalising.
func (r *Robots) Test(userAgent, pathAndQuery string) Verdict {
	return r.Group(userAgent).Test(pathAndQuery)
}

// TestURL is Test for the request target of u, u.RequestURI(): the path and
// query a request for u sends, whatever its host. It gives the same verdict
// without building that string, so it does not allocate unless u's path
// needs escaping or normalising, or its path and query exceed 512 bytes.
func (r *Robots) TestURL(userAgent string, u *url.URL) Verdict {
	return r.Group(userAgent).testURL(u)
}

// testURL is Group.Test(u.RequestURI()), for TestURL.
func (g *Group) testURL(u *url.URL) Verdict {
	if u.Opaque != "" {
		return g.Test(u.RequestURI()) // rare; RequestURI's rules for it are its own
	}
	// From here on this is RequestURI without its concatenation.
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	if !u.ForceQuery && u.RawQuery == "" {
		return g.Test(p)
	}
	var buf [512]byte
	if len(p)+1+len(u.RawQuery) > len(buf) {
		return g.Test(p + "?" + u.RawQuery)
	}
	b := append(append(append(buf[:0], p...), '?'), u.RawQuery...)
	// Test keeps nothing of its argument (escape analysis says it does
	// not escape, and TestTestURLAllocs fails if that changes, since buf
	// would move to the heap), so a string over buf is safe here and
	// spares the Transport an allocation per request with a query.
	return g.Test(unsafe.String(&b[0], len(b)))
}

// Allowed reports whether userAgent may fetch urlOrPath, which is either an
// absolute URL ("https://example.com/a?b") or a path and query ("/a?b").
// As in Google's parser, "//host/a" and "host/a" are read as a host and the
// path "/a". The scheme and host are not checked against the host r came
// from.
func (r *Robots) Allowed(userAgent, urlOrPath string) bool {
	return r.Test(userAgent, pathOf(urlOrPath)).Allowed
}

// pathOf returns the path and query of a URL or path, "/" if it has none.
// It does the cut by hand, as Google's GetPathParamsQuery does, because
// url.Parse allocates and rejects inputs a crawler still has to judge.
func pathOf(s string) string {
	if !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") {
		// Skip "scheme://" (if the "://" comes before any path
		// character) or "//", then the authority.
		if i := strings.Index(s, "://"); i >= 0 && !strings.ContainsAny(s[:i], "/?#") {
			s = s[i+3:]
		} else {
			s = strings.TrimPrefix(s, "//")
		}
		i := strings.IndexAny(s, "/?#")
		if i < 0 {
			return "/"
		}
		s = s[i:]
	}
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s = s[:i]
	}
	switch {
	case s == "":
		return "/"
	case s[0] == '?':
		return "/" + s
	}
	return s
}

// robotsTxt is the rule behind "/robots.txt is implicitly allowed" (RFC
// 9309 §2.2.2).
var robotsTxt = Rule{Allow: true, Pattern: "/robots.txt"}

// Agent returns the product token the group was found by, as first written
// in the file, or "*" for the catch-all group. It is "" for a nil Group.
func (g *Group) Agent() string {
	if g == nil {
		return ""
	}
	return g.agent
}

// Line returns the line of the first user-agent line naming the group's
// agent, or 0 for a nil Group or one no line wrote.
func (g *Group) Line() int {
	if g == nil {
		return 0
	}
	return g.line
}

// Rules returns the group's rules in file order (merged groups
// interleaved by line). It allocates; Test does not need it.
func (g *Group) Rules() []Rule {
	if g == nil {
		return nil
	}
	var rules []Rule
	for _, p := range g.parts {
		rules = append(rules, p.rules...)
	}
	slices.SortFunc(rules, func(a, b Rule) int { return a.Line - b.Line })
	return rules
}

// Test reports whether the group allows pathAndQuery (see Robots.Test) and
// by which rule: the matching rule with the longest pattern, allow winning a
// tie (RFC 9309 §2.2.2). No matching rule means allowed, and /robots.txt is
// always allowed.
func (g *Group) Test(pathAndQuery string) Verdict {
	// Keep nothing of pathAndQuery past the call: testURL passes a string
	// over a stack buffer.
	p := pathAndQuery
	if !strings.HasPrefix(p, "/") {
		// An absolute URL passed by mistake must not be read as a path
		// that no rule matches; "" and "*" mean "/".
		p = pathOf(p)
	}
	if i := strings.IndexByte(p, '#'); i >= 0 {
		p = p[:i]
	}
	p = normalise(p)
	if p == "/robots.txt" || strings.HasPrefix(p, "/robots.txt?") {
		return Verdict{Allowed: true, Rule: robotsTxt}
	}
	if g == nil {
		return Verdict{Allowed: true}
	}
	var (
		best  Rule
		found bool
	)
	for _, set := range g.parts {
		if r, ok := set.find(p); ok && (!found || better(r, best)) {
			best, found = r, true
		}
	}
	if !found {
		return Verdict{Allowed: true}
	}
	return Verdict{Allowed: best.Allow, Rule: best}
}
