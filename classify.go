package polite

import (
	"context"
	"errors"
	"math/bits"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// Outcome is what one attempt came to, as polite reads it.
type Outcome int

const (
	// OK: a response the host was glad to give (1xx-3xx).
	OK Outcome = iota
	// Throttled: the host asked to slow down (429, 503).
	Throttled
	// Overloaded: the host or a gateway ran out of time (408, 504, or a
	// timeout on our side): a sign of load, not a request to pause.
	Overloaded
	// Blocked: a WAF or anti-bot answer (challenge page, captcha). It wants
	// a stop and a report, not patience.
	Blocked
	// ServerError: any other 5xx.
	ServerError
	// NetworkError: no response (connection refused, reset, DNS failure).
	NetworkError
	// ClientError: any other 4xx, or a status past 599 (RFC 9110, section
	// 15, defines 100-599: a larger one breaks the protocol): the request
	// or the server is wrong, not the pace, and retrying cannot mend it.
	ClientError
	// Canceled: the caller canceled the context (a deadline that runs out
	// is a timeout: Overloaded).
	Canceled
)

var outcomeNames = [...]string{"ok", "throttled", "overloaded", "blocked", "server_error", "network_error", "client_error", "canceled"}

// String returns the outcome's snake_case name ("ok", "throttled", ...).
func (o Outcome) String() string {
	if o >= 0 && int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "unknown"
}

// retryable reports whether an attempt with this outcome may be tried again:
// exactly the failures (a block, a client error or a cancellation never is).
func (o Outcome) retryable() bool { return o.failure() }

// failure reports whether the outcome counts against the host's breaker.
func (o Outcome) failure() bool {
	switch o {
	case Throttled, Overloaded, ServerError, NetworkError:
		return true
	}
	return false
}

// classifyError reads a RoundTrip error.
func classifyError(ctx context.Context, err error) Outcome {
	if err := ctx.Err(); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			// The request's own deadline ran out while it was in flight:
			// the host did not answer in time, a timeout like any other
			// (issue 18: a crawl's --timeout was read as a cancellation,
			// never retried).
			return Overloaded
		}
		return Canceled
	}
	if errors.Is(err, ErrNotPublic) {
		return ClientError // the destination is refused: retrying cannot help
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return Overloaded
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return Overloaded
	}
	return NetworkError
}

// classifyStatus reads a status code alone (blocks are found separately).
func classifyStatus(code int) Outcome {
	switch {
	case code == http.StatusTooManyRequests, code == http.StatusServiceUnavailable:
		return Throttled
	case code == http.StatusRequestTimeout, code == http.StatusGatewayTimeout:
		return Overloaded
	case code >= 600:
		return ClientError // not an HTTP status: no 5xx to wait out (issue 29, item 13)
	case code >= 500:
		return ServerError
	case code >= 400:
		return ClientError
	}
	return OK
}

// BlockDetector decides whether a response is a soft block: a WAF
// challenge, a captcha, an anti-bot wall. peek holds up to the first 32 KiB of
// the body (empty when the detector's Peek said not to read it). It returns
// a short reason, or "" for no block.
type BlockDetector interface {
	// Peek reports whether the body of resp should be read for Detect. It
	// sees the headers only.
	Peek(resp *http.Response) bool
	// Detect returns why resp is a block, or "".
	Detect(resp *http.Response, peek []byte) string
}

// MaxPeek is the most of a body polite reads to detect a block. The bytes are
// handed back to the caller ahead of the rest of the body.
const MaxPeek = 32 << 10

// PeekTimeout bounds the time polite spends reading a body's first MaxPeek
// bytes to detect a block; a body slower than that is not peeked.
const PeekTimeout = 5 * time.Second

// DefaultBlocks is the BlockDetector a Transport uses when none is set. It
// recognises Cloudflare's cf-mitigated header, and challenge or captcha pages
// (Cloudflare, Akamai, Imperva/Incapsula, PerimeterX, DataDome, reCAPTCHA,
// hCaptcha, Turnstile) served with 200, 403, 429 or 503. It reads the bodies
// of 403, 429 and 503 responses, and of HTML 200 responses no bigger than
// MaxPeek (a challenge page is small; a real page usually is not, and reading
// it would cost every fetch).
var DefaultBlocks BlockDetector = defaultBlocks{}

type defaultBlocks struct{}

func (defaultBlocks) Peek(resp *http.Response) bool {
	switch resp.StatusCode {
	case http.StatusForbidden, http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return true
	case http.StatusOK:
		ct := resp.Header.Get("Content-Type")
		return strings.HasPrefix(ct, "text/html") && resp.ContentLength >= 0 && resp.ContentLength <= MaxPeek
	}
	return false
}

// blockMarkers are lower-case fragments of known challenge pages. A page
// marker belongs to the challenge page itself; a widget marker (a captcha
// widget, a "verify you are human" line) also turns up on ordinary pages,
// a contact form with reCAPTCHA say, so on a 200 it counts only on a tiny
// page (issue 17, defect 10: one such form stopped a whole host).
var blockMarkers = []struct {
	marker, reason string
	widget         bool
}{
	{"<title>just a moment...</title>", "cloudflare challenge", false},
	{"attention required! | cloudflare", "cloudflare block", false},
	{"cf-turnstile", "turnstile captcha", true},
	{"cf_chl_opt", "cloudflare challenge", false},
	{"g-recaptcha", "recaptcha", true},
	{"h-captcha", "hcaptcha", true},
	{"px-captcha", "perimeterx captcha", false},
	{"captcha-delivery.com", "datadome captcha", false},
	{"request unsuccessful. incapsula incident id", "imperva block", false},
	{"_incapsula_resource", "imperva challenge", false},
	{"<title>access denied</title>", "access denied page", true},
	{"please verify you are a human", "human verification", true},
	{"are you a robot", "human verification", true},
}

// tinyPage is the most a 200 page may weigh for a widget marker alone to
// make it a block: a captcha wall is a widget and little else.
const tinyPage = 2 << 10

func (defaultBlocks) Detect(resp *http.Response, peek []byte) string {
	if strings.EqualFold(resp.Header.Get("Cf-Mitigated"), "challenge") {
		return "cf-mitigated: challenge"
	}
	if len(peek) == 0 {
		return ""
	}
	allowed := ^widgetMarkers
	if resp.StatusCode != http.StatusOK || len(peek) <= tinyPage && resp.ContentLength <= tinyPage {
		allowed = ^uint16(0)
	}
	return findMarker(peek, allowed)
}

// markerFirst[c] has bit i set when blockMarkers[i] starts with the byte
// c, in either case, and markerSecond[c] when its second byte is c;
// widgetMarkers has the bits of the widget markers.
var markerFirst, markerSecond, widgetMarkers = func() (first, second [256]uint16, w uint16) {
	for i, m := range blockMarkers {
		for j, t := range []*[256]uint16{&first, &second} {
			c := m.marker[j]
			t[c] |= 1 << i
			if 'a' <= c && c <= 'z' {
				t[c-'a'+'A'] |= 1 << i
			}
		}
		if m.widget {
			w |= 1 << i
		}
	}
	return first, second, w
}()

// findMarker returns the reason of the first of blockMarkers (those whose
// bits are in allowed) that p holds, ignoring ASCII case, or "". It makes
// one pass over p, checking a marker only where its first two bytes are:
// every small HTML page a crawl fetches is scanned, and thirteen searches
// of a lower-cased copy were 9 % of its CPU (issue 17, defect 3); with the
// first byte alone, prose (where a, c, p and r start many words) still
// cost 5 µs a page (issue 34, part 2).
func findMarker(p []byte, allowed uint16) string {
	var found uint16
	for i := 0; i+1 < len(p); i++ {
		for m := markerFirst[p[i]] & markerSecond[p[i+1]] & allowed &^ found; m != 0; m &= m - 1 {
			k := bits.TrailingZeros16(m)
			if hasPrefixFold(p[i:], blockMarkers[k].marker) {
				found |= 1 << k
			}
		}
	}
	if found == 0 {
		return ""
	}
	return blockMarkers[bits.TrailingZeros16(found)].reason
}

// hasPrefixFold reports whether p starts with lower, a lower-case ASCII
// string, ignoring the case of ASCII letters in p.
func hasPrefixFold(p []byte, lower string) bool {
	if len(p) < len(lower) {
		return false
	}
	for j := range len(lower) {
		c := p[j]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[j] {
			return false
		}
	}
	return true
}
