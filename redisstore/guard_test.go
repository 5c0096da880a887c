package redisstore

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/polite-go/polite/guard"
	"github.com/polite-go/polite/internal/redistest"
)

func newGuardStore(t *testing.T, addr string, o GuardOptions) (*GuardStore, *redis.Client) {
	t.Helper()
	client := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 64})
	t.Cleanup(func() { client.Close() })
	if o.Prefix == "" {
		o.Prefix = fmt.Sprintf("g%d:", caseN.Add(1))
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Second // a loaded test machine must not look like an outage
	}
	s, err := NewGuard(client, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, client
}

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})

func send(h http.Handler, remote string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = remote
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestGuardStore(t *testing.T) {
	addr := redistest.Start(t)
	var clock atomic.Int64
	clock.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro())
	s, c := newGuardStore(t, addr, GuardOptions{Prefix: "gs:", Now: func() time.Time { return time.UnixMicro(clock.Load()) }})
	g, err := guard.New(guard.Config{Identity: guard.Limit{Rate: 2, Burst: 3}, Store: s})
	if err != nil {
		t.Fatal(err)
	}
	h := g.Handler(okHandler)
	for i := range 3 {
		if w := send(h, "192.0.2.1:1"); w.Code != 200 || w.Header().Get("X-RateLimit-Remaining") != strconv.Itoa(2-i) {
			t.Fatalf("request %d: %d, remaining %q", i+1, w.Code, w.Header().Get("X-RateLimit-Remaining"))
		}
	}
	w := send(h, "192.0.2.1:1")
	if w.Code != 429 || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("4th: %d, Retry-After %q; want 429, 1", w.Code, w.Header().Get("Retry-After"))
	}
	key := "gs:{a:192.0.2.1}:ia:192.0.2.1"
	v, err := c.Get(context.Background(), key).Int64()
	if err != nil || v != clock.Load()+1_500_000 {
		t.Errorf("key %s = %d, %v; want full again in 1.5 s", key, v, err)
	}
	if ttl := c.PTTL(context.Background(), key).Val(); ttl <= 0 || ttl > 1501*time.Millisecond {
		t.Errorf("PTTL %v: want the key gone when the bucket is full", ttl)
	}
	clock.Add(499_999)
	if w := send(h, "192.0.2.1:1"); w.Code != 429 {
		t.Errorf("after 499.999 ms: %d, want 429", w.Code)
	}
	clock.Add(1)
	if w := send(h, "192.0.2.1:1"); w.Code != 200 {
		t.Errorf("after 500 ms: %d, want 200", w.Code)
	}
}

// A refusal at any level leaves every key in Redis as it was.
func TestGuardStoreRefusalChangesNothing(t *testing.T) {
	addr := redistest.Start(t)
	rng := rand.New(rand.NewPCG(7, 8))
	var clock atomic.Int64
	clock.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro())
	s, c := newGuardStore(t, addr, GuardOptions{Now: func() time.Time { return time.UnixMicro(clock.Load()) }})
	ctx := context.Background()
	refusals := 0
	for range 30 {
		var lim [guard.NumLevels]guard.Bucket
		for i := range lim {
			rate := float64(1 + rng.IntN(20))
			lim[i] = guard.Bucket{Burst: int64(1 + rng.IntN(12)), Interval: time.Duration(math.Ceil(1e9 / rate))}
		}
		for range 60 {
			clock.Add(rng.Int64N(300_000))
			req := guard.Request{Tag: []byte("acme")}
			minBurst := int64(math.MaxInt64)
			for i := range lim {
				if i > 0 && rng.IntN(3) == 0 {
					continue
				}
				req.Levels[i] = lim[i]
				req.Levels[i].Key = []byte{"itg"[i], ':', byte('a' + rng.IntN(3))}
				minBurst = min(minBurst, lim[i].Burst)
			}
			req.Cost = 1 + rng.Int64N(minBurst)
			snapshot := func() map[string]string {
				m := map[string]string{}
				for _, b := range req.Levels {
					if b.Key != nil {
						k := s.o.Prefix + "{acme}:" + string(b.Key)
						if b.Key[0] == 'g' {
							k = s.o.Prefix + "{g:a}:" + string(b.Key)
						}
						m[k] = c.Get(ctx, k).Val()
					}
				}
				return m
			}
			before := snapshot()
			var d guard.Decision
			if err := s.Decide(ctx, &req, &d); err != nil {
				t.Fatal(err)
			}
			after := snapshot()
			if !d.Allowed {
				refusals++
				if fmt.Sprint(before) != fmt.Sprint(after) {
					t.Fatalf("refused, yet keys moved: %v -> %v", before, after)
				}
			}
		}
		// A fresh set of buckets for the next configuration.
		clock.Add(int64(time.Hour / time.Microsecond))
	}
	if refusals == 0 {
		t.Fatal("no refusal: the test proved nothing")
	}
	t.Logf("%d refusals, none moved a key", refusals)
}

// Four guards sharing one Redis, on Redis's clock: no identity gets more
// than burst + rate*t over them all.
func TestGuardStoreExactAcrossGuards(t *testing.T) {
	addr := redistest.Start(t)
	const (
		guards     = 4
		identities = 50
		perGuard   = 25 // goroutines per guard
		rate       = 20.0
		burst      = 10
		span       = 2 * time.Second
	)
	prefix := fmt.Sprintf("x%d:", caseN.Add(1))
	hs := make([]http.Handler, guards)
	for i := range hs {
		// Closed, and a timeout no loaded test machine reaches: this is
		// the shared path's exactness; a degraded guard would decide
		// alone (and answer 503 here, counted as an error).
		s, _ := newGuardStore(t, addr, GuardOptions{Prefix: prefix, Outage: Closed, Timeout: 5 * time.Second})
		g, err := guard.New(guard.Config{Identity: guard.Limit{Rate: rate, Burst: burst}, Store: s, Secret: []byte("fleet")})
		if err != nil {
			t.Fatal(err)
		}
		hs[i] = g.Handler(okHandler)
	}
	admitted := make([]atomic.Int64, identities)
	var errs atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for gi := range guards {
		for j := range perGuard {
			wg.Go(func() {
				for k := 0; time.Since(start) < span; k++ {
					id := (j*7 + k + gi) % identities
					w := send(hs[gi], "198.51.100."+strconv.Itoa(id)+":1")
					switch w.Code {
					case 200:
						admitted[id].Add(1)
					case 429:
					default:
						errs.Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	bound := burst + rate*el
	worst, least := math.Inf(-1), math.Inf(1)
	total := int64(0)
	for id := range admitted {
		n := float64(admitted[id].Load())
		total += int64(n)
		worst = max(worst, n-math.Floor(bound))
		least = min(least, n/bound)
	}
	t.Logf("%d guards, %d identities, %.2f s: %d admitted; largest excess over burst+rate*t (%.1f): %v; least admitted/bound %.3f; %d errors",
		guards, identities, el, total, bound, worst, least, errs.Load())
	if worst > 0 || errs.Load() > 0 {
		t.Errorf("largest excess %v (want <= 0), %d errors", worst, errs.Load())
	}
}

func TestGuardStoreOutage(t *testing.T) {
	srv := redistest.StartServer(t)
	for _, tc := range []struct {
		mode Outage
		want []int // statuses of 4 requests (burst 2) with Redis down
	}{
		{Closed, []int{503, 503, 503, 503}},
		{Open, []int{200, 200, 200, 200}},
		{Local, []int{200, 200, 429, 429}},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			s, _ := newGuardStore(t, srv.Addr, GuardOptions{Outage: tc.mode, Timeout: time.Second}) // a killed server refuses at once
			g, err := guard.New(guard.Config{Identity: guard.Limit{Rate: 0.01, Burst: 2}, Store: s})
			if err != nil {
				t.Fatal(err)
			}
			h := g.Handler(okHandler)
			if w := send(h, "192.0.2.9:1"); w.Code != 200 {
				t.Fatalf("with Redis up: %d", w.Code)
			}
			srv.Kill()
			var got []int
			for range 4 {
				got = append(got, send(h, "192.0.2.9:1").Code)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("with Redis down: %v, want %v", got, tc.want)
			}
			if deg, mode := s.Degraded(); !deg || mode != tc.mode {
				t.Errorf("Degraded() = %v, %v", deg, mode)
			}
			srv.Restart(t)
			deadline := time.Now().Add(3 * time.Second)
			for {
				if deg, _ := s.Degraded(); !deg {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("still degraded 3 s after Redis came back")
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// On a Redis Cluster one request's identity and tenant keys share the
// tenant's slot, so one script decides them; a global level is refused
// with a clear error rather than CROSSSLOT.
func TestGuardStoreCluster(t *testing.T) {
	addrs := redistest.StartCluster(t, 3)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	s, err := NewGuard(c, GuardOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	g, err := guard.New(guard.Config{Identity: guard.Limit{Rate: 1, Burst: 1}, Tenant: guard.Limit{Rate: 1, Burst: 3},
		Identify: func(r *http.Request) guard.Who { return guard.Who{User: r.Header.Get("U"), Tenant: "acme"} }, Store: s})
	if err != nil {
		t.Fatal(err)
	}
	h := g.Handler(okHandler)
	var got []int
	for _, u := range []string{"a", "b", "a", "c", "d"} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("U", u)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		got = append(got, w.Code)
	}
	if fmt.Sprint(got) != "[200 200 429 200 429]" {
		t.Errorf("statuses %v, want [200 200 429 200 429]", got)
	}
	req := guard.Request{Cost: 1, Tag: []byte("x"), Levels: [guard.NumLevels]guard.Bucket{
		{Key: []byte("ix"), Burst: 1, Interval: time.Second}, {}, {Key: []byte("g"), Burst: 1, Interval: time.Second}}}
	var d guard.Decision
	if err := s.Decide(context.Background(), &req, &d); err != ErrGlobalOnCluster {
		t.Errorf("global level on a Cluster: %v, want ErrGlobalOnCluster", err)
	}
}
