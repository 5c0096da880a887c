package crawl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/polite-go/polite"
)

// DefaultMaxURLLen is the longest line Load accepts as a URL when
// Options.MaxURLLen is zero: 8 KiB, the request-line limit of common servers.
const DefaultMaxURLLen = 8 << 10

// keepInvalid is how much of a bad line an invalid_url record keeps.
const keepInvalid = 256

// jsonRoom is how much longer than the longest URL a JSON line may be: its
// braces, keys, lane and escapes.
const jsonRoom = 1 << 10

// Line is one entry of a URL list: a URL to fetch, or a line that is not one
// and why.
type Line struct {
	// Text is the URL (of a JSON line, its "url"), or a bad line without
	// surrounding space, cut to 256 bytes (and marked "…") when Problem
	// says it was too long. A bad line's URL passwords are replaced with
	// "xxxxx" (user:xxxxx@host): a URL with one is a bad line, never
	// fetched, and the job keeps no password. A bad JSON line's Text is
	// the object, so it is never taken for a URL.
	Text string
	// Host is the URL's canonical host key (polite.HostKey); "" for a bad line.
	Host string
	// Problem says what is wrong with the line; "" for a good URL.
	Problem string
	// Lane is the URL's lane: the one its JSON line names, else the
	// reader's default (LaneNormal for ReadLines); LaneNormal for a bad
	// line.
	Lane Lane
	// Number is the line's number in the list, from 1 (blank and comment
	// lines count).
	Number int
}

// CheckURL reports what is wrong with s as a URL to fetch, or "" when
// nothing is: it must parse, have the scheme http or https and a host that
// polite.HostKey accepts, and be at most maxLen bytes long (0 means
// DefaultMaxURLLen). On success it returns the host key too.
func CheckURL(s string, maxLen int) (host, problem string) {
	if maxLen <= 0 {
		maxLen = DefaultMaxURLLen
	}
	if len(s) > maxLen {
		return "", fmt.Sprintf("longer than %d bytes (%d)", maxLen, len(s))
	}
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return "", "not a URL: " + err.Error()
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	case "":
		return "", "no scheme (want http:// or https://)"
	default:
		return "", fmt.Sprintf("scheme %q is not http or https", u.Scheme)
	}
	if u.Host == "" {
		return "", "no host"
	}
	if u.User != nil {
		return "", "credentials in the URL are not sent (userinfo@host)"
	}
	host, err = polite.HostKey(strings.ToLower(u.Scheme), u.Host)
	if err != nil {
		return "", "bad host: " + err.Error()
	}
	return host, ""
}

// ReadLines reads a URL list, one URL per line, and calls fn for each entry.
// Blank lines and lines starting with '#' are skipped; surrounding space is
// trimmed. A line is its URL alone: space within it (text after the URL)
// makes it a bad line, never fetched as a URL with that text in its path
// (issue 33, item 12); a URL with a space in it is written with %20, and a
// list that says more of a URL says it in a JSON line (below). A line longer than maxLen (0 means DefaultMaxURLLen) is never held
// whole in memory: its first 256 bytes are kept for the record. fn's error
// stops the reading and is returned.
//
// A line starting with '{' is a JSON object naming the URL and, if need
// be, its lane (issue 31, item 4), so that a list may be JSON Lines:
//
//	{"url": "https://example.com/a", "lane": "interactive"}
//
// Other keys are ignored; a lane left out (or "") is LaneNormal. Such a
// line may be up to 1 KiB longer than maxLen, its URL no longer than
// maxLen. An object that does not parse, names no URL or an unknown lane
// is a bad line, its Problem says why.
func ReadLines(r io.Reader, maxLen int, fn func(Line) error) error {
	return ReadLinesLane(r, maxLen, LaneNormal, fn)
}

// ReadLinesLane is ReadLines with lane the lane of the lines that name
// none (the plain ones, and JSON lines without "lane").
func ReadLinesLane(r io.Reader, maxLen int, lane Lane, fn func(Line) error) error {
	if maxLen <= 0 {
		maxLen = DefaultMaxURLLen
	}
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	for number := 1; ; number++ {
		buf = buf[:0]
		n := 0 // the line's full length, leading space left out
		limit := maxLen
		var err error
		for {
			var frag []byte
			frag, err = br.ReadSlice('\n')
			if len(buf) == 0 {
				// Leading space is not kept: however much of it, the
				// line's text is what counts against maxLen.
				frag = bytes.TrimLeftFunc(frag, unicode.IsSpace)
				if len(frag) > 0 && frag[0] == '{' {
					limit = maxLen + jsonRoom
				}
			}
			n += len(frag)
			if room := limit + 2 - len(buf); room > 0 { // +2: CRLF and one byte over
				buf = append(buf, frag[:min(len(frag), room)]...)
			}
			if err != bufio.ErrBufferFull {
				break
			}
		}
		if n == 0 && err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		if err == nil && n > 0 {
			n-- // the '\n'
		}
		if e := handleLine(buf, n, maxLen, lane, func(l Line) error { l.Number = number; return fn(l) }); e != nil {
			return e
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// canonical returns a URL that CheckURL accepted in the form the job keeps
// it under (issue 17, defect 12): the scheme lower-cased and the fragment,
// which is never sent, cut, so that HTTP://h/x, http://h/x#top and
// http://h/x are one URL, fetched once; bytes that are not UTF-8
// percent-encoded, as the request line sends them anyway, so results.jsonl
// (JSON, UTF-8) holds the URL exactly instead of with U+FFFD in their
// place.
func canonical(s string) string {
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s = s[:i]
	}
	if i := strings.IndexByte(s, ':'); i > 0 {
		if scheme := s[:i]; scheme != strings.ToLower(scheme) {
			s = strings.ToLower(scheme) + s[i:]
		}
	}
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			fmt.Fprintf(&b, "%%%02X", s[i])
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func handleLine(buf []byte, n, maxLen int, lane Lane, fn func(Line) error) error {
	text := bytes.TrimSpace(buf)
	if len(text) == 0 || text[0] == '#' {
		return nil
	}
	limit := maxLen
	if text[0] == '{' {
		limit += jsonRoom
	}
	if n > len(buf) || len(text) > limit { // cut while reading, or too long anyway
		size := len(text)
		if n > len(buf) {
			size = n // untrimmed, but it is the cut line's length near enough
		}
		return fn(Line{Text: badLine(string(text), true), Problem: fmt.Sprintf("longer than %d bytes (%d)", limit, size)})
	}
	if text[0] == '{' {
		return fn(jsonLine(text, maxLen, lane))
	}
	s := string(text)
	if i := bytes.IndexFunc(text, unicode.IsSpace); i >= 0 {
		if _, p := CheckURL(s[:i], maxLen); p == "" {
			return fn(Line{Text: badLine(s, false), Problem: "text after the URL: a line holds one URL alone (a space in a URL is written %20; a JSON line may say more)"})
		}
	}
	host, problem := CheckURL(s, maxLen)
	if problem != "" {
		return fn(Line{Text: badLine(s, false), Problem: problem})
	}
	return fn(Line{Text: canonical(s), Host: host, Lane: lane})
}

// jsonLine reads a list's JSON line: {"url": "...", "lane": "..."}, other
// keys ignored, lane (def when left out) one of ParseLane's.
func jsonLine(text []byte, maxLen int, def Lane) Line {
	var obj struct {
		URL  *string `json:"url"`
		Lane *string `json:"lane"`
	}
	if err := json.Unmarshal(text, &obj); err != nil {
		return Line{Text: badLine(string(text), false), Problem: "bad JSON line: " + strings.TrimPrefix(err.Error(), "json: ")}
	}
	var u, name string
	if obj.URL != nil {
		u = strings.TrimSpace(*obj.URL)
	}
	if obj.Lane != nil {
		name = *obj.Lane
	}
	// A bad line is kept as its object, rebuilt from what was read: never
	// taken for a URL, and a password written with escapes (\u0040) is
	// redacted too.
	bad := func(problem string) Line {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(struct { // strings always encode
			URL  *string `json:"url,omitempty"`
			Lane *string `json:"lane,omitempty"`
		}{obj.URL, obj.Lane})
		return Line{Text: badLine(strings.TrimSuffix(b.String(), "\n"), false), Problem: problem}
	}
	lane := def
	if name != "" {
		l, err := ParseLane(name)
		if err != nil {
			return bad(fmt.Sprintf("unknown lane %q (want interactive, normal or bulk)", name))
		}
		lane = l
	}
	if u == "" {
		return bad(`JSON line names no "url"`)
	}
	host, problem := CheckURL(u, maxLen)
	if problem != "" {
		return bad(problem)
	}
	return Line{Text: canonical(u), Host: host, Lane: lane}
}

// badLine is what the job keeps of a line that is not a URL to fetch: its
// passwords redacted (a line with one is never fetched, so nothing needs
// it; issue 29, item 12: state.db kept it), then its first 256 bytes,
// marked "…" when cut here or, as cut says, before.
func badLine(s string, cut bool) string {
	s = redact(s)
	if len(s) > keepInvalid {
		s, cut = strings.ToValidUTF8(s[:keepInvalid], ""), true
	}
	if cut {
		s += "…"
	}
	return s
}
