package retry

import "math"

// A small, lenient reader for the Structured Field Values (RFC 9651) that
// the RateLimit fields use: Lists and Dictionaries of Items with Parameters.
// It keeps only what those fields need and never allocates: names and
// numbers are substrings of the input.
//
// It is more forgiving than RFC 9651, which discards a whole field on any
// error: a malformed member is skipped and the others are kept, uppercase
// keys are accepted, and integers longer than 15 digits saturate. The
// RateLimit fields are hints (draft-ietf-httpapi-ratelimit-headers §7), and a
// partial hint from a sloppy server is worth more than none.

// maxMembers bounds the members read from one field (across all its lines),
// so a hostile header cannot make matching policies quadratic in its size.
const maxMembers = 64

// Kinds of bare item.
const (
	kindNone = iota
	kindInt
	kindDecimal
	kindString
	kindToken
	kindBytes
	kindBool
)

// sfMember is one List member or Dictionary member.
type sfMember struct {
	key  string // Dictionary key; "" for a List member
	kind int    // kind of the bare item (the value, for a Dictionary member)
	text string // string content, token, or the number as written
	num  int64  // kindInt: the value, saturating at ±math.MaxInt64

	// The parameters the RateLimit fields define; -1 when absent or not a
	// non-negative Integer.
	r, t, q, w int64
	qu         string // quota unit; "" when absent
}

// sfReader reads the members of a field that may be split over several
// lines (RFC 9651 §3.1: a List or Dictionary may be).
type sfReader struct {
	lines []string
	line  int
	pos   int
	n     int // members returned so far
}

// next returns the next well-formed member; ok is false at the end.
func (rd *sfReader) next() (m sfMember, ok bool) {
	for rd.n < maxMembers && rd.line < len(rd.lines) {
		s := rd.lines[rd.line]
		if rd.pos >= len(s) {
			rd.line++
			rd.pos = 0
			continue
		}
		var good bool
		m, rd.pos, good = parseMember(s, rd.pos)
		if good {
			rd.n++
			return m, true
		}
	}
	return sfMember{}, false
}

// parseMember parses the member at s[i:] and returns the position after its
// separating comma. good is false when the member is malformed or empty; the
// position is then past the next comma outside a string.
func parseMember(s string, i int) (m sfMember, j int, good bool) {
	m = sfMember{r: -1, t: -1, q: -1, w: -1}
	i = skipOWS(s, i)
	if i >= len(s) {
		return m, i, false
	}
	var ok bool
	if isAlpha(s[i]) || s[i] == '*' {
		start := i
		for i < len(s) && isTokenChar(s[i]) {
			i++
		}
		if i < len(s) && s[i] == '=' {
			m.key = s[start:i]
			i++
			i, ok = parseBareItem(s, i, &m)
		} else {
			m.kind, m.text, ok = kindToken, s[start:i], true
		}
	} else {
		i, ok = parseBareItem(s, i, &m)
	}
	if ok {
		i, ok = parseParams(s, i, &m)
	}
	if ok {
		i = skipOWS(s, i)
		if i < len(s) && s[i] != ',' {
			ok = false
		}
	}
	if !ok {
		return m, skipMember(s, i), false
	}
	if i < len(s) {
		i++ // the comma
	}
	return m, i, true
}

// parseBareItem parses the bare item at s[i:] into m.
func parseBareItem(s string, i int, m *sfMember) (int, bool) {
	if i >= len(s) {
		return i, false
	}
	switch c := s[i]; {
	case c == '"':
		start := i + 1
		for i = start; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case '"':
				m.kind, m.text = kindString, s[start:i]
				return i + 1, true
			}
		}
		return i, false
	case c == '-' || isDigit(c):
		start := i
		neg := c == '-'
		if neg {
			i++
		}
		ds := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == ds {
			return i, false
		}
		n, _ := atoi64(s[ds:i])
		if neg {
			n = -n
		}
		m.kind, m.num = kindInt, n
		if i < len(s) && s[i] == '.' {
			i++
			fs := i
			for i < len(s) && isDigit(s[i]) {
				i++
			}
			if i == fs {
				return i, false
			}
			m.kind = kindDecimal
		}
		m.text = s[start:i]
		return i, true
	case isAlpha(c) || c == '*':
		start := i
		for i < len(s) && isTokenChar(s[i]) {
			i++
		}
		m.kind, m.text = kindToken, s[start:i]
		return i, true
	case c == ':':
		end := i + 1
		for end < len(s) && s[end] != ':' {
			end++
		}
		if end >= len(s) {
			return end, false
		}
		m.kind, m.text = kindBytes, s[i+1:end]
		return end + 1, true
	case c == '?':
		if i+1 < len(s) && (s[i+1] == '0' || s[i+1] == '1') {
			m.kind, m.text = kindBool, s[i+1:i+2]
			return i + 2, true
		}
		return i + 1, false
	}
	return i, false
}

// parseParams parses *( ";" *SP key [ "=" bare-item ] ) at s[i:] and keeps
// the parameters the RateLimit fields define.
func parseParams(s string, i int, m *sfMember) (int, bool) {
	for {
		j := skipOWS(s, i)
		if j >= len(s) || s[j] != ';' {
			return i, true
		}
		i = skipOWS(s, j+1)
		start := i
		for i < len(s) && isKeyChar(s[i]) {
			i++
		}
		if i == start {
			return i, false
		}
		key := s[start:i]
		var v sfMember
		v.kind = kindBool // a parameter without a value is true
		if i < len(s) && s[i] == '=' {
			var ok bool
			if i, ok = parseBareItem(s, i+1, &v); !ok {
				return i, false
			}
		}
		n := int64(-1)
		if v.kind == kindInt && v.num >= 0 {
			n = v.num
		}
		switch {
		case equalFold(key, "r"):
			m.r = n
		case equalFold(key, "t"):
			m.t = n
		case equalFold(key, "q"):
			m.q = n
		case equalFold(key, "w"):
			if n == 0 {
				n = -1 // a window is "non-negative, non-zero"
			}
			m.w = n
		case equalFold(key, "qu"):
			if v.kind == kindString || v.kind == kindToken {
				m.qu = v.text
			}
		}
	}
}

// skipMember returns the position just past the next comma at or after i
// that is not inside a string, or len(s).
func skipMember(s string, i int) int {
	inString := false
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case !inString && c == ',':
			return i + 1
		}
	}
	return len(s)
}

func skipOWS(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// isTokenChar reports whether c may appear in an sf-token after its first
// character: tchar (RFC 9110 §5.6.2), ":" or "/".
func isTokenChar(c byte) bool {
	if isAlpha(c) || isDigit(c) {
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~', ':', '/':
		return true
	}
	return false
}

// isKeyChar reports whether c may appear in a key (RFC 9651 §3.1.2), with
// uppercase letters tolerated.
func isKeyChar(c byte) bool {
	return isAlpha(c) || isDigit(c) || c == '_' || c == '-' || c == '.' || c == '*'
}

// equalFold is strings.EqualFold for ASCII.
func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// clampInt converts a non-negative int64 to int, saturating on 32-bit
// platforms.
func clampInt(n int64) int {
	if n > math.MaxInt {
		return math.MaxInt
	}
	return int(n)
}
