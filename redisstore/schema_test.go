package redisstore

import (
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/adaptive"
	"github.com/polite-go/polite/internal/redistest"
)

// TestSchema: every script names its arguments and reply slots only from
// the tables in schema.go, and uses every name its tables give it; no
// name is given twice (a script's own argument named like a common one
// would shadow it).
func TestSchema(t *testing.T) {
	withPrelude := prelude + logLua
	cases := []struct {
		name      string
		body      string
		args, out []string
	}{
		{"admit", admitLua, admitArgs[:], admitOut[:]},
		{"report", reportLua, reportArgs[:], reportOut[:]},
		{"keep", keepLua, keepArgs[:], nil},
		{"cancel", cancelLua, cancelArgs[:], nil},
		{"setrate", setRateLua, setRateArgs[:], nil},
		{"setceiling", setCeilingLua, setCeilingArgs[:], setCeilingOut[:]},
		{"state", stateLua, nil, stateOut[:]},
	}
	used := func(src, table string) []string {
		var names []string
		for _, m := range regexp.MustCompile(`\b`+table+`\.([A-Za-z_]\w*)`).FindAllStringSubmatch(src, -1) {
			if !slices.Contains(names, m[1]) {
				names = append(names, m[1])
			}
		}
		return names
	}
	unique := func(what string, names []string) {
		seen := map[string]bool{}
		for _, n := range names {
			if n == "" || seen[n] {
				t.Errorf("%s: name %q empty or given twice", what, n)
			}
			seen[n] = true
		}
	}
	unique("log reply", logOut[:])
	for _, c := range cases {
		unique(c.name+" arguments", append(commonArgs[:], c.args...))
		unique(c.name+" reply", c.out)
		src := withPrelude + c.body
		for _, n := range used(src, "A") {
			if !slices.Contains(commonArgs[:], n) && !slices.Contains(c.args, n) {
				t.Errorf("%s reads A.%s, which its table does not name", c.name, n)
			}
		}
		for _, n := range c.args {
			if !slices.Contains(used(c.body, "A"), n) {
				t.Errorf("%s's table names argument %q, which the script never reads", c.name, n)
			}
		}
		for _, n := range used(c.body, "O") {
			if !slices.Contains(c.out, n) {
				t.Errorf("%s writes O.%s, which its table does not name", c.name, n)
			}
		}
		for _, n := range c.out {
			if !slices.Contains(used(c.body, "O"), n) {
				t.Errorf("%s's table names reply slot %q, which the script never writes", c.name, n)
			}
		}
	}
	// admit's own tables: a quiet report's fields (R), its reply's head
	// (B) and its run's settings (M).
	unique("a quiet report's fields", reportItem[:])
	unique("admit's reply head", admitHead[:])
	unique("admit's run settings", runArgs[:])
	for _, tb := range []struct {
		table string
		names []string
	}{{"R", reportItem[:]}, {"B", admitHead[:]}, {"M", runArgs[:]}} {
		for _, n := range used(admitLua, tb.table) {
			if !slices.Contains(tb.names, n) {
				t.Errorf("admit uses %s.%s, which its table does not name", tb.table, n)
			}
		}
		for _, n := range tb.names {
			if !slices.Contains(used(admitLua, tb.table), n) {
				t.Errorf("admit's %s table names %q, which the script never uses", tb.table, n)
			}
		}
	}
	for _, n := range used(withPrelude, "LO") {
		if !slices.Contains(logOut[:], n) {
			t.Errorf("the log reply writes LO.%s, which its table does not name", n)
		}
	}
	for _, n := range logOut {
		if !slices.Contains(used(logLua, "LO"), n) {
			t.Errorf("the log reply's table names %q, which log.lua never writes", n)
		}
	}
	for _, n := range commonArgs {
		if !slices.Contains(used(prelude, "A"), n) {
			t.Errorf("the common argument %q is never read by the prelude", n)
		}
	}
	// The host's state: every field the scripts name is in stateFields
	// (build panics otherwise), and every field there is used.
	unique("the state's fields", stateFields[:])
	all := withPrelude
	for _, c := range cases {
		all += c.body
	}
	for _, n := range stateFields {
		if !slices.Contains(used(all, "st"), n) {
			t.Errorf("stateFields names %q, which no script uses", n)
		}
	}
}

// TestReplyShapes: each script's reply, from a real redis-server, has the
// slots its table names, no more, no fewer.
func TestReplyShapes(t *testing.T) {
	addr := redistest.Start(t)
	reg := &polite.Registry{Limits: polite.Limits{Rate: 5, Burst: 2, Concurrency: 4}}
	s, _ := newStore(t, addr, reg, Options{Prefix: "shape:", CallerClock: true, Adaptive: &adaptive.Config{}})
	h := reg.Get("a.test")
	defer reg.Put(h)
	now := time.Now()
	l := reg.LimitsFor("a.test")
	if a := s.Admit(h, polite.Query{Now: now}); !a.Granted {
		t.Fatalf("first admission refused: %+v", a)
	}
	// A quiet report rides with an admission: admit's reply is its head,
	// then one result of admitOut's slots.
	s.Report(h, polite.Report{Now: now, Sent: now, Outcome: polite.OK, Status: 200, Latency: time.Millisecond, Attempt: 1})
	v, _ := s.hosts.Load("a.test")
	cb := v.(*combiner)
	cb.mu.Lock()
	reps := len(cb.reports)
	cb.mu.Unlock()
	if reps != 1 {
		t.Fatalf("an OK report queued %d quiet reports, want 1", reps)
	}
	p := &pending{q: polite.Query{Now: now}, done: make(chan struct{})}
	cb.mu.Lock()
	lane := cb.lane() // the queue is this test's to send
	qs, reports := []*pending{p}, cb.reports
	cb.reports = nil
	cb.mu.Unlock()
	rp := s.replica("a.test")
	epoch, seen, _, _ := rp.follow()
	args := s.args(now, l, nAdmit)
	a := args[nCommon:]
	for i := range nAdmit {
		a[i] = 0
	}
	a[adEpoch], a[adSeen], a[adSnap] = epoch, seen, ""
	args = append(args, 0, len(reports)) // no releases
	for range reports {
		item := make([]any, nItem)
		item[itSuccess], item[itKind], item[itLatency], item[itWait], item[itSpare], item[itAt] = 1, 0, 1000, 0, 0, 0
		args = append(args, item...)
	}
	args = append(args, len(qs), 0, 0, "x:1", 1)
	res, err := s.run(admitScript, "a.test", args, lane)
	cb.mu.Lock()
	cb.senders-- // the lane taken above, given back before any check can end the test
	cb.lanes &^= 1 << lane
	cb.mu.Unlock()
	if a, _ := res.([]any); err != nil || len(a) != nAdmitHead+nAdmitOut {
		t.Fatalf("admit's reply = %v (%v), want %d slots and one result's %d", res, err, nAdmitHead, nAdmitOut)
	}
	if l, _ := slot(res, abLog).([]any); len(l) != nLogOut {
		t.Errorf("admit's log has %d slots, its table %d: %v", len(l), nLogOut, slot(res, abLog))
	}
	report := s.args(now, l, nReport)
	for i := range nReport {
		report[nCommon+i] = 0
	}
	report[nCommon+rpPauseWhy], report[nCommon+rpBlock], report[nCommon+rpSnap] = "", "", ""
	report[nCommon+rpAdaptive], report[nCommon+rpSeen] = 1, -1
	res, err = s.run(reportScript, "a.test", report, 0)
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := res.([]any); len(a) != nReportOut {
		t.Errorf("report's reply has %d slots, its table %d: %v", len(a), nReportOut, res)
	}
	if a, _ := slot(res, roLog).([]any); len(a) != nLogOut {
		t.Errorf("the log reply has %d slots, its table %d: %v", len(a), nLogOut, slot(res, roLog))
	}
	state, err := s.run(stateScript, "a.test", s.args(now, l, 0), 0)
	if a, _ := state.([]any); err != nil || len(a) != nStateOut {
		t.Errorf("state's reply = %v (%v), want %d slots", state, err, nStateOut)
	}
	ceil := s.args(now, l, nSetCeiling)
	ceil[nCommon+scWhy], ceil[nCommon+scRate], ceil[nCommon+scAdaptive] = "ratelimit", 3.0, 1
	c, err := s.run(setCeilingScript, "a.test", ceil, 0)
	if a, _ := c.([]any); err != nil || len(a) != nSetCeilingOut {
		t.Errorf("setceiling's reply = %v (%v), want %d slots", c, err, nSetCeilingOut)
	}
}
