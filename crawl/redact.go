package crawl

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// redact replaces the password of every URL's userinfo in s with "xxxxx",
// as url.URL.Redacted does, keeping the user name; it works on text that
// does not parse as a URL too (an invalid_url line, an error message).
// Every output of a job goes through it: a list line or a redirect may
// carry credentials, and results.jsonl, state.db and the WARC files must not
// (issue 17, defect 5).
func redact(s string) string {
	if !strings.Contains(s, "@") {
		return s // the common case: nothing to look at
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			break
		}
		auth := s[i+3:]
		end := strings.IndexAny(auth, "/?#\" \t")
		if end < 0 {
			end = len(auth)
		}
		at := strings.LastIndexByte(auth[:end], '@')
		colon := -1
		if at >= 0 {
			colon = strings.IndexByte(auth[:at], ':')
		}
		if colon < 0 {
			b.WriteString(s[:i+3+end])
			s = auth[end:]
			continue
		}
		b.WriteString(s[:i+3])
		b.WriteString(auth[:colon+1])
		b.WriteString("xxxxx")
		s = auth[at:]
	}
	if b.Len() == 0 {
		return s
	}
	b.WriteString(s)
	return b.String()
}

// redactResult redacts the fields of r that may hold a URL, and cuts its
// error to maxText.
func redactResult(r *Result) {
	r.URL = redact(r.URL)
	r.FinalURL = redact(r.FinalURL)
	r.RedirectNotFollowed = redact(r.RedirectNotFollowed)
	r.Location = cutTo(redact(r.Location), maxTarget) // a server's header, to size
	r.FoundOn = redact(r.FoundOn)
	r.Error = cut(redact(r.Error))
}

// maxText bounds the bytes the job keeps of a text that may quote a
// server: a result's error, the reason a URL waits. A reason phrase is the
// server's to size, and a 4 MB one made 4 MB results.jsonl lines and
// state.db rows (issue 29, item 6).
const maxText = 1 << 10

// cut returns s, or its first maxText bytes (at a rune's start) marked
// "…(cut, N bytes)", N the length of s, as the audit log marks its cuts.
func cut(s string) string {
	if len(s) <= maxText {
		return s
	}
	n := maxText
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…(cut, " + strconv.Itoa(len(s)) + " bytes)"
}
