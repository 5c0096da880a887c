// Package term quotes text for a terminal: what a server or a URL list
// chose is shown with the characters a terminal would act on (escape
// sequences, C1 controls, bidi overrides) written as Go escapes, and the
// rest, printable UTF-8, as it is (issue 29, item 5).
package term

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Quote returns s as it may be shown on a terminal: every rune that is
// not graphic written as a Go escape (ESC as \x1b, BEL as \a, a newline as
// \n, a C1 control as \u009b, a bidi override as \u202e, a byte that is not
// UTF-8 as \xff), the rest as it is, so that valid printable UTF-8 stays
// readable. Text a server or a URL list chose (a reason phrase, an invalid
// line, a robots.txt value, an error quoting them) reaches a terminal (or
// a report page) only through it: a reason phrase of "503 ESC[2J ESC]0;… BEL ESC]52;c;… BEL"
// cleared the screen, set the title and wrote the clipboard (issue 29,
// item 5). Text without such a rune is returned as it is, unallocated.
func Quote(s string) string {
	i := 0
	for i < len(s) {
		if c := s[i]; c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || !strconv.IsGraphic(r) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	const hex = "0123456789abcdef"
	b := make([]byte, 0, len(s)+16)
	b = append(b, s[:i]...)
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = append(b, '\\', 'x', hex[s[i]>>4], hex[s[i]&0xf])
		case strconv.IsGraphic(r):
			b = append(b, s[i:i+n]...)
		default:
			q := strconv.QuoteRuneToASCII(r) // '\x1b', '\u202e': never a quote inside
			b = append(b, q[1:len(q)-1]...)
		}
		i += n
	}
	return string(b)
}

// QuoteLines is Quote for text of several lines (an error of ours
// may end with a line of advice): each line quoted, the newlines kept.
func QuoteLines(s string) string {
	if !strings.Contains(s, "\n") {
		return Quote(s)
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Quote(l)
	}
	return strings.Join(lines, "\n")
}
