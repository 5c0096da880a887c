package polite_test

import (
	"net/http"
	"sync"
	"testing"

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
	mu    sync.Mutex // guards spare
	spare []bool
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
