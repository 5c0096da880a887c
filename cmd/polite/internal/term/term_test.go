package term

import (
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"503 Service Unavailable", "503 Service Unavailable"},
		{"BÜCHER.example — ok ✓ 日本", "BÜCHER.example — ok ✓ 日本"},
		{"no\u00a0break", "no\u00a0break"}, // a space (Zs) is graphic
		{"503 \x1b[2J\x1b]0;pwned\a\x1b]52;c;cHduZWQ=\a", `503 \x1b[2J\x1b]0;pwned\a\x1b]52;c;cHduZWQ=\a`},
		{"a\nb\rc\td\x00e\x7f", `a\nb\rc\td\x00e\x7f`},
		{"csi \u009b2J", `csi \u009b2J`},                                     // C1 control, as UTF-8
		{"\u202eevil\u202c \u2066x\u2069", `\u202eevil\u202c \u2066x\u2069`}, // bidi overrides and isolates
		{"line\u2028sep", `line\u2028sep`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`},
		{`back\slash`, `back\slash`},
	} {
		if got := Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzQuote: the result is valid UTF-8 of graphic runes only (nothing
// a terminal acts on), and text already so is kept as it is.
func FuzzQuote(f *testing.F) {
	f.Add("503 \x1b[2J\x1b]52;c;x\a")
	f.Add("\u202e\u009b\xff ok")
	f.Fuzz(func(t *testing.T, s string) {
		got := Quote(s)
		if !utf8.ValidString(got) {
			t.Fatalf("Quote(%q) = %q, not UTF-8", s, got)
		}
		clean := utf8.ValidString(s)
		for _, r := range got {
			if !unicode.IsGraphic(r) {
				t.Fatalf("Quote(%q) = %q holds %U", s, got, r)
			}
		}
		for _, r := range s {
			clean = clean && unicode.IsGraphic(r)
		}
		if clean != (got == s) {
			t.Fatalf("Quote(%q) = %q: clean %v", s, got, clean)
		}
	})
}

func TestQuoteLines(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"one line \x1b[2J", `one line \x1b[2J`},
		{"usage: x\nRun 'polite --help'", "usage: x\nRun 'polite --help'"},
		{"a\x07\nb\r\n", "a\\a\nb\\r\n"},
	} {
		if got := QuoteLines(tc.in); got != tc.want {
			t.Errorf("QuoteLines(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
