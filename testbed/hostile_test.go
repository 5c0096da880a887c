package testbed

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHostileReason: the reason phrase goes out as it is, escape sequences
// and all, with the headers and body.
func TestHostileReason(t *testing.T) {
	reason := "Unavailable \x1b[2J\x1b]52;c;eA==\a " + strings.Repeat("x", 100<<10)
	h := &Hostile{Status: 503, Reason: reason, Body: "busy", Header: http.Header{"Retry-After": {"1"}}}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for range 2 { // the connection closed after the first, a second one
		resp, err := http.Get(srv.URL + "/a")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.Status != "503 "+reason || resp.StatusCode != 503 || string(body) != "busy" || resp.Header.Get("Retry-After") != "1" {
			t.Errorf("got %.40q… %d, body %q, Retry-After %q", resp.Status, resp.StatusCode, body, resp.Header.Get("Retry-After"))
		}
	}
	if n := h.Count("/a"); n != 2 {
		t.Errorf("%d requests counted, want 2", n)
	}
}
