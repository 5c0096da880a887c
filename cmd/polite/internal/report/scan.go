package report

import (
	"bytes"
	"strconv"
)

// scanResult reads a results.jsonl line into r without encoding/json, for
// the lines crawl writes: a flat object of ASCII strings without escapes,
// numbers, booleans and nulls. It reports false for anything else, and the
// caller then has json.Unmarshal read the line, so a line reads the same
// either way. At 100,000 lines json.Unmarshal, which works through every
// field of a line to keep six, was 3 µs of the 115 µs `polite fetch` spent
// per URL, report included (issue 34, part 2).
func scanResult(line []byte, r *result) bool {
	s := scanner{b: line}
	if !s.byte('{') {
		return false
	}
	if s.byte('}') {
		return s.end()
	}
	for {
		key, ok := s.str()
		if !ok || !s.byte(':') {
			return false
		}
		s.ws()
		if s.i >= len(s.b) {
			return false
		}
		switch c := s.b[s.i]; {
		case c == '"':
			v, ok := s.str()
			if !ok || !r.setString(key, v) {
				return false
			}
		case c == '-' || '0' <= c && c <= '9':
			v, ok := s.num()
			if !ok || !r.setNumber(key, v) {
				return false
			}
		case bytes.HasPrefix(s.b[s.i:], []byte("null")):
			s.i += 4
			if !r.other(key) {
				return false
			}
		case bytes.HasPrefix(s.b[s.i:], []byte("true")), bytes.HasPrefix(s.b[s.i:], []byte("false")):
			s.i += len("true")
			if c == 'f' {
				s.i += len("false") - len("true")
			}
			if !r.other(key) || r.field(key) {
				return false // a boolean in a field of ours: json.Unmarshal's error
			}
		default:
			return false // an object, an array, or not JSON
		}
		if s.byte(',') {
			continue
		}
		return s.byte('}') && s.end()
	}
}

// setString sets the field key names (if one of ours) to v.
func (r *result) setString(key, v []byte) bool {
	switch string(key) {
	case "url":
		r.URL = string(v)
	case "host":
		r.Host = string(v)
	case "outcome":
		r.Outcome = string(v)
	case "error":
		r.Error = string(v)
	case "status", "attempts":
		return false
	default:
		return r.other(key)
	}
	return true
}

// setNumber sets the field key names (if one of ours) to the number v.
func (r *result) setNumber(key, v []byte) bool {
	var p *int
	switch string(key) {
	case "status":
		p = &r.Status
	case "attempts":
		p = &r.Attempts
	case "url", "host", "outcome", "error":
		return false
	default:
		return r.other(key)
	}
	n, err := strconv.Atoi(string(v)) // no allocation: the conversion does not escape
	if err != nil {
		return false // a fraction, an exponent, or too big for an int
	}
	*p = n
	return true
}

// field reports whether key is one of the fields a result keeps.
func (r *result) field(key []byte) bool {
	switch string(key) {
	case "url", "host", "outcome", "error", "status", "attempts":
		return true
	}
	return false
}

// other reports whether key is safe to skip: one of ours, or a key that
// encoding/json, which matches keys without regard to case, would not
// take for one of ours either.
func (r *result) other(key []byte) bool {
	if r.field(key) {
		return true
	}
	// Ours differ in length: one to compare with at most.
	if n := len(key); 3 <= n && n <= 8 {
		ours := [...]string{"url", "host", "error", "status", "outcome", "attempts"}
		return !bytes.EqualFold(key, []byte(ours[n-3]))
	}
	return true
}

// scanner reads a line of JSON, byte by byte.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// byte skips white space and then c, and reports whether c was there.
func (s *scanner) byte(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// end reports whether only white space is left.
func (s *scanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// str reads a string of printable ASCII without escapes and returns its
// bytes; anything else is not ok.
func (s *scanner) str() ([]byte, bool) {
	if !s.byte('"') {
		return nil, false
	}
	from := s.i
	for ; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return s.b[from : s.i-1], true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
	}
	return nil, false
}

// num reads a number as JSON writes one (RFC 8259 §6) and returns its bytes.
func (s *scanner) num() ([]byte, bool) {
	from := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case s.digits() == 0:
		return nil, false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return nil, false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return nil, false
		}
	}
	return s.b[from:s.i], true
}

// digits skips decimal digits and returns how many.
func (s *scanner) digits() int {
	from := s.i
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i - from
}
