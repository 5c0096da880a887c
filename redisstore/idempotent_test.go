package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/internal/redistest"
)

// TestRepeatedCallsChangeNothing: an admit or report call sent twice under
// one name (its first reply lost) gets the first reply back and takes no
// second token, counts no second failure.
func TestRepeatedCallsChangeNothing(t *testing.T) {
	addr := redistest.Start(t)
	reg := &polite.Registry{Limits: polite.Limits{Rate: 1, Burst: 1, Concurrency: 1000}}
	s, client := newStore(t, addr, reg, Options{Prefix: "rep:"})
	h := reg.Get("a.test")
	defer reg.Put(h)
	now := time.Now()
	keys := append(s.hostKeys("a.test"), s.hostKey("a.test", "d"))
	l := reg.LimitsFor("a.test")
	args := s.args(now, l, adEpoch) // no controller: none of its arguments
	a := args[nCommon:]
	a[adCap], a[adPressed] = 0, 0
	args = append(args, 0, 0, 1, 0, 0, s.leaseID(0), 1, "call-1") // no releases, no reports, one admission
	ctx := context.Background()
	once := func() any { // the call alone in a merged call (pipe.go)
		t.Helper()
		mk, ma := s.mergedArgs([]*call{{kind: 'a', keys: keys, args: args}})
		res, err := admitScript.Run(ctx, client, mk, ma...).Result()
		if err != nil {
			t.Fatal(err)
		}
		return slot(res, 0)
	}
	first, again := once(), once()
	a1, ok1 := s.admission("a.test", polite.Query{Now: now}, first.([]any)[nAdmitHead:], 0, time.Second)
	a2, ok2 := s.admission("a.test", polite.Query{Now: now}, again.([]any)[nAdmitHead:], 0, time.Second)
	if !ok1 || !ok2 || !a1.Granted || !a2.Granted || integer(first, 0) != integer(again, 0) {
		t.Fatalf("the same call twice = %v (%+v), %v (%+v); want the first reply, exactly, twice", first, a1, again, a2)
	}
	// The one token is gone once, not twice: a new call is refused now and
	// granted a second later (burst 1, 1 req/s), not two seconds later.
	if a := s.Admit(h, polite.Query{Now: now}); a.Granted {
		t.Errorf("a second admission right away = %+v, want refused", a)
	}
	if st := s.State(h, time.Now()); st.Tokens < -0.5 {
		t.Errorf("tokens after one admission sent twice = %v, want about 0 (one taken)", st.Tokens)
	}
}
