package crawl

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"
)

// TestResultJSON: appendJSON writes what json.Marshal writes, byte for
// byte, and refuses what it refuses.
func TestResultJSON(t *testing.T) {
	off := int64(1234)
	at := time.Date(2026, 11, 26, 22, 0, 0, 123456789, time.UTC)
	for _, tc := range []struct {
		name string
		r    Result
	}{
		{"zero", Result{}},
		{"ok", Result{URL: "http://a.test/p?q=1", Host: "a.test", Outcome: OK, Status: 200, Attempts: 1, Bytes: 1024,
			SHA256: "ab12", Started: at, Finished: at.Add(time.Millisecond), WARCFile: "bodies.warc.gz", WARC: &off,
			ContentType: "text/html; charset=utf-8", LatencyMS: 1.25, ID: 7}},
		{"every field", Result{URL: "u", Host: "h", Outcome: HTTPError, Status: 503, Attempts: 3, Error: "503 Service Unavailable",
			Started: at.In(time.FixedZone("x", 5*3600+1800)), Finished: at, Truncated: true, FinalURL: "http://b.test/",
			RedirectNotFollowed: "ftp://c.test/", WARCFile: "w", WARC: new(int64), File: "bodies/ab.html", LatencyMS: -0.5, ID: -1}},
		{"escapes", Result{URL: "http://a.test/<script>&\"x\"\\", Error: "tab\there\nnew \x00 \x7f é \u2028 \xff", Host: "ü.test"}},
		{"tiny latency", Result{LatencyMS: 1e-7}},
		{"huge latency", Result{LatencyMS: 1e22}},
		{"latency 1e-10", Result{LatencyMS: 1.5e-10}},
		{"negative zero", Result{LatencyMS: math.Copysign(0, -1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := json.Marshal(&tc.r)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tc.r.appendJSON([]byte("x"))
			if err != nil || !bytes.Equal(got[1:], want) || got[0] != 'x' {
				t.Errorf("appendJSON(%+v) =\n%s, %v\nwant\n%s", tc.r, got, err, want)
			}
		})
	}
	for _, r := range []Result{
		{Started: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Finished: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{LatencyMS: math.NaN()},
		{LatencyMS: math.Inf(1)},
	} {
		_, jerr := json.Marshal(&r)
		if _, err := r.appendJSON(nil); err == nil || jerr == nil {
			t.Errorf("appendJSON(%+v): error %v, json.Marshal's %v", r, err, jerr)
		}
	}
}

// FuzzResultJSON: appendJSON and json.Marshal agree on any strings and
// numbers.
func FuzzResultJSON(f *testing.F) {
	f.Add("http://a.test/", "a.test", "ok", "", 200, int64(1024), 1.5, int64(1700000000123456789), true)
	f.Add("<&>", "\xff", "\u2028", "\x00", -1, int64(-5), 1e-9, int64(-62135596800000000), false)
	f.Fuzz(func(t *testing.T, url, host, outcome, errText string, status int, n int64, lat float64, ns int64, trunc bool) {
		at := time.Unix(0, ns).UTC()
		r := Result{URL: url, Host: host, Outcome: outcome, Error: errText, Status: status, Attempts: status / 2,
			Bytes: n, SHA256: errText, Started: at, Finished: at, Truncated: trunc, FinalURL: host, WARC: &n,
			ContentType: outcome, LatencyMS: lat, ID: n}
		want, jerr := json.Marshal(&r)
		got, err := r.appendJSON(nil)
		if (err != nil) != (jerr != nil) {
			t.Fatalf("appendJSON error %v, json.Marshal's %v", err, jerr)
		}
		if err == nil && !bytes.Equal(got, want) {
			t.Fatalf("appendJSON =\n%s\nwant\n%s", got, want)
		}
	})
}

// BenchmarkResultJSON is one ok result as the committer encodes it.
func BenchmarkResultJSON(b *testing.B) {
	off := int64(123456)
	at := time.Now()
	r := Result{URL: "http://127.0.0.17:40000/p/42", Host: "127.0.0.17:40000", Outcome: OK, Status: 200, Attempts: 1, Bytes: 1024,
		SHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", Started: at, Finished: at,
		WARCFile: "bodies.warc.gz", WARC: &off, ContentType: "text/html; charset=utf-8", LatencyMS: 1.234, ID: 42}
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 1024)
		for b.Loop() {
			buf, _ = r.appendJSON(buf[:0])
		}
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			json.Marshal(&r)
		}
	})
}
