package testbed_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/polite-go/polite/testbed"
)

func TestPresetsValid(t *testing.T) {
	check := func(t *testing.T, hosts []testbed.HostConfig) {
		t.Helper()
		seen := map[string]bool{}
		for _, h := range hosts {
			if err := h.Validate(); err != nil {
				t.Error(err)
			}
			if h.Name == "" || seen[h.Name] {
				t.Errorf("host name %q empty or repeated", h.Name)
			}
			seen[h.Name] = true
		}
		testbed.NewServer(hosts...) // panics on anything Validate missed
	}
	check(t, testbed.DemoHosts())
	names := map[string]bool{}
	for _, s := range testbed.Scenarios() {
		t.Run(s.Name, func(t *testing.T) {
			if names[s.Name] || s.About == "" || s.Duration <= 0 || len(s.Hosts) == 0 {
				t.Errorf("scenario %+v: want a unique name, About, Duration and hosts", s)
			}
			names[s.Name] = true
			check(t, s.Hosts)
		})
	}
	for _, want := range []string{"steady", "step-down", "step-up", "latency-knee", "retry-after", "jittery", "mixed-20"} {
		if !names[want] {
			t.Errorf("no scenario %q", want)
		}
	}
	if n := len(testbed.Scenarios()[len(testbed.Scenarios())-1].Hosts); n != 20 {
		t.Errorf("mixed-20 has %d hosts", n)
	}
}

// Every demo host shows its behaviour to a client that simply fetches 40
// pages in a row from each, one request every 10 ms.
func TestDemoHostsBehave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := testbed.NewServer(testbed.DemoHosts()...)
		srv.StartInMemory()
		defer srv.Close()
		c := srv.Client()
		seen := map[string]map[string]bool{} // host → things seen
		for _, h := range srv.Hosts() {
			seen[h.Name()] = map[string]bool{}
		}
		for i := range 40 {
			for _, h := range srv.Hosts() {
				name := h.Name()
				go func() {
					resp, err := c.Get(srv.URL(name) + "/page/" + string(rune('a'+i%26)))
					if err != nil {
						t.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}()
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(30 * time.Second) // let the knee's queue drain; pass drop.test's step
		synctest.Wait()
		for _, h := range srv.Hosts() {
			st := h.Stats()
			checkInvariant(t, st)
			switch h.Name() {
			case "fast.test":
				if st.Rejected != 0 {
					t.Errorf("fast.test refused %d at 100 req/s for 0.4 s", st.Rejected)
				}
			case "slow.test", "retry.test", "busy.test":
				if st.Rejected == 0 {
					t.Errorf("%s refused nothing: %+v", h.Name(), st)
				}
			case "waf.test":
				if st.Blocked != 20 {
					t.Errorf("waf.test blocked %d, want 20", st.Blocked)
				}
			case "knee.test":
				if st.Rejected+st.Shed != 0 || st.P95 < 500*time.Millisecond {
					t.Errorf("knee.test: %+v, want no refusals and a grown p95", st)
				}
			}
		}
		tl := srv.Host("drop.test").Timeline()
		if tl[5].Capacity != 50 || tl[6].Capacity != 10 {
			t.Errorf("drop.test capacity %v then %v, want 50 then 10", tl[5].Capacity, tl[6].Capacity)
		}
		code, body := fetch(t, c, "http://robots.test/robots.txt")
		if code != http.StatusOK || !strings.Contains(body, "Crawl-delay: 1") || !strings.Contains(body, "Disallow: /private/") {
			t.Errorf("robots.test/robots.txt = %d %q", code, body)
		}
	})
}
