package links

import (
	"net/url"
	"testing"
)

func TestFastResolve(t *testing.T) {
	for _, base := range []string{pageURL, "https://example.com", "https://example.com/", "http://u:p@example.com:8080/a/b/?", "https://example.com/a/./b", "https://EXAMPLE.com//x//", "http://h/a/b/../c/", "http://h/.."} {
		for _, ref := range []string{"a", "/a", "a/b?c=d&e", "?q", "?", "", "http://h.example", "https://h.example:8080/p?q", "a:b", "./a", "a/..", "%41%zz", "a%41", "//h/x", "http://h:/x", "x?a'b", "x?a%zz", "http://h/a/../b",
			"..", ".", "../../../x", "a/./b/../c/.", "/..", "/./", "x/..", "a//b/../c", "http://h/..", "http://h/./a/", "..?q", "./?q"} {
			checkFastResolve(t, base, ref)
		}
	}
}

// checkFastResolve checks that fastResolve agrees with slowResolve where
// it answers.
func checkFastResolve(t *testing.T, base, ref string) {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		return
	}
	b := newBase(u)
	if !b.fast {
		return
	}
	var out []byte
	got, ok := b.fastResolve([]byte(ref), &out)
	if !ok {
		return
	}
	want, st := b.slowResolve([]byte(ref))
	if st != resolved || got != want {
		t.Fatalf("fastResolve(%q, %q) = %q, net/url gives %q (status %d)", base, ref, got, want, st)
	}
}

func FuzzResolve(f *testing.F) {
	for _, s := range []string{"a", "/a/b", "?q=1", "https://x.example:80/p?q", "a/../b", "%41"} {
		f.Add(pageURL, s)
	}
	f.Add("https://x/a/./b/", "c")
	f.Fuzz(checkFastResolve)
}
