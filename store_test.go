package polite_test

import (
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/adaptive"
	"github.com/polite-go/polite/breaker"
	"github.com/polite-go/polite/robots"
	"github.com/polite-go/polite/storetest"
)

func TestLocalStoreConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, c storetest.Config) (polite.Store, *polite.Registry) {
		reg := &polite.Registry{Limits: c.Limits, IdleTimeout: c.IdleTimeout}
		s := polite.NewLocalStore(reg, polite.LocalOptions{
			Breaker: breaker.Config{Threshold: c.BreakerThreshold, OpenDelay: c.BreakerOpen, Jitter: -1},
		})
		return s, reg
	})
}

// TestLocalStoreOneController: the local store's adaptive rate is the
// controller's, answer by answer (storetest.RunAdaptive; the fleet's
// store runs the same cases in package redisstore).
func TestLocalStoreOneController(t *testing.T) {
	storetest.RunAdaptive(t, func(t *testing.T, c storetest.Config, workers int) []storetest.Worker {
		reg := &polite.Registry{Limits: c.Limits}
		s := polite.NewLocalStore(reg, polite.LocalOptions{
			Breaker: breaker.Config{Threshold: c.BreakerThreshold, OpenDelay: c.BreakerOpen, Jitter: -1},
			NewRater: func(key string, l polite.Limits) adaptive.Rater {
				return adaptive.New(polite.HostAdaptive(*c.Adaptive, l), c.Origin)
			},
		})
		return []storetest.Worker{{Store: s, Registry: reg}}
	}, 1)
}

// wrapped is a Store of another package: it wraps the local store, as a
// fleet's store wraps the one that stands in while Redis is out, and
// records the Spare of every admission it grants.
type wrapped struct {
	polite.Store
	mu    sync.Mutex // guards spare, notes
	spare []bool
	notes []string // noting's: the keys of the hosts noted
}

func (s *wrapped) Admit(h *polite.Host, q polite.Query) polite.Admission {
	a := s.Store.Admit(h, q)
	if a.Granted {
		s.mu.Lock()
		s.spare = append(s.spare, a.Spare)
		s.mu.Unlock()
	}
	return a
}

// noting is a wrapped store that hears of demand and passes it on.
type noting struct{ *wrapped }

var _ polite.DemandNoter = noting{}

func (s noting) NoteDemand(h *polite.Host, now time.Time) {
	s.mu.Lock()
	s.notes = append(s.notes, h.Key())
	s.mu.Unlock()
	s.Store.(polite.DemandNoter).NoteDemand(h, now)
}

type nopBase struct{}

func (nopBase) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}}, nil
}

// robotsBeside returns a robots.txt cache that fetches beside the
// Transport (an empty robots.txt, through nopBase), so that the fetch takes
// none of the host's tokens.
func robotsBeside() *robots.Cache {
	return &robots.Cache{Client: &http.Client{Transport: nopBase{}}, UserAgent: "test/1"}
}

// A scheduler asks Ready before Try: a request Ready puts off for the
// host's rate is demand, which a Store of any type hears as a DemandNoter
// (issue 30, item 2). A Store that hears it knows its host's rate is
// pressed: the next admission, the bucket full again half a second later,
// is not Spare, so the adaptive rate may grow on its answer. A Store
// without DemandNoter still works; it only cannot tell. (With robots.txt
// on, the Transport keeps its copy in force beside the local store's state
// from the first request on: the wrapped store's adaptive rate, without
// which no admission is Spare, must still be there.)
func TestDemandThroughTheStore(t *testing.T) {
	for _, tc := range []struct {
		name      string
		noting    bool
		wantNotes []string
		wantSpare []bool // of the admissions before and after the wait
	}{
		{"hears demand", true, []string{"a.test"}, []bool{true, false}},
		{"deaf to demand", false, nil, []bool{true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := &polite.Transport{Base: nopBase{}, Limits: polite.Limits{Rate: 2, Burst: 1},
					Adaptive: &adaptive.Config{Max: 2}, UserAgent: "test/1", RobotsCache: robotsBeside()}
				w := &wrapped{Store: polite.NewLocalStore(tr.Registry(), tr.LocalOptions())}
				tr.Store = w
				if tc.noting {
					tr.Store = noting{w}
				}
				try := func() {
					t.Helper()
					req, _ := http.NewRequest("GET", "http://a.test/", nil)
					resp, tried, err := tr.Try(req, polite.TryOptions{Attempt: 1})
					if err != nil || !tried.Sent {
						t.Fatalf("Try = %+v, %v; want sent", tried, err)
					}
					resp.Body.Close()
				}
				try()
				if d, why := tr.Ready("a.test", time.Now()); why != polite.ReasonRate || d != 500*time.Millisecond {
					t.Fatalf("Ready after the token = %v, %q; want 500ms, %q", d, why, polite.ReasonRate)
				}
				time.Sleep(500 * time.Millisecond)
				try()
				if !slices.Equal(w.notes, tc.wantNotes) {
					t.Errorf("demand noted for %q, want %q", w.notes, tc.wantNotes)
				}
				if !slices.Equal(w.spare, tc.wantSpare) {
					t.Errorf("admissions' Spare = %v, want %v", w.spare, tc.wantSpare)
				}
			})
		})
	}
}

// A Store that wraps the local store keeps the local store's settings for
// every host, even one whose state the Transport touched first for its own
// ends (robots.txt, requests waiting): one failure opens a breaker of
// threshold 1.
func TestWrappedLocalStoreConfigured(t *testing.T) {
	tr := &polite.Transport{Base: roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 500, Body: http.NoBody, Header: http.Header{}}, nil
	}), Retries: -1, Breaker: breaker.Config{Threshold: 1, Jitter: -1}, UserAgent: "test/1", RobotsCache: robotsBeside()}
	tr.Store = &wrapped{Store: polite.NewLocalStore(tr.Registry(), tr.LocalOptions())}
	req, _ := http.NewRequest("GET", "http://a.test/", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if st, _ := tr.State("a.test"); st.Breaker != breaker.Open {
		t.Errorf("breaker after one 500 = %v, want %v (Threshold 1)", st.Breaker, breaker.Open)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// asides records whether each report was of the Transport's own
// robots.txt fetch.
type asides struct {
	polite.Store
	mu  sync.Mutex
	got []bool
}

func (s *asides) Report(h *polite.Host, r polite.Report) polite.Verdict {
	s.mu.Lock()
	s.got = append(s.got, r.Aside)
	s.mu.Unlock()
	return s.Store.Report(h, r)
}

// TestRobotsFetchIsAside: the Transport's robots.txt fetch reaches the
// store as Aside, and a rate controller hears its served answer as
// nothing (its latency is no reading of the pages'), its throttle as one.
func TestRobotsFetchIsAside(t *testing.T) {
	tr := &polite.Transport{Base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}}, nil
	}), UserAgent: "test/1"}
	s := &asides{Store: polite.NewLocalStore(tr.Registry(), tr.LocalOptions())}
	tr.Store = s
	req, _ := http.NewRequest("GET", "http://a.test/page", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if want := []bool{true, false}; !slices.Equal(s.got, want) {
		t.Errorf("reports' Aside = %v, want %v (robots.txt, then the page)", s.got, want)
	}
	if k := polite.SignalOf(polite.Report{Outcome: polite.OK, Aside: true, Latency: time.Millisecond}, 0).Kind; k != adaptive.Neutral {
		t.Errorf("a served robots.txt is heard as %v, want neutral", k)
	}
	if k := polite.SignalOf(polite.Report{Outcome: polite.Throttled, Aside: true}, 0).Kind; k != adaptive.Throttle {
		t.Errorf("a throttled robots.txt is heard as %v, want throttle", k)
	}
}
