package crawl

import "strings"

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

// redactResult redacts the fields of r that may hold a URL.
func redactResult(r *Result) {
	r.URL = redact(r.URL)
	r.FinalURL = redact(r.FinalURL)
	r.RedirectNotFollowed = redact(r.RedirectNotFollowed)
	r.Error = redact(r.Error)
}
