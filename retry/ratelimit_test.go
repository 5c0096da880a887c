package retry

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// header builds a header from name, value pairs; a name may repeat.
func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// quota builds a Quota; pass -1 for unknown fields, seconds for durations.
func quota(limit, remaining int, reset, window time.Duration, policy string) Quota {
	return Quota{Limit: limit, Remaining: remaining, Reset: reset, Window: window, Policy: policy}
}

const s = time.Second

func TestParseRateLimit(t *testing.T) {
	unix := func(d time.Duration) string { return strconv.FormatInt(t0.Add(d).Unix(), 10) }
	tests := []struct {
		name string
		h    http.Header
		want Quota
		ok   bool
	}{
		{"none", header(), unknownQuota, false},

		// Form 1: the current draft.
		{"structured", header(
			"RateLimit", `"default";r=50;t=30`,
			"RateLimit-Policy", `"default";q=100;w=60`),
			quota(100, 50, 30*s, 60*s, "default"), true},
		{"structured token names", header(
			"RateLimit", `default;r=50;t=30`,
			"RateLimit-Policy", `default;q=100;w=60`),
			quota(100, 50, 30*s, 60*s, "default"), true},
		{"structured without policy", header("RateLimit", `"default";r=50;t=30`),
			quota(-1, 50, 30*s, -1, "default"), true},
		{"structured without t", header("RateLimit", `"default";r=999;pk=:dHJpYWwxMjEzMjM=:`),
			quota(-1, 999, -1, -1, "default"), true},
		{"structured least remaining wins", header(
			"RateLimit", `"permin";r=40;t=20, "perhr";r=5;t=1800`,
			"RateLimit-Policy", `"permin";q=50;w=60, "perhr";q=1000;w=3600`),
			quota(1000, 5, 1800*s, 3600*s, "perhr"), true},
		{"structured split over lines", header(
			"RateLimit", `"a";r=10;t=5`,
			"RateLimit", `"b";r=3;t=50`,
			"RateLimit-Policy", `"a";q=10;w=10`,
			"RateLimit-Policy", `"b";q=60;w=60`),
			quota(60, 3, 50*s, 60*s, "b"), true},
		{"structured tie takes later reset", header("RateLimit", `"a";r=0;t=5, "b";r=0;t=50`),
			quota(-1, 0, 50*s, -1, "b"), true},
		{"structured other units ignored", header(
			"RateLimit", `"bytes";r=300;t=10, "req";r=80;t=30`,
			"RateLimit-Policy", `"bytes";q=65535;qu="content-bytes";w=10, "req";q=100;qu="requests";w=60`),
			quota(100, 80, 30*s, 60*s, "req"), true},
		{"structured bad member skipped", header("RateLimit", `"bad";r=abc, "x";r=-1, "good";r=7;t=3`),
			quota(-1, 7, 3*s, -1, "good"), true},
		{"structured quoted comma", header("RateLimit", `"a,b";r=1;t=2`),
			quota(-1, 1, 2*s, -1, "a,b"), true},
		{"structured extra params", header(
			"RateLimit", `"default";acme-burst=10;r=5;t=2;comment="hi; there"`,
			"RateLimit-Policy", `"default";q=10;w=1;burst=1000;policy="leaky bucket"`),
			quota(10, 5, 2*s, 1*s, "default"), true},
		{"structured t not integer", header("RateLimit", `"d";r=5;t=1.5`),
			quota(-1, 5, -1, -1, "d"), true},
		{"structured w zero", header("RateLimit", `"d";r=5`, "RateLimit-Policy", `"d";q=10;w=0`),
			quota(10, 5, -1, -1, "d"), true},
		{"structured r missing", header("RateLimit", `"d";t=3`), unknownQuota, false},
		{"structured huge", header("RateLimit", `"d";r=99999999999999999999999`),
			quota(-1, math.MaxInt, -1, -1, "d"), true},
		{"policy only picks lowest rate", header("RateLimit-Policy", `"burst";q=100;w=60,"daily";q=1000;w=86400`),
			quota(1000, -1, -1, 86400*s, "daily"), true},
		{"policy only without windows", header("RateLimit-Policy", `"a";q=100, "b";q=20`),
			quota(20, -1, -1, -1, "b"), true},
		{"policy only window beats none", header("RateLimit-Policy", `"a";q=5, "b";q=500;w=1`),
			quota(500, -1, -1, 1*s, "b"), true},
		{"policy only bytes ignored", header("RateLimit-Policy", `"b";q=1;qu="content-bytes";w=60`), unknownQuota, false},

		// Form 2: draft-07's dictionary.
		{"dictionary", header(
			"RateLimit", `limit=100, remaining=50, reset=30`,
			"RateLimit-Policy", `100;w=60`),
			quota(100, 50, 30*s, 60*s, ""), true},
		{"dictionary picks matching policy", header(
			"RateLimit", `limit=50, remaining=3, reset=20`,
			"RateLimit-Policy", `10;w=1, 50;w=60, 1000;w=3600`),
			quota(50, 3, 20*s, 60*s, ""), true},
		{"dictionary without limit takes strictest policy", header(
			"RateLimit", `remaining=3, reset=20`,
			"RateLimit-Policy", `10;w=1, 1000;w=3600`),
			quota(1000, 3, 20*s, 3600*s, ""), true},
		{"dictionary no matching policy", header(
			"RateLimit", `limit=7, remaining=3, reset=20`,
			"RateLimit-Policy", `10;w=1`),
			quota(7, 3, 20*s, -1, ""), true},
		{"dictionary later key wins", header("RateLimit", `remaining=9, remaining=2`),
			quota(-1, 2, -1, -1, ""), true},
		{"dictionary uppercase keys", header("RateLimit", `Limit=10, Remaining=0, Reset=4`),
			quota(10, 0, 4*s, -1, ""), true},
		{"dictionary garbage values", header("RateLimit", `limit=ten, remaining=-1, reset="soon"`), unknownQuota, false},

		// Form 3: the older drafts' triple.
		{"triple", header("RateLimit-Limit", "100", "RateLimit-Remaining", "0", "RateLimit-Reset", "30"),
			quota(100, 0, 30*s, -1, ""), true},
		{"triple limit carries policies", header("RateLimit-Limit", "10, 10;w=1, 50;w=60", "RateLimit-Remaining", "9"),
			quota(10, 9, -1, 1*s, ""), true},
		{"triple limit with own window", header("RateLimit-Limit", "100;w=60"),
			quota(100, -1, -1, 60*s, ""), true},
		{"triple with policy field", header(
			"RateLimit-Limit", "100", "RateLimit-Remaining", "1", "RateLimit-Reset", "5",
			"RateLimit-Policy", "100;w=60"),
			quota(100, 1, 5*s, 60*s, ""), true},
		{"triple garbage limit", header("RateLimit-Limit", "many", "RateLimit-Remaining", "4"),
			quota(-1, 4, -1, -1, ""), true},

		// Form 4: vendor fields.
		{"vendor unix reset (GitHub)", header(
			"X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "4999", "X-RateLimit-Reset", unix(time.Hour)),
			quota(5000, 4999, time.Hour, -1, ""), true},
		{"vendor delta reset", header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "60"),
			quota(-1, 0, 60*s, -1, ""), true},
		{"vendor unix millis reset", header("X-RateLimit-Reset", strconv.FormatInt(t0.UnixMilli()+1500, 10)),
			quota(-1, -1, 1500*time.Millisecond, -1, ""), true},
		{"vendor unix reset past", header("X-RateLimit-Reset", unix(-time.Minute)),
			quota(-1, -1, 0, -1, ""), true},
		{"vendor unix reset with skewed Date", header(
			"Date", httpDate(t0.Add(-60*s)), "X-RateLimit-Reset", unix(-30*s)),
			quota(-1, -1, 30*s, -1, ""), true},
		{"vendor unix reset fraction (Discord)", header("X-RateLimit-Reset", unix(10*s)+".5"),
			quota(-1, -1, 10500*time.Millisecond, -1, ""), true},
		{"vendor reset-after wins", header(
			"X-RateLimit-Remaining", "0", "X-RateLimit-Reset", unix(time.Hour), "X-RateLimit-Reset-After", "64.57"),
			quota(-1, 0, 64570*time.Millisecond, -1, ""), true},
		{"vendor reset-after garbage falls back", header("X-RateLimit-Reset", "7", "X-RateLimit-Reset-After", "later"),
			quota(-1, -1, 7*s, -1, ""), true},
		{"vendor remaining only", header("X-RateLimit-Remaining", "0"),
			quota(-1, 0, -1, -1, ""), true},
		{"vendor garbage", header("X-RateLimit-Remaining", "lots", "X-RateLimit-Reset", "-5"), unknownQuota, false},
		{"vendor negative remaining", header("X-RateLimit-Remaining", "-1"), unknownQuota, false},
		{"vendor fills from structured policy", header(
			"X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "10",
			"RateLimit-Policy", `"default";q=100;w=60`),
			quota(100, 0, 10*s, 60*s, "default"), true},
		{"vendor limit disagrees with policy", header(
			"X-RateLimit-Limit", "60", "RateLimit-Policy", `"default";q=100;w=60`),
			quota(60, -1, -1, -1, ""), true},
		{"vendor huge reset-after clamps", header("X-RateLimit-Reset-After", "9223372036.999999999"),
			quota(-1, -1, maxDuration, -1, ""), true},

		// Precedence.
		{"structured beats vendor", header(
			"RateLimit", `"default";r=50;t=30`,
			"X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "999"),
			quota(-1, 50, 30*s, -1, "default"), true},
		{"triple beats vendor", header(
			"RateLimit-Remaining", "5",
			"X-RateLimit-Limit", "100", "X-RateLimit-Remaining", "0"),
			quota(-1, 5, -1, -1, ""), true},
		{"broken structured falls through", header(
			"RateLimit", `"default";r=lots`,
			"X-RateLimit-Remaining", "3"),
			quota(-1, 3, -1, -1, ""), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseRateLimit(tt.h, t0)
			if got != tt.want || ok != tt.ok {
				t.Errorf("ParseRateLimit(%v) = %+v, %v, want %+v, %v", tt.h, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestHeaderKeysCanonical(t *testing.T) {
	for _, k := range []string{FieldRateLimit, FieldRateLimitPolicy, FieldRateLimitLimit, FieldRateLimitRemaining,
		FieldRateLimitReset, FieldXRateLimitLimit, FieldXRateLimitRemaining, FieldXRateLimitReset, FieldXRateLimitResetAfter} {
		if c := http.CanonicalHeaderKey(k); c != k {
			t.Errorf("CanonicalHeaderKey(%q) = %q, want %q", k, c, k)
		}
	}
}

func TestQuotaRate(t *testing.T) {
	tests := []struct {
		q    Quota
		want float64
		ok   bool
	}{
		{quota(100, -1, -1, 60*s, ""), 100.0 / 60, true},
		{quota(0, -1, -1, 60*s, ""), 0, true},
		{quota(-1, -1, -1, 60*s, ""), 0, false},
		{quota(100, -1, -1, -1, ""), 0, false},
	}
	for _, tt := range tests {
		got, ok := tt.q.Rate()
		if got != tt.want || ok != tt.ok {
			t.Errorf("%+v.Rate() = %v, %v, want %v, %v", tt.q, got, ok, tt.want, tt.ok)
		}
	}
}

func TestMaxMembers(t *testing.T) {
	// The 65th member is not read, however restrictive it is.
	v := ""
	for i := range maxMembers {
		v += `"p` + strconv.Itoa(i) + `";r=10, `
	}
	v += `"last";r=0`
	q, ok := ParseRateLimit(header("RateLimit", v), t0)
	if !ok || q.Remaining != 10 {
		t.Errorf("ParseRateLimit(65 members) = %+v, %v, want Remaining 10", q, ok)
	}
}

func FuzzParseRateLimit(f *testing.F) {
	type seed struct{ rl, pol, limit, remaining, reset, xlimit, xremaining, xreset, xafter, date string }
	seeds := []seed{
		{rl: `"default";r=50;t=30`, pol: `"default";q=100;w=60`},
		{rl: `default;r=50;t=30`, pol: `default;q=100;w=60`},
		{rl: `"permin";r=40;t=20, "perhr";r=5;t=1800`, pol: `"permin";q=50;w=60, "perhr";q=1000;w=3600`},
		{rl: `"default";r=999;pk=:dHJpYWwxMjEzMjM=:`},
		{pol: `"peruser";q=65535;qu="content-bytes";w=10;pk=:sdfjLJUOUH==:`},
		{rl: `limit=100, remaining=50, reset=30`, pol: `100;w=60`},
		{pol: `10;w=1, 50;w=60, 1000;w=3600, 5000;w=86400`},
		{limit: "10, 10;w=1, 50;w=60", remaining: "9", reset: "4"},
		{xlimit: "5000", xremaining: "4999", xreset: "1772366400"},
		{xreset: "1772366400123"},
		{xreset: "1470173023.123", xafter: "64.57"},
		{xremaining: "-1", xreset: "-5", date: "Sun, 01 Mar 2026 12:00:00 GMT"},
		{rl: `"a,b";r=1;t=2`},
		{rl: `"unterminated;r=1`},
		{rl: `"esc\"aped";r=1, ok;r=2`},
		{rl: `d;r=99999999999999999999999;t=99999999999999999999`},
		{rl: `;;;,,,==;r=`},
		{rl: `:bytes`},
		{rl: `?1;r=2, ?2`},
		{rl: `*;r=1;t=1.`},
		{rl: "\"d\";r=1\t;\tt=2"},
		{xafter: "9223372036.999999999"},
		{xafter: "99999999999999999999.99999999999"},
		{xreset: "0.0000000001"},
		{date: "garbage", xreset: "1772366400"},
		{rl: "\"a\";r=1;t=2\n\"b\";r=3;t=4", pol: "\"a\";q=10;w=5\n\"b\";q=20;w=10"},
		{xremaining: "5\n7", xreset: "10\n20"},
	}
	for _, s := range seeds {
		f.Add(s.rl, s.pol, s.limit, s.remaining, s.reset, s.xlimit, s.xremaining, s.xreset, s.xafter, s.date, t0.Unix())
	}
	f.Fuzz(func(t *testing.T, rl, pol, limit, remaining, reset, xlimit, xremaining, xreset, xafter, date string, unix int64) {
		h := http.Header{}
		for _, kv := range [][2]string{
			{"RateLimit", rl}, {"RateLimit-Policy", pol},
			{"RateLimit-Limit", limit}, {"RateLimit-Remaining", remaining}, {"RateLimit-Reset", reset},
			{"X-RateLimit-Limit", xlimit}, {"X-RateLimit-Remaining", xremaining},
			{"X-RateLimit-Reset", xreset}, {"X-RateLimit-Reset-After", xafter}, {"Date", date},
		} {
			if kv[1] != "" {
				// A newline splits a field into several header lines, as
				// a server may send it.
				h[http.CanonicalHeaderKey(kv[0])] = strings.Split(kv[1], "\n")
			}
		}
		q, ok := ParseRateLimit(h, time.Unix(unix, 0))
		if !ok {
			if q != unknownQuota {
				t.Fatalf("ParseRateLimit(%v) = %+v, false, want all unknown", h, q)
			}
			return
		}
		if q.Limit < -1 || q.Remaining < -1 || q.Reset < -1 || q.Window < -1 || q.Window == 0 {
			t.Fatalf("ParseRateLimit(%v) = %+v, out of bounds", h, q)
		}
		if q.Limit < 0 && q.Remaining < 0 && q.Reset < 0 && q.Window < 0 {
			t.Fatalf("ParseRateLimit(%v) = %+v, true, want something known", h, q)
		}
		if r, rok := q.Rate(); rok && (r < 0 || math.IsNaN(r) || math.IsInf(r, 0)) {
			t.Fatalf("%+v.Rate() = %v", q, r)
		}
	})
}

func BenchmarkParseRateLimit(b *testing.B) {
	for _, bb := range []struct {
		name string
		h    http.Header
	}{
		{"structured", header("RateLimit", `"default";r=50;t=30`, "RateLimit-Policy", `"default";q=100;w=60`)},
		{"vendor", header("X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "4999", "X-RateLimit-Reset", "1772366400")},
		{"none", header("Content-Type", "text/html")},
	} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ParseRateLimit(bb.h, t0)
			}
		})
	}
}

// The writers and the parser share one field set: what a server writes
// with AppendPolicyItem and AppendLimitItem reads back as written.
func TestRateLimitRoundTrip(t *testing.T) {
	pol := AppendPolicyItem(nil, "tenant", 200, 2)
	pol = AppendSeparator(pol)
	pol = AppendPolicyItem(pol, "identity", 20, 2)
	rl := AppendLimitItem(nil, LimitItemPrefix("tenant"), 150, 1, nil)
	rl = AppendSeparator(rl)
	rl = AppendLimitItem(rl, LimitItemPrefix("identity"), 7, 3, []byte{1, 2, 3})
	h := http.Header{FieldRateLimitPolicy: {string(pol)}, FieldRateLimit: {string(rl)}}
	q, ok := ParseRateLimit(h, time.Now())
	if !ok || q.Policy != "identity" || q.Limit != 20 || q.Window != 2*time.Second || q.Remaining != 7 || q.Reset != 3*time.Second {
		t.Errorf("ParseRateLimit(%q, %q) = %+v, %v; want identity: 20 per 2s, 7 left, 3s to reset", pol, rl, q, ok)
	}
}
