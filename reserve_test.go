package polite

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// cappedStore leases every grant of the Store it wraps, as a fleet's store
// does, and refuses a grant while cap leases are out (the fleet's cap on
// requests in flight), counting its Admit calls.
type cappedStore struct {
	leasingStore
	cap    int
	poll   time.Duration // of a refused slot: 0, as a careless Store may say
	admits int
}

func newCappedStore(tr *Transport, cap int) *cappedStore {
	return &cappedStore{leasingStore: leasingStore{Store: NewLocalStore(tr.Registry(), LocalOptions{}), out: map[uint64]bool{}}, cap: cap}
}

func (s *cappedStore) Admit(h *Host, q Query) Admission {
	s.mu.Lock()
	s.admits++
	full := s.cap > 0 && len(s.out) >= s.cap
	s.mu.Unlock()
	if full {
		return Admission{Reason: ReasonSlot, Poll: s.poll}
	}
	return s.leasingStore.Admit(h, q)
}

func (s *cappedStore) counts() (admits, out int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.admits, len(s.out)
}

func tryGet(t *testing.T, tr *Transport, ctx context.Context, url string, r *Reservation) (*http.Response, Tried, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tr.Try(req, TryOptions{Attempt: 1, Reservation: r})
}

// TestReserveThenTry: a Reservation is one admission, and Try sends under
// it without asking the Store again; its lease comes back when the
// response is closed, and the token it took is the host's next one.
func TestReserveThenTry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &Transport{Base: nopBase{}, IgnoreRobots: true, Limits: Limits{Rate: 10, Burst: 1, Concurrency: 4}}
		s := newCappedStore(tr, 0)
		tr.Store = s
		now := time.Now()
		r, d, why := tr.Reserve("a.test", now, 0, true, 0)
		if r == nil {
			t.Fatalf("Reserve refused (%v, %s), want a reservation", d, why)
		}
		if !r.At().Equal(now) {
			t.Errorf("reserved at %v, want now", r.At().Sub(now))
		}
		if r2, d, why := tr.Reserve("a.test", now, 0, true, 0); r2 != nil || why != ReasonRate || d != 100*time.Millisecond {
			t.Errorf("a second Reserve at once: %v, %v, %s; want refused for the rate, 100ms", r2, d, why)
		}
		resp, tried, err := tryGet(t, tr, context.Background(), "http://a.test/", r)
		if err != nil || !tried.Sent {
			t.Fatalf("Try under the reservation: %+v, %v", tried, err)
		}
		resp.Body.Close()
		if admits, out := s.counts(); admits != 2 || out != 0 {
			t.Errorf("%d admissions and %d leases out after Reserve, Reserve, Try; want 2 and 0", admits, out)
		}
	})
}

// TestReservationGivenBack: Try gives a reservation back (its lease, and a
// token reserved ahead to the bucket: Store.Cancel never lifts a bucket
// above empty) whenever it does not send under it: a request to another
// host, a context done while it waits for the reserved token; and
// CancelReservation does. A retry goes under a first attempt's.
func TestReservationGivenBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &Transport{Base: nopBase{}, IgnoreRobots: true, Limits: Limits{Rate: 10, Burst: 1, Concurrency: 4}}
		s := newCappedStore(tr, 0)
		tr.Store = s
		reserve := func() *Reservation {
			t.Helper()
			time.Sleep(100 * time.Millisecond) // the host's next token
			r, d, why := tr.Reserve("a.test", time.Now(), 0, true, 0)
			if r == nil {
				t.Fatalf("Reserve refused (%v, %s)", d, why)
			}
			return r
		}
		// Another host: sent under its own admission.
		resp, tried, err := tryGet(t, tr, context.Background(), "http://b.test/", reserve())
		if err != nil || !tried.Sent {
			t.Fatalf("Try to another host: %+v, %v", tried, err)
		}
		resp.Body.Close()
		// A retry under a first attempt's reservation.
		req, _ := http.NewRequest("GET", "http://a.test/", nil)
		resp, tried, err = tr.Try(req, TryOptions{Attempt: 2, Retries: 3, Reservation: reserve()})
		if err != nil || !tried.Sent {
			t.Fatalf("a retry: %+v, %v", tried, err)
		}
		resp.Body.Close()
		if admits, _ := s.counts(); admits != 3 {
			t.Errorf("%d admissions for 2 reservations and a request to another host, want 3", admits)
		}
		// Cancelled.
		tr.CancelReservation(reserve())
		tr.CancelReservation(nil)
		// A reservation ahead, its request given up while it waits.
		if _, _, err := tryGet(t, tr, context.Background(), "http://a.test/", reserve()); err != nil {
			t.Fatal(err)
		}
		r, d, why := tr.Reserve("a.test", time.Now(), time.Second, true, 0)
		if r == nil || time.Until(r.At()) != 100*time.Millisecond {
			t.Fatalf("Reserve ahead: %v, %v, %s; want a token 100ms ahead", r, d, why)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if _, tried, err := tryGet(t, tr, ctx, "http://a.test/", r); err == nil || tried.Sent {
			t.Errorf("Try whose context ends before its reserved token: %+v, %v; want an error, not sent", tried, err)
		}
		if _, out := s.counts(); out != 1 { // the one response above left open
			t.Errorf("%d leases out, want 1", out)
		}
		// Given back at 50ms, the bucket empty then: the next token comes
		// at 150ms, not at 200ms behind the reservation.
		time.Sleep(50 * time.Millisecond)
		if r, d, _ := tr.Reserve("a.test", time.Now(), 0, true, 0); r != nil || d != 50*time.Millisecond {
			t.Errorf("after the wait given up, at 100ms: %v, next token in %v; want one in 50ms", r, d)
		}
	})
}

// TestReservationAndRobots: a reservation holds one of the fleet's slots;
// the request under it, whose host's robots.txt is not known yet, gives
// it back before robots.txt is fetched, which would otherwise wait for
// that very slot (a fleet worker waited for its lease to expire, 30 s).
func TestReservationAndRobots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &Transport{Base: nopBase{}, Limits: Limits{Rate: 100, Burst: 4, Concurrency: 4}}
		s := newCappedStore(tr, 1)
		tr.Store = s
		r, d, why := tr.Reserve("a.test", time.Now(), 0, true, 0)
		if r == nil {
			t.Fatalf("Reserve refused (%v, %s)", d, why)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		resp, tried, err := tryGet(t, tr, ctx, "http://a.test/", r)
		if err != nil || !tried.Sent {
			t.Fatalf("Try under a reservation, robots.txt not known: %+v, %v", tried, err)
		}
		resp.Body.Close()
		if d := time.Since(start); d > time.Second {
			t.Errorf("sent after %v", d)
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			// Known now: the next goes under its reservation.
			r, _, _ := tr.Reserve("a.test", time.Now(), time.Second, true, 0)
			resp, tried, err := tryGet(t, tr, ctx, "http://a.test/2", r)
			if err != nil || !tried.Sent {
				t.Errorf("second Try: %+v, %v", tried, err)
				return
			}
			resp.Body.Close()
		})
		wg.Wait()
		if _, out := s.counts(); out != 0 {
			t.Errorf("%d leases out, want 0", out)
		}
	})
}

// TestRefusalWithoutPoll: a Store that refuses a slot and names no time to
// ask again (Poll and Wait 0) is asked again after minPoll, not at once:
// a request waiting for a slot held elsewhere spun before, and a
// synctest bubble never saw time pass.
func TestRefusalWithoutPoll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &Transport{Base: nopBase{}, IgnoreRobots: true, Limits: Limits{Rate: 100, Burst: 4, Concurrency: 4}}
		s := newCappedStore(tr, 1)
		tr.Store = s
		r, _, _ := tr.Reserve("a.test", time.Now(), 0, true, 0) // the one slot, held
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://a.test/", nil)
		if _, err := tr.RoundTrip(req); err == nil {
			t.Error("RoundTrip got a slot held by a reservation")
		}
		if admits, _ := s.counts(); admits > 1+int(time.Second/minPoll)+1 {
			t.Errorf("%d admissions in a second, want one per %v at most", admits, minPoll)
		}
		tr.CancelReservation(r)
	})
}
