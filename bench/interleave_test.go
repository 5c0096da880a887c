package bench

import (
	"flag"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"
)

var (
	interleave = flag.Duration("interleave", 0, "how long TestGetAllowInterleaved runs (skipped when zero)")
	batch      = flag.Int("interleave-batch", 20_000, "calls per batch in TestGetAllowInterleaved")
)

// TestGetAllowInterleaved times BenchmarkGetAllow's serial work for polite,
// the mutex map and two floors (read2, read1: see BenchmarkGetAllowFloor)
// in turn, in batches (-interleave-batch calls, 20,000 by default), for as
// long as -interleave says. On a shared machine whose load changes from one
// second to the next, a benchmark that runs one peer for seconds and then
// the next compares them under different loads; batches taken in turn
// (each peer in each place of the order by rounds) see the same load. All
// four are built and live at once, so a short batch starts with caches
// holding the others' data: 20,000 calls measure a registry that misses
// to memory, as one in a busy program does; a million calls, about a
// second, mostly what BenchmarkGetAllow measures, a registry alone with the
// caches. It prints each batch as a benchmark line, for benchstat, and logs
// the median over rounds of polite's time to each other's in the same round.
//
//	go test -run GetAllowInterleaved -interleave 60s | tee out.txt; benchstat out.txt
func TestGetAllowInterleaved(t *testing.T) {
	if *interleave <= 0 {
		t.Skip("set -interleave to run")
	}
	idx, now := hostIndexes(), time.Now()
	peers := []struct {
		name string
		body func(next) int64
	}{
		{"polite", politeBody(newPolite(t, numHosts, now), idx, now)},
		{"mutexmap", mutexMapBody(newMutexMapN(t, numHosts, now), idx, now)},
		{"read2", read2Body(newCellPtrs(), idx)},
		{"read1", read1Body(newCells(), idx)},
	}
	runtime.GC()                         // finish the collections the builds set off before timing
	per := make([][]float64, len(peers)) // ns per call, by peer and round
	for end, round := time.Now().Add(*interleave), 0; time.Now().Before(end); round++ {
		for k := range peers {
			p := (k + round) % len(peers)
			n := *batch
			start := time.Now()
			if denied := peers[p].body(func() bool { n--; return n >= 0 }); denied != 0 {
				t.Fatalf("%s: %d of %d calls refused, want all admitted", peers[p].name, denied, *batch)
			}
			per[p] = append(per[p], float64(time.Since(start).Nanoseconds())/float64(*batch))
		}
	}
	procs := runtime.GOMAXPROCS(0)
	for p, ns := range per {
		for _, v := range ns {
			fmt.Printf("BenchmarkGetAllowInterleaved/%s-%d\t%d\t%.1f ns/op\n", peers[p].name, procs, *batch, v)
		}
	}
	for p := 1; p < len(peers); p++ {
		ratios := make([]float64, len(per[0]))
		for r := range ratios {
			ratios[r] = per[0][r] / per[p][r]
		}
		slices.Sort(ratios)
		t.Logf("polite / %s: median %.2f over %d rounds (quartiles %.2f, %.2f)", peers[p].name,
			ratios[len(ratios)/2], len(ratios), ratios[len(ratios)/4], ratios[3*len(ratios)/4])
	}
}
