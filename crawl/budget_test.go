package crawl

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/testbed"
)

// With the Transport keyed by domain, the job asks Ready and State about
// the domain's budget, which its requests draw on, never about a fresh
// entry of each host's own (issue 18, item 4: --key domain rows showed a
// default entry, and the scheduler asked it whether the host may send).
func TestKeyDomainSchedulesOnTheBudget(t *testing.T) {
	srv := testbed.NewServer(testbed.HostConfig{Name: "a.shop.test"}, testbed.HostConfig{Name: "b.shop.test"})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var list strings.Builder
	for i := range 10 {
		fmt.Fprintf(&list, "http://a.shop.test/page/%d\nhttp://b.shop.test/page/%d\n", i, i)
	}
	tr := &polite.Transport{Base: srv.Transport(), Key: polite.KeyDomain, IgnoreRobots: true,
		Limits: polite.Limits{Rate: 200, Burst: 1, Concurrency: 1}}
	dir := t.TempDir()
	j := loadJob(t, dir, list.String(), Options{Transport: tr, Workers: 4})
	defer j.Close()
	sum, err := j.Run(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !sum.OK() {
		t.Fatalf("summary %+v", sum)
	}
	var keys []string
	for st := range tr.Hosts() {
		keys = append(keys, st.Key)
	}
	if !slices.Equal(keys, []string{"shop.test"}) {
		t.Errorf("the Transport holds state for %q, want only the domain's budget", keys)
	}
	p := j.Progress(-1)
	if len(p.Hosts) != 2 {
		t.Fatalf("%d host rows, want 2", len(p.Hosts))
	}
	for _, h := range p.Hosts {
		if h.Budget != "shop.test" || h.Rate != 200 {
			t.Errorf("row %s: budget %q rate %v, want shop.test at 200/s", h.Host, h.Budget, h.Rate)
		}
	}
}

// URLs of a host held back by a pause count as waiting, not queued; those
// of a host only spacing its requests (its rate) stay queued (issue 18,
// item 4: "waiting" did not count the URLs of paused hosts).
func TestCountsPausedHostsAsWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSched(func(h *host, now time.Time) (time.Duration, polite.Reason) {
			if h.key == "paused.test" {
				return time.Hour, polite.ReasonRetryAfter
			}
			return time.Hour, polite.ReasonRate
		})
		now := time.Now()
		s.mu.Lock()
		for key, n := range map[string]int{"paused.test": 5, "spaced.test": 3} {
			h := &host{key: key}
			s.hosts[key] = h
			for i := range n {
				it := &item{id: int64(i), host: h}
				h.hold(it)
				s.requeue(it, time.Time{}, false, now)
			}
		}
		s.mu.Unlock()
		got := make(chan *item)
		go func() { got <- s.next() }()
		synctest.Wait() // both hosts asked and put to sleep
		if inflight, queued, waiting := s.counts(); inflight != 0 || queued != 3 || waiting != 5 {
			t.Errorf("counts: in flight %d, queued %d, waiting %d; want 0, 3, 5", inflight, queued, waiting)
		}
		s.Stop()
		if it := <-got; it != nil {
			t.Errorf("next handed out %v after Stop", it)
		}
	})
}

// Slowest names the host the job will wait for longest at the rates the
// hosts are held to, for the display's ETA (issue 18, item 4: the ETA was
// the job's recent throughput, blind to one slow host's long tail).
func TestSlowestHost(t *testing.T) {
	srv := testbed.NewServer(testbed.HostConfig{Name: "slow.test"}, testbed.HostConfig{Name: "fast.test"})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var list strings.Builder
	for i := range 12 {
		fmt.Fprintf(&list, "http://slow.test/page/%d\nhttp://fast.test/page/%d\n", i, i)
	}
	tr := &polite.Transport{Base: srv.Transport(), IgnoreRobots: true, Limits: polite.Limits{Rate: 1000, Burst: 1},
		Rules: []polite.Rule{{Pattern: "slow.test", Limits: polite.Limits{Rate: 8, Burst: 1}}}}
	j := loadJob(t, t.TempDir(), list.String(), Options{Transport: tr, Workers: 4})
	defer j.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ran := make(chan error, 1)
	go func() { _, err := j.Run(ctx, nil); ran <- err }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if p := j.Progress(-1); p.Outcomes[OK] >= 14 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	s, ok := j.Slowest()
	cancel()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	if !ok || s.Host != "slow.test" || s.Rate != 8 || s.Left < 1 || s.Left > 10 {
		t.Fatalf("Slowest() = %+v, %v; want slow.test at 8/s with URLs left", s, ok)
	}
	if want := time.Duration(float64(s.Left) / 8 * float64(time.Second)); s.ETA != want {
		t.Errorf("ETA %v for %d URLs at 8/s, want %v", s.ETA, s.Left, want)
	}
}
