package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// API jobs (issue 18, item 8): -X and --data (as given, or @FILE) go with
// every URL, --data alone makes a POST with a form Content-Type (as curl),
// -H overrides it, and a second run with another method on the same --out
// is refused.
func TestMethodAndData(t *testing.T) {
	srv, got := recordServer(t, func(r *http.Request) string {
		b, _ := io.ReadAll(r.Body)
		return fmt.Sprintf("%s %s %q %s", r.Method, r.URL.Path, b, r.Header.Get("Content-Type"))
	})
	body := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(body, []byte("{\"a\":\n1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	code, _, stderr := runHostile(t, out, urls(srv.URL, "/put"), "-X", "PUT", "--data", "@"+body, "-H", "Content-Type: application/json")
	if code != 0 {
		t.Fatalf("PUT job: exit %d: %s", code, stderr)
	}
	code, _, stderr = runHostile(t, t.TempDir(), urls(srv.URL, "/post"), "-d", "a=1&b=2")
	if code != 0 {
		t.Fatalf("--data job: exit %d: %s", code, stderr)
	}
	want := []string{`PUT /put "{\"a\":\n1}\n" application/json`, `POST /post "a=1&b=2" application/x-www-form-urlencoded`}
	if fmt.Sprint(got()) != fmt.Sprint(want) {
		t.Errorf("server got %q, want %q", got(), want)
	}
	code, _, stderr = runHostile(t, out, urls(srv.URL, "/put"), "-X", "POST", "--data", "@"+body)
	// A usage error, refused before anything else (issue 33, item 1).
	if code != ExitUsage || !strings.Contains(stderr, "another method or body") {
		t.Errorf("another method on the same --out: exit %d (%s), want %d and a refusal", code, stderr, ExitUsage)
	}
}

// Bad -X and --data values are usage errors that name the flag and what
// was wrong, before anything is fetched.
func TestMethodAndDataErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-X", "GE T"}, `--method "GE T": not an HTTP method`},
		{[]string{"-X", "CONNECT"}, "--method CONNECT"},
		{[]string{"-X", "HEAD", "-d", "x"}, "HEAD request carries no body"},
		{[]string{"-d", "@"}, "@ names no file"},
		{[]string{"-d", "@/nonexistent/body"}, "/nonexistent/body"},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"fetch", "--progress", "none", "--out", t.TempDir()}, append(tc.args, "-")...)
		code := Main(context.Background(), args, strings.NewReader("http://127.0.0.1:1/\n"), &stdout, &stderr)
		if code != ExitUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), ExitUsage, tc.want)
		}
	}
}

// recordServer is a server that answers every page "page" and robots.txt
// 404, and keeps what note says of each page request; the func returns
// the notes so far.
func recordServer(t *testing.T, note func(r *http.Request) string) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		n := note(r)
		mu.Lock()
		got = append(got, n)
		mu.Unlock()
		w.Write([]byte("page"))
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}
