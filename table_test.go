package polite

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestTableAgainstMap drives the table and a map with the same random
// inserts, lookups and sweeps, including colliding hashes, and checks they
// agree: a deletion must never hide a host that went on past a full group.
func TestTableAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	hashOf := func(k string) uint64 {
		// Few distinct hashes, so groups fill, runs are long and wrap
		// around, and tags collide.
		var h uint64 = 1
		for i := 0; i < len(k); i++ {
			h = h*31 + uint64(k[i])
		}
		return (h % 97) * 0x9E3779B97F4A7C15
	}
	tab := table{hash: hashOf}
	ref := map[string]*Host{}
	for round := range 200 {
		for range rng.IntN(200) {
			k := fmt.Sprintf("k%d", rng.IntN(2000))
			if _, ok := ref[k]; ok {
				continue
			}
			h := newHost(k, -1)
			ref[k] = h
			tab.insert(h, hashOf(k))
		}
		drop := rng.IntN(3)
		tab.sweep(func(h *Host) bool {
			if len(h.Key())%3 == drop && rng.IntN(2) == 0 {
				delete(ref, h.Key())
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

// TestRegistryLockFreeGets runs lock-free Gets against sweeps that evict
// every idle host and inserts that grow and shrink the tables: a host held
// between Get and Put is never evicted (it is what Get returns for its key),
// and a host once evicted is never handed out again.
func TestRegistryLockFreeGets(t *testing.T) {
	later := time.Now().Add(time.Hour) // every host without a holder is idle
	r := &Registry{Limits: Limits{Rate: 1e9, Burst: 1}, IdleTimeout: time.Nanosecond, now: func() time.Time { return later }}
	keys := make([]string, 300)
	for i := range keys {
		keys[i] = fmt.Sprintf("h%d.example", i)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; i < 2000 && !stop.Load(); i++ {
			r.Sweep()
		}
	})
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range 20_000 {
				k := keys[rng.IntN(len(keys))]
				h := r.Get(k)
				if n := h.refs.Load(); n <= 0 {
					errs <- fmt.Errorf("Get(%q) returned a host with refs %d", k, n)
					return
				}
				if again := r.Get(k); again != h {
					errs <- fmt.Errorf("Get(%q) returned another host while the first was held", k)
					return
				} else {
					r.Put(again)
				}
				r.Put(h)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case err := <-errs:
		stop.Store(true)
		<-done
		t.Fatal(err)
	case <-done:
	}
	if r.Evictions() == 0 {
		t.Fatal("no host was evicted: the test did not race sweeps against Gets")
	}
}

// TestTableProbes holds the groups a hit reads, on average, in a table
// filled to its most (7/8 of the slots, just before it grows): 1.38, the
// second group being the next line.
func TestTableProbes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	hashes := map[string]uint64{}
	tab := table{hash: func(k string) uint64 { return hashes[k] }}
	// Fill it until one more host would make it grow, past 1,000 groups.
	for i := 0; len(tab.groups()) < 1000 || (tab.n+1)*8 <= len(tab.groups())*groupSlots*7; i++ {
		k, hash := fmt.Sprint(i), rng.Uint64()
		hashes[k] = hash
		tab.insert(newHost(k, -1), hash)
	}
	groups := tab.groups()
	total := 0
	for k, hash := range hashes {
		for i := homeOf(hash, len(groups)); ; i = (i + 1) % len(groups) {
			total++
			if hasHost(&groups[i], k) {
				break
			}
		}
	}
	mean := float64(total) / float64(len(hashes))
	t.Logf("%d hosts in %d groups: a hit reads %.3f groups on average", tab.n, len(groups), mean)
	if mean > 1.45 {
		t.Errorf("a hit reads %.3f groups on average, want ≤ 1.45", mean)
	}
}

func hasHost(g *group, key string) bool {
	for k := range groupSlots {
		if h := g.h[k].Load(); h != nil && h.Key() == key {
			return true
		}
	}
	return false
}
