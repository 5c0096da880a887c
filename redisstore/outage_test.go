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

// outageStore returns a store on the Redis at addr whose client gives up
// on a dial or a read within 100 ms, so that a killed Redis is seen at
// once; both are closed with the test.
func outageStore(t *testing.T, addr string, reg *polite.Registry, o Options) *Store {
	t.Helper()
	client := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1,
		DialTimeout: 100 * time.Millisecond, ReadTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { client.Close() })
	s, err := New(client, reg, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
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
			// A second live worker, so Local divides each rate by two.
			other := redis.NewClient(&redis.Options{Addr: srv.Addr})
			other.ZAdd(context.Background(), "o:workers", redis.Z{Score: 1e15, Member: "other"})
			other.Close()
			var log syncBuffer
			reg := &polite.Registry{Limits: polite.Limits{Rate: 10, Burst: 1, Concurrency: 1000}}
			s := outageStore(t, srv.Addr, reg, Options{Prefix: "o:", Timeout: 200 * time.Millisecond, Outage: mode,
				Logger: slog.New(slog.NewTextHandler(&log, nil))})
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

// TestOutagePhases: a store whose Redis does not come back says each
// change of phase (Redis lost, local, closed) in the log and in Status,
// and says it is back, from which phase, when Redis answers again (issue
// 29, item 2: the switch from local to closed went unsaid). Real time,
// about 2 s.
func TestOutagePhases(t *testing.T) {
	srv := redistest.StartServer(t)
	var log syncBuffer
	const local = 400 * time.Millisecond
	reg := &polite.Registry{Limits: polite.Limits{Rate: 10, Burst: 1, Concurrency: 1000}}
	s := outageStore(t, srv.Addr, reg, Options{Prefix: "p:", Timeout: 100 * time.Millisecond, MaxDegraded: local,
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	h := reg.Get("a.test")
	defer reg.Put(h)
	if st := s.Status(); st.Degraded {
		t.Fatalf("Status() with Redis up = %+v", st)
	}

	srv.Kill()
	lost := time.Now()
	s.Admit(h, polite.Query{Now: time.Now()})
	st := s.Status()
	if !st.Degraded || st.Mode != Local || st.Since.Before(lost) || !st.LocalUntil.Equal(st.Since.Add(local)) || !st.ClosedSince.IsZero() {
		t.Errorf("Status() once Redis is lost = %+v, want degraded, local until %v after Since", st, local)
	}
	if l := log.String(); !strings.Contains(l, "redis unreachable: degraded") || !strings.Contains(l, "mode=local") ||
		!strings.Contains(l, "closed_after="+local.String()) {
		t.Errorf("log %q does not say Redis is lost, the mode, and when it turns closed", l)
	}
	for deadline := time.Now().Add(3 * time.Second); !strings.Contains(log.String(), "closed, nothing sent"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no log line at the switch from local to closed:\n%s", log.String())
		}
	}
	if d := time.Since(lost); d > local+2*time.Second {
		t.Errorf("the switch to closed was said %v after Redis was lost, want about %v", d, local)
	}
	st = s.Status()
	if !st.Degraded || st.Mode != Closed || !st.ClosedSince.Equal(st.Since.Add(local)) {
		t.Errorf("Status() after %v = %+v, want closed since Since + %v", local, st, local)
	}
	if a := s.Admit(h, polite.Query{Now: time.Now()}); a.Granted || a.Reason != polite.ReasonStore {
		t.Errorf("Admit while closed = %+v, want a wait for the store", a)
	}
	// A scheduler that asks State (Transport.Ready) waits too, rather than
	// trying the host again at once, and again.
	at := time.Now()
	if st := s.State(h, at); st.PauseWhy != polite.ReasonStore || st.PausedUntil.Sub(at) < closedPoll {
		t.Errorf("State while closed: paused until +%v for %q, want +%v for %q", st.PausedUntil.Sub(at), st.PauseWhy, closedPoll, polite.ReasonStore)
	}
	if n := strings.Count(log.String(), "closed, nothing sent"); n != 1 {
		t.Errorf("the switch to closed was said %d times, want once", n)
	}

	srv.Restart(t)
	for deadline := time.Now().Add(3 * time.Second); s.Status().Degraded; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("not back on Redis 3 s after it answered again")
		}
	}
	if l := log.String(); !strings.Contains(l, "answers again") || !strings.Contains(l, "was=closed") {
		t.Errorf("log %q does not say Redis is back, and from which phase", l)
	}
	if st := s.Status(); st.Degraded || !st.Since.IsZero() || !st.ClosedSince.IsZero() {
		t.Errorf("Status() once back = %+v", st)
	}
}

// blockingWriter holds every Write until release is closed, as a display
// whose loop is busy holds a notice.
type blockingWriter struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.entered) })
	<-w.release
	return len(p), nil
}

// A Logger that blocks (the CLI's bar view, busy asking Status) must not
// block Status and State: the store logged with its health lock held, and
// a fleet job with the bar hung for good when Redis went away (review of
// issue 29).
func TestLoggerMayBlock(t *testing.T) {
	srv := redistest.StartServer(t)
	w := &blockingWriter{entered: make(chan struct{}), release: make(chan struct{})}
	defer close(w.release)
	reg := &polite.Registry{Limits: polite.Limits{Rate: 10, Burst: 1, Concurrency: 1000}}
	s := outageStore(t, srv.Addr, reg, Options{Prefix: "p:", Timeout: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(w, nil))})
	h := reg.Get("a.test")
	defer reg.Put(h)
	srv.Kill()
	go s.Admit(h, polite.Query{Now: time.Now()}) // fails, and logs that Redis is lost
	select {
	case <-w.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the store did not log that Redis is lost")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Status()
		s.State(h, time.Now())
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Status and State wait for the Logger")
	}
}
