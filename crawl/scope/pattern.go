package scope

import "strings"

// FNV-1a, 64 bits (hash/fnv's, inline so that Pattern does not allocate).
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// placeholder is what a number or an id hashes as: a byte no normalised
// URL holds.
const placeholder = 0

// Pattern returns a 64-bit hash of the shape of the normalised URL norm,
// for a crawl to count URLs per pattern per host and stop taking links of a
// pattern past a cap (TrapPattern): the defence against calendars, faceted
// search and other infinite spaces that the per-URL trap rules miss.
//
// The shape is the host[:port] as it stands, then the path, then '?' and
// the query's parameter names each followed by '&' (values are left out).
// In the path and names every token, a run of ASCII letters, digits and
// '-', becomes one placeholder when it looks like an id: only hex digits
// and '-', at least 8 hex digits, at least one decimal digit
// ("550e8400-e29b-41d4-a716-446655440000", "2026-12-03", "0a1b2c3d").
// In other tokens each run of decimal digits becomes one placeholder. So
// "/cal/2026/12?day=3" and "/cal/2027/01?day=15" share a pattern, as do
// "/s/8f14e45fceea167a/p" and "/s/c9f0f895fb98ab91/p"; "/item-7" and
// "/item-12" share one too, and "/items" is another.
//
// The hash is FNV-1a 64 over the shape's bytes, the placeholder hashed as a
// zero byte. It is stable across processes and versions (a test pins its
// values), as crawls store it. Pattern does not allocate. Given a string
// that is not a normalised URL it returns a hash all the same.
func Pattern(norm string) uint64 {
	h := uint64(fnvOffset)
	s := norm
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s = s[:i]
	}
	end := strings.IndexAny(s, "/?")
	if end < 0 {
		end = len(s)
	}
	for i := 0; i < end; i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	path, query, hasQuery := strings.Cut(s[end:], "?")
	h = shape(h, path)
	if !hasQuery {
		return h
	}
	h = (h ^ '?') * fnvPrime
	for query != "" {
		var p string
		p, query, _ = strings.Cut(query, "&")
		name, _, _ := strings.Cut(p, "=")
		h = shape(h, name)
		h = (h ^ '&') * fnvPrime
	}
	return h
}

// shape hashes s into h with its ids and numbers replaced by placeholders.
func shape(h uint64, s string) uint64 {
	for i := 0; i < len(s); {
		if !isWord(s[i]) {
			h = (h ^ uint64(s[i])) * fnvPrime
			i++
			continue
		}
		j := i
		for j < len(s) && isWord(s[j]) {
			j++
		}
		if tok := s[i:j]; isID(tok) {
			h = (h ^ placeholder) * fnvPrime
		} else {
			for k := 0; k < len(tok); {
				if isDigit(tok[k]) {
					for k < len(tok) && isDigit(tok[k]) {
						k++
					}
					h = (h ^ placeholder) * fnvPrime
					continue
				}
				h = (h ^ uint64(tok[k])) * fnvPrime
				k++
			}
		}
		i = j
	}
	return h
}

func isWord(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isID reports whether tok looks like an id: hex digits and '-' only, at
// least 8 hex digits, at least one of them decimal.
func isID(tok string) bool {
	hex, dec := 0, false
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		switch {
		case c == '-':
		case isDigit(c):
			hex++
			dec = true
		case class[c]&cHex != 0:
			hex++
		default:
			return false
		}
	}
	return hex >= 8 && dec
}
