// Package robots reads robots.txt files (RFC 9309, the Robots Exclusion
// Protocol), answers whether a user agent may fetch a path, turns
// Crawl-delay and Request-rate into a delay between requests, and fetches
// and caches the files per origin.
//
//	r := robots.Parse(body)
//	v := r.Test("polite/1.0", "/private/page?id=1")
//	if !v.Allowed { ... v.Rule.Line ... }
//	delay := robots.DelayPolicy{}.Delay(r.Group("polite/1.0"))
//
// The parser is our own. temoto/robotstxt fails RFC 9309 cases (unanchored
// '*', the allow-wins tie, percent-encoding); jimsmart/grobotstxt is correct
// but parses the file again for every check and has no Crawl-delay.
//
// # Parsing (RFC 9309 §2.2)
//
// Parse never fails. Lines end in LF, CR or CRLF; a UTF-8 byte order mark
// (or a truncated one) at the start is skipped; '#' starts a comment
// anywhere; keys are case-insensitive; a line that is not "key: value" or
// whose key is unknown is ignored. Like Google's parser, Parse accepts a
// missing colon ("Disallow /x") when the line is exactly two words, and the
// common misspellings "useragent", "user agent", "dissallow", "dissalow",
// "disalow", "diasllow", "disallaw" and "site-map". Keys must otherwise
// match exactly: Google's prefix matching ("disallowed: /x") is not copied.
// Only the first MaxSize bytes (500 KiB, §2.5) are read, and a line cut by
// that limit is dropped rather than half-obeyed.
//
// # Groups (§2.2.1)
//
// A group is one or more user-agent lines (blank lines between them do not
// matter) followed by its members; a user-agent line after a member starts
// the next group. Members before the first user-agent line are ignored. A
// crawler is matched by its product token, the part of its User-Agent before
// the first '/' or space, case-insensitively; so are the values of the
// user-agent lines, which makes "User-agent: foo/1.0" or "User-agent: Foo
// Bar" a group for "foo" (the RFC's grammar allows neither; Google takes the
// second). All groups naming a token are merged into one Group. With none,
// the merged "*" groups apply; with no "*" group, nothing is disallowed. A
// group that names the token but has no rules allows everything: it does not
// fall back to "*".
//
// # Rules (§2.2.2, §2.2.3)
//
// The rule that applies to a path is the matching one with the longest
// pattern, in octets after normalisation; at equal length allow wins. No
// matching rule means allowed; so does an empty "Disallow:". "/robots.txt" is
// always allowed. A pattern matches a prefix of the path and query; '*'
// matches any run of characters and a '$' at the end anchors the pattern at
// the end of the path. A pattern that starts with neither '/' nor '*' can
// never match. Matching is case-sensitive and runs without regular
// expressions, backtracking or allocation: with '*' as the only wildcard,
// placing each literal run at its leftmost fit is optimal, so a pattern like
// "/*a*a*a*a*b" costs a few substring searches, not exponential time. Large
// groups are indexed (by literal prefix, and rules starting "/*" by a rare
// three-byte run of their literal text), so a check against a 500 KiB file
// costs about a microsecond.
//
// Patterns and paths are compared in one normalised form: percent-escapes of
// unreserved characters (RFC 3986 §2.3: letters, digits, "-._~") are
// decoded, other escapes get upper-case hex, and bytes outside printable
// ASCII, spaces and the characters net/url escapes in paths are
// percent-encoded (so "Disallow: /ツ" matches the request for "/%E3%83%84").
// Reserved characters are left alone: "/a/b" and "/a%2Fb" differ. This
// follows the RFC's table, where the pattern "/foo/bar/%62%61%7A" matches the
// path "/foo/bar/baz"; Google's parser does not decode there.
//
// Google's "index.html at the end of a pattern also means the directory"
// and its line-length limit (16,664 bytes) are not implemented.
//
// # Non-standard lines
//
// Sitemap lines (§2.2.4 allows such "other records") belong to the file, not
// to a group, and are returned by Robots.Sitemaps as written.
//
// Crawl-delay ("crawldelay", "crawl delay", "crawl_delay") is a number of
// seconds between requests: a plain decimal, fraction allowed ("0.5").
// Anything else — negative, "10s", "1e3", "NaN", "Inf" — is ignored.
//
// Request-rate ("requestrate", ...) is "n/period": n requests (a positive
// integer) per period, a positive decimal with an optional unit s, m or h
// ("1/5", "1/5s", "1/10m"). A trailing visit-time window ("1/10s
// 0600-0845") is ignored; other forms are ignored.
//
// Both are group members, like rules: outside a group they are ignored, and
// a merged group keeps the slowest value. DelayPolicy turns them into one
// delay: the larger of the Crawl-delay and period/n, a configurable default
// when both are absent, capped at a maximum (60 s unless configured).
//
// # Fetching (§2.3, §2.4)
//
// Cache fetches scheme://host[:port]/robots.txt, follows up to five
// redirects, and caches the result per origin for a TTL (24 h), sharing one
// fetch among concurrent callers. A 2xx body is parsed; a 4xx (except 429)
// means no robots.txt, so everything is allowed; a 5xx, a 429 or a failed
// fetch means everything is disallowed until a retry succeeds, while an
// earlier good copy, if cached, stays in use. See Cache for the details.
// Robots.Source tells the three outcomes apart.
//
// A client checks each request with Cache.GetRef (keeping a Ref per host) or
// Cache.Get, and Robots.TestURL. GetRef answers for a cached origin without
// a lock or an allocation, Get under a read lock; TestURL
// reads the request's *url.URL in place and does not allocate for a path
// that needs no escaping. A disallowed request is reported with
// *DisallowedError, which wraps ErrDisallowed.
package robots
