// Package scope decides which links a crawl that follows links takes
// (issue 35, polite fetch --follow: link discovery as wget -r, Scrapy's
// CrawlSpider and Heritrix's scope rules do it), and normalises URLs so
// that one page is one URL.
//
//	s := scope.New(scope.Rules{Mode: scope.Domain, MaxDepth: 3,
//		Norm: scope.NormOptions{StripParams: scope.DefaultStripParams}})
//	_ = s.AddSeed("https://www.example.co.uk/")
//	norm, why := s.Check("https://shop.example.co.uk/a?utm_source=x", 0)
//	// norm == "https://shop.example.co.uk/a", why == scope.OK
//
// It knows nothing of fetching, HTML or databases: the caller extracts the
// links, resolves them against the page's URL, counts URLs per host and per
// Pattern, and stores Roots to resume.
//
// # Normal form
//
// Normalize returns the form a crawl deduplicates by (RFC 3986 §6.2.2 and
// §6.2.3, and what browsers do where the RFC leaves a choice):
//
//   - Only absolute http and https URLs; anything else ("mailto:",
//     "/relative", "#frag", "http:host") is an error naming the input.
//     Leading and trailing spaces and controls are trimmed, and tabs and
//     newlines removed anywhere, as browsers do; "\" before the query is
//     "/", as browsers do for http(s).
//   - The scheme in lower case (ASCII only: "httpſ" is not "https"); no userinfo (credentials in a link are
//     never kept); no fragment.
//   - The host as polite.HostKey keys it (a test checks they agree):
//     percent-escapes decoded, lower case, an IDN in its ASCII (punycode)
//     form by IDNA 2008 lookup rules (golang.org/x/net/idna), the trailing
//     dot dropped; an IPv6 address in brackets in its canonical form, an
//     IPv4-mapped one as IPv4. An IPv6 zone ("[fe80::1%25eth0]") is refused:
//     it names an interface of the machine reading the link, so from a page
//     it means nothing, or an attempt on the crawler's own network.
//   - The port without leading zeros, dropped when it is the scheme's
//     default (80, 443) or empty ("h:"); port 0 or above 65535 is an error.
//   - The path "/" when empty, dot segments removed (§5.2.4) after escaped
//     unreserved characters are decoded ("/a/%2E%2E/b" is "/b"), empty
//     segments kept ("/a//b").
//   - In path and query, percent-encoding normalised without changing
//     meaning: an escaped unreserved character (ALPHA DIGIT - . _ ~)
//     decoded ("%7e" is "~"), the hex digits of other escapes in upper case
//     ("%2f" is "%2F", never "/"), and every byte that may not stand as it
//     is escaped (" " is "%20", "é" is "%C3%A9", "|" is "%7C"). A reserved
//     character keeps its form: "+" in a query stays "+", "%2B" stays "%2B".
//     A '%' not followed by two hex digits is an error.
//   - The query: parameters are separated by '&' only (';' is part of a
//     name or value); empty parameters ("a=1&&b=2") are dropped, then those
//     NormOptions.StripParams names, then, with NormOptions.SortQuery, the
//     rest are sorted by name; a query left empty is removed with its '?'.
//     Repeated names and empty names ("=x") are kept.
//
// Normalize is idempotent, its result parses with net/url, and it is a fixed
// point of the frontier's redisstore.NormalizeURL (fuzz tests check all
// three). A URL already in normal form comes back as it is, without
// allocating when it is at most 512 bytes long and its host is not an IDN;
// Check then allocates nothing either.
//
// # Scope
//
// A Scope holds Rules and the roots of its seeds: their hosts (Host mode),
// registrable domains (Domain) or URL prefixes (Prefix, as wget
// --no-parent); Any has none. Check normalises a link and returns the first
// Reason that skips it, in this order: BadURL, TooLong, OffScope, Excluded,
// NotIncluded, MaxDepth, TrapDepth, TrapRepeat; OK ("") when none does.
// Include and Exclude match the normalised URL, and Exclude wins.
//
// # Traps
//
// Two rules of Heritrix catch URL spaces that never end: too many path
// segments (TrapDepth, TooManyPathSegmentsDecideRule), and a segment
// repeated too often (TrapRepeat, PathologicalPathDecideRule), as relative
// links on a page that answers every path make: "/a/b/a/b/a/". Unlike
// Heritrix, which looks for a segment repeated in a row, a segment counts
// wherever it is in the path. Calendars and faceted search need counting
// across URLs: Pattern gives a URL's shape, and the caller caps the URLs
// per shape per host (TrapPattern), as it caps URLs per host (MaxPerHost)
// and in all (MaxURLs), and honours nofollow (NoFollow).
package scope
