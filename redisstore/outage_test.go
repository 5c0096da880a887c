package redisstore

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/internal/redistest"
)

// syncBuffer is a log destination safe for the store's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestOutage kills Redis under a store and starts it again: the store
// notices within its timeout, goes on in its outage mode (Local: each host
// at its rate divided by the live workers; Closed: nothing sent), says so
// in the log, and is back on Redis within a second of it answering. Real
// time, about 3 s.
func TestOutage(t *testing.T) {
	srv := redistest.StartServer(t)
	for _, mode := range []Outage{Local, Closed} {
		t.Run(mode.String(), func(t *testing.T) {
			srv.Restart(t)
			client := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1,
				DialTimeout: 100 * time.Millisecond, ReadTimeout: 100 * time.Millisecond})
			defer client.Close()
			// A second live worker, so Local divides each rate by two.
			client.ZAdd(context.Background(), "o:workers", redis.Z{Score: 1e15, Member: "other"})
			var log syncBuffer
			reg := &polite.Registry{Limits: polite.Limits{Rate: 10, Burst: 1, Concurrency: 1000}}
			s, err := New(client, reg, Options{Prefix: "o:", Timeout: 200 * time.Millisecond, Outage: mode,
				Logger: slog.New(slog.NewTextHandler(&log, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for deadline := time.Now().Add(2 * time.Second); s.health.workers.Load() < 2 && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond) // the first heartbeat counts the workers
			}
			if n := s.health.workers.Load(); n != 2 {
				t.Fatalf("the heartbeat counted %d live workers, want 2", n)
			}
			h := reg.Get("a.test")
			defer reg.Put(h)
			if a := s.Admit(h, polite.Query{Now: time.Now()}); !a.Granted {
				t.Fatalf("Admit with Redis up = %+v", a)
			}

			srv.Kill()
			start := time.Now()
			a := s.Admit(h, polite.Query{Now: time.Now()})
			if d := time.Since(start); d > 400*time.Millisecond {
				t.Errorf("the first Admit after Redis died took %v, want about the timeout (200ms)", d)
			}
			if degraded, m := s.Degraded(); !degraded || m != mode {
				t.Errorf("Degraded() = %v, %v; want true, %v", degraded, m, mode)
			}
			switch mode {
			case Local:
				// Its part of rate + burst (11) a second is 5 or 6 requests,
				// lateness allowed for (see shareOf).
				if st := s.State(h, time.Now()); st.Rate > 5 || st.Rate < 4.5 {
					t.Errorf("Local with 2 workers: the host's rate is %v, want its share: at most 5 (10 / 2), at least 4.5", st.Rate)
				}
			case Closed:
				if a.Granted || a.Reason != polite.ReasonStore || a.Err != nil {
					t.Errorf("Closed: Admit = %+v, want a wait with reason %q", a, polite.ReasonStore)
				}
			}
			if l := log.String(); !strings.Contains(l, "degraded") || !strings.Contains(l, "mode="+mode.String()) {
				t.Errorf("log %q does not say the store degraded, in mode %s", l, mode)
			}

			srv.Restart(t)
			back := time.Now()
			for time.Since(back) < 3*time.Second {
				if degraded, _ := s.Degraded(); !degraded {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if d := time.Since(back); d > 1500*time.Millisecond {
				t.Errorf("back on Redis %v after it answered again, want within about 1 s", d)
			}
			if a := s.Admit(h, polite.Query{Now: time.Now()}); !a.Granted {
				t.Errorf("Admit after recovery = %+v", a)
			}
			if !strings.Contains(log.String(), "answers again") {
				t.Errorf("log %q does not say Redis is back", log.String())
			}
		})
	}
}
