package retry

import (
	"math"
	"net/http"
	"time"
)

// maxDuration is the largest time.Duration. Delays too long to represent
// clamp to it instead of wrapping around to a negative number.
const maxDuration = time.Duration(math.MaxInt64)

// maxSeconds is the largest whole number of seconds a time.Duration holds.
const maxSeconds = int64(maxDuration / time.Second)

// ParseAfter reads the Retry-After field of a response (RFC 9110 §10.2.3)
// and returns how long to wait, measured from now.
//
// Both forms are understood: delay-seconds (1*DIGIT; values beyond the range
// of time.Duration, about 292 years, clamp to the largest Duration) and an
// HTTP-date in any of the three formats RFC 9110 §5.6.7 allows. An HTTP-date
// is measured against the response's own Date field when that parses, because
// the server's clock set both and the client's may be skewed; otherwise
// against now. A date in the past yields 0 with ok true: the server says
// "now".
//
// ok is false when the field is absent, empty or garbage (a signed number,
// "-5" as much as "+5", is not delay-seconds), or when it appears
// more than once with values that disagree; the caller then falls back to its
// own backoff. The returned delay is never negative.
//
// The delay-seconds path does not allocate.
func ParseAfter(h http.Header, now time.Time) (d time.Duration, ok bool) {
	// Direct map access: the keys are canonical, and this skips the
	// canonicalisation http.Header.Get does.
	vs := h["Retry-After"]
	if len(vs) == 0 {
		return 0, false
	}
	date := responseDate(h) // for the HTTP-date form
	for i, v := range vs {
		di, oki := ParseAfterValue(v, date, now)
		if !oki {
			return 0, false
		}
		if i > 0 && di != d {
			return 0, false // conflicting duplicates: trust neither
		}
		d = di
	}
	return d, true
}

// ParseAfterValue is ParseAfter for one field value. date is the response's
// Date field ("" when absent); it is used only when value is an HTTP-date.
func ParseAfterValue(value, date string, now time.Time) (time.Duration, bool) {
	value = trimOWS(value)
	if value == "" {
		return 0, false
	}
	if isDigits(value) {
		n, _ := atoi64(value)
		return secondsDuration(n, 0), true
	}
	at, err := http.ParseTime(value)
	if err != nil {
		return 0, false
	}
	return nonNegative(at.Sub(dateBase(date, now))), true
}

// responseDate returns the response's Date field, or "" when it has none
// or several.
func responseDate(h http.Header) string {
	if ds := h["Date"]; len(ds) == 1 {
		return ds[0]
	}
	return ""
}

// dateBase is the instant an absolute time in a response is measured from:
// the response's Date when it parses (the server's clock, so that skew
// between the clocks cancels out), now otherwise.
func dateBase(date string, now time.Time) time.Time {
	if date != "" {
		if t, err := http.ParseTime(trimOWS(date)); err == nil {
			return t
		}
	}
	return now
}

// isDigits reports whether s is 1*DIGIT.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// atoi64 parses 1*DIGIT, saturating at math.MaxInt64. ok is false when s is
// not all digits.
func atoi64(s string) (n int64, ok bool) {
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if n > (math.MaxInt64-int64(c-'0'))/10 {
			n = math.MaxInt64 // keep scanning: the rest must still be digits
			continue
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// trimOWS removes the optional whitespace (SP, HTAB) RFC 9110 §5.6.3 allows
// around a field value. net/http already trims what it reads from the wire;
// headers built by hand may not be.
func trimOWS(s string) string {
	for s != "" && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for s != "" && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

func nonNegative(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d
}

// secondsDuration converts non-negative seconds and nanoseconds (less than
// one second) to a Duration, clamping at the largest Duration.
func secondsDuration(sec, nsec int64) time.Duration {
	if sec > maxSeconds || sec == maxSeconds && nsec > int64(maxDuration%time.Second) {
		return maxDuration
	}
	return time.Duration(sec)*time.Second + time.Duration(nsec)
}
