package crawl

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base32"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestWARCRecords reads back what warcWriter wrote, as a WARC reader would:
// version line, header fields, Content-Length bytes of block, CRLF CRLF.
func TestWARCRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.warc")
	ww, err := openWARC(path, 0, "software: test\r\n")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", "http://a.test/p?q=1", nil)
	req.Header.Set("User-Agent", "polite-test")
	resp := &http.Response{Proto: "HTTP/1.1", ProtoMajor: 1, Status: "200 OK", StatusCode: 200,
		Header: http.Header{"Content-Type": {"text/html"}}, Request: req}
	body := []byte("<html>hello</html>")
	off := ww.response("http://a.test/p?q=1", time.Unix(1700000000, 0), keep(resp, body, true, sha256.Sum256(body)))
	end, err := ww.sync()
	if err != nil {
		t.Fatal(err)
	}
	ww.Close()

	data, _ := os.ReadFile(path)
	if int64(len(data)) != end {
		t.Fatalf("file has %d bytes, writer says %d", len(data), end)
	}
	br := bufio.NewReader(bytes.NewReader(data))
	var types []string
	pos := int64(0)
	for {
		ver, err := br.ReadString('\n')
		if err == io.EOF {
			break
		}
		if ver != "WARC/1.1\r\n" {
			t.Fatalf("record at %d starts %q", pos, ver)
		}
		start := pos
		pos += int64(len(ver))
		fields := map[string]string{}
		for {
			line, _ := br.ReadString('\n')
			pos += int64(len(line))
			if line == "\r\n" {
				break
			}
			k, v, _ := strings.Cut(strings.TrimRight(line, "\r\n"), ": ")
			fields[k] = v
		}
		n, _ := strconv.Atoi(fields["Content-Length"])
		block := make([]byte, n)
		io.ReadFull(br, block)
		tail := make([]byte, 4)
		io.ReadFull(br, tail)
		pos += int64(n + 4)
		if string(tail) != "\r\n\r\n" {
			t.Fatalf("record %s not ended by CRLF CRLF", fields["WARC-Type"])
		}
		sum := sha256.Sum256(block)
		if fields["WARC-Block-Digest"] != "sha256:"+base32.StdEncoding.EncodeToString(sum[:]) {
			t.Errorf("%s: block digest %s", fields["WARC-Type"], fields["WARC-Block-Digest"])
		}
		for _, f := range []string{"WARC-Record-ID", "WARC-Date", "Content-Type"} {
			if fields[f] == "" {
				t.Errorf("%s record lacks %s", fields["WARC-Type"], f)
			}
		}
		types = append(types, fields["WARC-Type"])
		if fields["WARC-Type"] == "response" {
			payload := sha256.Sum256(body)
			if start != off {
				t.Errorf("response at %d, writer said %d", start, off)
			}
			if !bytes.HasPrefix(block, []byte("HTTP/1.1 200 OK\r\n")) || !bytes.HasSuffix(block, body) {
				t.Errorf("response block %q", block)
			}
			if fields["WARC-Payload-Digest"] != "sha256:"+base32.StdEncoding.EncodeToString(payload[:]) || fields["WARC-Truncated"] != "length" || fields["WARC-Target-URI"] != "http://a.test/p?q=1" {
				t.Errorf("response fields %v", fields)
			}
		}
		if fields["WARC-Type"] == "request" && !bytes.HasPrefix(block, []byte("GET /p?q=1 HTTP/1.1\r\nHost: a.test\r\n")) {
			t.Errorf("request block %q", block)
		}
	}
	if strings.Join(types, ",") != "warcinfo,response,request" {
		t.Errorf("records %v", types)
	}

	// Reopening at a committed offset cuts what came after it.
	ww, err = openWARC(path, off, "software: test\r\n")
	if err != nil {
		t.Fatal(err)
	}
	ww.Close()
	data, _ = os.ReadFile(path)
	if !bytes.Contains(data[off:], []byte("WARC-Type: warcinfo")) || bytes.Contains(data[off:], []byte("WARC-Type: response")) {
		t.Errorf("after reopening at %d: %q", off, data[off:])
	}
}
