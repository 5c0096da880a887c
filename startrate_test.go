package polite

import (
	"context"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/polite-go/polite/adaptive"
	"github.com/polite-go/polite/testbed"
)

// StartRate starts an adaptive host at a rate learned before instead of
// at its Limits.Rate (issue 33, item 14: a resumed job started every host
// cold again), under the host's MaxRate; hosts it names no rate for, and
// hosts whose rate is not adaptive, keep Limits.Rate.
func TestStartRate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rater string // "Adaptive", "NewRater" or "" (none)
		max   float64
		seed  float64
		want  float64
	}{
		{"adaptive", "Adaptive", 0, 12, 12},
		{"under MaxRate", "Adaptive", 8, 12, 8},
		{"NewRater", "NewRater", 0, 12, 12},
		{"no seed", "Adaptive", 0, 0, 2},
		{"not adaptive", "", 0, 12, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := testbed.NewServer(testbed.HostConfig{Name: "a.test"}, testbed.HostConfig{Name: "b.test"})
				srv.StartInMemory()
				defer srv.Close()
				tr := &Transport{Base: srv.Transport(), Limits: Limits{Rate: 2, MaxRate: tc.max}, IgnoreRobots: true,
					StartRate: func(key string) float64 {
						if key == "a.test" {
							return tc.seed
						}
						return 0
					}}
				switch tc.rater {
				case "Adaptive":
					tr.Adaptive = &adaptive.Config{}
				case "NewRater":
					tr.NewRater = func(key string, l Limits) adaptive.Rater {
						return adaptive.New(HostAdaptive(adaptive.Config{}, l), time.Now())
					}
				}
				for _, host := range []string{"a.test", "b.test"} {
					req, _ := http.NewRequestWithContext(context.Background(), "GET", "http://"+host+"/", nil)
					resp, err := tr.RoundTrip(req)
					if err != nil {
						t.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				// One success may have nudged the rate up a little.
				if st, _ := tr.State("a.test"); st.Rate < tc.want || st.Rate > tc.want*1.1 {
					t.Errorf("a.test's rate = %v, want %v", st.Rate, tc.want)
				}
				if st, _ := tr.State("b.test"); st.Rate < 2 || st.Rate > 2.2 {
					t.Errorf("b.test's rate = %v, want 2 (its Limits.Rate)", st.Rate)
				}
			})
		})
	}
}
