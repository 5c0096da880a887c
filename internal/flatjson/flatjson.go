// Package flatjson reads a line of JSON that is a flat object of plain
// values, the lines polite's own logs hold (results.jsonl, events.jsonl),
// without encoding/json's reflection: at 100,000 lines a report read with
// json.Unmarshal cost some 5 µs a URL of a fetch's CPU (issue 34, part 2).
//
// It takes only what it can read the way json.Unmarshal reads it: strings
// of printable ASCII without escapes, lower-case keys (json.Unmarshal
// matches keys to fields without regard to case), numbers, true, false and
// null. For anything else Scan reports false, and the caller reads the line
// with json.Unmarshal, so that a line reads the same either way.
package flatjson

// Kind is the kind of a value.
type Kind uint8

// Kinds of values.
const (
	String Kind = iota + 1 // the value is its bytes, quotes left out
	Number                 // as RFC 8259 §6 writes one
	True
	False
	Null
)

// Scan calls fn with each member of the object line holds, in order: its
// key, its value's kind and its bytes. It reports whether line is such an
// object, white space around it allowed, and fn took every member (fn
// returns false for a value it cannot take).
func Scan(line []byte, fn func(key []byte, k Kind, v []byte) bool) bool {
	s := scanner{b: line}
	if !s.byte('{') {
		return false
	}
	if s.byte('}') {
		return s.end()
	}
	for {
		key, ok := s.str()
		if !ok || !lower(key) || !s.byte(':') {
			return false
		}
		s.ws()
		if s.i >= len(s.b) {
			return false
		}
		var k Kind
		var v []byte
		switch c := s.b[s.i]; {
		case c == '"':
			k = String
			if v, ok = s.str(); !ok {
				return false
			}
		case c == '-' || '0' <= c && c <= '9':
			k = Number
			if v, ok = s.num(); !ok {
				return false
			}
		default:
			for _, w := range [...]struct {
				k    Kind
				word string
			}{{True, "true"}, {False, "false"}, {Null, "null"}} {
				if len(s.b)-s.i >= len(w.word) && string(s.b[s.i:s.i+len(w.word)]) == w.word {
					k, v = w.k, s.b[s.i:s.i+len(w.word)]
					s.i += len(w.word)
					break
				}
			}
			if k == 0 {
				return false // an object, an array, or not JSON
			}
		}
		if !fn(key, k, v) {
			return false
		}
		if s.byte(',') {
			continue
		}
		return s.byte('}') && s.end()
	}
}

// lower reports whether key has no upper-case letter.
func lower(key []byte) bool {
	for _, c := range key {
		if 'A' <= c && c <= 'Z' {
			return false
		}
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
