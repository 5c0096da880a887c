package polite

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/polite-go/polite/testbed"
)

// Pauses past 2262 overflowed UnixNano and paused nothing, so every request
// was sent and answered 429 (issue 17, defect 2): the second request must
// fail fast with ErrPaused, unsent.
func TestFarPauseIsKept(t *testing.T) {
	farMillis := strconv.FormatInt(time.Date(9000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli(), 10)
	for _, tc := range []struct {
		name   string
		status int
		header http.Header
	}{
		{"Retry-After seconds", 429, http.Header{"Retry-After": {"99999999999"}}},
		{"Retry-After date 9999", 429, http.Header{"Retry-After": {"Fri, 31 Dec 9999 23:59:59 GMT"}}},
		{"X-RateLimit-Reset ms epoch", 200, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {farMillis}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &testbed.Hostile{Status: tc.status, Header: tc.header}
			srv := httptest.NewServer(h)
			defer srv.Close()
			tr := &Transport{Base: srv.Client().Transport, Limits: fast(), MaxRetryAfter: time.Minute}
			c := &http.Client{Transport: tr}
			resp, err := c.Get(srv.URL + "/a")
			if err != nil {
				t.Fatalf("first GET: %v", err)
			}
			resp.Body.Close()
			_, err = c.Get(srv.URL + "/b")
			var pe *PausedError
			if !errors.As(err, &pe) {
				t.Fatalf("second GET: err = %v, want a *PausedError", err)
			}
			if !pe.Until.After(time.Now().AddDate(200, 0, 0)) {
				t.Errorf("paused until %v, want centuries away", pe.Until)
			}
			if n := h.Count(""); n != 1 {
				t.Errorf("host got %d requests, want 1", n)
			}
		})
	}
}
