package crawl

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// warcWriter appends WARC/1.1 records (ISO 28500:2017) to one uncompressed
// file: a warcinfo record per run, then a request and a response record per
// URL kept. It is our own rather than a library's: internetarchive/gowarc
// and nlnwa/gowarc are whole capture stacks (their own HTTP client, DNS,
// Prometheus), while the job needs ~150 lines and, for exactly-once output,
// to know the byte offset each record ends at so that a resume can cut the
// file back to what the database committed.
//
// A warcWriter is used by the job's one committer goroutine only.
type warcWriter struct {
	f   *os.File
	w   *bufio.Writer
	off int64 // bytes in the file, buffered ones included
}

func openWARC(path string, committed int64, info string) (*warcWriter, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("crawl: %w", err)
	}
	// Records past the committed mark belong to URLs the database does not
	// call done: they will be fetched and written again.
	if err := f.Truncate(committed); err != nil {
		f.Close()
		return nil, fmt.Errorf("crawl: %w", err)
	}
	if _, err := f.Seek(committed, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("crawl: %w", err)
	}
	ww := &warcWriter{f: f, w: bufio.NewWriterSize(f, 256<<10), off: committed}
	ww.record("warcinfo", "", time.Now(), "application/warc-fields", nil, []byte(info), "")
	return ww, nil
}

// response appends the request and response records of one fetch and
// returns the response record's offset. k.body is what was kept of the
// payload; k.truncated says there was more.
func (ww *warcWriter) response(target string, at time.Time, k *kept) int64 {
	respID := newRecordID()
	off := ww.off
	extra := "WARC-Payload-Digest: " + digest(k.body) + "\r\n"
	if k.truncated {
		extra += "WARC-Truncated: length\r\n"
	}
	ww.recordID(respID, "response", target, at, "application/http;msgtype=response", k.respHead, k.body, extra)
	if k.reqHead != nil {
		ww.record("request", target, at, "application/http;msgtype=request", k.reqHead, nil, "WARC-Concurrent-To: "+respID+"\r\n")
	}
	return off
}

// responseHead is the status line and headers of resp.
func responseHead(resp *http.Response) []byte {
	var head bytes.Buffer
	fmt.Fprintf(&head, "%s %s\r\n", protoOf(resp), resp.Status)
	writeHeader(&head, resp.Header)
	head.WriteString("\r\n")
	return head.Bytes()
}

func (ww *warcWriter) record(typ, target string, at time.Time, ctype string, head, body []byte, extra string) {
	ww.recordID(newRecordID(), typ, target, at, ctype, head, body, extra)
}

// recordID writes one record: the header, a block of head followed by body,
// and the two CRLFs that end a record (ISO 28500 §4).
func (ww *warcWriter) recordID(id, typ, target string, at time.Time, ctype string, head, body []byte, extra string) {
	h := sha256.New()
	h.Write(head)
	h.Write(body)
	var b strings.Builder
	b.WriteString("WARC/1.1\r\n")
	b.WriteString("WARC-Type: " + typ + "\r\n")
	b.WriteString("WARC-Record-ID: " + id + "\r\n")
	b.WriteString("WARC-Date: " + at.UTC().Format("2006-01-02T15:04:05.000000Z") + "\r\n")
	if target != "" {
		b.WriteString("WARC-Target-URI: " + target + "\r\n")
	}
	b.WriteString("Content-Type: " + ctype + "\r\n")
	b.WriteString("WARC-Block-Digest: sha256:" + b32(h.Sum(nil)) + "\r\n")
	b.WriteString(extra)
	b.WriteString("Content-Length: " + strconv.Itoa(len(head)+len(body)) + "\r\n\r\n")
	n, _ := ww.w.WriteString(b.String())
	m, _ := ww.w.Write(head)
	k, _ := ww.w.Write(body)
	e, _ := ww.w.WriteString("\r\n\r\n")
	ww.off += int64(n + m + k + e)
}

// sync flushes and fsyncs the file, and returns its size.
func (ww *warcWriter) sync() (int64, error) {
	if err := ww.w.Flush(); err != nil {
		return 0, fmt.Errorf("crawl: writing bodies.warc: %w", err)
	}
	if err := ww.f.Sync(); err != nil {
		return 0, fmt.Errorf("crawl: syncing bodies.warc: %w", err)
	}
	return ww.off, nil
}

func (ww *warcWriter) Close() error {
	_, err := ww.sync()
	if e := ww.f.Close(); err == nil {
		err = e
	}
	return err
}

func protoOf(resp *http.Response) string {
	if resp.Proto != "" && resp.ProtoMajor < 2 {
		return resp.Proto
	}
	// HTTP/2 and /3 have no status line; archives record them as HTTP/1.1.
	return "HTTP/1.1"
}

// requestHead is the request as it went on the wire, near enough: the
// request line and the headers Go sends.
func requestHead(r *http.Request) []byte {
	var b bytes.Buffer
	host := r.Host
	if host == "" {
		host = r.URL.Host
	}
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", r.Method, r.URL.RequestURI(), host)
	writeHeader(&b, r.Header)
	b.WriteString("\r\n")
	return b.Bytes()
}

// headerValue keeps a header value on its line.
var headerValue = strings.NewReplacer("\r", " ", "\n", " ")

func writeHeader(b *bytes.Buffer, h http.Header) {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range h[k] {
			if secret[k] {
				v = "xxxxx" // never keep credentials (STYLE.md)
			}
			b.WriteString(k + ": " + headerValue.Replace(v) + "\r\n")
		}
	}
}

func digest(p []byte) string {
	s := sha256.Sum256(p)
	return "sha256:" + b32(s[:])
}

func b32(p []byte) string { return base32.StdEncoding.EncodeToString(p) }

// newRecordID returns a random (version 4) UUID as a URN, the form
// WARC-Record-ID takes.
func newRecordID() string {
	var u [16]byte
	rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("<urn:uuid:%x-%x-%x-%x-%x>", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
