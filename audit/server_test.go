package audit

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// newServer starts a loopback server answering 204, and returns its URL.
func newServer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
