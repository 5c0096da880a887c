package robots

import (
	"math/rand/v2"
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
