package politeness

import (
	"flag"
	"fmt"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/polite-go/polite/adaptive"
	"github.com/polite-go/polite/testbed"
)

var (
	flagTune    = flag.Bool("tune", false, "run each scenario shifted five ways and print polite's mean results")
	flagBackoff = flag.Float64("backoff", 0, "with -tune: adaptive.Config.Backoff")
	flagTarget  = flag.Float64("target", 0, "with -tune: adaptive.Config.Target")
	flagPolicy  = flag.String("policy", "polite", "with -tune: the policy")
	flagInitial = flag.Float64("initial", 0, "with -tune: adaptive.Config.Initial (the live benchmark's --rate is 5)")
)

// TestTune averages a policy's results over variants of the scenarios
// (steps shifted, hosts reseeded), which a single deterministic run hides.
func TestTune(t *testing.T) {
	if !*flagTune {
		t.Skip("run with -tune")
	}
	cfg := adaptive.Config{Backoff: *flagBackoff, Target: *flagTarget, Initial: *flagInitial}
	pols := append([]Policy{Ours(cfg)}, Peers()[1:]...)
	var p Policy
	for _, q := range pols {
		if q.Name == *flagPolicy {
			p = q
		}
	}
	scs := pick(append(testbed.Scenarios(), liveOnly()...), *flagScenarios, func(s testbed.Scenario) string { return s.Name })
	for _, sc := range scs {
		var g, r, s, p95 float64
		never := 0
		n := *flagVariants
		for k := range n {
			if *flagShift >= 0 && k != *flagShift {
				continue
			}
			v := variant(sc, k)
			synctest.Test(t, func(t *testing.T) {
				if *flagDebug {
					defer traceTo(func(s string) { fmt.Println(s) })()
				}
				res, err := RunOne(t.Context(), v, p, Options{Bare: *flagBare})
				if err != nil {
					t.Fatal(err)
				}
				if *flagShift >= 0 {
					fmt.Println(res.Hosts[0].Sent)
					fmt.Println(res.Hosts[0].Denied)
				}
				if *flagEach {
					fmt.Printf("  variant %2d: goodput %5.1f%%  refused %5.2f%%  settle %4.1f s  p95 %.2fx\n",
						k, 100*res.Goodput, 100*res.Refused, res.Settle.Seconds(), res.P95)
				}
				g += res.Goodput
				p95 += res.P95
				r += res.Refused
				if res.Settle < 0 {
					never++
				} else {
					s += res.Settle.Seconds()
				}
			})
		}
		fmt.Printf("%-16s %-13s goodput %5.1f%%  refused %5.2f%%  settle %4.1f s (never %d)  p95 %.2fx\n",
			sc.Name, p.Name, 100*g/float64(n), 100*r/float64(n), s/float64(max(n-never, 1)), never, p95/float64(n))
	}
}

// liveOnly returns the live benchmark's scenarios of testbed hosts that
// have no simulated twin (issue 16's bucket-load and queue-knee), as
// simulated scenarios, so -tune can run them in fake time too.
func liveOnly() []testbed.Scenario {
	var out []testbed.Scenario
	for _, l := range LiveScenarios() {
		if l.Twin != "" || len(l.Hosts) == 0 || l.Nginx != nil {
			continue
		}
		sec := l.Seconds
		if sec == 0 && l.URLs > 0 && l.Hosts[0].Rate > 0 {
			sec = float64(l.URLs) / l.Hosts[0].Rate // the time its list takes at capacity
		}
		if sec == 0 {
			sec = 30
		}
		out = append(out, testbed.Scenario{Name: l.Name, About: l.About, Hosts: l.Hosts,
			Duration: time.Duration(sec * float64(time.Second)), Concurrency: l.Concurrency})
	}
	return out
}

var (
	flagShift    = flag.Int("shift", -1, "with -tune: run only this variant")
	flagVariants = flag.Int("variants", 5, "with -tune: how many variants to average over")
	flagEach     = flag.Bool("each", false, "with -tune: print each variant's result")
)

// variant returns variant k of a scenario: variant 0 is the scenario itself;
// the others reseed its hosts, scale their capacity by 0.85 to 1.15 (the rate
// of a token bucket, the service time of a host of servers) and shift
// a capacity step by up to 5 s, so that averages over variants do not hang
// on one trajectory.
func variant(sc testbed.Scenario, k int) testbed.Scenario {
	v := sc
	v.Hosts = append([]testbed.HostConfig(nil), sc.Hosts...)
	f := 1 + 0.3*(math.Mod(float64(k)*0.618, 1)-0.5)
	if k == 0 {
		f = 1
	}
	for i := range v.Hosts {
		h := &v.Hosts[i]
		h.Seed = uint64(k*100 + i + 1)
		h.Rate *= f
		h.Burst = max(int(float64(h.Burst)*f), 1)
		if h.Rate == 0 && h.Servers > 0 {
			// Capacity is servers over service time: scale it by
			// shortening the service.
			h.Latency = time.Duration(float64(h.Latency) / f)
		}
		if len(h.Schedule) > 0 {
			h.Schedule = append([]testbed.Step(nil), h.Schedule...)
			h.Schedule[0].At += time.Duration(k*700%5000) * time.Millisecond
			for j := range h.Schedule {
				h.Schedule[j].Rate *= f
				h.Schedule[j].Burst = max(int(float64(h.Schedule[j].Burst)*f), 1)
			}
		}
	}
	return v
}
