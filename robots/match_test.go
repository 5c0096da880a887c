package robots

import (
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"/", "/", true},
		{"/", "/anything", true},
		{"/a", "/", false},
		{"/fish", "/fish", true},
		{"/fish", "/fishheads", true},
		{"/fish", "/Fish", false},
		{"/fish$", "/fish", true},
		{"/fish$", "/fishy", false},
		{"$", "", true},
		{"/$", "/", true},
		{"/$", "/a", false},
		{"*", "/", true},
		{"*$", "/x", true},
		{"/*", "/", true},
		{"/*$", "/x/y", true},
		{"*.gif$", "/a/b.gif", true},
		{"*.gif$", "/a/b.gif?x", false},
		{"*.gif", "/a/b.gif?x", true},
		{"/*.php", "/filename.php", true},
		{"/*.php", "/php/", false},
		{"/*.php$", "/a.php.php", true},
		{"/*.php$", "/a.php5", false},
		{"/a*b*c", "/abc", true},
		{"/a*b*c", "/a-b-c-d", true},
		{"/a*b*c", "/acb", false},
		{"/a**b", "/ab", true},
		{"/a*b$", "/ab-ab", true},
		{"/a*b$", "/ab-a", false},
		{"/a*ab$", "/ab", false}, // the last segment may not overlap the first
		{"/a*ab$", "/aab", true},
		{"/a*a*a*a*b", "/aaaa", false},
		{"/a$b", "/a$b", true},
		{"/a$b", "/a", false},
		{"/*a*a*a*a*b", "/" + strings.Repeat("a", 10000), false},
		{"/*a*a*a*a*b", "/" + strings.Repeat("a", 10000) + "b", true},
	}
	for _, tt := range tests {
		path := tt.path
		if len(path) > 40 {
			path = path[:20] + "…"
		}
		if got := match(tt.pattern, tt.path); got != tt.want {
			t.Errorf("match(%q, %q) = %v, want %v", tt.pattern, path, got, tt.want)
		}
	}
}

// TestMatchPathological runs patterns that make a backtracking matcher take
// exponential time. The greedy matcher is linear in them; a regression
// would show as a test timeout, no wall clock needed.
func TestMatchPathological(t *testing.T) {
	path := "/" + strings.Repeat("a", 100_000)
	pattern := "/" + strings.Repeat("*a", 5_000) + "*b"
	if match(pattern, path) {
		t.Errorf("match(%q…, %q…) = true, want false", pattern[:10], path[:10])
	}
	if !match(pattern, path+"b") {
		t.Errorf("match(%q…, %q…b) = false, want true", pattern[:10], path[:10])
	}
}

func TestNormalise(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/a/b/c", "/a/b/c"},
		{"http://www.example.com", "http://www.example.com"},
		{"á", "%C3%A1"},
		{"/ツ", "/%E3%83%84"},
		{"%aa", "%AA"},
		{"/%e3%83%84", "/%E3%83%84"},
		{"/%62%61%7A", "/baz"},
		{"/%7e%2D%2e%5F", "/~-._"},
		{"/%2F%2f", "/%2F%2F"},
		{"/%2a", "/%2A"},
		{"/%", "/%"},
		{"/%4", "/%4"},
		{"/%zz", "/%zz"},
		{"/%%41", "/%A"},
		{"/a b\t", "/a%20b%09"},
		{"/a|b{c}", "/a%7Cb%7Bc%7D"},
		{"/*.gif$", "/*.gif$"},
		{"/?q=a&b=c;d:e@f", "/?q=a&b=c;d:e@f"},
		{"\x7f\x00", "%7F%00"},
	}
	for _, tt := range tests {
		if got := normalise(tt.in); got != tt.want {
			t.Errorf("normalise(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := normalise(tt.want); got != tt.want {
			t.Errorf("normalise(%q) = %q, want it unchanged (idempotent)", tt.want, got)
		}
	}
}

// TestPathOf follows Google's TestGetPathParamsQuery.
func TestPathOf(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "/"},
		{"http://www.example.com", "/"},
		{"http://www.example.com/", "/"},
		{"http://www.example.com/a", "/a"},
		{"http://www.example.com/a/", "/a/"},
		{"http://www.example.com/a/b?c=http://d.e/", "/a/b?c=http://d.e/"},
		{"http://www.example.com/a/b?c=d&e=f#fragment", "/a/b?c=d&e=f"},
		{"http://www.example.com?a", "/?a"},
		{"example.com", "/"},
		{"example.com/", "/"},
		{"example.com/a", "/a"},
		{"example.com/a/b?c=d&e=f#fragment", "/a/b?c=d&e=f"},
		{"a", "/"},
		{"a/", "/"},
		{"/a", "/a"},
		{"a/b", "/b"},
		{"example.com?a", "/?a"},
		{"example.com/a;b#c", "/a;b"},
		{"//a/b/c", "/b/c"},
		{"/a?u=http://x/y", "/a?u=http://x/y"},
		{"#frag", "/"},
	}
	for _, tt := range tests {
		if got := pathOf(tt.in); got != tt.want {
			t.Errorf("pathOf(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTestAllocs(t *testing.T) {
	r := Parse(largeRobots())
	small := Parse([]byte("User-agent: *\nDisallow: /private/\nAllow: /private/ok\nDisallow: /*.pdf$\n"))
	for _, tt := range []struct {
		name string
		r    *Robots
		path string
	}{
		{"small", small, "/private/x/y?z=1"},
		{"large", r, "/section17/item/42?ref=home"},
		{"large url", r, "https://example.com/section17/item/42?ref=%2F"},
	} {
		if n := testing.AllocsPerRun(100, func() { tt.r.Allowed("polite/1.0 (+https://x)", tt.path) }); n != 0 {
			t.Errorf("%s: Allowed(%q) allocates %v times, want 0", tt.name, tt.path, n)
		}
	}
}

// TestIndexMatchesScan checks the index against a plain scan on random
// rule sets over a small alphabet, where prefixes and grams collide often.
func TestIndexMatchesScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	word := func(alphabet string, n int) string {
		b := make([]byte, rng.IntN(n)+1)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for round := range 200 {
		var rules []Rule
		for i := range 1 + rng.IntN(80) {
			p := word("/ab*c", 8)
			if rng.IntN(4) == 0 {
				p += "$"
			}
			rules = append(rules, Rule{Allow: rng.IntN(2) == 0, Pattern: p, Line: i + 1})
		}
		scan := buildRuleSet(slices.Clone(rules), false)
		index := buildRuleSet(slices.Clone(rules), true)
		for range 50 {
			path := "/" + word("/abc", 12)
			got, gotOK := index.find(path)
			want, wantOK := scan.find(path)
			if got != want || gotOK != wantOK {
				t.Fatalf("round %d: indexed find(%q) = %+v, %v; scan = %+v, %v", round, path, got, gotOK, want, wantOK)
			}
		}
	}
}

// TestTestURL checks that TestURL gives Test's verdict for RequestURI, on
// every probe of the conformance table and every case of TestMatch (as a
// one-rule file), plus URLs that exercise each branch of RequestURI.
func TestTestURL(t *testing.T) {
	type check struct {
		r    *Robots
		ua   string
		urls []string
	}
	var checks []check
	for _, tc := range conformance {
		c := check{r: Parse([]byte(tc.robots))}
		for _, p := range tc.probes {
			c.ua = p.ua
			c.urls = append(c.urls, p.url, "https://example.com"+p.url)
		}
		checks = append(checks, c)
	}
	for _, tt := range []struct{ pattern, path string }{
		{"/", "/"}, {"/fish$", "/fish"}, {"$", ""}, {"/$", "/"}, {"*$", "/x"},
		{"*.gif$", "/a/b.gif?x"}, {"*.gif", "/a/b.gif?x"}, {"/*.php$", "/a.php.php"},
		{"/a*b$", "/ab-ab"}, {"/a$b", "/a$b"}, {"/*?", "/x?"}, {"/*?$", "/x?"},
		{"/*a*a*a*a*b", "/" + strings.Repeat("a", 600) + "?b"},
	} {
		r := Parse([]byte("User-agent: *\nDisallow: " + tt.pattern + "\n"))
		checks = append(checks, check{r: r, ua: "bot", urls: []string{"https://example.com" + tt.path}})
	}
	branches := []string{
		"https://example.com", "https://example.com/", "https://example.com?", "https://example.com?q",
		"https://example.com/a?", "https://example.com/a?b=c#frag", "https://example.com/a%2Fb?c",
		"https://example.com/a b?c d", "https://example.com/ツ?ツ", "https://example.com/%7e?%7e",
		"https://example.com/robots.txt?x", "https://example.com/private/x?" + strings.Repeat("q", 600),
		"https:opaque?x", "https://example.com//private/x?y", "*", "/private/x?y", "//h/private/x?y",
	}
	small := Parse([]byte("User-agent: *\nDisallow: /private/\nAllow: /*?$\nDisallow: /*q\n"))
	checks = append(checks, check{r: small, ua: "bot", urls: branches}, check{r: nil, ua: "bot", urls: branches})
	withIndex(t, func(t *testing.T) {
		n := 0
		for _, c := range checks {
			for _, s := range c.urls {
				u, err := url.Parse(s)
				if err != nil {
					continue
				}
				n++
				if got, want := c.r.TestURL(c.ua, u), c.r.Test(c.ua, u.RequestURI()); got != want {
					t.Errorf("TestURL(%q, %q) = %+v, Test(%q, %q) = %+v", c.ua, s, got, c.ua, u.RequestURI(), want)
				}
			}
		}
		if n < 100 {
			t.Errorf("only %d URLs compared", n)
		}
	})
	// Fields url.Parse never sets but a caller may.
	u := &url.URL{Scheme: "https", Host: "example.com", Path: "/private/x", ForceQuery: true}
	if got, want := small.TestURL("bot", u), small.Test("bot", u.RequestURI()); got != want {
		t.Errorf("TestURL(ForceQuery) = %+v, want %+v", got, want)
	}
}

func TestTestURLAllocs(t *testing.T) {
	r := Parse(largeRobots())
	small := Parse([]byte("User-agent: *\nDisallow: /private/\nAllow: /private/ok\nDisallow: /*.pdf$\n"))
	for _, tt := range []struct {
		name string
		r    *Robots
		url  string
	}{
		{"small", small, "https://example.com/private/x/y"},
		{"small query", small, "https://example.com/private/x/y?z=1"},
		{"large", r, "https://example.com/section17/item/42"},
		{"large query", r, "https://example.com/section17/item/42?ref=%2F&" + strings.Repeat("x", 400)},
		{"large empty query", r, "https://example.com/a?"},
	} {
		u, err := url.Parse(tt.url)
		if err != nil {
			t.Fatal(err)
		}
		// An allocation here also means buf in testURL moved to the heap,
		// that is, Test began keeping its argument: see testURL.
		if n := testing.AllocsPerRun(100, func() { tt.r.TestURL("polite/1.0 (+https://x)", u) }); n != 0 {
			t.Errorf("%s: TestURL(%q) allocates %v times, want 0", tt.name, tt.url, n)
		}
	}
}
