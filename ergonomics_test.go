package polite

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/polite-go/polite/bucket"
	"github.com/polite-go/polite/retry"
)

// TestClassifier: a Classifier's reading replaces polite's (a 409 retried
// as a server error, a 403 taken for a block), and one that passes leaves
// polite's own.
func TestClassifier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		n := 0
		classify := func(resp *http.Response, err error) (Outcome, bool) {
			if resp == nil {
				return 0, false
			}
			switch resp.StatusCode {
			case http.StatusConflict:
				return ServerError, true
			case http.StatusForbidden:
				return Blocked, true
			}
			return 0, false
		}
		c, s := setup(t, &Transport{Limits: fast(), Classify: classify, Backoff: retry.Backoff{Base: time.Millisecond, Cap: time.Millisecond}},
			map[string]http.HandlerFunc{
				"conflict.test": func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					n++
					first := n == 1
					mu.Unlock()
					if first {
						w.WriteHeader(http.StatusConflict)
						return
					}
					io.WriteString(w, "ok")
				},
				"forbidden.test": func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusForbidden) },
				"gone.test":      func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusGone) },
			})
		resp, body, err := get(t, c, "http://conflict.test/")
		if err != nil || resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("409 classified as a server error: got %v %q, want the retry's 200", err, body)
		}
		if got := s.count("conflict.test"); got != 2 {
			t.Errorf("conflict.test got %d requests, want 2 (the 409 retried once)", got)
		}
		if resp, _, err := get(t, c, "http://forbidden.test/"); err != nil || resp.StatusCode != 403 {
			t.Fatalf("first 403: %v, want the response", err)
		}
		if _, _, err := get(t, c, "http://forbidden.test/"); !errors.Is(err, ErrBlocked) {
			t.Errorf("after a 403 classified as a block: %v, want ErrBlocked", err)
		}
		if got := s.count("forbidden.test"); got != 1 {
			t.Errorf("forbidden.test got %d requests, want 1", got)
		}
		for range 2 {
			if resp, _, err := get(t, c, "http://gone.test/"); err != nil || resp.StatusCode != 410 {
				t.Fatalf("410 left to polite: %v, want the response", err)
			}
		}
		if got := s.count("gone.test"); got != 2 {
			t.Errorf("gone.test got %d requests, want 2 (a client error, neither retried nor a block)", got)
		}
	})
}

// TestWithoutRetries: a request under WithoutRetries is sent once, its 503
// returned as it is; the same request without it is retried.
func TestWithoutRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, s := setup(t, &Transport{Limits: fast(), Retries: 2, Backoff: retry.Backoff{Base: time.Millisecond, Cap: time.Millisecond}},
			map[string]http.HandlerFunc{
				"a.test": func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) },
			})
		req, _ := http.NewRequestWithContext(WithoutRetries(context.Background()), "GET", "http://a.test/", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 500 || s.count("a.test") != 1 {
			t.Fatalf("WithoutRetries: status %d after %d requests, want 500 after 1", resp.StatusCode, s.count("a.test"))
		}
		if resp, _, err := get(t, c, "http://a.test/"); err != nil || resp.StatusCode != 500 {
			t.Fatalf("plain request: %v", err)
		}
		if got := s.count("a.test"); got != 1+3 {
			t.Errorf("the plain request was sent %d times, want 3 (two retries)", got-1)
		}
	})
}

// TestWait: Wait spends the host's budget that RoundTrip spends, waits
// for the host's next token, and fails fast for a blocked host.
func TestWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := setup(t, &Transport{Limits: Limits{Rate: 1, Burst: 1, Concurrency: 1}},
			map[string]http.HandlerFunc{
				"blocked.test": func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Cf-Mitigated", "challenge")
					w.WriteHeader(http.StatusForbidden)
				},
			})
		tr := c.Transport.(*Transport)
		if _, _, err := get(t, c, "http://a.test/"); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		start := time.Now()
		for range 2 {
			if err := tr.Wait(ctx, "a.test"); err != nil {
				t.Fatal(err)
			}
		}
		if got := time.Since(start); got != 2*time.Second {
			t.Errorf("two Waits after a request at 1 req/s took %v, want 2s", got)
		}
		// The slot was given back: a request goes at its token.
		start = time.Now()
		if _, _, err := get(t, c, "http://a.test/"); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != time.Second {
			t.Errorf("a request after the Waits waited %v, want 1s", got)
		}
		if _, _, err := get(t, c, "http://blocked.test/"); err != nil {
			t.Fatal(err)
		}
		if err := tr.Wait(ctx, "blocked.test"); !errors.Is(err, ErrBlocked) {
			t.Errorf("Wait on a blocked host: %v, want ErrBlocked", err)
		}
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		if err := tr.Wait(cctx, "a.test"); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Wait with a deadline before the next token: %v, want DeadlineExceeded", err)
		}
		if err := tr.Wait(ctx, ""); err == nil {
			t.Error("Wait with an empty key: no error")
		}
	})
}

// TestUnclosedBodyWarning: a request that waits a minute for its host's
// slot, held by a body nobody closed, makes the Transport warn; a shorter
// wait does not.
func TestUnclosedBodyWarning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		var mu sync.Mutex
		lg := slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelWarn}))
		c, _ := setup(t, &Transport{Limits: Limits{Rate: bucket1k, Burst: 10, Concurrency: 1}, Logger: lg}, nil)
		held, err := c.Get("http://a.test/") // its body is left open
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, _, err := get(t, c, "http://a.test/")
			done <- err
		}()
		time.Sleep(59 * time.Second)
		synctest.Wait()
		mu.Lock()
		early := logs.String()
		mu.Unlock()
		if early != "" {
			t.Errorf("warned after 59 s: %s", early)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		mu.Lock()
		got := logs.String()
		mu.Unlock()
		if !strings.Contains(got, "unclosed") || !strings.Contains(got, "host=a.test") {
			t.Errorf("after 61 s waiting for the slot, log %q, want a warning naming the host and an unclosed body", got)
		}
		held.Body.Close()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

const bucket1k = 1000

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestWithCost: a request under WithCost(n) takes n of its host's tokens
// (so the next waits n intervals), and a cost above the burst fails at
// once, unsent, with an error naming cost and burst.
func TestWithCost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, s := setup(t, &Transport{Limits: Limits{Rate: 1, Burst: 3, Concurrency: 4}}, nil)
		ctx := WithCost(context.Background(), 3)
		for i, want := range []time.Duration{0, 3 * time.Second} {
			start := time.Now()
			req, _ := http.NewRequestWithContext(ctx, "GET", "http://a.test/", nil)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := time.Since(start); got != want {
				t.Errorf("request %d of cost 3 at 1 req/s: waited %v, want %v", i+1, got, want)
			}
		}
		req, _ := http.NewRequestWithContext(WithCost(ctx, 4), "GET", "http://a.test/", nil)
		_, err := c.Do(req)
		if !errors.Is(err, bucket.ErrExceedsBurst) || !strings.Contains(err.Error(), "cost 4, burst 3") {
			t.Errorf("cost 4 over a burst of 3: %v, want ErrExceedsBurst naming both", err)
		}
		if got := s.count("a.test"); got != 2 {
			t.Errorf("%d requests sent, want 2 (the cost over the burst is never sent)", got)
		}
		// The options compose: WithoutRetries keeps the cost.
		if o := optsOf(WithoutRetries(ctx)); o.cost != 3 || !o.noRetries {
			t.Errorf("WithoutRetries(WithCost(3)) = %+v, want cost 3 and no retries", o)
		}
	})
}

// TestBackgroundPriority: a background request yields its host's next
// token to a request of normal priority that waits for it, though it came
// first; alone, it is sent at its token.
func TestBackgroundPriority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, s := setup(t, &Transport{Limits: Limits{Rate: 1, Burst: 1, Concurrency: 4}}, nil)
		t0 := time.Now()
		if _, _, err := get(t, c, "http://a.test/first"); err != nil {
			t.Fatal(err)
		}
		sent := map[string]time.Duration{}
		var mu sync.Mutex
		do := func(ctx context.Context, path string) {
			req, _ := http.NewRequestWithContext(ctx, "GET", "http://a.test"+path, nil)
			resp, err := c.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			mu.Lock()
			sent[path] = time.Since(t0)
			mu.Unlock()
		}
		var wg sync.WaitGroup
		wg.Go(func() { do(WithPriority(context.Background(), Background), "/background") })
		time.Sleep(10 * time.Millisecond)
		wg.Go(func() { do(context.Background(), "/normal") })
		wg.Wait()
		if sent["/normal"] != time.Second || sent["/background"] != 2*time.Second {
			t.Errorf("sent at %v; want the normal request at 1s (the next token), the background one at 2s", sent)
		}
		// Alone, a background request is not held back.
		start := time.Now()
		do(WithPriority(context.Background(), Background), "/alone")
		if got := time.Since(start); got > time.Second {
			t.Errorf("a background request alone waited %v, want at most its token's 1s", got)
		}
		if n := s.count("a.test"); n != 4 {
			t.Errorf("%d requests, want 4", n)
		}
		if w := c.Transport.(*Transport).ext(c.Transport.(*Transport).reg.Get("a.test")).waiting.Load(); w != 0 {
			t.Errorf("%d requests still counted waiting", w)
		}
	})
}
