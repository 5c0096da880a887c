package cli

import (
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/polite-go/polite/crawl"
)

func TestPrintable(t *testing.T) {
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
		if got := printable(tc.in); got != tc.want {
			t.Errorf("printable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzPrintable: the result is valid UTF-8 of graphic runes only (nothing
// a terminal acts on), and text already so is kept as it is.
func FuzzPrintable(f *testing.F) {
	f.Add("503 \x1b[2J\x1b]52;c;x\a")
	f.Add("\u202e\u009b\xff ok")
	f.Fuzz(func(t *testing.T, s string) {
		got := printable(s)
		if !utf8.ValidString(got) {
			t.Fatalf("printable(%q) = %q, not UTF-8", s, got)
		}
		clean := utf8.ValidString(s)
		for _, r := range got {
			if !unicode.IsGraphic(r) {
				t.Fatalf("printable(%q) = %q holds %U", s, got, r)
			}
		}
		for _, r := range s {
			clean = clean && unicode.IsGraphic(r)
		}
		if clean != (got == s) {
			t.Fatalf("printable(%q) = %q: clean %v", s, got, clean)
		}
	})
}

// The live view shows a host's name and what holds it back, which may
// quote a server (a custom BlockDetector's reason, say): as escapes.
func TestBarViewQuoted(t *testing.T) {
	m := &barModel{p: crawl.Progress{Total: 2, Hosts: []crawl.HostProgress{{Host: "h.test\u202e", Why: "blocked: " + evilReason, Left: 1}}},
		notice: "polite: \x1b]0;pwned\a", width: 120, height: 24}
	out := m.render()
	noControls(t, "the live view", out)
	if want := `\x1b[2J`; !strings.Contains(out, want) {
		t.Errorf("the live view does not say %q:\n%s", want, out)
	}
}

// The error Main prints last is quoted line by line: a usage error's own
// second line stays a line, a control in it does not reach the terminal.
func TestErrorLinesKept(t *testing.T) {
	code, _, stderr := politeCmd(t, "status")
	if code != ExitUsage || !strings.Contains(stderr, "\nRun 'polite status --help' for usage.") || strings.Contains(stderr, `\n`) {
		t.Errorf("status without DIR: exit %d, stderr %q, want the usage error on two lines", code, stderr)
	}
	var b strings.Builder
	exitStatus(&exitError{code: ExitFatal, err: errors.New("line one \x1b[2J\nline two \a")}, &b)
	if want := "polite: line one \\x1b[2J\nline two \\a\n"; b.String() != want {
		t.Errorf("exitStatus wrote %q, want %q", b.String(), want)
	}
}
