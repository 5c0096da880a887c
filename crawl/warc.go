package crawl

import (
	"bufio"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
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
	f          *os.File
	w          *bufio.Writer
	off        int64  // bytes in the file, buffered ones included
	hdr, extra []byte // scratch for a record's header lines
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
	ww.info(info)
	return ww, nil
}

// response appends the request and response records of one fetch and
// returns the response record's offset. k.body is what was kept of the
// payload; k.truncated says there was more. The digests and record ids
// come worked out by the worker (keep): the committer, one goroutine for
// the whole job, only copies bytes (issue 17, defect 3: per-URL cost).
func (ww *warcWriter) response(target string, at time.Time, k *kept) int64 {
	off := ww.off
	var respID [uuidURNLen]byte
	uuidURN(respID[:], k.respID)
	b := append(ww.extra[:0], "WARC-Payload-Digest: sha256:"...)
	b = base32.StdEncoding.AppendEncode(b, k.payload[:])
	b = append(b, "\r\n"...)
	if k.truncated {
		b = append(b, "WARC-Truncated: length\r\n"...)
	}
	ww.extra = b
	ww.record(respID[:], "response", target, at, "application/http;msgtype=response", k.respHead, k.body, &k.respBlock, b)
	if k.reqHead != nil {
		var reqID [uuidURNLen]byte
		uuidURN(reqID[:], k.reqID)
		b := append(ww.extra[:0], "WARC-Concurrent-To: "...)
		b = append(b, respID[:]...)
		b = append(b, "\r\n"...)
		ww.extra = b
		ww.record(reqID[:], "request", target, at, "application/http;msgtype=request", k.reqHead, nil, &k.reqBlock, b)
	}
	return off
}

// responseHead is the status line and headers of resp.
func responseHead(resp *http.Response) []byte {
	b := make([]byte, 0, headSize(resp.Header)+len(resp.Status)+16)
	b = append(b, protoOf(resp)...)
	b = append(b, ' ')
	b = append(b, resp.Status...)
	b = append(b, "\r\n"...)
	b = appendHeader(b, resp.Header)
	return append(b, "\r\n"...)
}

// info writes a warcinfo record.
func (ww *warcWriter) info(info string) {
	var id [uuidURNLen]byte
	uuidURN(id[:], newUUID())
	block := sha256.Sum256([]byte(info))
	ww.record(id[:], "warcinfo", "", time.Now(), "application/warc-fields", nil, []byte(info), &block, nil)
}

// record writes one record: the header, a block of head followed by body
// (whose sha256 is block), and the two CRLFs that end a record (ISO 28500
// §4). extra holds more header lines.
func (ww *warcWriter) record(id []byte, typ, target string, at time.Time, ctype string, head, body []byte, block *[32]byte, extra []byte) {
	b := append(ww.hdr[:0], "WARC/1.1\r\nWARC-Type: "...)
	b = append(b, typ...)
	b = append(b, "\r\nWARC-Record-ID: "...)
	b = append(b, id...)
	b = append(b, "\r\nWARC-Date: "...)
	b = at.UTC().AppendFormat(b, "2006-01-02T15:04:05.000000Z")
	b = append(b, "\r\n"...)
	if target != "" {
		b = append(b, "WARC-Target-URI: "...)
		b = append(b, target...)
		b = append(b, "\r\n"...)
	}
	b = append(b, "Content-Type: "...)
	b = append(b, ctype...)
	b = append(b, "\r\nWARC-Block-Digest: sha256:"...)
	b = base32.StdEncoding.AppendEncode(b, block[:])
	b = append(b, "\r\n"...)
	b = append(b, extra...)
	b = append(b, "Content-Length: "...)
	b = strconv.AppendInt(b, int64(len(head)+len(body)), 10)
	b = append(b, "\r\n\r\n"...)
	ww.hdr = b
	n, _ := ww.w.Write(b)
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
	host := r.Host
	if host == "" {
		host = r.URL.Host
	}
	uri := r.URL.RequestURI()
	b := make([]byte, 0, headSize(r.Header)+len(r.Method)+len(uri)+len(host)+24)
	b = append(b, r.Method...)
	b = append(b, ' ')
	b = append(b, uri...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\n"...)
	b = appendHeader(b, r.Header)
	return append(b, "\r\n"...)
}

// headSize is about the bytes appendHeader writes for h.
func headSize(h http.Header) int {
	n := 2
	for k, vs := range h {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

// appendHeader appends h's fields, sorted, each value kept on its line.
func appendHeader(b []byte, h http.Header) []byte {
	var buf [24]string
	keys := buf[:0]
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range h[k] {
			if secret[k] {
				v = "xxxxx" // never keep credentials (STYLE.md)
			}
			b = append(b, k...)
			b = append(b, ": "...)
			for i := range len(v) {
				if c := v[i]; c == '\r' || c == '\n' {
					b = append(b, ' ')
				} else {
					b = append(b, c)
				}
			}
			b = append(b, "\r\n"...)
		}
	}
	return b
}

// uuidURNLen is the length of "<urn:uuid:xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx>".
const uuidURNLen = 47

// newUUID returns a random (version 4) UUID. Record ids need to be unique,
// not secret: the runtime's per-thread ChaCha8 (math/rand/v2) gives 122
// random bits without a system call.
func newUUID() [16]byte {
	var u [16]byte
	binary.LittleEndian.PutUint64(u[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(u[8:], rand.Uint64())
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u
}

// uuidURN writes u as a URN, the form WARC-Record-ID takes, into dst
// (uuidURNLen bytes).
func uuidURN(dst []byte, u [16]byte) {
	copy(dst, "<urn:uuid:")
	p := dst[10:]
	for i, part := range [][]byte{u[0:4], u[4:6], u[6:8], u[8:10], u[10:16]} {
		if i > 0 {
			p[0] = '-'
			p = p[1:]
		}
		hex.Encode(p, part)
		p = p[2*len(part):]
	}
	p[0] = '>'
}
