package crawl

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
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

// TestReadLinesJSON: a list's JSON lines name their URL and lane; a plain
// line, or a JSON line without a lane, takes the reader's default; a JSON
// line that is wrong in any way is one bad line saying what is wrong, kept
// as an object (never mistaken for a URL, its password redacted), and the
// lines around it are read as ever.
func TestReadLinesJSON(t *testing.T) {
	for _, tc := range []struct {
		name, in   string
		text, host string // text: the whole Text, or with problem its prefix
		lane       Lane
		problem    string
		notInText  string
	}{
		{name: "plain line takes the default", in: "http://a.test/1", text: "http://a.test/1", host: "a.test", lane: LaneBulk},
		{name: "lane named", in: `{"url": "http://a.test/2", "lane": "interactive"}`, text: "http://a.test/2", host: "a.test", lane: LaneInteractive},
		{name: "lane in capitals", in: `{"lane":"NORMAL","url":"http://a.test/3"}`, text: "http://a.test/3", host: "a.test", lane: LaneNormal},
		{name: "no lane takes the default", in: `{"url":"http://a.test/4"}`, text: "http://a.test/4", host: "a.test", lane: LaneBulk},
		{name: "empty lane takes the default", in: `{"url":"http://a.test/5","lane":""}`, text: "http://a.test/5", host: "a.test", lane: LaneBulk},
		{name: "other keys ignored", in: `{"id":7,"url":"http://a.test/6","meta":{"x":[1,2]},"lane":"bulk"}`, text: "http://a.test/6", host: "a.test", lane: LaneBulk},
		{name: "URL made canonical", in: `{"url":" HTTP://a.test/7#top "}`, text: "http://a.test/7", host: "a.test", lane: LaneBulk},
		{name: "longer than maxLen, URL within", in: `{"url":"http://a.test/` + strings.Repeat("x", 40) + `","lane":"interactive","note":"` + strings.Repeat("n", 40) + `"}`,
			text: "http://a.test/" + strings.Repeat("x", 40), host: "a.test", lane: LaneInteractive},
		{name: "unknown lane", in: `{"url":"http://a.test/8","lane":"urgent"}`, text: `{"url":"http://a.test/8","lane":"urgent"}`, problem: `unknown lane "urgent" (want interactive, normal or bulk)`},
		{name: "lane not a string", in: `{"url":"http://a.test/9","lane":1}`, text: "{", problem: "bad JSON line: cannot unmarshal number"},
		{name: "not JSON", in: `{"url": "http://a.test/10"`, text: `{"url": "http://a.test/10"`, problem: "bad JSON line: unexpected end of JSON input"},
		{name: "more after the object", in: `{"url":"http://a.test/11"} http://a.test/12`, text: "{", problem: "bad JSON line: invalid character 'h' after top-level value"},
		{name: "no url", in: `{"lane":"bulk"}`, text: `{"lane":"bulk"}`, problem: `JSON line names no "url"`},
		{name: "url null", in: `{"url":null}`, text: `{}`, problem: `JSON line names no "url"`},
		{name: "url not a string", in: `{"url":["http://a.test/13"]}`, text: "{", problem: "bad JSON line: cannot unmarshal array"},
		{name: "bad URL", in: `{"url":"ftp://a.test/14"}`, text: `{"url":"ftp://a.test/14"}`, problem: `scheme "ftp" is not http or https`},
		{name: "URL too long", in: `{"url":"http://a.test/` + strings.Repeat("y", 60) + `"}`, text: `{"url":"http://a.test/yyy`, problem: "longer than 64 bytes (74)"},
		{name: "line too long", in: `{"url":"http://a.test/15","note":"` + strings.Repeat("z", 64+jsonRoom) + `"}`, text: `{"url":"http://a.test/15"`, problem: fmt.Sprintf("longer than %d bytes", 64+jsonRoom)},
		{name: "password escaped", in: `{"url":"http://u:s3cret\u0040a.test/16","lane":"bulk"}`, text: `{"url":"http://u:xxxxx@a.test/16","lane":"bulk"}`,
			problem: "credentials", notInText: "s3cret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []Line
			if err := ReadLinesLane(strings.NewReader(tc.in+"\n"), 64, LaneBulk, func(l Line) error { got = append(got, l); return nil }); err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 {
				t.Fatalf("ReadLinesLane(%q) = %d lines, want 1", tc.in, len(got))
			}
			g := got[0]
			if tc.problem == "" {
				if want := (Line{Text: tc.text, Host: tc.host, Lane: tc.lane, Number: 1}); g != want {
					t.Errorf("ReadLinesLane(%q) = %+v, want %+v", tc.in, g, want)
				}
				return
			}
			if !strings.Contains(g.Problem, tc.problem) || g.Host != "" || !strings.HasPrefix(g.Text, tc.text) {
				t.Errorf("ReadLinesLane(%q) = text %q, host %q, problem %q; want text %q…, no host, problem %q", tc.in, g.Text, g.Host, g.Problem, tc.text, tc.problem)
			}
			if !strings.HasPrefix(g.Text, "{") {
				t.Errorf("bad JSON line kept as %q, want the object", g.Text)
			}
			if tc.notInText != "" && strings.Contains(g.Text, tc.notInText) {
				t.Errorf("bad JSON line kept as %q, which holds %q", g.Text, tc.notInText)
			}
		})
	}

	t.Run("bad lines drop none", func(t *testing.T) {
		src := "http://a.test/1\n{\"url\":\n{\"url\":\"http://a.test/2\",\"lane\":\"x\"}\n{]\n{\"url\":\"http://a.test/3\",\"lane\":\"bulk\"}\nhttp://a.test/4\n"
		var got []string
		err := ReadLines(strings.NewReader(src), 0, func(l Line) error {
			got = append(got, fmt.Sprintf("%s %s %v", l.Text, l.Lane, l.Problem != ""))
			return nil
		})
		want := []string{
			"http://a.test/1 normal false",
			`{"url": normal true`,
			`{"url":"http://a.test/2","lane":"x"} normal true`,
			"{] normal true",
			"http://a.test/3 bulk false",
			"http://a.test/4 normal false",
		}
		if err != nil || strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("ReadLines = %q, %v; want %q", got, err, want)
		}
	})
}

func TestParseLane(t *testing.T) {
	for _, l := range []Lane{LaneInteractive, LaneNormal, LaneBulk} {
		b, err := l.MarshalText()
		var back Lane
		if err != nil || back.UnmarshalText(b) != nil || back != l {
			t.Errorf("%v: MarshalText = %q, %v; back %v", l, b, err, back)
		}
	}
	if _, err := ParseLane("urgent"); err == nil || !strings.Contains(err.Error(), `"urgent"`) {
		t.Errorf("ParseLane(urgent) = %v, want an error naming it", err)
	}
	if _, err := Lane(7).MarshalText(); err == nil || Lane(7).String() != "lane(7)" {
		t.Errorf("Lane(7): MarshalText error %v, String %q", err, Lane(7).String())
	}
}

func trunc(s string) string {
	if len(s) > 30 {
		return s[:30]
	}
	return s
}

// FuzzReadLines: any bytes as a URL list (plain or JSON lines) read to the
// end without error, every entry either a URL with its host and a lane
// (valid UTF-8, within maxLen; a plain line's lane the default) or a
// problem (a JSON line's kept as an object), and the entries are exactly
// the lines that are neither blank nor comments.
func FuzzReadLines(f *testing.F) {
	for _, s := range []string{
		"http://a.test/x\n# c\n\nhttps://b.test/y#f\r\n",
		"not a url\nftp://a.test/\nhttp:///nohost\nhttp://u:p@h/\n",
		"http://a.test/" + strings.Repeat("x", 100) + "\nhttp://b.test/\xff\xfe",
		"\r\n\t http://[::1]:8080/ \t\n",
		`{"url":"http://a.test/x","lane":"interactive"}` + "\n" + `{"url":"http://a.test/y","lane":"bulk","x":1}`,
		`{"url":"http://a.test/z"}` + "\n" + `{"lane":"normal"}` + "\n" + `{"url":"http://u:p\u0040h/"}` + "\n{\n{}\n",
		`{"url":"http://a.test/` + strings.Repeat("j", 80) + `","lane":"weird"}` + "\n" + `{"url":1,"lane":[]}`,
	} {

		f.Add([]byte(s), 64)
	}
	f.Fuzz(func(t *testing.T, in []byte, maxLen int) {
		def := Lane(abs(maxLen) % int(numLanes))
		maxLen = 1 + abs(maxLen)%4096
		var lines [][]byte
		for _, l := range bytes.Split(in, []byte("\n")) {
			if l = bytes.TrimSpace(l); len(l) > 0 && l[0] != '#' {
				lines = append(lines, l)
			}
		}
		want := len(lines)
		got := 0
		err := ReadLinesLane(bytes.NewReader(in), maxLen, def, func(l Line) error {
			got++
			var line []byte
			if got <= len(lines) {
				line = lines[got-1]
			}
			isJSON := len(line) > 0 && line[0] == '{'
			switch {
			case l.Lane >= numLanes:
				t.Errorf("line %q: lane %d", l.Text, l.Lane)
			case !isJSON && l.Problem == "" && l.Lane != def:
				t.Errorf("plain line %q: lane %v, want the default %v", l.Text, l.Lane, def)
			case l.Problem != "" && l.Lane != LaneNormal:
				t.Errorf("bad line %q: lane %v, want normal", l.Text, l.Lane)
			case isJSON && l.Problem != "" && !strings.HasPrefix(l.Text, "{"):
				t.Errorf("bad JSON line %q kept as %q, want the object", line, l.Text)
			}
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
	dir := filepath.Join(b.TempDir(), "job")
	for b.Loop() {
		b.StopTimer()
		j, err := Open(dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if n, err := j.Load(strings.NewReader(list.String())); err != nil || n != 10_000 {
			b.Fatalf("Load: %d, %v", n, err)
		}
		b.StopTimer()
		j.Close()
		os.RemoveAll(dir) // one job's files at a time: a b.TempDir each left 16 GB after a long run
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
	line := string(`{"url":"http://h1.test/page/1","host":"h1.test","outcome":"ok","status":200,"attempts":1,"bytes":1024,"sha256":"e6265187e6265187e6265187e6265187e6265187e6265187e6265187e6265187","error":"","started":"2026-11-21T14:06:14.785754018Z","finished":"2026-11-21T14:06:15.30813798Z"}` + "\n")
	dir := filepath.Join(b.TempDir(), "job")
	for b.Loop() {
		b.StopTimer()
		j, err := Open(dir, Options{})
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
		os.RemoveAll(dir)
		b.StartTimer()
	}
}
