package main_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polite-go/polite/internal/redistest"
)

// linkSite serves pages on several hosts by name from one loopback
// listener: page i of a host links to i+1, to two pages further on, and
// to the same page of the next host; every page is reachable from each
// host's /p/0. It counts the requests of each URL.
type linkSite struct {
	addr  string
	hosts int
	pages int

	mu   sync.Mutex
	hits map[string]int
}

func startLinkSite(t *testing.T, hosts, pages int) *linkSite {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &linkSite{addr: ln.Addr().String(), hosts: hosts, pages: pages, hits: map[string]int{}}
	srv := &http.Server{Handler: s}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

func (s *linkSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host, _, _ := strings.Cut(r.Host, ":")
	u := "http://" + host + r.URL.RequestURI()
	s.mu.Lock()
	s.hits[u]++
	s.mu.Unlock()
	var h, i int
	if _, err := fmt.Sscanf(host, "h%d.site.test", &h); err != nil || h >= s.hosts {
		http.NotFound(w, r)
		return
	}
	if _, err := fmt.Sscanf(r.URL.Path, "/p/%d", &i); err != nil || i >= s.pages {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html")
	fmt.Fprintf(w, `<html><body><a href="%d">next</a> <a href="/p/%d">on</a> <a href="../p/%d#x">back</a>
<a href="http://h%d.site.test/p/%d">there</a> <a href="http://elsewhere.test/">away</a></body></html>`,
		(i+1)%s.pages, (i*7+3)%s.pages, (i+s.pages-1)%s.pages, (h+1)%s.hosts, i)
}

func (s *linkSite) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]int, len(s.hits))
	for k, v := range s.hits {
		m[k] = v
	}
	return m
}

// TestFollowKillAndResume: a crawl (--follow) killed with SIGKILL at random
// instants while it discovers, then run to its end: every page of the site
// has exactly one result, nothing outside it was requested, and no URL
// recorded as finished before a kill was fetched again.
func TestFollowKillAndResume(t *testing.T) {
	t.Parallel()
	const hosts, pages = 4, 400
	s := startLinkSite(t, hosts, pages)
	list := filepath.Join(t.TempDir(), "seeds.txt")
	var seeds strings.Builder
	for h := range hosts {
		fmt.Fprintf(&seeds, "http://h%d.site.test/p/0\n", h)
	}
	if err := os.WriteFile(list, []byte(seeds.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	args := []string{"fetch", "--out", out, "--follow", "--max-depth", "0", "--connect-to", "::" + s.addr,
		"--rate", "150", "--burst", "5", "--concurrency", "4", "--adaptive=false", "--robots=false",
		"--warc-max-size", "64KB", "--progress", "none", list}
	finished := map[string]int{}
	rng := rand.New(rand.NewPCG(3, 5))
	for kill := range 5 {
		cmd := exec.Command(bin, args...)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(250+rng.IntN(500)) * time.Millisecond)
		cmd.Process.Kill() // SIGKILL
		cmd.Wait()
		now := s.counts()
		for _, r := range results(t, out, true) {
			if _, ok := finished[r.URL]; !ok {
				finished[r.URL] = now[r.URL]
			}
		}
		t.Logf("kill %d: %d URLs finished so far", kill+1, len(finished))
	}
	if len(finished) == 0 || len(finished) == hosts*pages {
		t.Fatalf("%d of %d URLs finished at the kills: pick other delays", len(finished), hosts*pages)
	}
	r := polite(t, args...)
	if r.code != 0 {
		t.Fatalf("exit %d, want 0\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	seen := map[string]int{}
	for _, x := range results(t, out, false) {
		seen[x.URL]++
	}
	counts := s.counts()
	refetched := 0
	for h := range hosts {
		for i := range pages {
			u := fmt.Sprintf("http://h%d.site.test/p/%d", h, i)
			n := counts[u]
			before, wasFinished := finished[u]
			switch {
			case seen[u] != 1:
				t.Errorf("%s: %d results", u, seen[u])
			case n == 0:
				t.Errorf("%s: never fetched", u)
			case wasFinished && n != before:
				t.Errorf("%s: finished before a kill, then fetched again (%d times in all, %d then)", u, n, before)
			case n > 1:
				refetched++
			}
		}
	}
	if len(seen) != hosts*pages {
		t.Errorf("%d URLs have results, want %d", len(seen), hosts*pages)
	}
	for u := range counts {
		if !strings.Contains(u, ".site.test/p/") {
			t.Errorf("%s requested: outside the scope", u)
		}
	}
	t.Logf("%d URLs fetched again: in flight at a kill", refetched)
}

// TestFollowFleetE2E: a crawl over a fleet (issue 35, item 3): three
// workers, separate processes on one redis-server, one given the seeds and
// two joining without; the links each finds go to the shared frontier.
// Every page of the site is requested once in all, nothing out of scope
// is, and the fleet's merged results name each page once.
func TestFollowFleetE2E(t *testing.T) {
	t.Parallel()
	addr := redistest.Start(t)
	redis := "redis://" + addr + "/0"
	const hosts, pages = 3, 150
	s := startLinkSite(t, hosts, pages)
	common := []string{"--progress", "none", "--follow", "--max-depth", "0", "--connect-to", "::" + s.addr,
		"--rate", "100", "--burst", "5", "--adaptive=false", "--robots=false",
		"--redis", redis, "--fleet", "crawl", "--workers", "8"}
	var wg sync.WaitGroup
	runs := make([]run, 3)
	for w := range 2 {
		wg.Go(func() {
			runs[w] = polite(t, append([]string{"fetch", "--out", t.TempDir(), "--worker", fmt.Sprint("joiner", w)}, common...)...)
		})
	}
	time.Sleep(300 * time.Millisecond)
	var seeds []string
	for h := range hosts {
		seeds = append(seeds, fmt.Sprintf("http://H%d.site.test/p/0#top", h))
	}
	runs[2] = polite(t, append(append([]string{"fetch", "--out", t.TempDir(), "--worker", "seeder"}, common...), writeList(t, seeds))...)
	wg.Wait()
	for w, r := range runs {
		if r.code != 0 {
			t.Fatalf("worker %d: exit %d\n%s\n%s", w, r.code, r.stdout, r.stderr)
		}
	}
	got := merged(t, redis, "crawl")
	counts := s.counts()
	for h := range hosts {
		for i := range pages {
			u := fmt.Sprintf("http://h%d.site.test/p/%d", h, i)
			if _, ok := got[u]; !ok {
				t.Errorf("%s: no committed result", u)
			}
			if counts[u] != 1 {
				t.Errorf("%s: requested %d times", u, counts[u])
			}
		}
	}
	if len(got) != hosts*pages {
		t.Errorf("%d committed results, want %d", len(got), hosts*pages)
	}
	for u := range counts {
		if !strings.Contains(u, ".site.test/p/") {
			t.Errorf("%s requested: outside the scope", u)
		}
	}
}
