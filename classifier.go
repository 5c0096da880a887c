package polite

import "net/http"

// A Classifier reads an attempt before polite does: it returns the
// attempt's Outcome and true, or false to leave it to polite's own reading
// (the status, the error, the BlockDetector). resp is nil when err is not.
// The Outcome decides what follows, as for polite's own: Throttled,
// Overloaded, ServerError and NetworkError are retried (within the
// attempts and the retry budget) and count against the host's breaker;
// Blocked marks the host blocked; OK and ClientError are returned as they
// are. It is what go-retryablehttp's CheckRetry is: "retry this 409",
// "this 200 with an error body is a server error", "this 403 is a block".
//
// A Classifier must not read resp.Body (or must put back what it read): the
// body is the caller's.
type Classifier func(resp *http.Response, err error) (Outcome, bool)

// classifiedBlock is the block reason of an answer a Classifier called
// Blocked.
const classifiedBlock = "classified as a block"

// classify asks the Transport's Classifier, if any, about an attempt; a
// Classifier that answers an out-of-range Outcome is not heeded.
func (t *Transport) classify(resp *http.Response, err error) (Outcome, bool) {
	if t.Classify == nil || (resp == nil && err == nil) {
		return 0, false
	}
	o, ok := t.Classify(resp, err)
	if !ok || o < OK || o > Canceled {
		return 0, false
	}
	return o, true
}
