package crawl

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Outcomes of a URL, as results.jsonl names them (README.md, the CLI
// contract).
const (
	OK                = "ok"                 // a 2xx or 3xx response
	HTTPError         = "http_error"         // another status, after any retries
	Throttled         = "throttled"          // still 429/503 (or paused) when retries ran out
	Blocked           = "blocked"            // the host answered with a soft block (WAF, captcha)
	RobotsDisallowed  = "robots_disallowed"  // robots.txt disallows it; never requested
	RobotsUnreachable = "robots_unreachable" // robots.txt could not be fetched, after the job's retries; never requested
	InvalidURL        = "invalid_url"        // the line is not a URL to fetch; never requested
	NetworkError      = "network_error"      // no response (refused, reset, DNS), after any retries
	Timeout           = "timeout"            // no complete response within --timeout, after any retries
	RedirectLoop      = "redirect_loop"      // redirects came back to a URL already visited, or went on too long
	// NotModified (since.go): 304 to a re-crawl's conditional request.
)

// Outcomes lists every outcome in a stable order, for reports.
var Outcomes = []string{OK, NotModified, HTTPError, Throttled, Blocked, RobotsDisallowed, RobotsUnreachable, InvalidURL, NetworkError, Timeout, RedirectLoop}

// Result is one line of results.jsonl: what became of one URL. The fields up
// to Finished are the CLI contract's; the rest are polite's additions.
type Result struct {
	URL      string    `json:"url"`
	Host     string    `json:"host"`
	Outcome  string    `json:"outcome"`
	Status   int       `json:"status"` // last HTTP status, 0 if none
	Attempts int       `json:"attempts"`
	Bytes    int64     `json:"bytes"`  // body bytes kept (see Truncated)
	SHA256   string    `json:"sha256"` // hex digest of the bytes kept; "" without a body
	Error    string    `json:"error"`  // "" when ok: why the URL failed (the dead-letter reason)
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`

	// Truncated says only the first Bytes bytes of the body were kept: it
	// was longer than the size cap, or (for a failed response) it broke
	// off.
	Truncated bool `json:"truncated,omitempty"`
	// FinalURL is the URL that answered, when redirects led elsewhere.
	FinalURL string `json:"final_url,omitempty"`
	// RedirectNotFollowed is the target of a redirect the job did not
	// follow: it left the URL's host (Options.SameHost; the 3xx is the
	// answer, ok), or the job cannot follow it (a scheme other than http
	// or https, or a Location that does not parse; http_error, Error
	// naming it). Cut at 2048 bytes, marked "…".
	RedirectNotFollowed string `json:"redirect_not_followed,omitempty"`
	// WARCFile is the WARC file the final response record is in (under
	// FinalURL when redirected; each hop before it has its own), and WARC its
	// offset there (--bodies warc): in a .warc.gz, the offset of its gzip
	// member, as CDX indexes give it. Left out when none was written.
	WARCFile string `json:"warc_file,omitempty"`
	WARC     *int64 `json:"warc_offset,omitempty"`
	// File is the body's path relative to the job's directory (--bodies
	// files).
	File string `json:"file,omitempty"`
	// ContentType is the response's Content-Type, when it had one.
	ContentType string `json:"content_type,omitempty"`
	// LatencyMS is the last request's time from sending to the response
	// headers (or the error), in milliseconds; 0 when none was sent.
	LatencyMS float64 `json:"latency_ms"`
	// ID is the URL's id in the job: the id of the events (events.jsonl)
	// of its requests.
	ID int64 `json:"id,omitempty"`
	// Discovery (--follow). Depth is how many links were followed from a
	// listed URL to this one (a redirect's target and a sitemap index's
	// sitemaps are at the depth of what named them, a sitemap's pages one
	// deeper), FoundOn the URL of the page or sitemap that named it; both
	// are left out for a listed URL. Kind is "sitemap" for a sitemap, read
	// for its entries. Location is a redirect's target: with --follow a
	// redirect is the URL's answer, and its target a URL of its own, taken
	// or skipped by the scope as a link is.
	Depth    int    `json:"depth,omitempty"`
	FoundOn  string `json:"found_on,omitempty"`
	Kind     string `json:"kind,omitempty"`
	Location string `json:"location,omitempty"`
	// ETag and LastModified are a 2xx or 304 answer's validators, which a
	// later job with --since sends back.
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"last_modified,omitempty"`
}

// Failed reports whether the result is not ok.
func (r *Result) Failed() bool { return r.Outcome != OK && r.Outcome != NotModified }

// appendJSON appends r as json.Marshal writes it, byte for byte, without
// its reflection: the committer encodes every result on its one goroutine
// (issue 34, part 2: json.Marshal was 0.12–0.26 s of 11–12 s CPU for
// 100,000 URLs in throughput.sh). The field order and omitempty are
// Result's tags'; TestResultJSON holds the two to each other. What
// json.Marshal refuses (a time past year 9999, a latency not finite) it
// refuses with json.Marshal's error.
func (r *Result) appendJSON(b []byte) ([]byte, error) {
	if math.IsNaN(r.LatencyMS) || math.IsInf(r.LatencyMS, 0) {
		_, err := json.Marshal(r)
		return b, err
	}
	var err error
	b = append(b, `{"url":`...)
	b = appendJSONString(b, r.URL)
	b = append(b, `,"host":`...)
	b = appendJSONString(b, r.Host)
	b = append(b, `,"outcome":`...)
	b = appendJSONString(b, r.Outcome)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(r.Status), 10)
	b = append(b, `,"attempts":`...)
	b = strconv.AppendInt(b, int64(r.Attempts), 10)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, r.Bytes, 10)
	b = append(b, `,"sha256":`...)
	b = appendJSONString(b, r.SHA256)
	b = append(b, `,"error":`...)
	b = appendJSONString(b, r.Error)
	b = append(b, `,"started":`...)
	if b, err = appendJSONTime(b, r.Started); err != nil {
		return b, err
	}
	b = append(b, `,"finished":`...)
	if b, err = appendJSONTime(b, r.Finished); err != nil {
		return b, err
	}
	if r.Truncated {
		b = append(b, `,"truncated":true`...)
	}
	for _, f := range [...]struct{ key, v string }{
		{`,"final_url":`, r.FinalURL},
		{`,"redirect_not_followed":`, r.RedirectNotFollowed},
		{`,"warc_file":`, r.WARCFile},
	} {
		if f.v != "" {
			b = append(b, f.key...)
			b = appendJSONString(b, f.v)
		}
	}
	if r.WARC != nil {
		b = append(b, `,"warc_offset":`...)
		b = strconv.AppendInt(b, *r.WARC, 10)
	}
	for _, f := range [...]struct{ key, v string }{
		{`,"file":`, r.File},
		{`,"content_type":`, r.ContentType},
	} {
		if f.v != "" {
			b = append(b, f.key...)
			b = appendJSONString(b, f.v)
		}
	}
	b = append(b, `,"latency_ms":`...)
	b = appendJSONFloat(b, r.LatencyMS)
	if r.ID != 0 {
		b = append(b, `,"id":`...)
		b = strconv.AppendInt(b, r.ID, 10)
	}
	if r.Depth != 0 {
		b = append(b, `,"depth":`...)
		b = strconv.AppendInt(b, int64(r.Depth), 10)
	}
	for _, f := range [...]struct{ key, v string }{
		{`,"found_on":`, r.FoundOn},
		{`,"kind":`, r.Kind},
		{`,"location":`, r.Location},
		{`,"etag":`, r.ETag},
		{`,"last_modified":`, r.LastModified},
	} {
		if f.v != "" {
			b = append(b, f.key...)
			b = appendJSONString(b, f.v)
		}
	}
	return append(b, '}'), nil
}

// appendJSONString appends s quoted as encoding/json quotes it: printable
// ASCII other than " \ < > & as it is; anything else through
// json.Marshal, which escapes HTML, control characters, U+2028 and U+2029
// and replaces invalid UTF-8.
func appendJSONString(b []byte, s string) []byte {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendJSONTime appends t as time.Time's MarshalJSON does (RFC 3339 with
// nanoseconds), with its error for a time RFC 3339 cannot write.
func appendJSONTime(b []byte, t time.Time) ([]byte, error) {
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		return b, fmt.Errorf("json: error calling MarshalJSON for type time.Time: %w", err)
	}
	return append(b, '"'), nil
}

// appendJSONFloat appends f as encoding/json writes a float64 (ES6 number
// formatting); f is finite.
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
