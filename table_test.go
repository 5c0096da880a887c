package polite

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestTableAgainstMap drives the table and a map with the same random
// inserts, lookups and sweeps, including colliding hashes, and checks they
// agree: backward-shift deletion must never break a probe sequence.
func TestTableAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var tab table
	ref := map[string]*Host{}
	hashOf := func(k string) uint64 {
		// Few distinct hashes, so clusters are long and wrap around.
		var h uint64 = 1
		for i := 0; i < len(k); i++ {
			h = h*31 + uint64(k[i])
		}
		return (h%97)*0x9E3779B97F4A7C15 | 1
	}
	for round := range 200 {
		for range rng.IntN(200) {
			k := fmt.Sprintf("k%d", rng.IntN(2000))
			if _, ok := ref[k]; ok {
				continue
			}
			h := &Host{key: k}
			ref[k] = h
			tab.insert(h, hashOf(k))
		}
		drop := rng.IntN(3)
		tab.sweep(func(h *Host) bool {
			if len(h.key)%3 == drop && rng.IntN(2) == 0 {
				delete(ref, h.key)
				return true
			}
			return false
		})
		if tab.n != len(ref) {
			t.Fatalf("round %d: table holds %d, map %d", round, tab.n, len(ref))
		}
		for k, h := range ref {
			if got := tab.get(k, hashOf(k)); got != h {
				t.Fatalf("round %d: get(%q) = %v, want the host inserted", round, k, got)
			}
		}
		for range 50 {
			k := fmt.Sprintf("k%d", rng.IntN(4000))
			if got := tab.get(k, hashOf(k)); got != ref[k] {
				t.Fatalf("round %d: get(%q) = %v, want %v", round, k, got, ref[k])
			}
		}
	}
}
