package crawl

import (
	"math"
	"net/http"
	"net/url"
	"time"

	"github.com/polite-go/polite"
)

// secret are the request fields that carry credentials: the WARC files
// record their values as "xxxxx", and a redirect to another host does not
// carry them (net/http's Client drops them too).
var secret = map[string]bool{"Authorization": true, "Proxy-Authorization": true, "Cookie": true}

// addHeader adds the job's Header to req, a request for it (maybe a
// redirect hop): the credentials fields only when req goes to the host of
// the URL the list named.
func (j *Job) addHeader(req *http.Request, it *item) {
	if len(j.opts.Header) == 0 {
		return
	}
	same := it.cur == ""
	if !same {
		u, err := url.Parse(it.url)
		same = err == nil && u.Host == req.URL.Host
	}
	if same && j.opts.CredentialsFor != nil && !j.opts.CredentialsFor(req.URL.Host) {
		same = false // a fleet's URL from another worker's list
	}
	if same && j.listed != nil && !j.listed[req.URL.Host] {
		same = false // a crawl's URL on a host no list named
	}
	for k, vs := range j.opts.Header {
		if secret[k] && !same || k == "Content-Type" && it.asGet {
			continue // a redirect's GET carries no body to describe
		}
		if k == "Host" {
			if same { // a redirect elsewhere names its own host
				req.Host = vs[0]
			}
			continue
		}
		req.Header[k] = append([]string(nil), vs...)
	}
}

// retryOn applies Options.RetryOn to an attempt answered with status:
// it returns tr with Retry (and At) as the user's list says.
func (j *Job) retryOn(it *item, tr polite.Tried, status int, now time.Time) polite.Tried {
	want := j.opts.RetryOn[status]
	switch {
	case tr.Outcome == polite.Blocked || tr.Reason == polite.ReasonRetryAfter:
	case !want:
		tr.Retry, tr.Reason = false, ""
	case !tr.Retry && tr.Reason != polite.ReasonBudget && it.attempts <= j.retries(it.host.key):
		tr.Retry, tr.Reason, tr.At = true, "", now.Add(j.backoff.Next(it.attempts, 0))
	}
	return tr
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 {
	return math.Round(float64(d)/1e3) / 1e3
}
