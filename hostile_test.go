package polite

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/polite-go/polite/retry"
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

// Permanent failures were retried as network errors, 6 attempts each with
// the defaults (issue 17, defect 8): a URL with an unsupported scheme or no
// host fails at once, unsent, one attempt.
func TestPermanentFailuresNotRetried(t *testing.T) {
	h := &testbed.Hostile{}
	srv := httptest.NewServer(h)
	defer srv.Close()
	hostport := srv.Listener.Addr().String()
	for _, raw := range []string{"ftp://" + hostport + "/x", "gopher://" + hostport + "/x", "http:///no-host", "http://" + hostport} {
		t.Run(raw, func(t *testing.T) {
			attempts := 0
			tr := &Transport{Base: srv.Client().Transport, Limits: fast(), Backoff: retry.Backoff{Base: time.Millisecond, Cap: time.Millisecond},
				Observer: observerFunc(func(e Event) {
					if e.Kind == EventAttempt {
						attempts++
					}
				})}
			u, err := url.Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			if raw == "http://"+hostport {
				u.Host = "" // built by hand: URL.Host empty, Request.Host too
			}
			req := (&http.Request{Method: "GET", URL: u, Header: http.Header{}}).WithContext(t.Context())
			_, err = tr.RoundTrip(req)
			if err == nil {
				t.Fatal("RoundTrip succeeded")
			}
			if attempts > 1 {
				t.Errorf("%d attempts (%v), want at most 1", attempts, err)
			}
			if !errors.Is(err, ErrUnsupportedScheme) && !errors.Is(err, ErrNoHost) {
				t.Errorf("err = %v, want ErrUnsupportedScheme or ErrNoHost", err)
			}
		})
	}
	if n := h.Count(""); n != 0 {
		t.Errorf("host got %d requests", n)
	}
}

// A redirect to http://user:secret@host/ made http.Client send
// "Authorization: Basic ..." through the Transport (issue 17, defect 5):
// credentials a redirect injected are never sent.
func TestRedirectCredentialsNotSent(t *testing.T) {
	dst := &testbed.Hostile{Body: "ok"}
	dsrv := httptest.NewServer(dst)
	defer dsrv.Close()
	inject := "http://user:secret@" + dsrv.Listener.Addr().String() + "/landing"
	src := &testbed.Hostile{Location: inject}
	ssrv := httptest.NewServer(src)
	defer ssrv.Close()
	c := &http.Client{Transport: &Transport{Base: dsrv.Client().Transport, Limits: fast()}}
	resp, err := c.Get(ssrv.URL + "/start")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := dst.Count("/landing"); n != 1 {
		t.Fatalf("the redirect target got %d requests, want 1", n)
	}
	if a := dst.Authorizations(); len(a) != 0 {
		t.Errorf("the redirect target was sent Authorization %q", a)
	}
	// Credentials the caller put in its own URL still go.
	own := strings.Replace(dsrv.URL, "http://", "http://me:mine@", 1) + "/own"
	resp, err = c.Get(own)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if a := dst.Authorizations(); len(a) != 1 {
		t.Errorf("own credentials: Authorization %q, want one", a)
	}
}
