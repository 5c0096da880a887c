package scope

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestParseMode(t *testing.T) {
	for _, m := range []Mode{Host, Domain, Prefix, Any} {
		got, err := ParseMode(m.String())
		if err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v, want %v", m.String(), got, err, m)
		}
	}
	for s, want := range map[string]Mode{"": Host, "DOMAIN": Domain, "Prefix": Prefix} {
		if got, err := ParseMode(s); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %v, %v, want %v", s, got, err, want)
		}
	}
	_, err := ParseMode("subdomain")
	if err == nil || err.Error() != `scope: mode "subdomain": want host, domain, prefix or any` {
		t.Errorf("ParseMode(subdomain) error = %v", err)
	}
	if got := Mode(9).String(); got != "Mode(9)" {
		t.Errorf("Mode(9).String() = %q", got)
	}
}

func TestReasons(t *testing.T) {
	seen := map[Reason]bool{}
	snake := regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)
	for _, r := range Reasons {
		if r == OK || seen[r] || !snake.MatchString(string(r)) {
			t.Errorf("Reasons holds %q: want distinct snake_case reasons, not OK", r)
		}
		seen[r] = true
	}
	if len(Reasons) != 12 {
		t.Errorf("len(Reasons) = %d, want 12", len(Reasons))
	}
}

type link struct {
	raw   string
	depth int
	want  Reason
}

// runChecks checks each link against a scope of rules r and seeds.
func runChecks(t *testing.T, r Rules, seeds []string, links []link) {
	t.Helper()
	s := New(r)
	for _, seed := range seeds {
		if err := s.AddSeed(seed); err != nil {
			t.Fatalf("AddSeed(%q): %v", seed, err)
		}
	}
	for _, l := range links {
		norm, why := s.Check(l.raw, l.depth)
		if why != l.want {
			t.Errorf("Check(%q, %d) = %q, %q, want %q (roots %q)", l.raw, l.depth, norm, why, l.want, s.Roots())
		}
		if (norm == "") != (why == BadURL) {
			t.Errorf("Check(%q, %d) = %q, %q: a URL exactly when it parsed", l.raw, l.depth, norm, why)
		}
	}
}

func TestModes(t *testing.T) {
	tests := []struct {
		name  string
		mode  Mode
		seeds []string
		links []link
	}{
		{"host", Host, []string{"https://www.example.com/start", "http://localhost:8080/"}, []link{
			{"https://www.example.com/other", 0, OK},
			{"http://WWW.EXAMPLE.COM:80/x", 0, OK}, // the scheme does not matter
			{"https://www.example.com:8443/", 0, OffScope},
			{"https://example.com/", 0, OffScope},
			{"https://a.www.example.com/", 0, OffScope},
			{"http://localhost:8080/a", 0, OK},
			{"http://localhost/a", 0, OffScope},
			{"https://www.example.com.evil.test/", 0, OffScope},
			{"mailto:a@www.example.com", 0, BadURL},
		}},
		{"domain", Domain, []string{"https://a.example.co.uk/", "http://127.0.0.1:8080/", "http://localhost/", "http://[::1]/", "https://me.github.io/"}, []link{
			{"https://b.example.co.uk/", 0, OK},
			{"https://example.co.uk/", 0, OK},
			{"http://x.y.example.co.uk:8080/", 0, OK},
			{"https://other.co.uk/", 0, OffScope},
			{"https://co.uk/", 0, OffScope},
			{"http://127.0.0.1/", 0, OK}, // the port does not matter
			{"http://127.0.0.2/", 0, OffScope},
			{"http://localhost:3000/", 0, OK},
			{"http://a.localhost/", 0, OffScope},
			{"http://[::1]:9000/", 0, OK},
			{"http://[::2]/", 0, OffScope},
			{"https://me.github.io/x", 0, OK},
			{"https://you.github.io/", 0, OffScope}, // a private suffix
		}},
		{"prefix", Prefix, []string{"http://h/docs/a.html", "https://h/blog/2026/", "http://other/"}, []link{
			{"http://h/docs/", 0, OK},
			{"http://h/docs/b/c.html?x=1", 0, OK},
			{"http://h/docs", 0, OffScope},
			{"http://h/", 0, OffScope},
			{"http://h/docsx/", 0, OffScope},
			{"https://h/docs/", 0, OffScope}, // another scheme
			{"http://h:8080/docs/", 0, OffScope},
			{"https://h/blog/2026/01/post", 0, OK},
			{"https://h/blog/2025/", 0, OffScope},
			{"http://h/docs/../admin/", 0, OffScope}, // normalised first
			{"http://other/anything", 0, OK},
		}},
		{"any", Any, nil, []link{
			{"https://anything.example/", 0, OK},
			{"http://10.0.0.1:1/", 0, OK},
			{"ftp://x/", 0, BadURL},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runChecks(t, Rules{Mode: tt.mode}, tt.seeds, tt.links)
		})
	}
}

func TestPrefixRootOfQuery(t *testing.T) {
	s := New(Rules{Mode: Prefix})
	if err := s.AddSeed("http://h/a/b?next=/c/d/"); err != nil {
		t.Fatal(err)
	}
	if got, want := s.Roots(), []string{"http://h/a/"}; !slices.Equal(got, want) {
		t.Errorf("Roots() = %q, want %q: the last '/' of the path, not of the query", got, want)
	}
}

func TestIncludeExclude(t *testing.T) {
	r := Rules{
		Mode:    Any,
		Include: []*regexp.Regexp{regexp.MustCompile(`/docs/`), regexp.MustCompile(`\.html$`)},
		Exclude: []*regexp.Regexp{regexp.MustCompile(`/private/`), regexp.MustCompile(`[?&]print=`)},
	}
	runChecks(t, r, nil, []link{
		{"http://h/docs/a", 0, OK},
		{"http://h/x.html", 0, OK},
		{"http://h/x.htm", 0, NotIncluded},
		{"http://h/docs/private/a", 0, Excluded}, // Exclude wins
		{"http://h/private/x.html", 0, Excluded},
		{"http://h/docs/a?print=1", 0, Excluded},
		{"http://h/%64ocs/a", 0, OK},        // matched normalised: %64 is "d"
		{"http://h/DOCS/a", 0, NotIncluded}, // the path keeps its case
	})
	// Only Exclude: everything else is taken.
	runChecks(t, Rules{Mode: Any, Exclude: r.Exclude}, nil, []link{
		{"http://h/x", 0, OK},
		{"http://h/private/x", 0, Excluded},
	})
}

func TestDepth(t *testing.T) {
	runChecks(t, Rules{Mode: Any, MaxDepth: 2}, nil, []link{
		{"http://h/a", 0, OK}, // found on a seed: depth 1
		{"http://h/a", 1, OK}, // depth 2
		{"http://h/a", 2, MaxDepth},
		{"http://h/a", 1 << 62, MaxDepth},
	})
	runChecks(t, Rules{Mode: Any}, nil, []link{{"http://h/a", 1000, OK}})
	runChecks(t, Rules{Mode: Any, MaxDepth: -1}, nil, []link{{"http://h/a", 1000, OK}})
}

func TestTraps(t *testing.T) {
	deep := "http://h"
	for i := range 32 {
		deep += fmt.Sprintf("/s%d", i)
	}
	tests := []struct {
		name  string
		rules Rules
		links []link
	}{
		{"segments default 32", Rules{}, []link{
			{deep, 0, OK},
			{deep + "/", 0, TrapDepth},
			{deep + "/x", 0, TrapDepth},
		}},
		{"segments", Rules{MaxSegments: 3}, []link{
			{"http://h/a/b/c", 0, OK},
			{"http://h/a/b/", 0, OK},
			{"http://h/a/b/c/", 0, TrapDepth},
			{"http://h/a//b/c", 0, TrapDepth}, // empty segments count
			{"http://h/a/b/c?x=/y/z", 0, OK},  // the query does not
			{"http://h/a/b/c/../d", 0, OK},    // dots are gone
		}},
		{"segments off", Rules{MaxSegments: -1, MaxRepeats: -1}, []link{
			{"http://h" + strings.Repeat("/a", 500), 0, OK},
		}},
		{"repeats default 2", Rules{}, []link{
			{"http://h/a/b/a/b/", 0, OK},
			{"http://h/a/b/a/b/a/", 0, TrapRepeat}, // "a" three times, not in a row
			{"http://h/a/a/a", 0, TrapRepeat},      // the last segment counts
			{"http://h/x/y/x/z/x.html", 0, OK},     // "x.html" is another segment
			{"http://h/a//b///c", 0, OK},           // empty segments ignored
			{"http://h/A/a/a", 0, OK},              // case-sensitive
			{"http://h/a/%61/a", 0, TrapRepeat},    // compared normalised
			{"http://h/a/b?x=/a/a/a", 0, OK},       // the query does not count
		}},
		{"repeats 1", Rules{MaxRepeats: 1}, []link{
			{"http://h/a/b/c", 0, OK},
			{"http://h/a/b/a", 0, TrapRepeat},
		}},
		{"length", Rules{MaxURLLength: 20}, []link{
			{"http://h/0123456789a", 0, OK},
			{"http://h/0123456789ab", 0, TooLong},
			{"http://user:pw@h:80/0123456789a#frag", 0, OK}, // measured normalised
		}},
		{"length default", Rules{}, []link{
			{"http://h/" + strings.Repeat("x", 2048-9), 0, OK},
			{"http://h/" + strings.Repeat("x", 2048-8), 0, TooLong},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.rules.Mode = Any
			runChecks(t, tt.rules, nil, tt.links)
		})
	}
}

// Check tries the rules in its documented order.
func TestCheckOrder(t *testing.T) {
	all := Rules{
		Mode:         Host,
		Include:      []*regexp.Regexp{regexp.MustCompile(`/in/`)},
		Exclude:      []*regexp.Regexp{regexp.MustCompile(`/out/`)},
		MaxDepth:     1,
		MaxSegments:  4,
		MaxRepeats:   1,
		MaxURLLength: 40,
	}
	runChecks(t, all, []string{"http://h/"}, []link{
		{"http://h/%", 5, BadURL},
		{"http://o/out/" + strings.Repeat("x", 40), 5, TooLong},
		{"http://o/out/x", 5, OffScope},
		{"http://h/out/in/x", 5, Excluded},
		{"http://h/x/x/x/x/x", 5, NotIncluded},
		{"http://h/in/x/x/x/x", 5, MaxDepth},
		{"http://h/in/x/x/x/x", 0, TrapDepth},
		{"http://h/in/x/x", 0, TrapRepeat},
		{"http://h/in/x", 0, OK},
	})
}

func TestCheckStripsWithNorm(t *testing.T) {
	s := New(Rules{Norm: NormOptions{StripParams: DefaultStripParams, SortQuery: true}})
	if err := s.AddSeed("https://h/?utm_source=x"); err != nil {
		t.Fatal(err)
	}
	norm, why := s.Check("https://h/p?b=1&utm_campaign=y&a=2#f", 0)
	if norm != "https://h/p?a=2&b=1" || why != OK {
		t.Errorf("Check = %q, %q, want %q, OK", norm, why, "https://h/p?a=2&b=1")
	}
}

func TestAddSeedError(t *testing.T) {
	s := New(Rules{})
	err := s.AddSeed("ftp://h/")
	if err == nil || !strings.HasPrefix(err.Error(), `scope: seed "ftp://h/": `) {
		t.Errorf("AddSeed(ftp://h/) error = %v, want it to name the seed", err)
	}
	if len(s.Roots()) != 0 {
		t.Errorf("Roots() = %q after a failed AddSeed", s.Roots())
	}
}

func TestRoots(t *testing.T) {
	seeds := []string{
		"https://B.example.co.uk/x", "https://a.example.co.uk/", "http://a.example.co.uk:8080/docs/x.html",
		"http://[::1]:80/", "https://127.0.0.1/a/", "http://localhost:3000/", "https://bücher.example/über/",
		"https://a.example.co.uk/", // again
	}
	want := map[Mode][]string{
		Host:   {"127.0.0.1", "[::1]", "a.example.co.uk", "a.example.co.uk:8080", "b.example.co.uk", "localhost:3000", "xn--bcher-kva.example"},
		Domain: {"127.0.0.1", "[::1]", "example.co.uk", "localhost", "xn--bcher-kva.example"},
		Prefix: {"http://[::1]/", "http://a.example.co.uk:8080/docs/", "http://localhost:3000/", "https://127.0.0.1/a/",
			"https://a.example.co.uk/", "https://b.example.co.uk/", "https://xn--bcher-kva.example/%C3%BCber/"},
		Any: {},
	}
	for _, m := range []Mode{Host, Domain, Prefix, Any} {
		t.Run(m.String(), func(t *testing.T) {
			s := New(Rules{Mode: m})
			for _, seed := range seeds {
				if err := s.AddSeed(seed); err != nil {
					t.Fatalf("AddSeed(%q): %v", seed, err)
				}
			}
			got := s.Roots()
			if !slices.Equal(got, want[m]) {
				t.Fatalf("Roots() = %q, want %q", got, want[m])
			}
			// Restored, the scope decides as the original does.
			r := New(Rules{Mode: m})
			for _, root := range got {
				if err := r.AddRoot(root); err != nil {
					t.Fatalf("AddRoot(%q): %v", root, err)
				}
			}
			if again := r.Roots(); !slices.Equal(again, got) {
				t.Errorf("Roots() after AddRoot = %q, want %q", again, got)
			}
			for _, l := range []string{"https://c.example.co.uk/", "http://a.example.co.uk:8080/docs/y", "https://x.test/", "http://[::1]/z"} {
				n1, w1 := s.Check(l, 0)
				n2, w2 := r.Check(l, 0)
				if n1 != n2 || w1 != w2 {
					t.Errorf("Check(%q) = %q, %q; restored %q, %q", l, n1, w1, n2, w2)
				}
			}
		})
	}
}

func TestAddRootErrors(t *testing.T) {
	tests := []struct {
		mode Mode
		root string
	}{
		{Host, ""},
		{Host, "Example.com"},
		{Host, "example.com."},
		{Host, "example.com:080"},
		{Host, "example.com:0"},
		{Host, "example.com/"},
		{Host, "http://example.com/"},
		{Host, "user@example.com"},
		{Host, "[::1"},
		{Host, "[0:0::1]"},
		{Host, "bücher.example"},
		{Domain, "a.example.co.uk"},
		{Domain, "example.com:8080"},
		{Domain, "EXAMPLE.com"},
		{Prefix, "http://h/a"},
		{Prefix, "http://h/a/?x=1/"},
		{Prefix, "HTTP://h/"},
		{Prefix, "http://h/./"},
		{Prefix, "h/"},
		{Any, "example.com"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v %s", tt.mode, tt.root), func(t *testing.T) {
			s := New(Rules{Mode: tt.mode})
			err := s.AddRoot(tt.root)
			if err == nil || !strings.HasPrefix(err.Error(), fmt.Sprintf("scope: root %q: ", tt.root)) {
				t.Errorf("AddRoot(%q) in %v = %v, want an error naming it", tt.root, tt.mode, err)
			}
			if len(s.Roots()) != 0 {
				t.Errorf("Roots() = %q after a failed AddRoot", s.Roots())
			}
		})
	}
	// What Roots returns is accepted, whatever the port.
	for _, root := range []string{"example.com:443", "example.com:80", "[::1]:443", "10.0.0.1:8080"} {
		if err := New(Rules{}).AddRoot(root); err != nil {
			t.Errorf("AddRoot(%q): %v", root, err)
		}
	}
}

func TestNewCopiesRules(t *testing.T) {
	r := Rules{Exclude: []*regexp.Regexp{regexp.MustCompile(`x`), nil}, Norm: NormOptions{StripParams: []string{"a"}}}
	s := New(r)
	r.Exclude[0] = regexp.MustCompile(`y`)
	r.Norm.StripParams[0] = "b"
	s.AddSeed("http://h/")
	if _, why := s.Check("http://h/x", 0); why != Excluded {
		t.Errorf("Check(/x) = %q after the caller changed its Rules, want excluded", why)
	}
	if n, _ := s.Check("http://h/?a=1&b=2", 0); n != "http://h/?b=2" {
		t.Errorf("Check = %q after the caller changed its StripParams", n)
	}
}

func TestNewUnknownModePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("New(Mode(7)) did not panic")
		}
	}()
	New(Rules{Mode: 7})
}

// AddSeed runs while Check does (run with -race).
func TestConcurrentAddSeedAndCheck(t *testing.T) {
	for _, m := range []Mode{Host, Domain, Prefix} {
		s := New(Rules{Mode: m})
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for i := range 200 {
					if w == 0 {
						if err := s.AddSeed(fmt.Sprintf("http://h%d.example/p%d/", i, i)); err != nil {
							t.Error(err)
						}
						continue
					}
					s.Check(fmt.Sprintf("http://h%d.example/p%d/x", i, i), 1)
					s.Roots()
				}
			})
		}
		wg.Wait()
		for i := range 200 {
			if _, why := s.Check(fmt.Sprintf("http://h%d.example/p%d/x", i, i), 1); why != OK {
				t.Errorf("%v: Check(h%d) = %q after its seed was added", m, i, why)
			}
		}
	}
}

// Check allocates nothing for a link in normal form.
func TestCheckDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, m := range []Mode{Host, Domain, Prefix, Any} {
		s := New(Rules{Mode: m, Exclude: []*regexp.Regexp{regexp.MustCompile(`/private/`)}})
		s.AddSeed("https://www.example.co.uk/docs/")
		for _, l := range []string{"https://www.example.co.uk/docs/a/b?c=1", "https://other.test/x", "mailto:x@y"} {
			if n := testing.AllocsPerRun(100, func() { s.Check(l, 1) }); n != 0 {
				t.Errorf("%v: Check(%q) allocates %v times, want 0", m, l, n)
			}
		}
	}
}
