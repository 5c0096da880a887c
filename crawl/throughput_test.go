package crawl

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/bucket"
	"github.com/polite-go/polite/inflight"
	"github.com/polite-go/polite/testbed"
)

// TestThroughput runs a job in-process over many unlimited loopback hosts.
// It is skipped unless POLITE_THROUGHPUT is set; crawl/testdata/throughput.sh
// measures the real binary.
func TestThroughput(t *testing.T) {
	if os.Getenv("POLITE_THROUGHPUT") == "" {
		t.Skip("set POLITE_THROUGHPUT=1 to run")
	}
	const hosts, perHost = 1000, 100
	srv, list := manyHosts(t, hosts, perHost)
	dir := t.TempDir()
	base := srv.Transport()
	base.MaxIdleConnsPerHost = 8
	tr := &polite.Transport{Base: base, Limits: polite.Limits{Rate: bucket.Inf, Concurrency: inflight.Max}}
	j, err := Open(dir, Options{Transport: tr, Workers: 128})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	t0 := time.Now()
	if _, err := j.Load(strings.NewReader(list)); err != nil {
		t.Fatal(err)
	}
	t.Logf("load: %v", time.Since(t0))
	sum, err := j.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	d := time.Since(t0)
	t.Logf("%+v in %v: %.0f URLs/s", sum, d, float64(sum.Total)/d.Seconds())
	if sum.Total != hosts*perHost || sum.DoneNow != sum.Total {
		t.Errorf("summary %+v, want all %d URLs done in this run", sum, hosts*perHost)
	}
}

// cpuTime is the user and system CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// manyHosts starts a testbed of unlimited hosts h0.test, h1.test, … and
// returns it with a list of perHost pages of each, the hosts interleaved.
func manyHosts(t testing.TB, hosts, perHost int) (*testbed.Server, string) {
	t.Helper()
	cfgs := make([]testbed.HostConfig, hosts)
	for i := range cfgs {
		cfgs[i] = testbed.HostConfig{Name: fmt.Sprintf("h%d.test", i)}
	}
	srv := testbed.NewServer(cfgs...)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	var list strings.Builder
	for p := range perHost {
		for h := range hosts {
			fmt.Fprintf(&list, "http://h%d.test/page/%d\n", h, p)
		}
	}
	return srv, list.String()
}

// BenchmarkRun is a job's cost per URL: b.N URLs over 100 unlimited
// loopback hosts, 1 KiB pages, WARC on, the list loaded before the timer
// starts. The testbed serves in the same process, so its cost is in the
// figures too (the same before and after a change).
func BenchmarkRun(b *testing.B) {
	const hosts = 100
	srv, list := manyHosts(b, hosts, (b.N+hosts-1)/hosts)
	base := srv.Transport()
	base.MaxIdleConnsPerHost = 8
	tr := &polite.Transport{Base: base, Limits: polite.Limits{Rate: bucket.Inf, Concurrency: inflight.Max}}
	j, err := Open(b.TempDir(), Options{Transport: tr, Workers: 128})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	if _, err := j.Load(strings.NewReader(list)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	sum, err := j.Run(context.Background(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	// CPU time per URL (the process's, the testbed's included) holds
	// still on a machine shared with other work, where ns/op does not.
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(sum.DoneNow), "cpu-µs/URL")
	if sum.DoneNow != sum.Total {
		b.Fatalf("summary %+v, want every URL done", sum)
	}
	b.ReportMetric(float64(sum.DoneNow)/b.Elapsed().Seconds(), "URLs/s")
}
