package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"
)

// The Go side's writers of the scripts' formats (lua/frontier_lib.lua,
// enc and res), for the round trips below.
func encRecord(r record) string {
	head := string(r.State) + strconv.Itoa(int(r.Lane)) + strconv.Itoa(r.Leases) + "," + strconv.FormatInt(r.Token, 10) + ","
	if r.State == 'c' {
		return head
	}
	return head + encExt(packDepth(r.Depth, r.Hops, r.Sitemap), r.FoundOn) + fmt.Sprintf("%d:%s%d:%s%s", len(r.Host), r.Host, len(r.Worker), r.Worker, r.URL)
}

func encResult(r Result) string {
	return fmt.Sprintf("%d%d,%d,%s%d:%s%d:%s%d:%s%d:%s%s", r.Lane, r.Leases, r.Token, encExt(packDepth(r.Depth, r.Hops, r.Sitemap), r.FoundOn),
		len(r.Host), r.Host, len(r.URL), r.URL, len(r.Worker), r.Worker, len(r.Outcome), r.Outcome, r.Record)
}

// encExt is the scripts' ext: nothing for a listed URL.
func encExt(depth int, foundOn string) string {
	if depth == 0 && foundOn == "" {
		return ""
	}
	return fmt.Sprintf("+%d,%d:%s", depth, len(foundOn), foundOn)
}

// A record or a result read back from Redis is outside input: parsing it
// never panics, and what parses is what the scripts would have written.
func FuzzFrontierRecord(f *testing.F) {
	for _, s := range []string{
		"q00,0,9:a.example0:https://a.example/",
		"l13,17,9:a.example2:w1https://a.example/x",
		"x25,0,1:h0:",
		"c01,42,",
		"01,42,9:a.example20:https://a.example/p/12:w12:ok{\"a\":1}",
		// Discovery's ext: depth and page found on.
		"q00,0,+2,21:https://a.example/p/99:a.example0:https://a.example/x",
		"l13,17,+1,0:9:a.example2:w1https://a.example/x",
		"d00,0,+0,10:https://b/9:a.example0:https://a.example/x",
		"x25,0,+3,4:http1:h0:",
		"01,42,+1,18:https://a.example/9:a.example21:https://a.example/p/12:w12:ok{}",
		"q00,0,+0,0:9:a.example0:https://a.example/", "q00,0,+1,9:a", "q00,0,+01,0:1:h0:", "c01,42,+1,0:",
		"", "q", "q9", "q0-1,0,", "q01,01,", "q0,0,99999999999999999999:", "q00,0,5:ab",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if r, err := parseRecord(v); err == nil {
			if got := encRecord(r); got != v {
				t.Errorf("parseRecord(%q) = %+v, written back as %q", v, r, got)
			}
		}
		if r, err := parseResult(v); err == nil {
			if got := encResult(r); got != v {
				t.Errorf("parseResult(%q) = %+v, written back as %q", v, r, got)
			}
		}
		parseLeases([]any{v, v, v, v, v, v, v, v, v}, 0)
	})
}

// What the scripts store, Go reads: a record in each state, and a result.
func TestFrontierRecordsParse(t *testing.T) {
	fr, clk, c := newFrontier(t, FrontierOptions{LeaseTTL: time.Second})
	ctx := context.Background()
	es := []Entry{{URL: "https://a.example/q", Host: "a:1"}, {URL: "https://a.example/l", Host: "a:1", Lane: LaneBulk}}
	mustEnqueue(t, fr, es)
	u := fr.keys(fr.shard("a:1"))[0]
	check := func(url string, want record) {
		t.Helper()
		v, err := c.HGet(ctx, u, fingerprint(url)).Result()
		if err != nil {
			t.Fatal(err)
		}
		got, err := parseRecord(v)
		if err != nil || got != want {
			t.Errorf("parseRecord(%q) = %+v, %v, want %+v", v, got, err, want)
		}
	}
	check("https://a.example/q", record{State: 'q', Host: "a:1", URL: "https://a.example/q"})
	mustEnqueue(t, fr, []Entry{{URL: "https://a.example/d", Host: "a:1", Lane: LaneBulk, Depth: 2, FoundOn: "https://a.example/q"}})
	check("https://a.example/d", record{State: 'q', Lane: LaneBulk, Host: "a:1", URL: "https://a.example/d", Depth: 2, FoundOn: "https://a.example/q"})
	ls := mustLease(t, fr, "w/1", 2)
	check("https://a.example/l", record{State: 'l', Lane: LaneBulk, Leases: 1, Token: ls[1].Token, Host: "a:1", Worker: "w/1", URL: "https://a.example/l"})
	mustCommit(t, fr, "w/2", "ok", ls[1])
	check("https://a.example/l", record{State: 'c', Lane: LaneBulk, Leases: 1, Token: ls[1].Token})
	v, _ := c.HGet(ctx, fr.keys(fr.shard("a:1"))[5], fingerprint("https://a.example/l")).Result()
	r, err := parseResult(v)
	want := Result{URL: "https://a.example/l", Host: "a:1", Worker: "w/2", Outcome: "ok", Lane: LaneBulk, Leases: 1,
		Token: ls[1].Token, Record: []byte(`{"url":"https://a.example/l"}`)}
	if err != nil || encResult(r) != encResult(want) {
		t.Errorf("parseResult(%q) = %+v, %v, want %+v", v, r, err, want)
	}
	if err := fr.Release(ctx, ls[:1], clk.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	check("https://a.example/q", record{State: 'd', Host: "a:1", URL: "https://a.example/q", Token: ls[0].Token})
}

// A lease reply that is not what the script writes is an error, not a
// lease.
func TestParseLeasesMalformed(t *testing.T) {
	for _, v := range []any{
		nil, "x", []any{}, []any{"now"}, []any{int64(1), "u"},
		[]any{int64(1), int64(-1), int64(0), "u", "h", int64(0), int64(1)},                                      // short
		[]any{int64(1), int64(-1), int64(0), "u", "h", int64(0), int64(1), int64(1)},                            // no depth, found on
		[]any{int64(1), int64(-1), int64(0), "u", "h", int64(7), int64(1), int64(1), int64(0), ""},              // lane
		[]any{int64(1), int64(-1), int64(0), "u", "h", int64(0), "t", int64(1), int64(0), ""},                   // token
		[]any{int64(1), int64(-1), int64(0), int64(5), "h", int64(0), int64(1), int64(1), int64(0), ""},         // URL
		[]any{int64(1), "next", int64(0), "u", "h", int64(0), int64(1), int64(1), int64(0), ""},                 // next due
		[]any{int64(1), "u", "h", int64(0), int64(1), int64(1), int64(0), ""},                                   // no next due
		[]any{int64(1), int64(-1), "il", "u", "h", int64(0), int64(1), int64(1), int64(0), ""},                  // interactive mark
		[]any{int64(1), int64(-1), "u", "h", int64(0), int64(1), int64(1), int64(0), ""},                        // no interactive mark
		[]any{int64(1), int64(-1), int64(0), "u", "h", int64(0), int64(1), int64(1), int64(-1), ""},             // depth
		[]any{int64(1), int64(-1), int64(0), "u", "h", int64(0), int64(1), int64(1), int64(1), int64(2)},        // found on
		[]any{int64(1), int64(-1), int64(0), "u", "h", int64(0), int64(1), int64(1), int64(1) << 40, "https:/"}, // depth
	} {
		if ls, err := parseLeases(v, time.Second); err == nil {
			t.Errorf("parseLeases(%v) = %+v, want an error", v, ls)
		}
	}
	ls, err := parseLeases([]any{"1000000", int64(-1), int64(1), "https://a/", "a", int64(2), int64(9), int64(1), int64(3), "https://b/"}, time.Second)
	if err != nil || len(ls) != 1 || ls[0].Lane != LaneBulk || ls[0].Token != 9 || !ls[0].Expires.Equal(time.UnixMicro(2e6)) ||
		ls[0].Depth != 0 || ls[0].Hops != 1 || !ls[0].Sitemap || ls[0].FoundOn != "https://b/" { // the reply's 3: a sitemap, 1 hop
		t.Errorf("parseLeases = %+v, %v", ls, err)
	}
}
