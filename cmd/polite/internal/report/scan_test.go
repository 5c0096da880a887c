package report

import (
	"encoding/json"
	"testing"
)

// TestScanResult: lines as crawl writes them are read without
// encoding/json, and read as it reads them; anything else is left to it.
func TestScanResult(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		ok         bool
	}{
		{"crawl's", `{"url":"http://a.test/p","host":"a.test","outcome":"ok","status":200,"attempts":1,"bytes":1024,"sha256":"ab","error":"","started":"2026-11-26T22:00:00.123Z","finished":"2026-11-26T22:00:00.125Z","warc_file":"bodies.warc.gz","warc_offset":1234,"latency_ms":1.25,"id":7}` + "\n", true},
		{"failed", `{"url":"http://b.test/","host":"b.test","outcome":"network_error","status":0,"attempts":3,"error":"dial tcp: refused","truncated":true,"latency_ms":0}`, true},
		{"spaces", " { \"url\" : \"u\" , \"status\" : -1 , \"x\" : null , \"y\" : false , \"z\" : 1e-3 }\r\n", true},
		{"empty", `{}`, true},
		{"null field", `{"status":null,"url":null}`, true},
		{"escape", `{"url":"http://a.test/\"q\""}`, false},
		{"non-ASCII", `{"error":"héllo"}`, false},
		{"nested", `{"url":"u","x":{"a":1}}`, false},
		{"array", `{"x":[1]}`, false},
		{"folded key", `{"URL":"u"}`, false},
		{"fraction", `{"status":200.5}`, false},
		{"huge", `{"attempts":99999999999999999999}`, false},
		{"string status", `{"status":"200"}`, false},
		{"number url", `{"url":1}`, false},
		{"bool outcome", `{"outcome":true}`, false},
		{"trailing", `{"url":"u"} x`, false},
		{"cut", `{"url":"u"`, false},
		{"trailing comma", `{"url":"u",}`, false},
		{"not JSON", `url=u`, false},
		{"leading zero", `{"status":0200}`, false},
		{"bare minus", `{"status":-}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got result
			ok := scanResult([]byte(tc.line), &got)
			if ok != tc.ok {
				t.Fatalf("scanResult(%q) ok = %v, want %v", tc.line, ok, tc.ok)
			}
			if ok {
				var want result
				if err := json.Unmarshal([]byte(tc.line), &want); err != nil || got != want {
					t.Errorf("scanResult(%q) = %+v, want %+v (json: %v)", tc.line, got, want, err)
				}
			}
		})
	}
}

// FuzzScanResult: whatever scanResult reads, json.Unmarshal reads the same.
func FuzzScanResult(f *testing.F) {
	f.Add([]byte(`{"url":"http://a.test/p","host":"a.test","outcome":"ok","status":200,"attempts":1,"error":"","latency_ms":1.5,"truncated":false,"x":null}`))
	f.Add([]byte(`{"Status":1}`))
	f.Add([]byte(`{"status":1e2}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var got result
		if !scanResult(line, &got) {
			return
		}
		var want result
		if err := json.Unmarshal(line, &want); err != nil {
			t.Fatalf("scanResult(%q) read %+v; json.Unmarshal: %v", line, got, err)
		}
		if got != want {
			t.Fatalf("scanResult(%q) = %+v, json.Unmarshal %+v", line, got, want)
		}
	})
}

// BenchmarkReadResult is one results.jsonl line as crawl writes it.
func BenchmarkReadResult(b *testing.B) {
	line := []byte(`{"url":"http://127.0.0.17:40000/p/42","host":"127.0.0.17:40000","outcome":"ok","status":200,"attempts":1,"bytes":1024,"sha256":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08","error":"","started":"2026-11-26T22:00:00.123456789Z","finished":"2026-11-26T22:00:00.125Z","warc_file":"bodies.warc.gz","warc_offset":123456,"content_type":"text/html; charset=utf-8","latency_ms":1.234,"id":42}` + "\n")
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r result
			if !scanResult(line, &r) {
				b.Fatal("not read")
			}
		}
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r result
			if err := json.Unmarshal(line, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
