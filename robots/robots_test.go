package robots

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// probe is one question to a parsed file: may ua fetch url?
type probe struct {
	ua, url string
	want    bool
}

// conformance holds RFC 9309's examples and the behaviours exercised by
// Google's robots_test.cc (google/robotstxt), rewritten as tables. Where we
// decide differently from Google the case name says so and doc.go says why.
var conformance = []struct {
	name   string
	robots string
	probes []probe
}{
	// RFC 9309 §5.1, the simple example.
	{
		name: "rfc 5.1 example",
		robots: "User-Agent: *\nDisallow: *.gif$\nDisallow: /example/\nAllow: /publications/\n\n" +
			"User-Agent: foobot\nDisallow:/\nAllow:/example/page.html\nAllow:/example/allowed.gif\n\n" +
			"User-Agent: barbot\nUser-Agent: bazbot\nDisallow: /example/page.html\n\n" +
			"User-Agent: quxbot\n\nEOF\n",
		probes: []probe{
			{"anybot", "/example/page.html", false},
			{"anybot", "/publications/", true},
			{"anybot", "/publications/cover.gif", true}, // the longer allow beats *.gif$
			{"anybot", "/images/cat.gif", false},
			{"anybot", "/images/cat.gif?size=2", true}, // $ anchors at the end
			{"anybot", "/", true},
			{"foobot", "/example/page.html", true},
			{"foobot", "/example/allowed.gif", true},
			{"foobot", "/example/other.html", false},
			{"foobot", "/publications/", false},
			{"foobot", "/", false},
			{"barbot", "/example/page.html", false},
			{"bazbot", "/example/page.html", false},
			{"barbot", "/example/other.html", true}, // * does not apply to barbot
			{"bazbot", "/images/cat.gif", true},
			{"quxbot", "/example/page.html", true}, // empty group: everything allowed
			{"quxbot", "/images/cat.gif", true},
		},
	},
	// RFC 9309 §5.2.
	{
		name:   "rfc 5.2 longest match",
		robots: "User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n",
		probes: []probe{
			{"foobot", "/example/page/", true},
			{"foobot", "/example/page/other.gif", true},
			{"foobot", "/example/page/disallowed.gif", false},
			{"foobot", "/example/page", true},
		},
	},
	{
		name:   "empty file allows everything",
		robots: "",
		probes: []probe{{"FooBot", "/", true}, {"", "", true}, {"FooBot", "/x/y", true}},
	},
	{
		name:   "empty user agent falls to * and there is none",
		robots: "user-agent: FooBot\ndisallow: /\n",
		probes: []probe{{"", "/", true}, {"", "http://foo.bar/x", true}},
	},
	{
		name:   "empty url means /",
		robots: "user-agent: FooBot\ndisallow: /\n",
		probes: []probe{{"FooBot", "", false}, {"FooBot", "http://foo.bar", false}},
	},
	{
		name:   "key value separated by colon",
		robots: "user-agent: FooBot\ndisallow: /\n",
		probes: []probe{{"FooBot", "http://foo.bar/x/y", false}},
	},
	{
		name:   "unknown keys are ignored",
		robots: "foo: FooBot\nbar: /\n",
		probes: []probe{{"FooBot", "http://foo.bar/x/y", true}},
	},
	{
		name:   "missing colon accepted for two words (Google)",
		robots: "user-agent FooBot\ndisallow /\n",
		probes: []probe{{"FooBot", "http://foo.bar/x/y", false}},
	},
	{
		name:   "missing colon with three words is junk",
		robots: "user-agent FooBot\ndisallow / x\n",
		probes: []probe{{"FooBot", "/x", true}},
	},
	{
		name: "groups: rules outside groups ignored, split and merged groups",
		robots: "allow: /foo/bar/\n\nuser-agent: FooBot\ndisallow: /\nallow: /x/\nuser-agent: BarBot\n" +
			"disallow: /\nallow: /y/\n\n\nallow: /w/\nuser-agent: BazBot\n\nuser-agent: FooBot\n" +
			"allow: /z/\ndisallow: /\n",
		probes: []probe{
			{"FooBot", "http://foo.bar/x/b", true},
			{"FooBot", "http://foo.bar/z/d", true}, // second FooBot group merged in
			{"FooBot", "http://foo.bar/y/c", false},
			{"BarBot", "http://foo.bar/y/c", true},
			{"BarBot", "http://foo.bar/w/a", true}, // allow /w/ joins BarBot's group
			{"BarBot", "http://foo.bar/z/d", false},
			{"BazBot", "http://foo.bar/z/d", true}, // shares FooBot's second group
			{"FooBot", "http://foo.bar/foo/bar/", false},
			{"BarBot", "http://foo.bar/foo/bar/", false},
			{"BazBot", "http://foo.bar/foo/bar/", false},
		},
	},
	{
		name:   "merged duplicate groups",
		robots: "User-agent: a\nDisallow: /x\n\nUser-agent: b\nDisallow: /y\n\nUser-agent: A\nDisallow: /z\nAllow: /x/ok\n",
		probes: []probe{
			{"a", "/x", false}, {"a", "/z", false}, {"a", "/y", true}, {"a", "/x/ok", true},
			{"b", "/y", false}, {"b", "/z", true},
		},
	},
	{
		name:   "merged * groups",
		robots: "User-agent: *\nDisallow: /foo\n\nUser-agent: foobot\nDisallow: /bar\n\nUser-agent: *\nDisallow: /baz\n",
		probes: []probe{{"other", "/foo", false}, {"other", "/baz", false}, {"other", "/bar", true}, {"foobot", "/foo", true}},
	},
	{
		name:   "* shares a group with a named agent",
		robots: "User-agent: foobot\nUser-agent: *\nDisallow: /private/\n",
		probes: []probe{{"other", "/private/x", false}, {"foobot", "/private/x", false}, {"other", "/public", true}},
	},
	{
		name:   "directive names are case-insensitive (upper)",
		robots: "USER-AGENT: FooBot\nALLOW: /x/\nDISALLOW: /\n",
		probes: []probe{{"FooBot", "http://foo.bar/x/y", true}, {"FooBot", "http://foo.bar/a/b", false}},
	},
	{
		name:   "directive names are case-insensitive (mixed)",
		robots: "uSeR-aGeNt: FooBot\nAlLoW: /x/\ndIsAlLoW: /\n",
		probes: []probe{{"FooBot", "http://foo.bar/x/y", true}, {"FooBot", "http://foo.bar/a/b", false}},
	},
	{
		name:   "user-agent values are case-insensitive and cut at a space",
		robots: "User-Agent: FoO bAr\nAllow: /x/\nDisallow: /\n",
		probes: []probe{
			{"Foo", "http://foo.bar/x/y", true}, {"foo", "http://foo.bar/x/y", true},
			{"FOO", "http://foo.bar/a/b", false}, {"foo", "http://foo.bar/a/b", false},
		},
	},
	{
		name:   "crawler user agent cut at first space too (Google refuses 'Foo Bar')",
		robots: "User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n",
		probes: []probe{{"Foo", "http://foo.bar/x/y", true}, {"Foo Bar", "http://foo.bar/x/y", true}},
	},
	{
		name:   "product token of a full User-Agent header",
		robots: "User-Agent: *\nDisallow: /\nUser-Agent: foobot\nAllow: /\n",
		probes: []probe{
			{"FooBot/2.1 (+https://example.com/bot)", "/x", true},
			{"Mozilla/5.0 (compatible; FooBot/2.1)", "/x", false},
			{"FooBotX/1.0", "/x", false}, // no prefix matching
		},
	},
	{
		name:   "user-agent line with a version",
		robots: "User-Agent: foobot/1.0\nDisallow: /\n",
		probes: []probe{{"foobot", "/x", false}, {"FooBot/2.0", "/x", false}, {"other", "/x", true}},
	},
	{
		name:   "fallback to *: none for other agents",
		robots: "user-agent: *\nallow: /\nuser-agent: FooBot\ndisallow: /\n",
		probes: []probe{{"FooBot", "http://foo.bar/x/y", false}, {"BarBot", "http://foo.bar/x/y", true}},
	},
	{
		name:   "no * group: unnamed agents have no rules",
		robots: "user-agent: FooBot\nallow: /\nuser-agent: BarBot\ndisallow: /\nuser-agent: BazBot\ndisallow: /\n",
		probes: []probe{{"QuxBot", "http://foo.bar/x/y", true}, {"BarBot", "/", false}},
	},
	{
		name:   "paths are case-sensitive",
		robots: "user-agent: FooBot\ndisallow: /x/\n",
		probes: []probe{{"FooBot", "http://foo.bar/x/y", false}, {"FooBot", "http://foo.bar/X/y", true}},
	},
	{
		name:   "longest match: longer disallow wins",
		robots: "user-agent: FooBot\ndisallow: /x/page.html\nallow: /x/\n",
		probes: []probe{{"FooBot", "http://foo.bar/x/page.html", false}, {"FooBot", "http://foo.bar/x/other", true}},
	},
	{
		name:   "longest match: longer allow wins",
		robots: "user-agent: FooBot\nallow: /x/page.html\ndisallow: /x/\n",
		probes: []probe{{"FooBot", "http://foo.bar/x/page.html", true}, {"FooBot", "http://foo.bar/x/", false}},
	},
	{
		name:   "empty allow and disallow allow everything",
		robots: "user-agent: FooBot\ndisallow: \nallow: \n",
		probes: []probe{{"FooBot", "http://foo.bar/x/page.html", true}},
	},
	{
		name:   "tie: allow wins (/)",
		robots: "user-agent: FooBot\ndisallow: /\nallow: /\n",
		probes: []probe{{"FooBot", "http://foo.bar/x/page.html", true}},
	},
	{
		name:   "tie: allow wins (same pattern, disallow first)",
		robots: "user-agent: FooBot\ndisallow: /x/page.html\nallow: /x/page.html\n",
		probes: []probe{{"FooBot", "http://foo.bar/x/page.html", true}},
	},
	{
		name:   "tie: allow wins (different patterns, same length)",
		robots: "user-agent: FooBot\nallow: /folder\ndisallow: /folder\nallow: /a*c\ndisallow: /abc\n",
		probes: []probe{{"FooBot", "/folder/page", true}, {"FooBot", "/abc", true}},
	},
	{
		name:   "slash matters",
		robots: "user-agent: FooBot\ndisallow: /x\nallow: /x/\n",
		probes: []probe{{"FooBot", "http://foo.bar/x", false}, {"FooBot", "http://foo.bar/x/", true}},
	},
	{
		name:   "longest match counts wildcards",
		robots: "user-agent: FooBot\nallow: /page\ndisallow: /*.html\n",
		probes: []probe{{"FooBot", "http://foo.bar/page.html", false}, {"FooBot", "http://foo.bar/page", true}},
	},
	{
		name:   "longest match: allow longer than wildcard disallow",
		robots: "user-agent: FooBot\nallow: /x/page.\ndisallow: /*.html\n",
		probes: []probe{{"FooBot", "http://foo.bar/x/page.html", true}, {"FooBot", "http://foo.bar/x/y.html", false}},
	},
	{
		name:   "specific group replaces *",
		robots: "User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n",
		probes: []probe{{"FooBot", "http://foo.bar/x/page", true}, {"FooBot", "http://foo.bar/y/page", false}},
	},
	{
		name:   "encoding: query with raw reserved characters",
		robots: "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar?qux=taz&baz=http://foo.bar?tar&par\n",
		probes: []probe{{"FooBot", "http://foo.bar/foo/bar?qux=taz&baz=http://foo.bar?tar&par", true}},
	},
	{
		name:   "encoding: UTF-8 pattern matches the escaped path",
		robots: "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/ツ\n",
		probes: []probe{
			{"FooBot", "http://foo.bar/foo/bar/%E3%83%84", true},
			{"FooBot", "http://foo.bar/foo/bar/%e3%83%84", true},
			// Google: false, it leaves the path as given; we escape it.
			{"FooBot", "http://foo.bar/foo/bar/ツ", true},
		},
	},
	{
		name:   "encoding: escaped pattern",
		robots: "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%E3%83%84\n",
		probes: []probe{{"FooBot", "http://foo.bar/foo/bar/%E3%83%84", true}, {"FooBot", "http://foo.bar/foo/bar/ツ", true}},
	},
	{
		name:   "encoding: lower-case hex in pattern",
		robots: "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%e3%83%84\n",
		probes: []probe{{"FooBot", "http://foo.bar/foo/bar/%E3%83%84", true}},
	},
	{
		name:   "encoding: escaped unreserved decoded (RFC table; Google differs)",
		robots: "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%62%61%7A\n",
		probes: []probe{{"FooBot", "http://foo.bar/foo/bar/baz", true}, {"FooBot", "http://foo.bar/foo/bar/%62%61%7A", true}},
	},
	{
		name:   "encoding: escaped reserved kept",
		robots: "User-agent: FooBot\nDisallow: /a%2Fb\n",
		probes: []probe{{"FooBot", "/a%2fb", false}, {"FooBot", "/a/b", true}},
	},
	{
		name:   "encoding: %2A is a literal star",
		robots: "User-agent: FooBot\nDisallow: /a%2Ab\n",
		probes: []probe{{"FooBot", "/a%2Ab", false}, {"FooBot", "/axb", true}},
	},
	{
		name:   "encoding: space in pattern",
		robots: "User-agent: FooBot\nDisallow: /a b\n",
		probes: []probe{{"FooBot", "/a%20b", false}, {"FooBot", "/ab", true}},
	},
	{
		name:   "special characters: * in the middle",
		robots: "User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n",
		probes: []probe{
			{"FooBot", "http://foo.bar/foo/bar/quz", false},
			{"FooBot", "http://foo.bar/foo/quz", true},
			{"FooBot", "http://foo.bar/foo//quz", true},
			{"FooBot", "http://foo.bar/foo/bax/quz", true},
		},
	},
	{
		name:   "special characters: $",
		robots: "User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n",
		probes: []probe{
			{"FooBot", "http://foo.bar/foo/bar", false},
			{"FooBot", "http://foo.bar/foo/bar/qux", true},
			{"FooBot", "http://foo.bar/foo/bar/", true},
			{"FooBot", "http://foo.bar/foo/bar/baz", true},
		},
	},
	{
		name:   "special characters: # comments",
		robots: "User-agent: FooBot\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n",
		probes: []probe{{"FooBot", "http://foo.bar/foo/bar", true}, {"FooBot", "http://foo.bar/foo/quz", false}},
	},
	{
		name:   "$ inside a pattern is literal",
		robots: "User-agent: FooBot\nDisallow: /a$b\n",
		probes: []probe{{"FooBot", "/a$b", false}, {"FooBot", "/a", true}, {"FooBot", "/ab", true}},
	},
	{
		name:   "pattern * alone",
		robots: "User-agent: FooBot\nDisallow: *\n",
		probes: []probe{{"FooBot", "/", false}, {"FooBot", "/anything", false}},
	},
	{
		name:   "pattern without leading slash never matches",
		robots: "User-agent: FooBot\nDisallow: private\n",
		probes: []probe{{"FooBot", "/private", true}},
	},
	{
		name:   "robots.txt always allowed",
		robots: "User-agent: *\nDisallow: /\nDisallow: /robots.txt$\n",
		probes: []probe{{"x", "/robots.txt", true}, {"x", "http://h/robots.txt?x=1", true}, {"x", "/robots.txt.bak", false}},
	},
	// Google's documentation examples ("URL matching based on path values").
	{
		name:   "google docs /fish",
		robots: "user-agent: FooBot\ndisallow: /\nallow: /fish\n",
		probes: []probe{
			{"FooBot", "/bar", false}, {"FooBot", "/fish", true}, {"FooBot", "/fish.html", true},
			{"FooBot", "/fish/salmon.html", true}, {"FooBot", "/fishheads", true},
			{"FooBot", "/fishheads/yummy.html", true}, {"FooBot", "/fish.html?id=anything", true},
			{"FooBot", "/Fish.asp", false}, {"FooBot", "/catfish", false}, {"FooBot", "/?id=fish", false},
		},
	},
	{
		name:   "google docs /fish* equals /fish",
		robots: "user-agent: FooBot\ndisallow: /\nallow: /fish*\n",
		probes: []probe{
			{"FooBot", "/bar", false}, {"FooBot", "/fish", true}, {"FooBot", "/fish.html", true},
			{"FooBot", "/fishheads/yummy.html", true}, {"FooBot", "/fish.html?id=anything", true},
			{"FooBot", "/Fish.bar", false}, {"FooBot", "/catfish", false}, {"FooBot", "/?id=fish", false},
		},
	},
	{
		name:   "google docs /fish/",
		robots: "user-agent: FooBot\ndisallow: /\nallow: /fish/\n",
		probes: []probe{
			{"FooBot", "/bar", false}, {"FooBot", "/fish/", true}, {"FooBot", "/fish/salmon", true},
			{"FooBot", "/fish/?salmon", true}, {"FooBot", "/fish/?id=anything", true},
			{"FooBot", "/fish", false}, {"FooBot", "/fish.html", false}, {"FooBot", "/Fish/Salmon.html", false},
		},
	},
	{
		name:   "google docs /*.php",
		robots: "user-agent: FooBot\ndisallow: /\nallow: /*.php\n",
		probes: []probe{
			{"FooBot", "/bar", false}, {"FooBot", "/filename.php", true}, {"FooBot", "/folder/filename.php", true},
			{"FooBot", "/folder/filename.php?parameters", true}, {"FooBot", "//folder/any.php.file.html", true},
			{"FooBot", "/filename.php/", true}, {"FooBot", "/index?f=filename.php/", true},
			{"FooBot", "/php/", false}, {"FooBot", "/index?php", false}, {"FooBot", "/windows.PHP", false},
		},
	},
	{
		name:   "google docs /*.php$",
		robots: "user-agent: FooBot\ndisallow: /\nallow: /*.php$\n",
		probes: []probe{
			{"FooBot", "/bar", false}, {"FooBot", "/filename.php", true}, {"FooBot", "/folder/filename.php", true},
			{"FooBot", "/filename.php?parameters", false}, {"FooBot", "/filename.php/", false},
			{"FooBot", "/filename.php5", false}, {"FooBot", "/php/", false}, {"FooBot", "/filename?php", false},
			{"FooBot", "/aaaphpaaa", false}, {"FooBot", "//windows.PHP", false},
		},
	},
	{
		name:   "google docs /fish*.php",
		robots: "user-agent: FooBot\ndisallow: /\nallow: /fish*.php\n",
		probes: []probe{
			{"FooBot", "/bar", false}, {"FooBot", "/fish.php", true},
			{"FooBot", "/fishheads/catfish.php?parameters", true}, {"FooBot", "/Fish.PHP", false},
		},
	},
	{
		name:   "google docs precedence",
		robots: "user-agent: FooBot\nallow: /p\ndisallow: /\n\nuser-agent: BarBot\nallow: /page\ndisallow: /*.htm\n\nuser-agent: BazBot\nallow: /$\ndisallow: /\n",
		probes: []probe{
			{"FooBot", "http://example.com/page", true},
			{"BarBot", "http://example.com/page.htm", false},
			{"BazBot", "http://example.com/", true},
			{"BazBot", "http://example.com/page.html", false},
		},
	},
	{
		name:   "frequent typos accepted",
		robots: "useragent: a\ndisalow: /1\n\nuser agent: b\ndissallow: /2\n\nuser-agent: c\ndissalow: /3\ndiasllow: /4\ndisallaw: /5\n",
		probes: []probe{{"a", "/1", false}, {"b", "/2", false}, {"c", "/3", false}, {"c", "/4", false}, {"c", "/5", false}, {"c", "/6", true}},
	},
	{
		name:   "unlisted typos and prefixes not accepted",
		robots: "user-agent: a\nalow: /1\ndisallowed: /2\ndisallows: /3\n",
		probes: []probe{{"a", "/2", true}, {"a", "/3", true}},
	},
	{
		name:   "junk lines between directives",
		robots: "<html>\nUser-agent: FooBot\n\x00\xff garbage\n:::\n: /\nDisallow: /x\n}{\n",
		probes: []probe{{"FooBot", "/x", false}, {"FooBot", "/y", true}},
	},
	{
		name:   "html page instead of robots.txt",
		robots: "<!DOCTYPE html><html><head><title>Not found</title></head><body>Disallow: /</body></html>",
		probes: []probe{{"FooBot", "/", true}},
	},
	{
		name:   "member lines end a user-agent run, non-members do not",
		robots: "User-agent: a\nSitemap: http://x/s.xml\nUser-agent: b\nCrawl-delay: 1\nUser-agent: c\nDisallow: /\n",
		probes: []probe{{"a", "/x", true}, {"b", "/x", true}, {"c", "/x", false}},
	},
	{
		name:   "whitespace around keys and values",
		robots: "  User-agent :\tFooBot  \n\tDisallow\t:  /x  \n",
		probes: []probe{{"FooBot", "/x", false}, {"FooBot", "/y", true}},
	},
	{
		name:   "CRLF line endings",
		robots: "User-agent: FooBot\r\nDisallow: /x\r\nAllow: /x/y\r\n",
		probes: []probe{{"FooBot", "/x", false}, {"FooBot", "/x/y", true}},
	},
	{
		name:   "CR line endings",
		robots: "User-agent: FooBot\rDisallow: /x\rAllow: /x/y\r",
		probes: []probe{{"FooBot", "/x", false}, {"FooBot", "/x/y", true}},
	},
	{
		name:   "BOM skipped",
		robots: "\xef\xbb\xbfUser-agent: FooBot\nDisallow: /x\n",
		probes: []probe{{"FooBot", "/x", false}},
	},
	{
		name:   "partial BOM (2 bytes) skipped",
		robots: "\xef\xbbUser-agent: FooBot\nDisallow: /x\n",
		probes: []probe{{"FooBot", "/x", false}},
	},
	{
		name:   "partial BOM (1 byte) skipped",
		robots: "\xefUser-agent: FooBot\nDisallow: /x\n",
		probes: []probe{{"FooBot", "/x", false}},
	},
	{
		name:   "broken BOM makes the first line junk",
		robots: "\xef\x11\xbfUser-agent: FooBot\nDisallow: /x\n",
		probes: []probe{{"FooBot", "/x", true}},
	},
	{
		name:   "BOM in the middle is junk",
		robots: "User-agent: FooBot\n\xef\xbb\xbfDisallow: /x\n",
		probes: []probe{{"FooBot", "/x", true}},
	},
}

// withIndex runs f twice: with the package's index threshold, and with
// every rule set indexed, so both matching paths see each case.
func withIndex(t *testing.T, f func(t *testing.T)) {
	t.Run("scan", f)
	t.Run("index", func(t *testing.T) {
		old := indexThreshold
		indexThreshold = 0
		defer func() { indexThreshold = old }()
		f(t)
	})
}

func TestConformance(t *testing.T) {
	withIndex(t, func(t *testing.T) {
		for _, tc := range conformance {
			t.Run(tc.name, func(t *testing.T) {
				r := Parse([]byte(tc.robots))
				for _, p := range tc.probes {
					if got := r.Allowed(p.ua, p.url); got != p.want {
						t.Errorf("Allowed(%q, %q) = %v, want %v", p.ua, p.url, got, p.want)
					}
				}
			})
		}
	})
}

func TestTestVerdict(t *testing.T) {
	const file = "User-agent: *\n" + // 1
		"Disallow: /private/\n" + // 2
		"Allow: /private/ok\n" + // 3
		"Disallow: /*.pdf$\n" // 4
	r := Parse([]byte(file))
	tests := []struct {
		path string
		want Verdict
	}{
		{"/", Verdict{Allowed: true}},
		{"/private/x", Verdict{Allowed: false, Rule: Rule{Pattern: "/private/", Line: 2}}},
		{"/private/ok", Verdict{Allowed: true, Rule: Rule{Allow: true, Pattern: "/private/ok", Line: 3}}},
		{"/a.pdf", Verdict{Allowed: false, Rule: Rule{Pattern: "/*.pdf$", Line: 4}}},
		{"/a.pdf#frag", Verdict{Allowed: false, Rule: Rule{Pattern: "/*.pdf$", Line: 4}}},
		{"/robots.txt", Verdict{Allowed: true, Rule: Rule{Allow: true, Pattern: "/robots.txt"}}},
		{"/robots%2etxt", Verdict{Allowed: true, Rule: Rule{Allow: true, Pattern: "/robots.txt"}}},
		{"//private/x", Verdict{Allowed: true}}, // a request path, not a host
		{"https://example.com/private/x", Verdict{Allowed: false, Rule: Rule{Pattern: "/private/", Line: 2}}},
		{"", Verdict{Allowed: true}},
	}
	for _, tt := range tests {
		if got := r.Test("bot", tt.path); got != tt.want {
			t.Errorf("Test(bot, %q) = %+v, want %+v", tt.path, got, tt.want)
		}
	}
}

// Line numbers count LF, CRLF and CR alike, with or without a final
// newline (Google's ID_LinesNumbersAreCountedCorrectly).
func TestLineNumbers(t *testing.T) {
	lines := []string{"User-Agent: foo", "Allow: /some/path", "User-Agent: bar", "", "", "Disallow: /"}
	files := map[string]string{
		"LF":         strings.Join(lines, "\n") + "\n",
		"CRLF":       strings.Join(lines, "\r\n") + "\r\n",
		"CR":         strings.Join(lines, "\r") + "\r",
		"no final":   strings.Join(lines, "\n"),
		"mixed":      "User-Agent: foo\nAllow: /some/path\r\nUser-Agent: bar\n\r\n\nDisallow: /",
		"BOM and LF": "\xef\xbb\xbf" + strings.Join(lines, "\n"),
	}
	for name, file := range files {
		t.Run(name, func(t *testing.T) {
			r := Parse([]byte(file))
			if got := r.Test("bar", "/x").Rule.Line; got != 6 {
				t.Errorf("Test(bar, /x).Rule.Line = %d, want 6", got)
			}
			if got := r.Test("foo", "/some/path").Rule.Line; got != 2 {
				t.Errorf("Test(foo, /some/path).Rule.Line = %d, want 2", got)
			}
			if got, want := r.Group("bar").Line(), 3; got != want {
				t.Errorf("Group(bar).Line() = %d, want %d", got, want)
			}
		})
	}
}

func TestSitemaps(t *testing.T) {
	tests := []struct {
		name, file string
		want       []string
	}{
		{"none", "User-agent: *\nDisallow: /\n", nil},
		{"after groups", "User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\nSitemap: http://foo.bar/sitemap.xml\n",
			[]string{"http://foo.bar/sitemap.xml"}},
		{"before groups and inside", "Sitemap: http://a/1.xml\nUser-agent: *\nsite-map: http://a/2.xml\nDisallow: /\nSITEMAP:http://a/3.xml # c\n",
			[]string{"http://a/1.xml", "http://a/2.xml", "http://a/3.xml"}},
		{"empty value ignored", "Sitemap:\nSitemap: \n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Parse([]byte(tt.file)).Sitemaps(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Sitemaps() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestGroup(t *testing.T) {
	const file = "User-agent: *\nDisallow: /a\n\nUser-agent: FooBot\nUser-agent: BarBot\nAllow: /b\nDisallow: /c\n\n" +
		"User-agent: foobot\nDisallow: /d\n"
	r := Parse([]byte(file))
	tests := []struct {
		ua        string
		wantAgent string
		wantLine  int
		wantRules []Rule
	}{
		{"foobot/1.0", "FooBot", 4, []Rule{{Allow: true, Pattern: "/b", Line: 6}, {Pattern: "/c", Line: 7}, {Pattern: "/d", Line: 10}}},
		{"BARBOT", "BarBot", 5, []Rule{{Allow: true, Pattern: "/b", Line: 6}, {Pattern: "/c", Line: 7}}},
		{"other", "*", 1, []Rule{{Pattern: "/a", Line: 2}}},
		{"", "*", 1, []Rule{{Pattern: "/a", Line: 2}}},
	}
	for _, tt := range tests {
		g := r.Group(tt.ua)
		if g.Agent() != tt.wantAgent || g.Line() != tt.wantLine || !reflect.DeepEqual(g.Rules(), tt.wantRules) {
			t.Errorf("Group(%q) = {%q, line %d, %v}, want {%q, line %d, %v}",
				tt.ua, g.Agent(), g.Line(), g.Rules(), tt.wantAgent, tt.wantLine, tt.wantRules)
		}
	}
	// Parse and Group fold case alike, ASCII only, also for names outside
	// RFC 9309's token alphabet and past Group's 64-byte fast path.
	long := strings.Repeat("Long", 20) + "Bot"
	odd := Parse([]byte("User-agent: BÖT\nUser-agent: " + long + "\nDisallow: /\n"))
	for _, ua := range []string{"BÖT", "bÖt", long, strings.ToUpper(long)} {
		if g := odd.Group(ua); g == nil || g.Agent() == "*" {
			t.Errorf("Group(%q) = %v, want the file's own group", ua, g)
		}
	}
	if g := Parse([]byte("User-agent: a\nDisallow: /\n")).Group("b"); g != nil {
		t.Errorf("Group(b) with no * group = %v, want nil", g)
	}
	var nilGroup *Group
	if v := nilGroup.Test("/x"); !v.Allowed {
		t.Errorf("(*Group)(nil).Test(/x) = %+v, want allowed", v)
	}
	var nilRobots *Robots
	if !nilRobots.Allowed("x", "/y") || nilRobots.Sitemaps() != nil || nilRobots.Source() != Parsed {
		t.Errorf("(*Robots)(nil) does not allow everything")
	}
}

// TestMaxSize checks the 500 KiB parse limit (RFC 9309 §2.5): a rule past
// it is ignored, a rule before it is obeyed, and the line the limit cuts is
// dropped whole.
func TestMaxSize(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("User-agent: *\nDisallow: /early\n")
	filler := "# " + strings.Repeat("x", 78) + "\n"
	for b.Len()+len(filler) <= MaxSize-20 {
		b.WriteString(filler)
	}
	for b.Len() < MaxSize-10 {
		b.WriteString("#\n")
	}
	b.WriteString("Disallow: /cut-in-two-by-the-limit\n") // crosses MaxSize
	b.WriteString("Disallow: /late\n")
	if b.Len() <= MaxSize {
		t.Fatalf("test file is %d bytes, want more than %d", b.Len(), MaxSize)
	}
	r := Parse(b.Bytes())
	for _, p := range []probe{
		{"bot", "/early", false},
		{"bot", "/late", true},
		{"bot", "/cut-in-two-by-the-limit", true},
		{"bot", "/cut", true}, // not obeyed as a truncated "Disallow: /cu"
	} {
		if got := r.Allowed(p.ua, p.url); got != p.want {
			t.Errorf("Allowed(%q, %q) = %v, want %v", p.ua, p.url, got, p.want)
		}
	}
}

func TestDisallowedError(t *testing.T) {
	err := error(&DisallowedError{URL: "https://example.com/private/x", Rule: Rule{Pattern: "/private/", Line: 7}})
	if !errors.Is(err, ErrDisallowed) {
		t.Errorf("errors.Is(%v, ErrDisallowed) = false, want true", err)
	}
	var de *DisallowedError
	if !errors.As(fmt.Errorf("polite: %w", err), &de) || de.Rule.Line != 7 {
		t.Errorf("errors.As(wrapped, *DisallowedError) = %v, want rule on line 7", de)
	}
	const want = `robots: https://example.com/private/x disallowed by line 7 "Disallow: /private/"`
	if got := err.Error(); got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	implied := &DisallowedError{URL: "https://example.com/", Rule: Rule{Pattern: "/"}}
	const wantImplied = `robots: https://example.com/ disallowed by implied rule "Disallow: /"`
	if got := implied.Error(); got != wantImplied {
		t.Errorf("Error() = %q, want %q", got, wantImplied)
	}
}

func TestRuleString(t *testing.T) {
	for _, tt := range []struct {
		r    Rule
		want string
	}{
		{Rule{Allow: true, Pattern: "/a"}, "Allow: /a"},
		{Rule{Pattern: "/*.gif$"}, "Disallow: /*.gif$"},
		{Rule{}, "(none)"},
	} {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.r, got, tt.want)
		}
	}
}

// TestManyAgentsOneGroup guards the merge against copying: thousands of
// agents naming one large group must not multiply it.
func TestManyAgentsOneGroup(t *testing.T) {
	var b strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&b, "User-agent: bot%d\n", i)
	}
	for i := range 10000 {
		fmt.Fprintf(&b, "Disallow: /p%d/\n", i)
	}
	for i := range 10000 {
		fmt.Fprintf(&b, "User-agent: bot%d\nDisallow: /own%d\n", i, i)
	}
	r := Parse([]byte(b.String()))
	g := r.Group("bot42")
	if len(g.parts) != 2 || g.parts[0] != r.Group("bot7").parts[0] {
		t.Fatalf("Group(bot42) has %d parts, want 2 with the big one shared", len(g.parts))
	}
	for _, p := range []probe{{"bot42", "/p9999/x", false}, {"bot42", "/own42", false}, {"bot42", "/own43", true}} {
		if got := r.Allowed(p.ua, p.url); got != p.want {
			t.Errorf("Allowed(%q, %q) = %v, want %v", p.ua, p.url, got, p.want)
		}
	}
}

// largeRobots generates a robots.txt just under MaxSize: a "*" group of
// about 15,000 rules of the shapes real large files have (long literal
// paths, wildcards, '$' anchors), named groups, Crawl-delay and sitemaps.
func largeRobots() []byte {
	var b bytes.Buffer
	b.WriteString("# generated\nSitemap: https://example.com/sitemap.xml\n")
	for k := range 50 {
		fmt.Fprintf(&b, "User-agent: bot%d\nCrawl-delay: %d\nDisallow: /bot%d/\nAllow: /bot%d/public\n\n", k, k%10, k, k)
	}
	b.WriteString("User-agent: *\nCrawl-delay: 2.5\nDisallow: /*.pdf$\nDisallow: /*?sessionid=\nAllow: /$\n")
	for i := 0; b.Len() < MaxSize-200; i++ {
		switch i % 5 {
		case 0:
			fmt.Fprintf(&b, "Disallow: /section%d/item/%d/\n", i%97, i)
		case 1:
			fmt.Fprintf(&b, "Allow: /section%d/item/%d/public\n", i%97, i)
		case 2:
			fmt.Fprintf(&b, "Disallow: /catalog/%d/*/print$\n", i)
		case 3:
			fmt.Fprintf(&b, "Disallow: /*/tag/%d-*\n", i)
		case 4:
			fmt.Fprintf(&b, "Disallow: /p/%x\n", i*7919)
		}
	}
	b.WriteString("Sitemap: https://example.com/sitemap2.xml\n")
	return b.Bytes()
}

func BenchmarkParse500KiB(b *testing.B) {
	data := largeRobots()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		Parse(data)
	}
}

var benchPaths = []string{
	"/",
	"/section17/item/42?ref=home",
	"/section3/item/16/public/page.html",
	"/catalog/7/abc/print",
	"/a/b/tag/1003-x",
	"/docs/report.pdf",
	"/p/1e2a9",
	"/some/where/else/entirely/that/no/rule/matches/at/all.html",
}

func BenchmarkTest(b *testing.B) {
	for _, bc := range []struct {
		name string
		data []byte
	}{
		{"500KiB", largeRobots()},
		{"small", []byte("User-agent: *\nDisallow: /private/\nAllow: /private/ok\nDisallow: /*.pdf$\n" +
			"User-agent: other\nDisallow: /\n")},
	} {
		r := Parse(bc.data)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				r.Allowed("polite/1.0 (+https://example.com/bot)", benchPaths[i%len(benchPaths)])
				i++
			}
		})
		b.Run(bc.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					r.Allowed("polite/1.0 (+https://example.com/bot)", benchPaths[i%len(benchPaths)])
					i++
				}
			})
		})
	}
}

// BenchmarkTestRequest measures the check the Transport makes per request,
// from a *url.URL: Test after RequestURI, which builds the path-and-query
// string for a URL with a query, against TestURL. "query" gives every URL
// of benchPaths a query.
func BenchmarkTestRequest(b *testing.B) {
	r := Parse(largeRobots())
	const ua = "polite/1.0 (+https://example.com/bot)"
	for _, set := range []struct{ name, suffix string }{{"paths", ""}, {"query", "?id=7&page=2"}} {
		var urls []*url.URL
		for _, p := range benchPaths {
			p, _, _ = strings.Cut(p, "?")
			u, err := url.Parse("https://example.com" + p + set.suffix)
			if err != nil {
				b.Fatal(err)
			}
			urls = append(urls, u)
		}
		for _, f := range []struct {
			name string
			test func(*url.URL) Verdict
		}{
			{"RequestURI", func(u *url.URL) Verdict { return r.Test(ua, u.RequestURI()) }},
			{"TestURL", func(u *url.URL) Verdict { return r.TestURL(ua, u) }},
		} {
			b.Run(f.name+"/"+set.name, func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					f.test(urls[i%len(urls)])
					i++
				}
			})
			b.Run(f.name+"/"+set.name+"/parallel", func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					i := 0
					for pb.Next() {
						f.test(urls[i%len(urls)])
						i++
					}
				})
			})
		}
	}
}

func BenchmarkTestPath(b *testing.B) {
	r := Parse(largeRobots())
	for _, p := range benchPaths {
		b.Run(strings.ReplaceAll(p, "/", "_"), func(b *testing.B) {
			for b.Loop() {
				r.Allowed("polite", p)
			}
		})
	}
}

// FuzzParse feeds Parse any bytes and Test any path: no panic, a verdict
// that agrees with its rule, and the indexed matcher agreeing with a plain
// scan. Time stays bounded because nothing backtracks.
func FuzzParse(f *testing.F) {
	for _, tc := range conformance {
		f.Add([]byte(tc.robots), tc.probes[0].ua, tc.probes[0].url)
	}
	f.Add([]byte("User-agent: *\nDisallow: /*a*a*a*a*a*a*a*b\nAllow: /*.gif$\n"), "x", "/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
	f.Add([]byte("\xef\xbb\xbfuser-agent: a\r\ncrawl-delay: 0.5\rrequest-rate: 3/10m\n"), "a/1.0", "/%e3%83%84?q=%41#x")
	f.Add([]byte("User-agent: *\nDisallow: /%\nAllow: /%2\nDisallow: /%zz$\nsitemap: x\n"), "", "%%41")
	f.Fuzz(func(t *testing.T, data []byte, ua, path string) {
		r := Parse(data)
		r.Sitemaps()
		for _, agent := range []string{ua, "*", "", "FooBot/1.0"} {
			g := r.Group(agent)
			v := r.Test(agent, path)
			if v.Rule.Line > 0 && v.Allowed != v.Rule.Allow {
				t.Errorf("Test(%q, %q) = %+v: verdict disagrees with its rule", agent, path, v)
			}
			if v.Rule.Line == 0 && !v.Allowed {
				t.Errorf("Test(%q, %q) = %+v: disallowed by no line of a parsed file", agent, path, v)
			}
			if got := r.Allowed(agent, path); got != r.Test(agent, pathOf(path)).Allowed {
				t.Errorf("Allowed(%q, %q) = %v, disagrees with Test", agent, path, got)
			}
			if u, err := url.Parse(path); err == nil {
				if got, want := r.TestURL(agent, u), r.Test(agent, u.RequestURI()); got != want {
					t.Errorf("TestURL(%q, %q) = %+v, Test(RequestURI) = %+v", agent, path, got, want)
				}
			}
			DelayPolicy{}.Delay(g)
			if g == nil {
				continue
			}
			p := normalise(pathOf(path))
			for _, set := range g.parts {
				indexed := buildRuleSet(slices.Clone(set.rules), true)
				got, gotOK := indexed.find(p)
				want, wantOK := set.scan(p)
				if got != want || gotOK != wantOK {
					t.Errorf("indexed find(%q) = %+v, %v; scan = %+v, %v", p, got, gotOK, want, wantOK)
				}
			}
		}
	})
}
