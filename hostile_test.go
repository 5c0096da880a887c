package polite

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
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
			if !pe.Until.After(time.Now().AddDate(100, 0, 0)) {
				t.Errorf("paused until %v, want more than a century away (the cap is 200 years)", pe.Until)
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

func TestIsPublic(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"8.8.8.8", true}, {"2001:4860:4860::8888", true}, {"1.1.1.1", true},
		{"127.0.0.1", false}, {"::1", false}, {"169.254.169.254", false}, {"10.1.2.3", false},
		{"172.16.0.1", false}, {"192.168.1.1", false}, {"100.64.0.1", false}, {"0.0.0.0", false},
		{"::", false}, {"fe80::1", false}, {"fd00::1", false}, {"224.0.0.1", false}, {"255.255.255.255", false},
		{"::ffff:169.254.169.254", false}, {"::ffff:127.0.0.1", false}, {"::ffff:8.8.8.8", true},
		{"::127.0.0.1", false}, {"64:ff9b::a9fe:a9fe", false}, {"2002:a9fe:a9fe::", false},
	} {
		if got := IsPublic(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("IsPublic(%s) = %v, want %v", tc.addr, got, tc.want)
		}
	}
}

// The Transport reached link-local, private, IPv4-mapped and decimal-IP
// destinations (issue 17, defect 6). With PublicOnly every dial is checked
// on the address it connects to, after resolution (so a decimal
// 2130706433 that a resolver turns into 127.0.0.1 is refused like the
// address itself; not dialed here, to send no DNS query); the check runs
// before connecting, so the non-loopback cases below send nothing
// anywhere.
func TestPublicOnly(t *testing.T) {
	h := &testbed.Hostile{Body: "ok"}
	srv := httptest.NewServer(h)
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	for _, host := range []string{"127.0.0.1", "[::ffff:127.0.0.1]", "localhost"} {
		t.Run(host, func(t *testing.T) {
			tr := &Transport{PublicOnly: true, Limits: fast()} // a refused dial is not retried
			_, err := (&http.Client{Transport: tr}).Get("http://" + net.JoinHostPort(strings.Trim(host, "[]"), port) + "/")
			if err == nil {
				t.Fatal("GET succeeded")
			}
			if !errors.Is(err, ErrNotPublic) {
				t.Errorf("err = %v, want ErrNotPublic", err)
			}
		})
	}
	if n := h.Count(""); n != 0 {
		t.Errorf("the loopback host got %d requests", n)
	}
	d := PublicDialer(nil)
	for _, addr := range []string{"169.254.169.254:80", "10.0.0.1:80", "[::ffff:169.254.169.254]:80", "[fe80::1]:80"} {
		if err := d.Control("tcp", addr, nil); !errors.Is(err, ErrNotPublic) {
			t.Errorf("Control(%s) = %v, want ErrNotPublic", addr, err)
		}
	}
	// An exception admits loopback, and only that.
	loop := PublicDialer(func(ap netip.AddrPort) bool { return ap.Addr().IsLoopback() })
	if err := loop.Control("tcp", "127.0.0.1:80", nil); err != nil {
		t.Errorf("with the loopback exception: %v", err)
	}
	if err := loop.Control("tcp", "169.254.169.254:80", nil); !errors.Is(err, ErrNotPublic) {
		t.Errorf("with the loopback exception, link-local: %v", err)
	}
	// Another RoundTripper cannot be checked: every request fails.
	tr := &Transport{PublicOnly: true, Base: roundTripFunc(func(*http.Request) (*http.Response, error) { panic("sent") })}
	if _, err := (&http.Client{Transport: tr}).Get(srv.URL); err == nil || !strings.Contains(err.Error(), "PublicOnly") {
		t.Errorf("PublicOnly over a custom Base: %v", err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// The soft-block peek read up to 32 KiB before RoundTrip returned, however
// slowly it came: a body dripping at 1 B/s held RoundTrip for 9 hours
// (issue 17, defect 11). The peek is bounded by PeekTimeout; the body is
// still read in full afterwards.
func TestDrippingBodyPeekBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const size = MaxPeek
		tr := &Transport{Limits: fast(), IgnoreRobots: true}
		c, _ := setup(t, tr, map[string]http.HandlerFunc{
			"drip.test": func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.Header().Set("Content-Length", strconv.Itoa(size))
				w.WriteHeader(200)
				for i := range size {
					if _, err := w.Write([]byte{'a' + byte(i%26)}); err != nil {
						return
					}
					w.(http.Flusher).Flush()
					select {
					case <-r.Context().Done():
						return
					case <-time.After(time.Second):
					}
				}
			},
		})
		start := time.Now()
		resp, err := c.Get("http://drip.test/")
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > PeekTimeout+time.Second {
			t.Errorf("RoundTrip returned after %v, want within PeekTimeout (%v)", d, PeekTimeout)
		}
		// The caller reads what it wants, and may give up.
		b := make([]byte, 10)
		if _, err := io.ReadFull(resp.Body, b); err != nil || string(b) != "abcdefghij" {
			t.Errorf("first bytes %q, %v", b, err)
		}
		resp.Body.Close()
	})
}

// One ordinary 200 page with a reCAPTCHA contact form marked its host
// blocked, and the host's other URLs failed unsent (issue 17, defect 10).
// On a 200, a widget is evidence only on a tiny page; a challenge page's
// own markers, or any marker on a 403/429/503, still are.
func TestCaptchaWidgetOnPageIsNotABlock(t *testing.T) {
	form := `<html><head><title>Contact us</title></head><body>` + strings.Repeat("<p>Opening hours, address, directions and more.</p>\n", 120) +
		`<form><div class="g-recaptcha" data-sitekey="x"></div><button>Send</button></form></body></html>`
	wall := `<html><head><title>Verify</title></head><body><div class="g-recaptcha" data-sitekey="x"></div></body></html>`
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   bool
	}{
		{"contact form on a 200 page", 200, form, false},
		{"tiny 200 captcha wall", 200, wall, true},
		{"contact form on a 403", 403, form, true},
		{"cloudflare challenge on a 200", 200, `<html><head><title>Just a moment...</title></head>` + strings.Repeat(" ", 5000) + `</html>`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &testbed.Hostile{Status: tc.status, Header: http.Header{"Content-Type": {"text/html"}}, Body: tc.body}
			srv := httptest.NewServer(h)
			defer srv.Close()
			c := &http.Client{Transport: &Transport{Base: srv.Client().Transport, Limits: fast(), Retries: -1}}
			resp, err := c.Get(srv.URL + "/contact")
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			_, err = c.Get(srv.URL + "/other")
			if blocked := errors.Is(err, ErrBlocked); blocked != tc.want {
				t.Errorf("after /contact, /other: err = %v, want blocked %v", err, tc.want)
			}
		})
	}
}

// A status past 599 was read as a server error and retried like a 503
// (issue 29, item 13): RFC 9110 (section 15) defines 100-599, so a larger
// one is the server breaking the protocol, a client error that retrying
// cannot mend: one attempt, handed back as it came.
func TestStatusBeyond599NotRetried(t *testing.T) {
	for _, status := range []int{600, 999} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var outs []Outcome
				tr := &Transport{Limits: fast(), Retries: 3, Backoff: retry.Backoff{Base: time.Second, Jitter: retry.NoJitter},
					Observer: observerFunc(func(e Event) {
						if e.Kind == EventAttempt {
							outs = append(outs, e.Outcome)
						}
					})}
				c, s := setup(t, tr, map[string]http.HandlerFunc{
					"a.test": func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(status) },
				})
				resp, _, err := get(t, c, "http://a.test/")
				if err != nil {
					t.Fatalf("GET: %v", err)
				}
				if resp.StatusCode != status {
					t.Errorf("status %d, want %d", resp.StatusCode, status)
				}
				if n := s.count("a.test"); n != 1 {
					t.Errorf("host got %d requests, want 1 (outcomes %v)", n, outs)
				}
				if len(outs) != 1 || outs[0] != ClientError {
					t.Errorf("attempt outcomes %v, want [client_error]", outs)
				}
			})
		})
	}
}

// BÜCHER.example was keyed and dialed as xn--bcher-kva.example but sent as
// "Host: xn--BCHER-2pa.example" (issue 29, item 13): net/http converts the
// Host field to Punycode without lower-casing it first, and Punycode keeps
// the case of the ASCII letters, so the label named another host. The name
// is lower-cased (IDNA-mapped, as the key is) before it is sent, in the
// Host field and the request URL alike, and the caller's request is left
// as it was.
func TestIDNHostSentAsKeyed(t *testing.T) {
	for _, raw := range []string{"http://BÜCHER.example/a", "http://Bücher.Example/a", "http://bücher.example/a"} {
		// The first attempt is sent as the caller's request, or a copy
		// with a User-Agent; a retry is a clone: each gets the name right.
		for _, agent := range []string{"", "bot/1"} {
			t.Run(raw+" agent "+agent, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var hosts, dials []string
					var mu sync.Mutex
					tr := &Transport{Limits: fast(), UserAgent: agent, IgnoreRobots: true, Backoff: retry.Backoff{Base: time.Second, Jitter: retry.NoJitter}}
					c, _ := setup(t, tr, map[string]http.HandlerFunc{
						"xn--bcher-kva.example": func(w http.ResponseWriter, r *http.Request) {
							mu.Lock()
							hosts = append(hosts, r.Host+" "+r.URL.String())
							first := len(hosts) == 1
							mu.Unlock()
							if first {
								w.WriteHeader(http.StatusInternalServerError) // retried
							}
						},
					})
					base := tr.Base.(*http.Transport)
					dial := base.DialContext
					base.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
						mu.Lock()
						dials = append(dials, addr)
						mu.Unlock()
						return dial(ctx, network, addr)
					}
					req, err := http.NewRequest("GET", raw, nil)
					if err != nil {
						t.Fatal(err)
					}
					wantReq := req.Host + " " + req.URL.String()
					resp, err := c.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					resp.Body.Close()
					mu.Lock()
					defer mu.Unlock()
					if want := []string{"xn--bcher-kva.example /a", "xn--bcher-kva.example /a"}; !slices.Equal(hosts, want) {
						t.Errorf("server saw Host and URL %q, want %q", hosts, want)
					}
					if len(dials) == 0 || dials[0] != "xn--bcher-kva.example:80" {
						t.Errorf("dialed %q, want xn--bcher-kva.example:80", dials)
					}
					if got := req.Host + " " + req.URL.String(); got != wantReq {
						t.Errorf("the caller's request became %q, was %q", got, wantReq)
					}
				})
			})
		}
	}
}
