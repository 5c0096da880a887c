package crawl

import (
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
)

// Outcomes lists every outcome in a stable order, for reports.
var Outcomes = []string{OK, HTTPError, Throttled, Blocked, RobotsDisallowed, RobotsUnreachable, InvalidURL, NetworkError, Timeout, RedirectLoop}

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
}

// Failed reports whether the result is not ok.
func (r *Result) Failed() bool { return r.Outcome != OK }
