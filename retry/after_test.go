package retry

import (
	"math"
	"net/http"
	"strings"
	"testing"
	"time"
)

// t0 is the client's clock in these tests.
var t0 = time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC)

// httpDate formats t as an IMF-fixdate.
func httpDate(t time.Time) string { return t.UTC().Format(http.TimeFormat) }

func TestParseAfterValue(t *testing.T) {
	tests := []struct {
		name  string
		value string
		date  string
		want  time.Duration
		ok    bool
	}{
		{"seconds", "120", "", 120 * time.Second, true},
		{"zero", "0", "", 0, true},
		{"leading zeros", "007", "", 7 * time.Second, true},
		{"surrounding OWS", " \t5 ", "", 5 * time.Second, true},
		{"seconds ignore Date", "5", httpDate(t0.Add(time.Hour)), 5 * time.Second, true},
		{"negative", "-5", "", 0, false},
		{"largest representable", "9223372036", "", 9223372036 * time.Second, true},
		{"one past clamps", "9223372037", "", maxDuration, true},
		{"huge clamps", "99999999999999999999999999999999", "", maxDuration, true},
		{"negative huge", "-99999999999999999999999999999999", "", 0, false},

		{"empty", "", "", 0, false},
		{"blank", "  ", "", 0, false},
		{"fraction", "1.5", "", 0, false},
		{"plus sign", "+5", "", 0, false},
		{"unit", "5s", "", 0, false},
		{"hex", "0x10", "", 0, false},
		{"exponent", "1e3", "", 0, false},
		{"inner space", "1 0", "", 0, false},
		{"minus alone", "-", "", 0, false},
		{"list", "10, 20", "", 0, false},
		{"word", "soon", "", 0, false},
		{"bad date", "Sun, 32 Mar 2026 12:00:00 GMT", "", 0, false},
		{"date without zone", "Sun, 01 Mar 2026 12:00:30", "", 0, false},

		{"IMF-fixdate", "Sun, 01 Mar 2026 12:00:30 GMT", "", 30 * time.Second, true},
		{"RFC 850", "Sunday, 01-Mar-26 12:00:30 GMT", "", 30 * time.Second, true},
		{"asctime", "Sun Mar  1 12:00:30 2026", "", 30 * time.Second, true},
		{"date now", httpDate(t0), "", 0, true},
		{"date past", httpDate(t0.Add(-time.Hour)), "", 0, true},
		{"date far future", httpDate(t0.Add(10 * time.Hour)), "", 10 * time.Hour, true},
		{"date year 9999", "Fri, 31 Dec 9999 23:59:59 GMT", "", maxDuration, true},
		{"date year 0001", "Mon, 01 Jan 0001 00:00:00 GMT", "", 0, true},

		// Skew: the server's clock set both Retry-After and Date.
		{"server clock behind", httpDate(t0.Add(-30 * time.Second)), httpDate(t0.Add(-60 * time.Second)), 30 * time.Second, true},
		{"server clock ahead", httpDate(t0.Add(time.Hour + 30*time.Second)), httpDate(t0.Add(time.Hour)), 30 * time.Second, true},
		{"Date after Retry-After", httpDate(t0), httpDate(t0.Add(time.Minute)), 0, true},
		{"Date in RFC 850", httpDate(t0.Add(-30 * time.Second)), "Sunday, 01-Mar-26 11:59:00 GMT", 30 * time.Second, true},
		{"garbage Date ignored", httpDate(t0.Add(30 * time.Second)), "yesterday", 30 * time.Second, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseAfterValue(tt.value, tt.date, t0)
			if got != tt.want || ok != tt.ok {
				t.Errorf("ParseAfterValue(%q, %q) = %v, %v, want %v, %v", tt.value, tt.date, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestParseAfter(t *testing.T) {
	in30 := httpDate(t0.Add(30 * time.Second))
	tests := []struct {
		name  string
		after []string // Retry-After lines
		date  []string // Date lines
		want  time.Duration
		ok    bool
	}{
		{"absent", nil, nil, 0, false},
		{"seconds", []string{"3"}, nil, 3 * time.Second, true},
		{"date", []string{in30}, nil, 30 * time.Second, true},
		{"date with skewed Date", []string{in30}, []string{httpDate(t0.Add(20 * time.Second))}, 10 * time.Second, true},
		{"two Dates ignored", []string{in30}, []string{httpDate(t0.Add(20 * time.Second)), httpDate(t0)}, 30 * time.Second, true},
		{"duplicate agrees", []string{"30", "30"}, nil, 30 * time.Second, true},
		{"duplicate in both forms agrees", []string{"30", in30}, nil, 30 * time.Second, true},
		{"duplicate conflicts", []string{"30", "60"}, nil, 0, false},
		{"duplicate with garbage", []string{"30", "soon"}, nil, 0, false},
		{"garbage first", []string{"soon", "30"}, nil, 0, false},
		{"empty line", []string{""}, nil, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tt.after {
				h.Add("Retry-After", v)
			}
			for _, v := range tt.date {
				h.Add("Date", v)
			}
			got, ok := ParseAfter(h, t0)
			if got != tt.want || ok != tt.ok {
				t.Errorf("ParseAfter(%q, Date %q) = %v, %v, want %v, %v", tt.after, tt.date, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestParseAfterAllocs(t *testing.T) {
	h := http.Header{"Retry-After": {"120"}, "Date": {httpDate(t0)}}
	if n := testing.AllocsPerRun(100, func() { ParseAfter(h, t0) }); n != 0 {
		t.Errorf("ParseAfter(delay-seconds) allocates %v times, want 0", n)
	}
}

func TestAtoi64(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"9223372036854775808", math.MaxInt64, true},
		{"18446744073709551616", math.MaxInt64, true},
		{"99999999999999999999x", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, ok := atoi64(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("atoi64(%q) = %v, %v, want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzParseAfter(f *testing.F) {
	seeds := []struct{ value, date string }{
		{"120", ""},
		{"0", ""},
		{"-1", ""},
		{"007", ""},
		{" 5 ", ""},
		{"1.5", ""},
		{"+5", ""},
		{"1e3", ""},
		{"0x1F", ""},
		{"99999999999999999999999999999", ""},
		{"-99999999999999999999999999999", ""},
		{"9223372036", ""},
		{"9223372037", ""},
		{"Sun, 01 Mar 2026 12:00:30 GMT", ""},
		{"Sun, 01 Mar 2026 12:00:30 GMT", "Sun, 01 Mar 2026 12:00:00 GMT"},
		{"Sun, 01 Mar 2026 12:00:30 GMT", "garbage"},
		{"Sunday, 01-Mar-26 12:00:30 GMT", ""},
		{"Sun Mar  1 12:00:30 2026", ""},
		{"Fri, 31 Dec 9999 23:59:59 GMT", "Mon, 01 Jan 0001 00:00:00 GMT"},
		{"Mon, 01 Jan 0001 00:00:00 GMT", "Fri, 31 Dec 9999 23:59:59 GMT"},
		{"Sun, 32 Mar 2026 25:61:61 GMT", ""},
		{"Sun, 01 Mar 2026 12:00:30 UTC", ""},
		{"", ""},
		{"\x00", ""},
		{"١٢٠", ""}, // Arabic-Indic digits are not DIGIT
		{"120\r\n", ""},
		{"120\n120", ""},
		{"120\n60", ""},
	}
	for _, s := range seeds {
		f.Add(s.value, s.date, t0.Unix())
	}
	f.Add("120", "", int64(0))
	f.Add("Sun, 01 Mar 2026 12:00:30 GMT", "", int64(math.MinInt64))
	f.Add("Sun, 01 Mar 2026 12:00:30 GMT", "", int64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, value, date string, unix int64) {
		now := time.Unix(unix, 0)
		d, ok := ParseAfterValue(value, date, now)
		if d < 0 {
			t.Fatalf("ParseAfterValue(%q, %q, %v) = %v, want >= 0", value, date, now, d)
		}
		if !ok && d != 0 {
			t.Fatalf("ParseAfterValue(%q, %q, %v) = %v, false, want 0 when not ok", value, date, now, d)
		}
		if ok && isDigits(trimOWS(value)) {
			// delay-seconds depend on neither clock.
			if d2, _ := ParseAfterValue(value, "", now.Add(time.Hour)); d2 != d {
				t.Fatalf("ParseAfterValue(%q) depends on the clock: %v vs %v", value, d, d2)
			}
		}
		h := http.Header{"Retry-After": {value}}
		if date != "" {
			h["Date"] = []string{date}
		}
		if hd, hok := ParseAfter(h, now); hd != d || hok != ok {
			t.Fatalf("ParseAfter(%q, %q) = %v, %v, ParseAfterValue = %v, %v", value, date, hd, hok, d, ok)
		}
		// A newline splits the value into repeated Retry-After lines.
		if vs := strings.Split(value, "\n"); len(vs) > 1 {
			h["Retry-After"] = vs
			if md, mok := ParseAfter(h, now); md < 0 || (!mok && md != 0) {
				t.Fatalf("ParseAfter(%q) = %v, %v", vs, md, mok)
			}
		}
	})
}

func BenchmarkParseAfter(b *testing.B) {
	b.Run("seconds", func(b *testing.B) {
		h := http.Header{"Retry-After": {"120"}}
		b.ReportAllocs()
		for b.Loop() {
			ParseAfter(h, t0)
		}
	})
	b.Run("date", func(b *testing.B) {
		h := http.Header{"Retry-After": {httpDate(t0.Add(time.Minute))}, "Date": {httpDate(t0)}}
		b.ReportAllocs()
		for b.Loop() {
			ParseAfter(h, t0)
		}
	})
}
