package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// polite fetch --same-host follows redirects only on the host a URL was
// listed under (issue 17, defect 6); without it the redirect is followed.
func TestSameHostFlag(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" {
			elsewhere.Add(1)
		}
		fmt.Fprint(w, "there")
	}))
	defer other.Close()
	// The same server under another name: localhost, not 127.0.0.1.
	target := strings.Replace(other.URL, "127.0.0.1", "localhost", 1) + "/there"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/away" {
			http.Redirect(w, r, target, http.StatusFound)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	for _, c := range []struct {
		flags  []string
		status int
		sent   int64
	}{
		{[]string{"--same-host"}, http.StatusFound, 0},
		{nil, http.StatusOK, 1},
	} {
		elsewhere.Store(0)
		argv := append([]string{"--rate", "100", "--allow-private"}, c.flags...)
		code, res, stderr := runHostile(t, t.TempDir(), urls(srv.URL, "/away"), argv...)
		r := res[srv.URL+"/away"]
		if code != ExitOK || r.Status != c.status || elsewhere.Load() != c.sent {
			t.Errorf("fetch %v: exit %d, status %d, %d requests to the other host; want %d, %d, %d (stderr %s)",
				c.flags, code, r.Status, elsewhere.Load(), ExitOK, c.status, c.sent, stderr)
		}
		if c.sent == 0 && r.RedirectNotFollowed != target {
			t.Errorf("fetch %v: redirect_not_followed %q, want %q", c.flags, r.RedirectNotFollowed, target)
		}
	}
}
