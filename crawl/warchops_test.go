package crawl

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/bucket"
)

// startOn serves h at ip on a free port, and returns its base URL.
func startOn(t *testing.T, ip string, h http.HandlerFunc) string {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Skip(err) // only 127.0.0.1 may exist here
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// warcResponse is a response record as TestWARCRedirectHops reads it.
type warcResponse struct {
	target, ip string
	status     int
	off        int64
}

// A redirected URL's WARC record carried the listed URL with the final
// hop's content and address, and no record of the redirects (issue 29,
// item 11): replay served the final page at the first URL, and a 301's
// Location was lost. Each hop is archived as wget and Heritrix do: a
// response record (and its request record) per hop, with that hop's URL,
// status, headers and address; the final response under the URL that
// answered, where results.jsonl's warc_offset points. A redirect loop keeps
// the hops it made too.
func TestWARCRedirectHops(t *testing.T) {
	var b string
	a := startOn(t, "127.0.0.2", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			http.NotFound(w, r)
		case "/start":
			w.Header().Set("X-Hop", "one")
			http.Redirect(w, r, "/middle", http.StatusMovedPermanently)
		case "/middle":
			http.Redirect(w, r, b+"/end", http.StatusFound)
		case "/loop1":
			http.Redirect(w, r, "/loop2", http.StatusFound)
		case "/loop2":
			http.Redirect(w, r, "/loop1", http.StatusFound)
		}
	})
	b = startOn(t, "127.0.0.3", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/end" {
			fmt.Fprint(w, "the final page")
			return
		}
		http.NotFound(w, r)
	})
	tr := &polite.Transport{Base: &http.Transport{}, Limits: polite.Limits{Rate: bucket.Inf, Concurrency: 2}}
	dir := t.TempDir()
	runJob(t, dir, tr, a+"/start\n"+a+"/loop1\n", Options{Bodies: BodiesWARC})

	f, err := os.Open(filepath.Join(dir, WARCFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []warcResponse
	requests := map[string]int{}
	err = ReadWARC(f, true, func(r WARCRecord) error {
		target := r.Header.Get("WARC-Target-URI")
		switch r.Header.Get("WARC-Type") {
		case "response":
			if !strings.HasSuffix(target, "/robots.txt") {
				got = append(got, warcResponse{target, r.Header.Get("WARC-IP-Address"), r.Status, r.Offset})
			}
		case "request":
			requests[target]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []warcResponse{
		{a + "/start", "127.0.0.2", 301, 0},
		{a + "/middle", "127.0.0.2", 302, 0},
		{b + "/end", "127.0.0.3", 200, 0},
	}
	loop := []warcResponse{
		{a + "/loop1", "127.0.0.2", 302, 0},
		{a + "/loop2", "127.0.0.2", 302, 0},
	}
	// The two URLs' records come in the order they finished.
	var chain, loops []warcResponse
	for _, r := range got {
		if strings.Contains(r.target, "/loop") {
			loops = append(loops, r)
		} else {
			chain = append(chain, r)
		}
	}
	same := func(got, want []warcResponse) bool {
		if len(got) != len(want) {
			return false
		}
		for i := range got {
			if got[i].target != want[i].target || got[i].ip != want[i].ip || got[i].status != want[i].status {
				return false
			}
		}
		return true
	}
	if !same(chain, want) || !same(loops, loop) {
		t.Errorf("response records %+v, want the hops in order %+v then %+v", got, want, loop)
	}
	for _, r := range append(want, loop...) {
		if requests[r.target] != 1 {
			t.Errorf("%d request records for %s, want 1", requests[r.target], r.target)
		}
	}
	for _, r := range readResults(t, dir) {
		switch r.URL {
		case a + "/start":
			if r.Outcome != OK || r.FinalURL != b+"/end" || r.WARC == nil || len(chain) != 3 || *r.WARC != chain[2].off {
				t.Errorf("%s: outcome %q final %q warc_offset %v; want ok, %s, the final response's offset", r.URL, r.Outcome, r.FinalURL, r.WARC, b+"/end")
			}
		case a + "/loop1":
			if r.Outcome != RedirectLoop || r.WARC != nil {
				t.Errorf("%s: outcome %q warc_offset %v; want redirect_loop, none", r.URL, r.Outcome, r.WARC)
			}
		}
	}
}

// The hops kept by URLs still mid-chain share a bound (hopBudget): past it
// a hop is not archived, the URL still fetched and its final response
// kept; what finished URLs held is given back.
func TestWARCHopsBounded(t *testing.T) {
	base := serveAll(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			http.NotFound(w, r)
		case "/end":
			fmt.Fprint(w, "the final page")
		default:
			http.Redirect(w, r, "/end", http.StatusFound)
		}
	})
	for _, c := range []struct {
		name   string
		budget int64
		hops   int
	}{
		{"default", 0, 3},
		{"none fits", 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := &polite.Transport{Base: base, Limits: polite.Limits{Rate: bucket.Inf, Concurrency: 2}}
			dir := t.TempDir()
			j := loadJob(t, dir, "http://a.test/1\nhttp://a.test/2\nhttp://a.test/3\n", Options{Transport: tr, Bodies: BodiesWARC})
			defer j.Close()
			j.hopBudget = c.budget
			sum, err := j.Run(t.Context(), nil)
			if err != nil || sum.Outcomes[OK] != 3 {
				t.Fatalf("summary %+v, %v; want 3 ok", sum, err)
			}
			if n := j.hopBytes.Load(); n != 0 {
				t.Errorf("%d bytes of hops still counted after the run", n)
			}
			hops, finals := 0, 0
			f, _ := os.Open(filepath.Join(dir, WARCFile))
			defer f.Close()
			ReadWARC(f, true, func(r WARCRecord) error {
				if r.Header.Get("WARC-Type") == "response" {
					switch {
					case r.Status == http.StatusFound:
						hops++
					case strings.HasSuffix(r.Header.Get("WARC-Target-URI"), "/end"):
						finals++
					}
				}
				return nil
			})
			if hops != c.hops || finals != 3 {
				t.Errorf("%d hop and %d final response records, want %d and 3", hops, finals, c.hops)
			}
		})
	}
}
