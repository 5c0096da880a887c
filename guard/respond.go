package guard

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/polite-go/polite/retry"
)

// Legacy fields, as GitHub and most gateways send them: the limit, the
// tokens left and the Unix time the next one arrives, of the tightest level
// advertised.
const (
	fieldXLimit     = retry.FieldXRateLimitLimit
	fieldXRemaining = retry.FieldXRateLimitRemaining
	fieldXReset     = retry.FieldXRateLimitReset
	fieldRetryAfter = "Retry-After"
)

// Problem types (draft-ietf-httpapi-ratelimit-headers-10 section 7; RFC 9457).
const (
	problemQuota    = "https://iana.org/assignments/http-problem-types#quota-exceeded"
	problemCapacity = "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity"
)

// Header values every refusal shares, made once and set without a copy.
// Nothing after the guard writes to them, and each has cap == len, so an
// append to one copies it.
var (
	valProblem = []string{"application/problem+json"}
	valNoStore = []string{"no-store"}
	valClose   = []string{"close"}
	valOne     = []string{"1"}
)

// appendProblem appends a problem+json body. The guard's answers are
// made from it ahead of time (refusalBody, unavailableBody): it is the one
// place their shape is written.
func appendProblem(b []byte, status int, typ, policy, detail string) []byte {
	b = append(b, `{"type":`...)
	b = strconv.AppendQuote(b, typ)
	b = append(b, `,"title":`...)
	b = strconv.AppendQuote(b, http.StatusText(status))
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, `,"detail":`...)
	b = strconv.AppendQuote(b, detail)
	if policy != "" {
		b = append(b, `,"violated-policies":[`...)
		b = strconv.AppendQuote(b, policy)
		b = append(b, ']')
	}
	return append(b, "}\n"...)
}

// refusalBody is a level's 429 bodies, made in New and cut where the
// numbers go, so a refusal appends five pieces and three numbers instead
// of formatting (issue 29: floods are when refusals run most).
type refusalBody struct {
	wait   [3]string // ... costs {cost} token(s) ... retry after {retry} s ...
	costly [3]string // ... costs {cost} tokens ... ever holds ({burst}) ...
}

// newRefusalBody cuts the bodies of the level named name. A name is
// [a-z0-9._-] and the numbers are digits, so nothing in the detail is
// escaped and the pieces join to what appendProblem makes of the whole.
func newRefusalBody(name string) refusalBody {
	var rb refusalBody
	cut := func(dst *[3]string, detail, m1, m2 string) {
		s := string(appendProblem(nil, http.StatusTooManyRequests, problemQuota, name, detail))
		head, rest, _ := strings.Cut(s, m1)
		mid, tail, _ := strings.Cut(rest, m2)
		*dst = [3]string{head, mid, tail}
	}
	cut(&rb.wait, "policy "+name+": the request costs {cost} token(s), fewer are left; retry after {retry} s", "{cost}", "{retry}")
	cut(&rb.costly, "the request costs {cost} tokens, more than policy "+name+" ever holds ({burst}): it can never be admitted", "{cost}", "{burst}")
	return rb
}

// append appends the body of a refusal to *b: retry < 0 for a cost above
// the burst.
func (rb *refusalBody) append(b *[]byte, cost, burst, retry int64) {
	p, n := &rb.wait, retry
	if retry < 0 {
		p, n = &rb.costly, burst
	}
	*b = append(*b, p[0]...)
	*b = strconv.AppendInt(*b, cost, 10)
	*b = append(*b, p[1]...)
	*b = strconv.AppendInt(*b, n, 10)
	*b = append(*b, p[2]...)
}

// The header fields an answer builds values for: the two RateLimit
// fields, the three X-RateLimit ones, Retry-After and Content-Length.
const (
	slotRateLimit = iota
	slotPolicy
	slotXLimit
	slotXRemaining
	slotXReset
	slotRetryAfter
	slotLength
	maxFields
)

var fieldNames = [maxFields]string{fieldRateLimit, fieldPolicy, fieldXLimit, fieldXRemaining, fieldXReset,
	fieldRetryAfter, "Content-Length"}

// fieldValues gathers an answer's header values in one buffer, made into
// one string and one slice whatever their number: two allocations. It
// names fields by their index in fieldNames so that it holds no pointer
// but its buffer, which can then live on the caller's stack.
type fieldValues struct {
	b     []byte
	which [maxFields]uint8
	ends  [maxFields]int
	n     int
}

// end closes the value appended since the last end as field i's.
func (f *fieldValues) end(i uint8) {
	f.which[f.n], f.ends[f.n] = i, len(f.b)
	f.n++
}

// set puts the values in h.
func (f *fieldValues) set(h http.Header) {
	if f.n == 0 {
		return
	}
	all := string(f.b)
	vals := make([]string, f.n)
	start := 0
	for i := range f.n {
		vals[i] = all[start:f.ends[i]]
		start = f.ends[i]
		h[fieldNames[f.which[i]]] = vals[i : i+1 : i+1]
	}
}
