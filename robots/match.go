package robots

import (
	"slices"
	"strings"
)

// This file holds the path side of RFC 9309 §2.2.2 and §2.2.3: putting
// patterns and paths into one percent-encoded form, matching a pattern with
// '*' and '$' against a path, and picking the most specific rule of a group.

// needsEscape reports whether c is written as %XX in a normalised pattern or
// path: octets outside printable US-ASCII (RFC 9309 §2.2.2) and the ASCII
// characters RFC 3986 never allows raw in a URI, which net/url escapes when it
// builds a request target. Doing the same to patterns makes `Disallow: /a b`
// match the request for "/a%20b".
func needsEscape(c byte) bool {
	if c <= ' ' || c >= 0x7f {
		return true
	}
	switch c {
	case '"', '<', '>', '\\', '^', '`', '{', '|', '}':
		return true
	}
	return false
}

// isUnreserved reports whether c is an RFC 3986 §2.3 unreserved character,
// which is the same byte whether or not it is percent-encoded.
func isUnreserved(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

const upperhex = "0123456789ABCDEF"

// escapeAt reports whether s[i:] begins with a percent escape "%XY" and, if
// so, the octet it encodes.
func escapeAt(s string, i int) (byte, bool) {
	if s[i] != '%' || i+2 >= len(s) {
		return 0, false
	}
	hi, ok1 := unhex(s[i+1])
	lo, ok2 := unhex(s[i+2])
	if !ok1 || !ok2 {
		return 0, false
	}
	return hi<<4 | lo, true
}

// isNormal reports whether s is already in the form normalise produces, so
// the matcher can use it without copying.
func isNormal(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if needsEscape(c) {
			return false
		}
		if c != '%' {
			continue // escapeAt is not inlined; most bytes are plain
		}
		if b, ok := escapeAt(s, i); ok {
			if isUnreserved(b) || s[i+1] >= 'a' || s[i+2] >= 'a' {
				return false
			}
			i += 2
		}
	}
	return true
}

// normalise puts a pattern or a path into the single form both are compared
// in (RFC 9309 §2.2.2): escapes of unreserved characters are decoded ("%7E"
// becomes "~"), other escapes get upper-case hex ("%c3" becomes "%C3"), and
// octets that need escaping (non-ASCII, controls, space) are encoded as %XX,
// so UTF-8 text in a robots.txt matches the escaped request path. Reserved
// characters keep their form: "/" and "%2F" stay different, as they are
// different URIs. A '%' that starts no valid escape is kept as it is.
func normalise(s string) string {
	if isNormal(s) {
		return s
	}
	b := make([]byte, 0, len(s)+len(s)/2)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if e, ok := escapeAt(s, i); ok {
			if isUnreserved(e) {
				b = append(b, e)
			} else {
				b = append(b, '%', upperhex[e>>4], upperhex[e&15])
			}
			i += 2
			continue
		}
		if needsEscape(c) {
			b = append(b, '%', upperhex[c>>4], upperhex[c&15])
			continue
		}
		b = append(b, c)
	}
	return string(b)
}

// match reports whether pattern, a normalised rule value, matches path, a
// normalised path and query (RFC 9309 §2.2.3). A pattern matches a prefix of
// the path; '*' matches any run of octets; a '$' at the very end anchors the
// pattern at the end of the path ('$' elsewhere is an ordinary octet, as in
// Google's parser).
//
// With '*' as the only wildcard, placing each literal segment at its leftmost
// possible position is optimal: it leaves the most path for the segments
// after it. So no backtracking is needed and the cost is a handful of
// strings.Index calls over the path, whatever the pattern
// ("/*a*a*a*a*b" cannot blow up). It does not allocate.
func match(pattern, path string) bool {
	anchored := false
	if n := len(pattern); n > 0 && pattern[n-1] == '$' {
		anchored = true
		pattern = pattern[:n-1]
	}
	star := strings.IndexByte(pattern, '*')
	if star < 0 {
		if anchored {
			return path == pattern
		}
		return strings.HasPrefix(path, pattern)
	}
	// The first segment is anchored at the start of the path.
	if !strings.HasPrefix(path, pattern[:star]) {
		return false
	}
	path = path[star:]
	pattern = pattern[star+1:]
	for {
		star = strings.IndexByte(pattern, '*')
		if star < 0 {
			break
		}
		seg := pattern[:star]
		pattern = pattern[star+1:]
		if seg == "" {
			continue
		}
		i := strings.Index(path, seg)
		if i < 0 {
			return false
		}
		path = path[i+len(seg):]
	}
	// pattern is now the segment after the last '*'.
	if anchored {
		return strings.HasSuffix(path, pattern)
	}
	return strings.Contains(path, pattern)
}

// literalPrefix is the part of a pattern before its first wildcard: every
// path the pattern matches starts with it.
func literalPrefix(pattern string) string {
	if i := strings.IndexByte(pattern, '*'); i >= 0 {
		return pattern[:i]
	}
	return strings.TrimSuffix(pattern, "$")
}

// better reports whether rule a takes precedence over rule b (RFC 9309
// §2.2.2): the longer pattern (in octets, as normalised) is more specific; at
// equal length allow wins, "the least restrictive rule"; after that the
// earlier line, so results are deterministic.
func better(a, b Rule) bool {
	if len(a.Pattern) != len(b.Pattern) {
		return len(a.Pattern) > len(b.Pattern)
	}
	if a.Allow != b.Allow {
		return a.Allow
	}
	return a.Line < b.Line
}

// indexThreshold is the rule count from which a ruleSet builds an index;
// below it a linear scan is faster than the map lookups. A variable so tests
// can run every case through both paths.
var indexThreshold = 32

// ruleSet holds the rules of one group as written in the file, ordered by
// precedence so the first rule that matches is the one that applies.
//
// Large sets also keep an index, so that a 500 KiB robots.txt with 15,000
// rules is checked in tens of map lookups rather than 15,000 matches:
//
//   - A rule can only match paths that start with its literal prefix (the
//     part before the first '*'), so byPrefix maps each literal prefix to its
//     rules and a check looks up path[:n] for each distinct prefix length n.
//   - A prefix of "" or "/" says nothing, and rules like "/*/tag/*" or
//     "*.pdf$" would all land in one bucket that every check scans. Such a
//     rule is filed instead under a three-byte window ("gram") of its
//     literal segments, the one fewest other rules share; any path the rule
//     matches contains it. A check looks up each distinct three-byte
//     window of the path in byGram.
//
// Rules with no usable literal land in the "" or "/" prefix bucket. A
// ruleSet is immutable once built.
type ruleSet struct {
	rules    []Rule             // by precedence, see better
	lens     []int              // distinct literal prefix lengths, ascending
	byPrefix map[string][]int32 // literal prefix -> indexes into rules, ascending
	byGram   map[uint32][]int32 // 3-byte gram -> indexes into rules, ascending
}

// gramLen is the width of the byGram keys.
const gramLen = 3

func gram(s string) uint32 { return uint32(s[0])<<16 | uint32(s[1])<<8 | uint32(s[2]) }

// grams calls f with each gramLen-byte window of the literal segments of a
// pattern after its first '*'.
func grams(pattern string, f func(uint32)) {
	pattern = strings.TrimSuffix(pattern, "$")
	i := strings.IndexByte(pattern, '*')
	if i < 0 {
		return
	}
	for rest := pattern[i+1:]; rest != ""; {
		var seg string
		seg, rest, _ = strings.Cut(rest, "*")
		for j := 0; j+gramLen <= len(seg); j++ {
			f(gram(seg[j:]))
		}
	}
}

func newRuleSet(rules []Rule) *ruleSet {
	return buildRuleSet(rules, len(rules) >= indexThreshold)
}

// buildRuleSet sorts rules by precedence and, if index is set, indexes
// them.
func buildRuleSet(rules []Rule, index bool) *ruleSet {
	slices.SortStableFunc(rules, func(a, b Rule) int {
		switch {
		case better(a, b):
			return -1
		case better(b, a):
			return 1
		}
		return 0
	})
	s := &ruleSet{rules: rules}
	if !index {
		return s
	}
	// Count how many gram-filed rules each gram could serve, so each rule
	// can be filed under its rarest one: "/*/tag/123-*" under "123", not
	// under "/ta" with every other tag rule.
	freq := make(map[uint32]int)
	for _, r := range rules {
		if len(literalPrefix(r.Pattern)) <= 1 {
			grams(r.Pattern, func(g uint32) { freq[g]++ })
		}
	}
	s.byPrefix = make(map[string][]int32)
	for i, r := range rules {
		p := literalPrefix(r.Pattern)
		if len(p) <= 1 {
			best, found := uint32(0), false
			grams(r.Pattern, func(g uint32) {
				if !found || freq[g] < freq[best] {
					best, found = g, true
				}
			})
			if found {
				if s.byGram == nil {
					s.byGram = make(map[uint32][]int32)
				}
				s.byGram[best] = append(s.byGram[best], int32(i))
				continue
			}
		}
		if _, ok := s.byPrefix[p]; !ok {
			s.lens = append(s.lens, len(p))
		}
		s.byPrefix[p] = append(s.byPrefix[p], int32(i))
	}
	slices.Sort(s.lens)
	s.lens = slices.Compact(s.lens)
	return s
}

// find returns the rule of s that applies to path, a normalised path and
// query, and false if none matches.
func (s *ruleSet) find(path string) (Rule, bool) {
	if s.byPrefix == nil {
		return s.scan(path)
	}
	best := len(s.rules) // index of the best match so far; lower is better
	for _, n := range s.lens {
		if n > len(path) {
			break
		}
		best = s.first(s.byPrefix[path[:n]], path, best)
	}
	if s.byGram != nil {
		for j := 0; j+gramLen <= len(path); j++ {
			bucket := s.byGram[gram(path[j:])]
			if len(bucket) == 0 || strings.Contains(path[:j+gramLen-1], path[j:j+gramLen]) {
				continue // nothing filed here, or this window was seen before
			}
			best = s.first(bucket, path, best)
		}
	}
	if best == len(s.rules) {
		return Rule{}, false
	}
	return s.rules[best], true
}

// first returns the index of the first rule of bucket that matches path, if
// it ranks above best, and best otherwise.
func (s *ruleSet) first(bucket []int32, path string, best int) int {
	for _, i := range bucket {
		if int(i) >= best {
			break // the rest of the bucket ranks lower
		}
		if match(s.rules[i].Pattern, path) {
			return int(i)
		}
	}
	return best
}

// scan is find without the index: the first match in precedence order.
func (s *ruleSet) scan(path string) (Rule, bool) {
	for _, r := range s.rules {
		if match(r.Pattern, path) {
			return r, true
		}
	}
	return Rule{}, false
}
