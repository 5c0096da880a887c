package robots

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

const privateRobots = "User-agent: *\nDisallow: /private/\n"

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// countingServer serves h on loopback and counts requests for /robots.txt.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			n.Add(1)
		}
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// fakeClock is a settable clock for socket tests, which cannot run in a
// synctest bubble.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// RFC 9309 §2.3.1.3 and §2.3.1.4 over real HTTP.
func TestCacheStatus(t *testing.T) {
	tests := []struct {
		status      int
		wantSource  Source
		wantPrivate bool // may /private/x be fetched?
	}{
		{200, Parsed, false},
		{203, Parsed, false},
		{400, Unavailable, true},
		{401, Unavailable, true},
		{403, Unavailable, true},
		{404, Unavailable, true},
		{410, Unavailable, true},
		{429, Unreachable, false},
		{500, Unreachable, false},
		{502, Unreachable, false},
		{503, Unreachable, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				fmt.Fprint(w, privateRobots)
			})
			var c Cache
			r, err := c.Get(t.Context(), mustURL(t, srv.URL+"/private/x"))
			if err != nil {
				t.Fatalf("Get() error = %v", err)
			}
			if r.Source() != tt.wantSource || r.StatusCode() != tt.status {
				t.Errorf("Get() = source %v status %d, want %v %d", r.Source(), r.StatusCode(), tt.wantSource, tt.status)
			}
			if got := r.Allowed("polite", "/private/x"); got != tt.wantPrivate {
				t.Errorf("Allowed(polite, /private/x) = %v, want %v", got, tt.wantPrivate)
			}
			if !r.Allowed("polite", "/public") && tt.wantSource != Unreachable {
				t.Errorf("Allowed(polite, /public) = false, want true")
			}
			if (r.Err() != nil) != (tt.wantSource == Unreachable) {
				t.Errorf("Err() = %v, want an error only when unreachable", r.Err())
			}
		})
	}
}

func TestCacheNetworkError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close() // nothing listens there now
	var c Cache
	r, err := c.Get(t.Context(), mustURL(t, srv.URL+"/x"))
	if err != nil {
		t.Fatalf("Get() error = %v", err)
	}
	if r.Source() != Unreachable || r.StatusCode() != 0 || r.Err() == nil {
		t.Errorf("Get(closed server) = %v, %d, %v, want unreachable, 0, an error", r.Source(), r.StatusCode(), r.Err())
	}
	v := r.Test("polite", "/x")
	if v.Allowed || v.Rule != (Rule{Pattern: "/"}) {
		t.Errorf("Test(polite, /x) = %+v, want disallowed by the implied Disallow: /", v)
	}
	if !r.Allowed("polite", "/robots.txt") {
		t.Errorf("Allowed(polite, /robots.txt) = false, want true")
	}
}

// RFC 9309 §2.3.1.2: at least five redirects are followed; more is
// treated as unreachable (our choice, see Cache).
func TestCacheRedirects(t *testing.T) {
	for _, hops := range []int{0, 1, 5, 6, 10} {
		t.Run(fmt.Sprintf("%d hops", hops), func(t *testing.T) {
			srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
				step := 0
				if r.URL.Path != "/robots.txt" {
					fmt.Sscanf(r.URL.Path, "/hop%d", &step)
				}
				if step < hops {
					http.Redirect(w, r, fmt.Sprintf("/hop%d", step+1), http.StatusMovedPermanently)
					return
				}
				fmt.Fprint(w, privateRobots)
			})
			var c Cache
			r, err := c.Get(t.Context(), mustURL(t, srv.URL))
			if err != nil {
				t.Fatalf("Get() error = %v", err)
			}
			want := Parsed
			if hops > maxRedirects {
				want = Unreachable
			}
			if r.Source() != want {
				t.Errorf("Get() after %d redirects: source %v (err %v), want %v", hops, r.Source(), r.Err(), want)
			}
			if r.Allowed("polite", "/private/x") {
				t.Errorf("Allowed(polite, /private/x) = true, want false")
			}
		})
	}
}

func TestCacheRedirectAcrossHosts(t *testing.T) {
	target, targetCount := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, privateRobots)
	})
	origin, originCount := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/robots.txt", http.StatusFound)
	})
	var c Cache
	r, err := c.Get(t.Context(), mustURL(t, origin.URL))
	if err != nil || r.Source() != Parsed || r.Allowed("x", "/private/a") {
		t.Fatalf("Get(origin) = %v, %v; want the target's rules", r.Source(), err)
	}
	// The rules count for the origin asked for, not for the target.
	if _, err := c.Get(t.Context(), mustURL(t, target.URL)); err != nil {
		t.Fatal(err)
	}
	if o, g := originCount.Load(), targetCount.Load(); o != 1 || g != 2 {
		t.Errorf("fetches: origin %d, target %d, want 1, 2", o, g)
	}
}

// A failed refresh keeps the earlier good copy; a later success replaces it.
func TestCacheKeepsGoodCopy(t *testing.T) {
	var failing atomic.Bool
	var body atomic.Value
	body.Store(privateRobots)
	srv, n := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, body.Load())
	})
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	c := &Cache{TTL: time.Hour, ErrorTTL: time.Minute, now: clock.now}
	u := mustURL(t, srv.URL)

	good, _ := c.Get(t.Context(), u)
	if good.Source() != Parsed {
		t.Fatalf("first Get() = %v, want parsed", good.Source())
	}
	failing.Store(true)
	clock.advance(time.Hour + time.Second)
	r, _ := c.Get(t.Context(), u)
	if r != good || n.Load() != 2 {
		t.Errorf("Get() after TTL with 503 = %v (fetches %d), want the good copy after 2 fetches", r.Source(), n.Load())
	}
	clock.advance(30 * time.Second) // within ErrorTTL: no fetch
	if r, _ := c.Get(t.Context(), u); r != good || n.Load() != 2 {
		t.Errorf("Get() within ErrorTTL = %v (fetches %d), want the good copy, 2 fetches", r.Source(), n.Load())
	}
	failing.Store(false)
	body.Store("User-agent: *\nDisallow: /other/\n")
	clock.advance(31 * time.Second)
	r, _ = c.Get(t.Context(), u)
	if r == good || n.Load() != 3 || !r.Allowed("x", "/private/a") || r.Allowed("x", "/other/a") {
		t.Errorf("Get() after recovery: fetches %d, want 3 and the new rules", n.Load())
	}
}

func TestCacheConcurrentSocket(t *testing.T) {
	release := make(chan struct{})
	srv, n := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		<-release
		fmt.Fprint(w, privateRobots)
	})
	var c Cache
	u := mustURL(t, srv.URL+"/a")
	var wg sync.WaitGroup
	results := make([]*Robots, 32)
	for i := range results {
		wg.Go(func() {
			r, err := c.Get(t.Context(), u)
			if err != nil {
				t.Errorf("Get() error = %v", err)
			}
			results[i] = r
		})
	}
	close(release)
	wg.Wait()
	if n.Load() != 1 {
		t.Errorf("server saw %d fetches, want 1", n.Load())
	}
	for i, r := range results {
		if r != results[0] {
			t.Errorf("Get() #%d returned a different *Robots", i)
		}
	}
}

func TestCacheRequest(t *testing.T) {
	var (
		mu      sync.Mutex
		agents  []string
		fetches []bool
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		agents = append(agents, r.Header.Get("User-Agent"))
		mu.Unlock()
		if r.URL.Path == "/robots.txt" {
			http.Redirect(w, r, "/real-robots.txt", http.StatusFound)
			return
		}
		fmt.Fprint(w, privateRobots)
	}))
	defer srv.Close()
	// A transport that records what a limiter in front of the Cache
	// would see.
	client := &http.Client{Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
		mu.Lock()
		fetches = append(fetches, IsFetch(req))
		mu.Unlock()
		return http.DefaultTransport.RoundTrip(req)
	})}
	c := &Cache{Client: client, UserAgent: "polite/1.0"}
	if _, err := c.Get(t.Context(), mustURL(t, srv.URL)); err != nil {
		t.Fatal(err)
	}
	if want := []string{"polite/1.0", "polite/1.0"}; strings.Join(agents, ",") != strings.Join(want, ",") {
		t.Errorf("User-Agent headers = %q, want %q", agents, want)
	}
	if len(fetches) != 2 || !fetches[0] || !fetches[1] {
		t.Errorf("IsFetch on the fetch and its redirect = %v, want [true true]", fetches)
	}
	plain, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	if IsFetch(plain) {
		t.Errorf("IsFetch(ordinary request) = true, want false")
	}
}

func TestCacheMaxBytes(t *testing.T) {
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "User-agent: *\nDisallow: /a\n"+strings.Repeat("#\n", 100)+"Disallow: /b\n")
	})
	c := &Cache{MaxBytes: 100}
	r, err := c.Get(t.Context(), mustURL(t, srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	if r.Allowed("x", "/a") || !r.Allowed("x", "/b") {
		t.Errorf("with MaxBytes 100: Allowed(/a), Allowed(/b) = %v, %v, want false, true",
			r.Allowed("x", "/a"), r.Allowed("x", "/b"))
	}
}

func TestCacheLogs(t *testing.T) {
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusInternalServerError)
	})
	var buf bytes.Buffer
	c := &Cache{Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	if _, err := c.Get(t.Context(), mustURL(t, srv.URL+"/x?token=secret")); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"level=DEBUG", "level=WARN", "host=" + srv.URL, "status=500", "reason=", "delay=1m0s"} {
		if !strings.Contains(out, want) {
			t.Errorf("log does not contain %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "secret") {
		t.Errorf("log contains the query string:\n%s", out)
	}
}

func TestOrigin(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{"http://example.com/a/b?c", "http://example.com", false},
		{"HTTP://Example.COM:80/", "http://example.com", false},
		{"https://example.com:443/x", "https://example.com", false},
		{"https://example.com:80/x", "https://example.com:80", false},
		{"http://example.com:8080", "http://example.com:8080", false},
		{"http://user:pw@example.com/", "http://example.com", false},
		{"http://[::1]:8080/x", "http://[::1]:8080", false},
		{"http://[::1]/x", "http://[::1]", false},
		{"http://[fe80::1%25en0]:8080/x", "http://[fe80::1%25en0]:8080", false},
		{"http://[fe80::1%25en0]/x", "http://[fe80::1%25en0]", false},
		{"ftp://example.com/", "", true},
		{"/relative", "", true},
		{"http:///nohost", "", true},
	}
	for _, tt := range tests {
		got, err := Origin(mustURL(t, tt.in))
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("Origin(%q) = %q, %v, want %q (error %v)", tt.in, got, err, tt.want, tt.wantErr)
		}
		if err == nil {
			// The robots.txt URL is built on the origin: it must parse.
			if _, err := url.Parse(got + "/robots.txt"); err != nil {
				t.Errorf("Origin(%q) = %q: %v", tt.in, got, err)
			}
		}
	}
	var c Cache
	if _, err := c.Get(t.Context(), mustURL(t, "ftp://example.com/")); err == nil {
		t.Errorf("Get(ftp://example.com/) error = nil, want one")
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// handlerClient returns a client that serves requests by calling h
// directly: no sockets, so it works inside a synctest bubble.
func handlerClient(h http.HandlerFunc) *http.Client {
	return &http.Client{Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
		rec := httptest.NewRecorder()
		h(rec, req)
		if err := req.Context().Err(); err != nil {
			return nil, err
		}
		resp := rec.Result()
		resp.Request = req
		return resp, nil
	})}
}

func TestCacheTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		c := &Cache{Client: handlerClient(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			fmt.Fprint(w, privateRobots)
		})}
		u := mustURL(t, "https://example.com/x")
		steps := []struct {
			sleep time.Duration
			want  int32
		}{
			{0, 1},
			{time.Hour, 1},
			{DefaultTTL - time.Hour - time.Nanosecond, 1},
			{time.Nanosecond, 2}, // expired exactly at TTL
			{DefaultTTL / 2, 2},
			{DefaultTTL / 2, 3},
		}
		for i, s := range steps {
			time.Sleep(s.sleep)
			if _, err := c.Get(t.Context(), u); err != nil {
				t.Fatal(err)
			}
			if got := n.Load(); got != s.want {
				t.Errorf("step %d (+%v): %d fetches, want %d", i, s.sleep, got, s.want)
			}
		}
	})
}

// An unreachable robots.txt disallows everything and is retried after
// ErrorTTL, doubling, until it recovers.
func TestCacheUnreachableRecovery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		var up atomic.Bool
		c := &Cache{Client: handlerClient(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			if !up.Load() {
				http.Error(w, "down", http.StatusInternalServerError)
				return
			}
			fmt.Fprint(w, privateRobots)
		})}
		u := mustURL(t, "https://example.com/x")
		get := func() *Robots {
			r, err := c.Get(t.Context(), u)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		steps := []struct {
			name      string
			sleep     time.Duration
			up        bool
			wantN     int32
			wantSrc   Source
			wantPublc bool
		}{
			{"first fetch fails", 0, false, 1, Unreachable, false},
			{"within ErrorTTL", time.Minute - time.Second, false, 1, Unreachable, false},
			{"retry after 1m fails", time.Second, false, 2, Unreachable, false},
			{"next retry waits 2m", time.Minute + 59*time.Second, false, 2, Unreachable, false},
			{"retry after 2m fails", time.Second, false, 3, Unreachable, false},
			{"host recovers, 4m wait holds", 3 * time.Minute, true, 3, Unreachable, false},
			{"retry after 4m succeeds", time.Minute, true, 4, Parsed, true},
			{"cached for TTL", DefaultTTL - time.Second, true, 4, Parsed, true},
		}
		for _, s := range steps {
			time.Sleep(s.sleep)
			up.Store(s.up)
			r := get()
			if n.Load() != s.wantN || r.Source() != s.wantSrc || r.Allowed("x", "/public") != s.wantPublc {
				t.Errorf("%s: fetches %d, source %v, Allowed(/public) %v; want %d, %v, %v",
					s.name, n.Load(), r.Source(), r.Allowed("x", "/public"), s.wantN, s.wantSrc, s.wantPublc)
			}
		}
	})
}

func TestErrorTTL(t *testing.T) {
	tests := []struct {
		ttl, errorTTL time.Duration
		n             int
		want          time.Duration
	}{
		{0, 0, 1, time.Minute},
		{0, 0, 2, 2 * time.Minute},
		{0, 0, 6, 32 * time.Minute},
		{0, 0, 7, time.Hour},
		{0, 0, 1000, time.Hour},
		{10 * time.Minute, 0, 5, 10 * time.Minute},
		{0, 2 * time.Hour, 3, 2 * time.Hour},
		{0, time.Second, 3, 4 * time.Second},
	}
	for _, tt := range tests {
		c := &Cache{TTL: tt.ttl, ErrorTTL: tt.errorTTL}
		if got := c.errorTTL(tt.n); got != tt.want {
			t.Errorf("Cache{TTL: %v, ErrorTTL: %v}.errorTTL(%d) = %v, want %v", tt.ttl, tt.errorTTL, tt.n, got, tt.want)
		}
	}
}

// Concurrent first Gets share one fetch: every caller is parked in Get
// while the single fetch is held inside the handler.
func TestCacheSharedFetch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		release := make(chan struct{})
		c := &Cache{Client: handlerClient(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			<-release
			fmt.Fprint(w, privateRobots)
		})}
		const callers = 50
		results := make([]*Robots, callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				r, err := c.Get(t.Context(), mustURL(t, fmt.Sprintf("https://example.com/page/%d", i)))
				if err != nil {
					t.Errorf("Get() error = %v", err)
				}
				results[i] = r
			})
		}
		synctest.Wait() // all callers and the fetch are blocked now
		if got := n.Load(); got != 1 {
			t.Errorf("fetches while %d callers wait = %d, want 1", callers, got)
		}
		close(release)
		wg.Wait()
		for i, r := range results {
			if r != results[0] || r.Source() != Parsed {
				t.Errorf("caller %d got %v, want the shared parsed result", i, r.Source())
			}
		}
		if got := n.Load(); got != 1 {
			t.Errorf("fetches = %d, want 1", got)
		}
	})
}

// A caller that gives up gets its context's error; the fetch goes on for
// everyone else and its result is cached, not mistaken for a failure.
func TestCacheCallerCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		c := &Cache{Client: handlerClient(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			time.Sleep(10 * time.Second) // a slow host
			fmt.Fprint(w, privateRobots)
		})}
		u := mustURL(t, "https://example.com/")
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if _, err := c.Get(ctx, u); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Get(ctx with 1s deadline) error = %v, want context.DeadlineExceeded", err)
		}
		r, err := c.Get(t.Context(), u)
		if err != nil || r.Source() != Parsed || n.Load() != 1 {
			t.Errorf("Get() after a caller gave up = %v, %v, %d fetches; want parsed, nil, 1", r.Source(), err, n.Load())
		}
	})
}

func TestCacheTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &Cache{Timeout: 5 * time.Second, Client: handlerClient(func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done() // a host that never answers
		})}
		start := time.Now()
		r, err := c.Get(t.Context(), mustURL(t, "https://example.com/"))
		if err != nil {
			t.Fatal(err)
		}
		if r.Source() != Unreachable || !errors.Is(r.Err(), context.DeadlineExceeded) {
			t.Errorf("Get(silent host) = %v, %v; want unreachable by deadline", r.Source(), r.Err())
		}
		if d := time.Since(start); d != 5*time.Second {
			t.Errorf("Get(silent host) took %v, want 5s", d)
		}
	})
}

// Entries unused for a TTL past their expiry are dropped once the map has
// grown, so the cache does not keep every origin ever seen.
func TestCacheSweep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &Cache{TTL: time.Minute, Client: handlerClient(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, privateRobots)
		})}
		for i := range 1500 {
			if _, err := c.Get(t.Context(), mustURL(t, fmt.Sprintf("https://h%d.example/", i))); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(3 * time.Minute)
		for i := range 1100 {
			if _, err := c.Get(t.Context(), mustURL(t, fmt.Sprintf("https://new%d.example/", i))); err != nil {
				t.Fatal(err)
			}
		}
		c.mu.Lock()
		n := len(c.entries)
		c.mu.Unlock()
		if n > 1100 {
			t.Errorf("after 2600 origins, 1500 long expired: %d entries, want at most 1100", n)
		}
	})
}

// checkEntries checks that every slot is keyed by its own origin.
func checkEntries(t *testing.T, c *Cache) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, s := range c.entries {
		if s.origin != k {
			t.Errorf("entries[%s] holds the slot of %s", k, s.origin)
		}
	}
}

// Spellings of one origin share its fetch and entry. Get answers one in
// lower case without an allocation once cached; GetRef answers the origin's
// own spelling without a lock either, and the others as Get does.
func TestCacheSpellings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		c := &Cache{Client: handlerClient(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			fmt.Fprint(w, privateRobots)
		})}
		spellings := []string{
			"https://example.com/a", "https://example.com:443/b", "HTTPS://example.com/c",
			"https://Example.com/d", "https://EXAMPLE.COM:443/e", "https://user@example.com/f",
		}
		var first *Robots
		var ref Ref
		for i, s := range spellings {
			u := mustURL(t, s)
			r, err := c.Get(t.Context(), u)
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				first = r
			}
			if r2, err := c.GetRef(t.Context(), u, &ref); r != first || r2 != first || err != nil {
				t.Errorf("Get(%s), GetRef = a different Robots from Get(%s) (%v)", s, spellings[0], err)
			}
			if lower := strings.ToLower(u.Host) == u.Host; lower {
				if allocs := testing.AllocsPerRun(10, func() { c.Get(t.Context(), u) }); allocs != 0 {
					t.Errorf("Get(%s) after a first Get allocates %v times, want 0", s, allocs)
				}
			}
			if allocs := testing.AllocsPerRun(10, func() { c.GetRef(t.Context(), u, &ref) }); allocs != 0 && u.Host == "example.com" {
				t.Errorf("GetRef(%s) after a first Get allocates %v times, want 0", s, allocs)
			}
			if got := ref.s.Load(); got == nil || got.origin != "https://example.com" {
				t.Errorf("after GetRef(%s), the Ref names %v, want https://example.com", s, got)
			}
		}
		if got := n.Load(); got != 1 {
			t.Errorf("fetches = %d, want 1", got)
		}
		c.mu.Lock()
		if len(c.entries) != 1 {
			t.Errorf("entries = %d, want 1", len(c.entries))
		}
		c.mu.Unlock()
		checkEntries(t, c)
		// Expiry is seen through every spelling, and through the Ref.
		time.Sleep(DefaultTTL)
		if _, err := c.GetRef(t.Context(), mustURL(t, spellings[0]), &ref); err != nil {
			t.Fatal(err)
		}
		for _, s := range spellings {
			if _, err := c.Get(t.Context(), mustURL(t, s)); err != nil {
				t.Fatal(err)
			}
		}
		if got := n.Load(); got != 2 {
			t.Errorf("fetches after TTL = %d, want 2", got)
		}
		checkEntries(t, c)
	})
}

// A Ref whose origin the sweep dropped is answered by a new fetch, and then
// names the new entry.
func TestCacheSweepRef(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		c := &Cache{TTL: time.Minute, Client: handlerClient(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			fmt.Fprint(w, privateRobots)
		})}
		get := func(s string, ref *Ref) {
			t.Helper()
			if _, err := c.GetRef(t.Context(), mustURL(t, s), ref); err != nil {
				t.Fatal(err)
			}
		}
		var ref0 Ref
		get("https://h0.example/", &ref0)
		for i := 1; i < 1500; i++ {
			get(fmt.Sprintf("https://h%d.example/", i), new(Ref))
		}
		time.Sleep(3 * time.Minute)
		for i := range 1100 {
			get(fmt.Sprintf("https://new%d.example/", i), new(Ref))
		}
		checkEntries(t, c)
		c.mu.Lock()
		_, kept := c.entries["https://h0.example"]
		c.mu.Unlock()
		if kept {
			t.Fatalf("h0.example not swept")
		}
		old := ref0.s.Load()
		before := n.Load()
		get("https://h0.example/", &ref0)
		if got := n.Load(); got != before+1 {
			t.Errorf("GetRef(swept origin) fetches %d times, want 1", got-before)
		}
		c.mu.Lock()
		cur := c.entries["https://h0.example"]
		c.mu.Unlock()
		if s := ref0.s.Load(); s == old || s != cur {
			t.Errorf("after the refetch the Ref names %p, want the new entry %p (old %p)", s, cur, old)
		}
	})
}

// TestCacheHitRace hammers the lock-free paths (Ref) while entries expire,
// are refetched, fail and are swept; run it with -race. The origins in use move
// on as the clock does, so old ones go stale and are swept.
func TestCacheHitRace(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	var n atomic.Int32
	c := &Cache{TTL: time.Second, now: clock.now, Client: handlerClient(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%3 == 0 {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, privateRobots)
	})}
	const (
		origins = 64
		callers = 8
		gets    = 1500 // per caller
		perStep = 100  // Gets between clock steps
	)
	var urls []*url.URL
	for i := range origins {
		urls = append(urls, mustURL(t, fmt.Sprintf("https://h%d.example/x", i)),
			mustURL(t, fmt.Sprintf("https://H%d.EXAMPLE:443/x", i)))
	}
	var (
		wg    sync.WaitGroup
		phase atomic.Int32
		done  atomic.Int64
	)
	for g := range callers {
		wg.Go(func() {
			var ref Ref
			for i := range gets {
				// The callers move the clock themselves, counted in
				// Gets: a main loop stepping it would be starved by
				// callers that never block.
				if done.Add(1)%perStep == 0 {
					clock.advance(700 * time.Millisecond)
					phase.Add(1)
					c.mu.Lock()
					c.sweepAt = 0 // sweep on the next fetch
					c.mu.Unlock()
				}
				u := urls[(int(phase.Load())*2+(g+i)%8)%len(urls)]
				get := c.Get
				if i%2 == 0 {
					get = func(ctx context.Context, u *url.URL) (*Robots, error) { return c.GetRef(ctx, u, &ref) }
				}
				r, err := get(t.Context(), u)
				if err != nil || r == nil {
					t.Errorf("Get(%s) = %v, %v", u, r, err)
					return
				}
			}
		})
	}
	wg.Wait()
	checkEntries(t, c)
	if steps := callers * gets / perStep; int(n.Load()) < steps {
		t.Errorf("%d fetches in %d clock steps: the test did not exercise refetching", n.Load(), steps)
	}
}

// BenchmarkCacheGetHit measures Get for an origin whose robots.txt is
// cached: the cost the Transport pays on every request. "many" spreads the
// calls over 1,000 cached origins, as a crawler does.
func BenchmarkCacheGetHit(b *testing.B) {
	c := &Cache{Client: handlerClient(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, privateRobots)
	})}
	one := []*url.URL{mustURL(b, "https://example.com/a/b?c=d")}
	var many []*url.URL
	for i := range 1000 {
		many = append(many, mustURL(b, fmt.Sprintf("https://h%d.example.com/a/b?c=d", i)))
	}
	for _, u := range many {
		if _, err := c.Get(b.Context(), u); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := c.Get(b.Context(), one[0]); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		urls []*url.URL
	}{{"one", one}, {"many", many}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			ctx := b.Context()
			i := 0
			for b.Loop() {
				if _, err := c.Get(ctx, bc.urls[i%len(bc.urls)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run(bc.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			ctx := b.Context()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					if _, err := c.Get(ctx, bc.urls[i%len(bc.urls)]); err != nil {
						b.Error(err)
						return
					}
					i++
				}
			})
		})
		// As Transport asks: through a Ref kept per host.
		b.Run(bc.name+"/ref/parallel", func(b *testing.B) {
			b.ReportAllocs()
			ctx := b.Context()
			refs := make([]Ref, len(bc.urls))
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					j := i % len(bc.urls)
					if _, err := c.GetRef(ctx, bc.urls[j], &refs[j]); err != nil {
						b.Error(err)
						return
					}
					i++
				}
			})
		})
	}
}

// Answers that carry nothing but their status are one shared copy, not one
// per origin: a crawl of many hosts mostly meets 404s and empty files.
func TestCacheSharesEmptyAnswers(t *testing.T) {
	for _, c := range []struct {
		status int
		body   string
		source Source
	}{{404, "", Unavailable}, {200, "", Parsed}, {200, "# only a comment\n", Parsed}} {
		srv1, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(c.status)
			fmt.Fprint(w, c.body)
		})
		srv2, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(c.status)
			fmt.Fprint(w, c.body)
		})
		var cache Cache
		r1, err1 := cache.Get(context.Background(), mustURL(t, srv1.URL+"/a"))
		r2, err2 := cache.Get(context.Background(), mustURL(t, srv2.URL+"/a"))
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if r1 != r2 {
			t.Errorf("%d %q: two origins hold two copies of the same empty answer", c.status, c.body)
		}
		if r1.Source() != c.source || r1.status != c.status || !r1.Test("x", "/private/").Allowed {
			t.Errorf("%d %q: shared copy is source %v status %d", c.status, c.body, r1.Source(), r1.status)
		}
	}
}

// FuzzOrigin holds what GetRef's lock-free path rests on: an origin is its
// own origin, and a URL spelled as an origin (slot.names) has that origin.
// Origin never panics on a parsed URL.
func FuzzOrigin(f *testing.F) {
	for _, s := range []string{
		"https://example.com/a", "HTTP://Example.COM:80/", "https://example.com:443",
		"http://[::1]:8080/x", "http://[fe80::1%25en0]/", "http://[::ffff:127.0.0.1]/",
		"https://xn--bcher-kva.example/", "https://bücher.example/", "http://127.1/",
		"http://1password.com/", "ftp://example.com/", "http:///x", "http://a:b@c/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.Parse(raw)
		if err != nil {
			return
		}
		o, err := Origin(u)
		if err != nil {
			return
		}
		ou, err := url.Parse(o)
		if err != nil {
			t.Fatalf("Origin(%q) = %q, which does not parse: %v", raw, o, err)
		}
		if o2, err := Origin(ou); o2 != o || err != nil {
			t.Fatalf("Origin(%q) = %q, but its own origin is %q (%v)", raw, o, o2, err)
		}
		// A slot is keyed by an origin, and names u when u is spelled as
		// it: then u's origin must be that one.
		spelled := u.Scheme + "://" + u.Host
		su, err := url.Parse(spelled)
		if err != nil {
			return
		}
		if so, err := Origin(su); err != nil || so != spelled {
			return // no slot has this key
		}
		if (&slot{origin: spelled}).names(u) && o != spelled {
			t.Fatalf("the slot of %q names %q, whose origin is %q", spelled, raw, o)
		}
	})
}

// mapShared is a SharedStore in memory, with a clock, for the tests.
type mapShared struct {
	mu  sync.Mutex
	now func() time.Time
	m   map[string]sharedAnswer
}

type sharedAnswer struct {
	code    int
	body    []byte
	expires time.Time
}

func (s *mapShared) Load(_ context.Context, origin string) (int, []byte, time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.m[origin]
	if !ok || !s.now().Before(a.expires) {
		return 0, nil, 0, false
	}
	return a.code, a.body, a.expires.Sub(s.now()), true
}

func (s *mapShared) Store(_ context.Context, origin string, code int, body []byte, ttl time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]sharedAnswer{}
	}
	s.m[origin] = sharedAnswer{code, append([]byte(nil), body...), s.now().Add(ttl)}
}

// Caches sharing a store (a fleet's workers): robots.txt is fetched once,
// each follows it, none uses it past what it has left; an answer that does
// not stand (a 503) is not shared.
func TestCacheShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var fetches, status atomic.Int32
		status.Store(200)
		client := handlerClient(func(w http.ResponseWriter, r *http.Request) {
			fetches.Add(1)
			w.WriteHeader(int(status.Load()))
			fmt.Fprint(w, privateRobots)
		})
		store := &mapShared{now: time.Now}
		newCache := func() *Cache {
			return &Cache{Client: client, TTL: time.Hour, ErrorTTL: time.Minute, Shared: store}
		}
		a, b := newCache(), newCache()
		u := mustURL(t, "https://example.com/private/x")
		ctx := context.Background()
		ra, err := a.Get(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Minute)
		rb, err := b.Get(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		if fetches.Load() != 1 || ra.Allowed("polite", "/private/x") || rb.Allowed("polite", "/private/x") {
			t.Fatalf("%d fetches; a allows /private/x: %v, b: %v; want 1 fetch and both disallowing", fetches.Load(), ra.Allowed("polite", "/private/x"), rb.Allowed("polite", "/private/x"))
		}
		// b took the answer with 10 minutes left: it asks again after
		// those, not after its own hour.
		time.Sleep(11 * time.Minute)
		status.Store(503)
		if _, err := b.Get(ctx, u); err != nil {
			t.Fatal(err)
		}
		if fetches.Load() != 2 {
			t.Errorf("%d fetches once the shared answer ran out, want 2", fetches.Load())
		}
		if _, _, _, ok := store.Load(ctx, "https://example.com"); ok {
			t.Errorf("a 503 was shared")
		}
	})
}

// Peek returns what a Get fetched for the origin, and never fetches.
func TestCachePeek(t *testing.T) {
	srv, n := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "User-agent: *\nDisallow: /private/\nSitemap: http://a.test/sitemap.xml\n")
	})
	var c Cache
	u := mustURL(t, srv.URL+"/page")
	if r, ok := c.Peek(u); ok || r != nil {
		t.Errorf("Peek before any Get = %v, %v", r, ok)
	}
	if got := n.Load(); got != 0 {
		t.Errorf("Peek fetched: %d requests", got)
	}
	if _, err := c.Get(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	r, ok := c.Peek(mustURL(t, srv.URL+"/other"))
	if !ok || len(r.Sitemaps()) != 1 {
		t.Errorf("Peek after Get = %v, %v", r, ok)
	}
	if r, ok := c.Peek(mustURL(t, "http://elsewhere.test/")); ok || r != nil {
		t.Errorf("Peek of another origin = %v, %v", r, ok)
	}
}
