package scope

import (
	"slices"
	"testing"
)

// A link is outside input: Normalize never panics, and what it returns
// is normal (checkNormal: idempotent, parses, a fixed point of the
// frontier's rules and of polite.HostKey). Normalising with options is
// normalising, then applying them.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		"http://example.com/", "HTTP://User:Pw@Bücher.Example.:80/a/./b/../%7ec%2f?q=a+b&&x=%e2%82%ac#frag",
		"https://[2001:DB8::1]:443", "http://[fe80::1%25eth0]/", "http://h/%zz", "http://h/?utm_source=1&a=2&a=1",
		"http://h\\a\\..\\b", "  http://h/a\tb\n ", "http://a@b@c:0080", "http://%65x.com/", "http://h/?=&;=;&",
		"https://h/%2e%2E/./x//y/..", "mailto:x", "#f", "http://xn--bcher-kva.example/", "http://1.2.3.4./",
	} {
		f.Add(s, false, false)
	}
	f.Fuzz(func(t *testing.T, raw string, strip, sort bool) {
		var o NormOptions
		if strip {
			o.StripParams = append(slices.Clone(DefaultStripParams), "a", "b*")
		}
		o.SortQuery = sort
		Pattern(raw)
		checkRemoveDots(t, "/"+raw)
		n, err := Normalize(raw, o)
		if err != nil {
			if n != "" {
				t.Errorf("Normalize(%q) = %q and an error", raw, n)
			}
			return
		}
		checkNormal(t, n, o)
		Pattern(n)
		plain, err := Normalize(raw, NormOptions{})
		if err != nil {
			t.Fatalf("Normalize(%q) fails without options: %v", raw, err)
		}
		if then, err := Normalize(plain, o); err != nil || then != n {
			t.Errorf("Normalize(Normalize(%q), %+v) = %q, %v, want %q", raw, o, then, err, n)
		}
	})
}

// Check never panics; it returns a URL exactly when the link normalises,
// and one of Reasons. A seed is within its own scope, and the roots a
// scope holds restore the same scope.
func FuzzCheck(f *testing.F) {
	f.Add("https://a.example.co.uk/x/y", 0, "https://b.example.co.uk/x/z", uint8(Domain))
	f.Add("http://h/docs/a/b/a/b/a/", 3, "http://h/docs/index.html", uint8(Prefix))
	f.Add("http://[::1]:8080/%7e", 1, "http://[::1]:8080/", uint8(Host))
	f.Add("mailto:x@y", 0, "ftp://x/", uint8(Any))
	f.Add("http://h/private/x?utm_id=1", 9, "http://H./", uint8(Host))
	f.Fuzz(func(t *testing.T, raw string, depth int, seed string, mode uint8) {
		r := Rules{Mode: Mode(mode % 4), MaxDepth: 4, MaxSegments: 8, Norm: NormOptions{StripParams: DefaultStripParams}}
		s := New(r)
		seedErr := s.AddSeed(seed)
		norm, why := s.Check(raw, depth)
		if (norm == "") != (why == BadURL) {
			t.Errorf("Check(%q) = %q, %q: a URL exactly when it normalises", raw, norm, why)
		}
		if why != OK && !slices.Contains(Reasons, why) {
			t.Errorf("Check(%q) = %q, not one of Reasons", raw, why)
		}
		if n, _ := Normalize(raw, r.Norm); n != norm {
			t.Errorf("Check(%q) = %q, Normalize = %q", raw, norm, n)
		}
		Pattern(norm)
		if seedErr != nil {
			return
		}
		if _, why := s.Check(seed, 0); why == OffScope || why == BadURL {
			t.Errorf("%v: Check(seed %q) = %q", r.Mode, seed, why)
		}
		roots := s.Roots()
		if r.Mode != Any && len(roots) != 1 {
			t.Errorf("%v: seed %q has roots %q, want one", r.Mode, seed, roots)
		}
		again := New(r)
		for _, root := range roots {
			if err := again.AddRoot(root); err != nil {
				t.Errorf("%v: AddRoot(%q) of seed %q: %v", r.Mode, root, seed, err)
			}
		}
		if n2, why2 := again.Check(raw, depth); n2 != norm || why2 != why {
			t.Errorf("%v: Check(%q) = %q, %q; restored from %q: %q, %q", r.Mode, raw, norm, why, roots, n2, why2)
		}
	})
}
