package testbed_test

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polite-go/polite/testbed"
)

// The access log writes a line per request, unknown hosts included, that
// ParseRequest reads back; under concurrency no line is torn.
func TestAccessLog(t *testing.T) {
	web := smallSite.MustGenerate()
	srv := testbed.NewServer(web.HostConfigs()...)
	var buf lockedBuffer
	log := &testbed.AccessLog{Out: &buf, Keep: true}
	srv.SetAccessLog(log)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	start := time.Now()
	urls := []string{"http://h00.site.test/", "http://h01.site.test/gone/1.html", "http://h02.site.test/robots.txt", "http://elsewhere1.test/p3.html"}
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			// Through the shared listener, so that a host outside the
			// site reaches the server too.
			u, _ := url.Parse(urls[i%len(urls)])
			req, _ := http.NewRequest("GET", "http://"+srv.Addr()+u.Path, nil)
			req.Host = u.Host
			resp, err := c.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 40 || len(log.Requests()) != 40 {
		t.Fatalf("%d lines, %d requests kept; want 40", len(lines), len(log.Requests()))
	}
	seen := map[string]testbed.Request{}
	for _, line := range lines {
		r, err := testbed.ParseRequest(line)
		if err != nil {
			t.Fatal(err)
		}
		if r.String() != line {
			t.Errorf("ParseRequest(%q).String() = %q", line, r.String())
		}
		if r.Time.Before(start.Add(-time.Second)) || r.Method != "GET" || r.Conditional {
			t.Errorf("line %q", line)
		}
		seen[r.Host+" "+r.URI] = r
	}
	for key, want := range map[string]int{
		"h00.site.test /": 200, "h01.site.test /gone/1.html": 404, "h02.site.test /robots.txt": 200, "elsewhere1.test /p3.html": 404,
	} {
		if r, ok := seen[key]; !ok || r.Status != want || r.Status == 200 && r.Bytes == 0 {
			t.Errorf("%s: logged %+v, want status %d", key, r, want)
		}
	}
	if _, err := testbed.ParseRequest("2026-01-01T00:00:00Z h GET / 200"); err == nil {
		t.Error("ParseRequest of a short line: no error")
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
