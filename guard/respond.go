package guard

import (
	"net/http"
	"strconv"
)

// Legacy fields, as GitHub and most gateways send them: the limit, the
// tokens left and the Unix time the next one arrives, of the tightest level
// advertised.
const (
	fieldXLimit     = "X-Ratelimit-Limit"
	fieldXRemaining = "X-Ratelimit-Remaining"
	fieldXReset     = "X-Ratelimit-Reset"
	fieldRetryAfter = "Retry-After"
)

// Problem types (draft-ietf-httpapi-ratelimit-headers-10 section 7; RFC 9457).
const (
	problemQuota    = "https://iana.org/assignments/http-problem-types#quota-exceeded"
	problemCapacity = "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity"
)

// writeProblem sends status with an application/problem+json body naming
// the violated policy; retry < 0 sends no Retry-After.
func writeProblem(w http.ResponseWriter, status int, typ, policy, detail string, retry int64) {
	h := w.Header()
	if retry >= 0 {
		h[fieldRetryAfter] = []string{strconv.FormatInt(retry, 10)}
	}
	h["Content-Type"] = []string{"application/problem+json"}
	h["Cache-Control"] = []string{"no-store"}
	b := make([]byte, 0, 256)
	b = append(b, `{"type":`...)
	b = strconv.AppendQuote(b, typ)
	b = append(b, `,"title":`...)
	b = strconv.AppendQuote(b, http.StatusText(status))
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, `,"detail":`...)
	b = strconv.AppendQuote(b, detail)
	if policy != "" {
		b = append(b, `,"violated-policies":[`...)
		b = strconv.AppendQuote(b, policy)
		b = append(b, ']')
	}
	b = append(b, "}\n"...)
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	w.WriteHeader(status)
	w.Write(b)
}
