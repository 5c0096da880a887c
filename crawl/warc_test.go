package crawl

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base32"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func testKept(t *testing.T, target string, body []byte) *kept {
	t.Helper()
	req, _ := http.NewRequest("GET", target, nil)
	req.Header.Set("User-Agent", "polite-test")
	resp := &http.Response{Proto: "HTTP/1.1", ProtoMajor: 1, Status: "200 OK", StatusCode: 200,
		Header: http.Header{"Content-Type": {"text/html; charset=utf-8"}}, Request: req}
	return keep(resp, body, true, sha256.Sum256(body), netip.MustParseAddr("127.0.0.9"))
}

// member returns the record starting at off in the file at path, read on
// its own as a reader with an index would: one gzip member, or (plain) the
// bytes from off on.
func member(t *testing.T, path string, off int64, gzipped bool) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Seek(off, io.SeekStart)
	if !gzipped {
		b, _ := io.ReadAll(f)
		return b
	}
	zr, err := gzip.NewReader(bufio.NewReader(f))
	if err != nil {
		t.Fatalf("no gzip member at %d: %v", off, err)
	}
	zr.Multistream(false)
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("member at %d: %v", off, err)
	}
	return b
}

// blockType returns the type of the first deflate block (RFC 1951 §3.2.3:
// 0 stored, 1 fixed, 2 dynamic Huffman codes) of the gzip member at off,
// one with no optional fields (RFC 1952 §2.3: a 10-byte header).
func blockType(t *testing.T, path string, off int64) byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var h [11]byte
	if _, err := f.ReadAt(h[:], off); err != nil {
		t.Fatal(err)
	}
	if h[0] != 0x1f || h[1] != 0x8b || h[3] != 0 {
		t.Fatalf("member at %d: header % x", off, h[:10])
	}
	return h[10] >> 1 & 3
}

// checkRecord parses the record at the start of b and checks its block
// digest; it returns its header fields and block.
func checkRecord(t *testing.T, b []byte) (map[string]string, []byte) {
	t.Helper()
	head, rest, ok := bytes.Cut(b, []byte("\r\n\r\n"))
	if !ok || !bytes.HasPrefix(head, []byte("WARC/1.1\r\n")) {
		t.Fatalf("record starts %q", b[:min(len(b), 40)])
	}
	fields := map[string]string{}
	for _, line := range strings.Split(string(head), "\r\n")[1:] {
		k, v, _ := strings.Cut(line, ": ")
		fields[k] = v
	}
	n, _ := strconv.Atoi(fields["Content-Length"])
	if len(rest) < n+4 || string(rest[n:n+4]) != "\r\n\r\n" {
		t.Fatalf("%s record: block of %d bytes not followed by CRLF CRLF", fields["WARC-Type"], n)
	}
	block := rest[:n]
	sum := sha256.Sum256(block)
	if fields["WARC-Block-Digest"] != "sha256:"+base32.StdEncoding.EncodeToString(sum[:]) {
		t.Errorf("%s: block digest %s", fields["WARC-Type"], fields["WARC-Block-Digest"])
	}
	return fields, block
}

// TestWARCRecords writes a fetch's records, uncompressed and as a gzip
// member each, and reads them back: with ReadWARC, and each record on its
// own from the offset the writer gave, as replay tools do.
func TestWARCRecords(t *testing.T) {
	for _, gz := range []bool{false, true} {
		t.Run(WARCName(0, gz), func(t *testing.T) {
			dir := t.TempDir()
			ww, err := openWARC(dir, warcMark{}, gz, 0, "software: test\r\n")
			if err != nil {
				t.Fatal(err)
			}
			body := []byte("<html>hello</html>")
			name, off := ww.response("http://a.test/p?q=1", time.Unix(1700000000, 0), testKept(t, "http://a.test/p?q=1", body))
			end, err := ww.sync()
			if err != nil {
				t.Fatal(err)
			}
			ww.Close()
			path := filepath.Join(dir, name)
			if name != WARCName(0, gz) {
				t.Errorf("written to %s", name)
			}
			if fi, _ := os.Stat(path); fi.Size() != end.off || end.index != 0 {
				t.Fatalf("file has %d bytes, writer says %+v", fi.Size(), end)
			}

			fields, block := checkRecord(t, member(t, path, off, gz))
			payload := sha256.Sum256(body)
			if fields["WARC-Type"] != "response" || fields["WARC-Target-URI"] != "http://a.test/p?q=1" ||
				fields["WARC-IP-Address"] != "127.0.0.9" || fields["WARC-Truncated"] != "length" ||
				fields["WARC-Payload-Digest"] != "sha256:"+base32.StdEncoding.EncodeToString(payload[:]) {
				t.Errorf("response fields %v", fields)
			}
			if !bytes.HasPrefix(block, []byte("HTTP/1.1 200 OK\r\n")) || !bytes.HasSuffix(block, body) {
				t.Errorf("response block %q", block)
			}

			var types []string
			f, _ := os.Open(path)
			defer f.Close()
			err = ReadWARC(f, gz, func(r WARCRecord) error {
				typ := r.Header.Get("WARC-Type")
				types = append(types, typ)
				fields, block := checkRecord(t, member(t, path, r.Offset, gz))
				if fields["WARC-Type"] != typ {
					t.Errorf("record at %d: %s, ReadWARC says %s", r.Offset, fields["WARC-Type"], typ)
				}
				switch typ {
				case "response":
					if r.Offset != off || r.Status != 200 || r.MIME != "text/html" {
						t.Errorf("response at %d (writer: %d), status %d, mime %q", r.Offset, off, r.Status, r.MIME)
					}
					if gz && blockType(t, path, r.Offset) == 0 {
						t.Errorf("response member at %d: stored, want compressed", r.Offset)
					}
				case "request":
					if !bytes.HasPrefix(block, []byte("GET /p?q=1 HTTP/1.1\r\nHost: a.test\r\n")) || fields["WARC-IP-Address"] != "127.0.0.9" {
						t.Errorf("request record %v %q", fields, block)
					}
					// A request record's member is stored, not deflated
					// (issue 34, part 2): a response's is.
					if gz && blockType(t, path, r.Offset) != 0 {
						t.Errorf("request member at %d: deflate block type %d, want 0 (stored)", r.Offset, blockType(t, path, r.Offset))
					}
				case "warcinfo":
					if fields["WARC-Filename"] != name {
						t.Errorf("warcinfo names %q", fields["WARC-Filename"])
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(types, ",") != "warcinfo,response,request" {
				t.Errorf("records %v", types)
			}

			// Reopening at a committed offset cuts what came after it.
			ww, err = openWARC(dir, warcMark{0, off}, gz, 0, "software: test\r\n")
			if err != nil {
				t.Fatal(err)
			}
			ww.Close()
			types = nil
			f2, _ := os.Open(path)
			defer f2.Close()
			if err := ReadWARC(f2, gz, func(r WARCRecord) error { types = append(types, r.Header.Get("WARC-Type")); return nil }); err != nil {
				t.Fatal(err)
			}
			if strings.Join(types, ",") != "warcinfo,warcinfo" {
				t.Errorf("after reopening at %d: records %v", off, types)
			}
		})
	}
}

// Past the size cap the next record starts a new file, which opens with a
// warcinfo of its own; reopening at a committed (file, offset) mark deletes
// the files after it and cuts that one.
func TestWARCRotation(t *testing.T) {
	dir := t.TempDir()
	ww, err := openWARC(dir, warcMark{}, true, 1, "software: test\r\n")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var offs []int64
	for i := range 3 {
		u := "http://a.test/" + strconv.Itoa(i)
		name, off := ww.response(u, time.Now(), testKept(t, u, []byte("body")))
		names = append(names, name)
		offs = append(offs, off)
	}
	mark, err := ww.sync()
	if err != nil {
		t.Fatal(err)
	}
	ww.Close()
	// The first file takes the first URL however small the cap: no file
	// is only a warcinfo.
	if want := "bodies.warc.gz,bodies-00001.warc.gz,bodies-00002.warc.gz"; strings.Join(names, ",") != want || mark.index != 2 {
		t.Fatalf("records went to %v (mark %+v), want %s", names, mark, want)
	}
	for i, name := range names {
		var types []string
		f, _ := os.Open(filepath.Join(dir, name))
		err := ReadWARC(f, true, func(r WARCRecord) error {
			types = append(types, r.Header.Get("WARC-Type"))
			if r.Header.Get("WARC-Type") == "response" && r.Offset != offs[i] {
				t.Errorf("%s: response at %d, writer said %d", name, r.Offset, offs[i])
			}
			return nil
		})
		f.Close()
		if err != nil || strings.Join(types, ",") != "warcinfo,response,request" {
			t.Errorf("%s: %v, %v", name, types, err)
		}
	}
	// The database committed up to the second response's end, in file 1.
	fi, _ := os.Stat(filepath.Join(dir, names[1]))
	ww, err = openWARC(dir, warcMark{1, fi.Size()}, true, 1<<20, "software: test\r\n")
	if err != nil {
		t.Fatal(err)
	}
	ww.Close()
	if _, err := os.Stat(filepath.Join(dir, names[2])); err == nil {
		t.Errorf("%s outlived a reopening at file 1", names[2])
	}
	for _, name := range names[:2] {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v after a reopening at file 1", name, err)
		}
	}
}

// ReadWARC turns what a damaged or hostile file holds into an error naming
// the offset, never a panic or a hang.
func TestReadWARCErrors(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"version", "HTTP/1.1 200 OK\r\n\r\n", "version line"},
		{"length", "WARC/1.1\r\nWARC-Type: response\r\nContent-Length: x\r\n\r\n", "Content-Length"},
		{"cut", "WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 100\r\n\r\nshort", "CRLF CRLF"},
		{"header line", "WARC/1.1\r\nnot a field\r\n\r\n", "want Name: value"},
		{"status", "WARC/1.1\r\nWARC-Type: response\r\nContent-Type: application/http\r\nContent-Length: 5\r\n\r\nhello\r\n\r\n", "status line"},
		{"long line", "WARC/1.1\r\nX: " + strings.Repeat("a", 70000) + "\r\n\r\n", "over"},
	} {
		err := ReadWARC(strings.NewReader(tc.data), false, func(WARCRecord) error { return nil })
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "offset 0") {
			t.Errorf("%s: %v, want an error at offset 0 about %q", tc.name, err, tc.want)
		}
	}
	if err := ReadWARC(strings.NewReader("not gzip"), true, func(WARCRecord) error { return nil }); err == nil || !strings.Contains(err.Error(), "gzip") {
		t.Errorf("plain bytes read as gzip: %v", err)
	}
}

func FuzzReadWARC(f *testing.F) {
	dir := f.TempDir()
	for _, gz := range []bool{false, true} {
		ww, err := openWARC(filepath.Join(dir), warcMark{}, gz, 0, "software: fuzz\r\n")
		if err != nil {
			f.Fatal(err)
		}
		req, _ := http.NewRequest("GET", "http://a.test/x", nil)
		resp := &http.Response{Proto: "HTTP/1.1", ProtoMajor: 1, Status: "200 OK", StatusCode: 200, Header: http.Header{"Content-Type": {"text/plain"}}, Request: req}
		ww.response("http://a.test/x", time.Unix(1700000000, 0), keep(resp, []byte("hi"), false, sha256.Sum256([]byte("hi")), netip.Addr{}))
		ww.Close()
		b, _ := os.ReadFile(filepath.Join(dir, WARCName(0, gz)))
		f.Add(b, gz)
	}
	f.Add([]byte("WARC/1.1\r\nContent-Length: 0\r\n\r\n\r\n\r\n"), false)
	f.Fuzz(func(t *testing.T, data []byte, gz bool) {
		n := 0
		ReadWARC(bytes.NewReader(data), gz, func(r WARCRecord) error {
			n++
			if r.Offset < 0 || r.Length <= 0 || r.Offset+r.Length > int64(len(data)) {
				t.Fatalf("record %d at %d+%d in %d bytes", n, r.Offset, r.Length, len(data))
			}
			return nil
		})
	})
}

// TestSURT: the keys CDX indexes sort by, as webrecorder's warcio and pywb
// make them.
func TestSURT(t *testing.T) {
	for in, want := range map[string]string{
		"http://www.Example.com/":             "com,example)/",
		"http://example.com":                  "com,example)/",
		"https://www.example.com:443/a/B?z=1": "com,example)/a/b?z=1",
		"http://example.com:8080/p?z=1&a=2#f": "com,example:8080)/p?a=2&z=1",
		"http://127.0.0.1:43111/page/0":       "1,0,0,127:43111)/page/0",
		"http://www.com/":                     "com,www)/",
		"http://a.b.example.co.uk/x%20y":      "uk,co,example,b,a)/x%20y",
		"http://[::1]:8080/":                  "[::1]:8080)/",
	} {
		if got, err := SURT(in); err != nil || got != want {
			t.Errorf("SURT(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"ftp://example.com/", "http:///x", "::"} {
		if _, err := SURT(bad); err == nil {
			t.Errorf("SURT(%q): no error", bad)
		}
	}
}

// BenchmarkWARCResponse is the committer's WARC work for one URL: the
// response and request records of a 1 KiB page of text, gzipped (a member
// each), as throughput.sh's testbed serves it.
func BenchmarkWARCResponse(b *testing.B) {
	words := strings.Fields("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt")
	var body []byte
	for i := 0; len(body) < 1024; i++ {
		body = append(body, words[(i*7)%len(words)]...)
		body = append(body, ' ')
	}
	req, _ := http.NewRequest("GET", "http://127.0.0.9:8080/page/1", nil)
	resp := &http.Response{Proto: "HTTP/1.1", ProtoMajor: 1, Status: "200 OK", StatusCode: 200,
		Header: http.Header{"Content-Type": {"text/html; charset=utf-8"}, "Content-Length": {"1024"}}, Request: req}
	k := keep(resp, body[:1024], false, sha256.Sum256(body[:1024]), netip.MustParseAddr("127.0.0.9"))
	ww, err := openWARC(b.TempDir(), warcMark{}, true, 0, "software: bench\r\n")
	if err != nil {
		b.Fatal(err)
	}
	defer ww.Close()
	at := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		ww.response("http://127.0.0.9:8080/page/1", at, k)
	}
}
