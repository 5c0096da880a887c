package guard

import "github.com/polite-go/polite/retry"

// The IETF fields, draft-ietf-httpapi-ratelimit-headers-10 (RFC 9651
// structured-field syntax), are written with package retry's field set and
// item writers, beside the parser polite's clients read them with: the next
// draft (which may rename r and t) is a change there only, for both sides.
// This file is what the guard puts in them:
//
//	RateLimit-Policy: "identity";q=20;w=2, "tenant";q=200;w=2
//	RateLimit: "identity";r=7;t=1;pk=:wfVZ5QQzJL8X:, "tenant";r=150;t=1;pk=:…:
//
// w is the seconds a full refill takes, rounded up (it must be a non-zero
// integer, section 3.1), and q what the rate brings in w, rounded down: so
// q/w is the sustainable rate or a hair under it (a client pacing at q/w is
// never refused), and q is never below the burst.
// r is the whole tokens left; t the seconds until one more arrives (on a
// 429, for the level that refused: the Retry-After). pk (a Byte Sequence)
// is a keyed hash of the level's key, never the identity itself. A request
// costing more than a level's burst gets RateLimit-Policy only (see
// Guard.appendFields). The legacy X-RateLimit-Limit is the same q.

// Field names, in canonical form so they are set without canonicalizing:
// package retry's field set, which its ParseRateLimit reads.
const (
	fieldPolicy    = retry.FieldRateLimitPolicy
	fieldRateLimit = retry.FieldRateLimit
)

// appendPolicyItem appends one Quota Policy Item.
func appendPolicyItem(b []byte, l *limit) []byte {
	return retry.AppendPolicyItem(b, l.Name, l.quota, l.window) // names are [a-z0-9._-]: no escapes
}

// pkLen is the bytes of the partition key hash sent: 72 bits, 12 base64
// characters.
const pkLen = 9

// limitPrefix is the constant start of a level's Service Limit Item,
// made once: "identity";r=
func limitPrefix(name string) string { return retry.LimitItemPrefix(name) }

// appendLimitItem appends one Service Limit Item after its prefix; pk is
// nil for none.
func appendLimitItem(b []byte, prefix string, r, t int64, pk []byte) []byte {
	return retry.AppendLimitItem(b, prefix, r, t, pk)
}

// appendSeparator separates list members.
func appendSeparator(b []byte) []byte { return retry.AppendSeparator(b) }
