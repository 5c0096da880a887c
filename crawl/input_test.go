package crawl

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCheckURL(t *testing.T) {
	for _, tc := range []struct {
		in, host, problem string
	}{
		{"http://example.com/a", "example.com", ""},
		{"HTTPS://WWW.Example.COM:443/x?y#z", "www.example.com", ""},
		{"http://127.0.0.1:8080/", "127.0.0.1:8080", ""},
		{"example.com/a", "", "no scheme"},
		{"ftp://example.com/a", "", `scheme "ftp" is not http or https`},
		{"http:///path", "", "no host"},
		{"http://user:pw@example.com/", "", "credentials"},
		{"http://exa mple.com/", "", "not a URL"},
		{"http://[::1/", "", "not a URL"},
		{"http://" + strings.Repeat("a", 20) + ".com/", "", "longer than 16 bytes"},
	} {
		max := 0 // the default
		if strings.Contains(tc.problem, "longer") {
			max = 16
		}
		host, problem := CheckURL(tc.in, max)
		if host != tc.host || (tc.problem == "") != (problem == "") || !strings.Contains(problem, tc.problem) {
			t.Errorf("CheckURL(%q) = %q, %q, want %q, %q", tc.in, host, problem, tc.host, tc.problem)
		}
	}
}

func TestReadLines(t *testing.T) {
	long := "http://example.com/" + strings.Repeat("x", 100)
	huge := "http://example.com/" + strings.Repeat("y", 200<<10) // beyond bufio's buffer
	src := "# comment\n\n  http://a.test/1  \r\nhttp://a.test/2\n" + long + "\nnot a url\n" + huge + "\n#http://b.test/\nhttp://b.test/last"
	var got []Line
	if err := ReadLines(strings.NewReader(src), 64, func(l Line) error { got = append(got, l); return nil }); err != nil {
		t.Fatal(err)
	}
	want := []struct{ text, host, problem string }{
		{"http://a.test/1", "a.test", ""},
		{"http://a.test/2", "a.test", ""},
		{long[:64], "", "longer than 64 bytes (119)"},
		{"not a url", "", "no scheme"},
		{huge[:64], "", "longer than 64 bytes (204819)"},
		{"http://b.test/last", "b.test", ""},
	}
	if len(got) != len(want) {
		t.Fatalf("ReadLines: %d lines, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if !strings.HasPrefix(g.Text, w.text) || g.Host != w.host || !strings.Contains(g.Problem, w.problem) || (w.problem == "") != (g.Problem == "") {
			t.Errorf("line %d = %q %q %q, want %q… %q %q", i, trunc(g.Text), g.Host, g.Problem, trunc(w.text), w.host, w.problem)
		}
		if len(g.Text) > keepInvalid+len("…") {
			t.Errorf("line %d kept %d bytes", i, len(g.Text))
		}
	}
}

func trunc(s string) string {
	if len(s) > 30 {
		return s[:30]
	}
	return s
}

// FuzzReadLines: any bytes as a URL list read to the end without error,
// every entry either a URL with its host (valid UTF-8, within maxLen) or a
// problem, and the entries are exactly the lines that are neither blank
// nor comments.
func FuzzReadLines(f *testing.F) {
	for _, s := range []string{
		"http://a.test/x\n# c\n\nhttps://b.test/y#f\r\n",
		"not a url\nftp://a.test/\nhttp:///nohost\nhttp://u:p@h/\n",
		"http://a.test/" + strings.Repeat("x", 100) + "\nhttp://b.test/\xff\xfe",
		"\r\n\t http://[::1]:8080/ \t\n",
	} {
		f.Add([]byte(s), 64)
	}
	f.Fuzz(func(t *testing.T, in []byte, maxLen int) {
		maxLen = 1 + abs(maxLen)%4096
		want := 0
		for _, l := range bytes.Split(in, []byte("\n")) {
			if l = bytes.TrimSpace(l); len(l) > 0 && l[0] != '#' {
				want++
			}
		}
		got := 0
		err := ReadLines(bytes.NewReader(in), maxLen, func(l Line) error {
			got++
			switch {
			case l.Problem == "" && (l.Host == "" || len(l.Text) == 0):
				t.Errorf("line %q: no problem but no host", l.Text)
			case l.Problem == "" && !utf8.ValidString(l.Text):
				t.Errorf("URL %q is not valid UTF-8", l.Text)
			case l.Problem != "" && l.Host != "":
				t.Errorf("line %q: problem %q and host %q", l.Text, l.Problem, l.Host)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("ReadLines: %v", err)
		}
		if got != want {
			t.Errorf("%d entries, want %d (non-blank, non-comment lines)", got, want)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// BenchmarkLoad is Load of a 10,000-URL list into a new job over 100 hosts:
// the SQLite inserts that come before any fetch (make throughput counts
// them in its wall time).
func BenchmarkLoad(b *testing.B) {
	var list strings.Builder
	for i := range 10_000 {
		fmt.Fprintf(&list, "http://h%d.test/page/%d\n", i%100, i)
	}
	for b.Loop() {
		b.StopTimer()
		j, err := Open(b.TempDir(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if n, err := j.Load(strings.NewReader(list.String())); err != nil || n != 10_000 {
			b.Fatalf("Load: %d, %v", n, err)
		}
		b.StopTimer()
		j.Close()
		b.StartTimer()
	}
}

// BenchmarkCommit is the committer's transaction for 10,000 finished URLs
// in batches of 2,048 (maxBatch): their rows marked done with their results
// lines.
func BenchmarkCommit(b *testing.B) {
	var list strings.Builder
	for i := range 10_000 {
		fmt.Fprintf(&list, "http://h%d.test/page/%d\n", i%100, i)
	}
	line := []byte(`{"url":"http://h1.test/page/1","host":"h1.test","outcome":"ok","status":200,"attempts":1,"bytes":1024,"sha256":"e6265187e6265187e6265187e6265187e6265187e6265187e6265187e6265187","error":"","started":"2026-11-21T14:06:14.785754018Z","finished":"2026-11-21T14:06:15.30813798Z"}` + "\n")
	for b.Loop() {
		b.StopTimer()
		j, err := Open(b.TempDir(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := j.Load(strings.NewReader(list.String())); err != nil {
			b.Fatal(err)
		}
		var batch []done
		b.StartTimer()
		for id := int64(1); id <= 10_000; id++ {
			batch = append(batch, done{id: id, seq: id, outcome: OK, line: line})
			if len(batch) == maxBatch || id == 10_000 {
				if err := j.st.commit(batch, nil, map[string]int64{metaSeq: id}); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
		b.StopTimer()
		j.Close()
		b.StartTimer()
	}
}
