package retry

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"time"
)

// Quota is what a response said about the client's quota with the server:
// how much it may send, how much is left, and when more comes.
//
// A field the response did not state, or stated in a form that did not
// parse, is -1 (for the Durations, -1ns): test with < 0. Known values are
// never negative; Reset may be 0 ("now"), Window is never 0.
type Quota struct {
	// Limit is the quota, in requests per Window. -1 when unknown.
	Limit int
	// Remaining is the quota left before the server may throttle. -1 when
	// unknown. Servers do not promise to serve a request just because
	// Remaining is positive.
	Remaining int
	// Reset is how long, from the now given to ParseRateLimit, until the
	// quota is restored: the draft's effective window ("t", "reset"), or
	// the vendor Reset converted from a Unix time. -1 when unknown.
	Reset time.Duration
	// Window is the policy's time window: Limit requests per Window. -1
	// when unknown.
	Window time.Duration
	// Policy is the name of the quota policy the numbers belong to, from the
	// structured RateLimit fields; "" otherwise.
	Policy string
}

// Rate returns Limit/Window in requests per second; ok is false when either
// is unknown.
func (q Quota) Rate() (perSecond float64, ok bool) {
	if q.Limit < 0 || q.Window <= 0 {
		return 0, false
	}
	return float64(q.Limit) / q.Window.Seconds(), true
}

var unknownQuota = Quota{Limit: -1, Remaining: -1, Reset: -1, Window: -1}

// The RateLimit field set: every field ParseRateLimit reads and the
// guard writes, by its canonical key (http.CanonicalHeaderKey), for direct
// map access. One set, in one package: a field the next draft renames is
// renamed here for both sides (issue 34).
const (
	FieldRateLimit            = "Ratelimit"        // draft-ietf-httpapi-ratelimit-headers-10: service limit items
	FieldRateLimitPolicy      = "Ratelimit-Policy" // the same draft: quota policy items
	FieldRateLimitLimit       = "Ratelimit-Limit"  // drafts up to 06
	FieldRateLimitRemaining   = "Ratelimit-Remaining"
	FieldRateLimitReset       = "Ratelimit-Reset"
	FieldXRateLimitLimit      = "X-Ratelimit-Limit" // the vendor fields (GitHub and most gateways)
	FieldXRateLimitRemaining  = "X-Ratelimit-Remaining"
	FieldXRateLimitReset      = "X-Ratelimit-Reset"
	FieldXRateLimitResetAfter = "X-Ratelimit-Reset-After"
)

// RateLimitFields lists the field set in the order a log lists them.
var RateLimitFields = [...]string{FieldRateLimit, FieldRateLimitPolicy, FieldRateLimitLimit, FieldRateLimitRemaining,
	FieldRateLimitReset, FieldXRateLimitLimit, FieldXRateLimitRemaining, FieldXRateLimitReset, FieldXRateLimitResetAfter}

// Reset values at or above these are read as Unix times, not as seconds to
// wait (see ParseRateLimit).
const (
	unixSecondsFrom = 1_000_000_000     // 2001-09-09 in Unix seconds
	unixMillisFrom  = 1_000_000_000_000 // the same instant in Unix milliseconds
)

// ParseRateLimit reads the quota a response advertises. It understands, in
// this order of precedence:
//
//  1. The current IETF draft (draft-ietf-httpapi-ratelimit-headers-08 and
//     later): RateLimit: "default";r=50;t=30 with RateLimit-Policy:
//     "default";q=100;w=60, matched by policy name. Names may be Strings or
//     Tokens (draft-10 allowed both).
//  2. Draft-07's dictionary: RateLimit: limit=100, remaining=50, reset=30,
//     with RateLimit-Policy: 100;w=60.
//  3. The older drafts' triple RateLimit-Limit, RateLimit-Remaining and
//     RateLimit-Reset; RateLimit-Limit may carry policies itself
//     ("100, 100;w=60").
//  4. The vendor X-RateLimit-Limit, X-RateLimit-Remaining and
//     X-RateLimit-Reset, plus X-RateLimit-Reset-After (seconds to wait; wins
//     over Reset). These may carry fractions of a second ("64.57").
//
// The first form that states a counter (limit, remaining or reset) supplies
// all three; forms are not mixed, because a Remaining from one and a Reset
// from another may describe different windows. Limit and Window come from
// RateLimit-Policy when the chosen form lacks them: the policy whose quota
// equals the Limit, or, when the Limit is unknown, the most restrictive
// policy. A response with only RateLimit-Policy yields its most restrictive
// policy (lowest q/w) with Remaining and Reset unknown.
//
// When several policies report, the one with the least remaining quota wins
// (ties: the later reset), as the server itself would do in draft-07.
// Policies counted in other units than requests ("content-bytes",
// "concurrent-requests") are ignored: they do not pace requests.
//
// Resets are seconds to wait, as every draft specifies, except that a value
// of 1e9 or more is read as a Unix time (1e12 or more: Unix milliseconds),
// since no server means a wait of 31 years and no server clock reads earlier
// than 2001; GitHub, for one, sends Unix seconds in X-RateLimit-Reset. A Unix
// time is measured against the response's Date field when that parses, like
// an HTTP-date in Retry-After, and a Reset in the past is 0.
//
// ok is false when none of these fields yields anything. Malformed members
// are skipped and the rest used; at most 64 members per field are read.
// Retry-After takes precedence over all of this (draft §7); it is
// ParseAfter's business.
func ParseRateLimit(h http.Header, now time.Time) (q Quota, ok bool) {
	date := responseDate(h)
	rl, pol := h[FieldRateLimit], h[FieldRateLimitPolicy]
	q, ok = structured(rl, pol, date, now)
	if !ok {
		q, ok = dictionary(rl, date, now)
	}
	if !ok {
		q, ok = triple(h[FieldRateLimitLimit], h[FieldRateLimitRemaining], h[FieldRateLimitReset], nil, date, now)
	}
	if !ok {
		q, ok = triple(h[FieldXRateLimitLimit], h[FieldXRateLimitRemaining], h[FieldXRateLimitReset], h[FieldXRateLimitResetAfter], date, now)
	}
	if !ok {
		return policy(pol, -1)
	}
	// The structured form names its policy; a policy found by quota alone
	// could belong to another counter.
	if q.Policy == "" && (q.Limit < 0 || q.Window < 0) {
		if p, pok := policy(pol, q.Limit); pok {
			if q.Limit < 0 {
				q.Limit, q.Policy = p.Limit, p.Policy
			}
			if q.Window < 0 {
				q.Window = p.Window
			}
		}
	}
	return q, true
}

// structured reads form 1: RateLimit service limit items.
func structured(rl, pol []string, date string, now time.Time) (Quota, bool) {
	var best sfMember
	var bestPolicy sfMember
	found := false
	rd := sfReader{lines: rl}
	for {
		m, more := rd.next()
		if !more {
			break
		}
		if m.key != "" || (m.kind != kindString && m.kind != kindToken) || m.r < 0 {
			continue
		}
		p, _ := findPolicy(pol, m.text)
		if !requestUnit(p.qu) {
			continue
		}
		if !found || m.r < best.r || m.r == best.r && m.t > best.t {
			best, bestPolicy, found = m, p, true
		}
	}
	if !found {
		return Quota{}, false
	}
	q := unknownQuota
	q.Policy = best.text
	q.Remaining = clampInt(best.r)
	if best.t >= 0 {
		q.Reset = resetAt(best.t, 0, date, now)
	}
	if bestPolicy.q >= 0 {
		q.Limit = clampInt(bestPolicy.q)
	}
	if bestPolicy.w > 0 {
		q.Window = secondsDuration(bestPolicy.w, 0)
	}
	return q, true
}

// findPolicy returns the named policy of RateLimit-Policy. The returned
// member has q and w set to -1 when there is none.
func findPolicy(pol []string, name string) (sfMember, bool) {
	rd := sfReader{lines: pol}
	for {
		m, more := rd.next()
		if !more {
			return sfMember{r: -1, t: -1, q: -1, w: -1}, false
		}
		if m.key == "" && (m.kind == kindString || m.kind == kindToken) && m.text == name {
			return m, true
		}
	}
}

// dictionary reads form 2: RateLimit: limit=…, remaining=…, reset=….
func dictionary(rl []string, date string, now time.Time) (Quota, bool) {
	q := unknownQuota
	found := false
	rd := sfReader{lines: rl}
	for {
		m, more := rd.next()
		if !more {
			break
		}
		if m.key == "" {
			continue
		}
		n := int64(-1)
		if m.kind == kindInt {
			n = m.num
		}
		// A key repeated overrides the earlier value (RFC 9651 §3.2).
		switch {
		case equalFold(m.key, "limit") && n >= 0:
			q.Limit, found = clampInt(n), true
		case equalFold(m.key, "remaining") && n >= 0:
			q.Remaining, found = clampInt(n), true
		case equalFold(m.key, "reset"):
			if sec, nsec, ok := decimal(m); ok {
				q.Reset, found = resetAt(sec, nsec, date, now), true
			}
		}
	}
	return q, found
}

// triple reads forms 3 and 4 from the lines of one field each for the
// limit, the remaining quota and the reset; after, the lines of a field of
// seconds to wait, wins over reset.
func triple(limit, remaining, reset, after []string, date string, now time.Time) (Quota, bool) {
	q := unknownQuota
	found := false
	// The limit field may list policies after the limit: "100, 100;w=60".
	rd := sfReader{lines: limit}
	for first := true; ; first = false {
		m, more := rd.next()
		if !more {
			break
		}
		if m.key != "" || m.kind != kindInt || m.num < 0 {
			if first {
				break
			}
			continue
		}
		if first {
			q.Limit, found = clampInt(m.num), true
		}
		if m.num == int64(q.Limit) && m.w > 0 {
			q.Window = secondsDuration(m.w, 0)
			break
		}
	}
	if m, ok := firstMember(remaining); ok && m.kind == kindInt && m.num >= 0 {
		q.Remaining, found = clampInt(m.num), true
	}
	if len(after) > 0 {
		if m, ok := firstMember(after); ok {
			if sec, nsec, ok := decimal(m); ok {
				q.Reset, found = secondsDuration(sec, nsec), true
				return q, found
			}
		}
	}
	if m, ok := firstMember(reset); ok {
		if sec, nsec, ok := decimal(m); ok {
			q.Reset, found = resetAt(sec, nsec, date, now), true
		}
	}
	return q, found
}

// policy chooses from RateLimit-Policy: the policy whose quota equals limit
// or, when limit is negative, the most restrictive one (lowest q/w; without
// windows, lowest q). Both the current form ("name";q=100;w=60) and
// draft-07's (100;w=60) are read.
func policy(pol []string, limit int) (Quota, bool) {
	best := unknownQuota
	found := false
	rd := sfReader{lines: pol}
	for {
		m, more := rd.next()
		if !more {
			break
		}
		if m.key != "" || !requestUnit(m.qu) {
			continue
		}
		p := unknownQuota
		switch m.kind {
		case kindString, kindToken:
			if m.q < 0 {
				continue
			}
			p.Limit, p.Policy = clampInt(m.q), m.text
		case kindInt:
			if m.num < 0 {
				continue
			}
			p.Limit = clampInt(m.num)
		default:
			continue
		}
		if m.w > 0 {
			p.Window = secondsDuration(m.w, 0)
		}
		if limit >= 0 {
			if p.Limit == limit {
				return p, true
			}
			continue
		}
		if !found || stricter(p, best) {
			best, found = p, true
		}
	}
	return best, found
}

// stricter reports whether policy a allows a lower sustained rate than b.
// A policy with a window beats one without, which says nothing about rate.
func stricter(a, b Quota) bool {
	ra, aok := a.Rate()
	rb, bok := b.Rate()
	switch {
	case aok && bok:
		return ra < rb
	case aok != bok:
		return aok
	}
	return a.Limit < b.Limit
}

// requestUnit reports whether a quota unit counts requests, the default.
func requestUnit(qu string) bool {
	return qu == "" || qu == "requests" || qu == "request"
}

func firstMember(lines []string) (sfMember, bool) {
	rd := sfReader{lines: lines}
	m, ok := rd.next()
	return m, ok && m.key == ""
}

// decimal returns a non-negative Integer or Decimal member as whole seconds
// and nanoseconds.
func decimal(m sfMember) (sec, nsec int64, ok bool) {
	switch m.kind {
	case kindInt:
		return m.num, 0, m.num >= 0
	case kindDecimal:
		if m.num < 0 || m.text[0] == '-' {
			return 0, 0, false
		}
		dot := 0
		for m.text[dot] != '.' {
			dot++
		}
		frac := m.text[dot+1:]
		scale := int64(1e8)
		for i := 0; i < len(frac) && scale > 0; i++ {
			nsec += int64(frac[i]-'0') * scale
			scale /= 10
		}
		return m.num, nsec, true
	}
	return 0, 0, false
}

// resetAt turns a reset value (sec.nsec, non-negative) into a wait from now:
// seconds to wait, or a Unix time in seconds or milliseconds when it is too
// large to be a wait (see ParseRateLimit). A Unix time is measured against
// the response's Date when that parses.
func resetAt(sec, nsec int64, date string, now time.Time) time.Duration {
	var at time.Time
	switch {
	case sec >= unixMillisFrom:
		at = time.UnixMilli(sec)
	case sec >= unixSecondsFrom:
		at = time.Unix(sec, nsec)
	default:
		return secondsDuration(sec, nsec)
	}
	return nonNegative(at.Sub(dateBase(date, now)))
}

// Writing the fields: what a server (polite's guard) sends, in the
// structured form ParseRateLimit reads first (RFC 9651 syntax):
//
//	RateLimit-Policy: "identity";q=20;w=2, "tenant";q=200;w=2
//	RateLimit: "identity";r=7;t=1;pk=:wfVZ5QQzJL8X:, "tenant";r=150;t=1
//
// The Append functions write one list member each into b and return it;
// AppendSeparator goes between members. They take what a server knows
// and check nothing: a policy's name must be a valid String of
// [a-z0-9._-] (no escapes), q and w whole numbers, w at least 1.

// AppendPolicyItem appends one Quota Policy Item of RateLimit-Policy: the
// policy's name, its quota q and its window w in seconds.
func AppendPolicyItem(b []byte, name string, q, w int64) []byte {
	b = strconv.AppendQuote(b, name)
	b = append(b, ";q="...)
	b = strconv.AppendInt(b, q, 10)
	b = append(b, ";w="...)
	return strconv.AppendInt(b, w, 10)
}

// LimitItemPrefix is the constant start of a policy's Service Limit Item
// of RateLimit, `"name";r=`, for a server to make once per policy.
func LimitItemPrefix(name string) string { return strconv.Quote(name) + ";r=" }

// AppendLimitItem appends one Service Limit Item of RateLimit after its
// prefix (LimitItemPrefix): r the whole quota units left, t the seconds
// until more arrive, pk the partition key (a Byte Sequence; nil for none).
func AppendLimitItem(b []byte, prefix string, r, t int64, pk []byte) []byte {
	b = append(b, prefix...)
	b = strconv.AppendInt(b, r, 10)
	b = append(b, ";t="...)
	b = strconv.AppendInt(b, t, 10)
	if pk != nil {
		b = append(b, ";pk=:"...)
		b = base64.StdEncoding.AppendEncode(b, pk)
		b = append(b, ':')
	}
	return b
}

// AppendSeparator separates the members of a list field.
func AppendSeparator(b []byte) []byte { return append(b, ", "...) }
