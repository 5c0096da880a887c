package crawl

import (
	"bufio"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/klauspost/compress/gzip"
)

// warcWriter appends WARC/1.1 records (ISO 28500:2017) to the job's WARC
// files: a warcinfo record at the start of each file and of each run, then
// a request and a response record per URL kept, and the robots.txt fetches.
// Each record is a gzip member of its own (bodies.warc.gz), so that a reader
// can start at any record's offset, as CDX indexes and replay tools do; a
// job can keep them uncompressed instead (bodies.warc). Past MaxSize the
// next record starts a new file, bodies-00001.warc.gz and on.
//
// It is our own rather than a library's. internetarchive/gowarc (the
// Internet Archive's, used by its Zeno crawler) is a capture stack: its own
// HTTP client, DNS cache, dedupe and spooling to temporary files, with a
// dozen dependencies (zstd, DNS, Prometheus) that a library user's go.mod
// would carry; nlnwa/gowarc validates and reads well but writes through its
// own record builder that buffers each record. Neither tells the committer
// the offset each record ends at, which exactly-once output needs: a resume
// cuts the file back to what the database committed. The format is simple
// (a header block, the payload, two CRLFs), and the test reads what we
// write with webrecorder's warcio, which no one here wrote.
//
// The gzip members come from klauspost/compress, not compress/gzip: a
// member per record means a compressor reset and a block per record, and
// at its fastest level the standard library's took 46 µs for a 1.2 KB
// record of an incompressible page (its dynamic Huffman codes), klauspost's
// 6 µs (a benchmark of both, one member per op); in a make throughput
// profile the standard library's flate was 7.6 s of the fetch process's
// 24 s of CPU.
//
// A warcWriter is used by the job's one committer goroutine only.
type warcWriter struct {
	dir string
	gz  *gzip.Writer // reused, one member per record; nil: uncompressed
	// stored writes the request records: gzip members of stored (level 0)
	// blocks. A request head is some 200 bytes that deflate would save
	// little of, and a member at BestSpeed cost about 7 µs of the
	// committer's time (building its dynamic Huffman codes), one at level 0
	// 0.2 µs (issue 34, part 2). nil when gz is.
	stored  *gzip.Writer
	maxSize int64  // rotate past this many bytes; 0: never
	info    string // the warcinfo record's fields
	index   int    // the current file's number
	f       *os.File
	w       *bufio.Writer
	// cw is w, counting the bytes that reach it: a pointer, so that
	// handing it to the gzip writer as an io.Writer allocates nothing.
	cw      *countingWriter
	current string // the current file's name (WARCName)
	hdr     []byte // scratch for a record's header lines
	extra   []byte
	synced  []*os.File // files rotated away from, to fsync and close at the next sync
	// bare says the current file holds nothing but its warcinfo: it takes
	// the next URL whatever its size, so that no file is only a warcinfo.
	bare bool
}

// countingWriter counts the bytes written through it in n.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// WARCName is the name of a job's WARC file number i: bodies.warc.gz (or
// bodies.warc, uncompressed) first, then bodies-00001.warc.gz and on.
func WARCName(i int, gzipped bool) string {
	ext := ".warc"
	if gzipped {
		ext = ".warc.gz"
	}
	if i == 0 {
		return "bodies" + ext
	}
	return fmt.Sprintf("bodies-%05d%s", i, ext)
}

// warcMark is how far the WARC files are committed: the file's number and
// its size.
type warcMark struct {
	index int
	off   int64
}

func openWARC(dir string, mark warcMark, gzipped bool, maxSize int64, info string) (*warcWriter, error) {
	ww := &warcWriter{dir: dir, maxSize: maxSize, info: info, index: mark.index}
	if gzipped {
		ww.gz, _ = gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
		ww.stored, _ = gzip.NewWriterLevel(io.Discard, gzip.NoCompression)
	}
	// Files past the committed one were started by a run that ended before
	// committing anything in them: their URLs will be fetched and written
	// again.
	for i := mark.index + 1; ; i++ {
		err := os.Remove(filepath.Join(dir, WARCName(i, gzipped)))
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("crawl: %w", err)
		}
	}
	if err := ww.open(mark.off); err != nil {
		return nil, err
	}
	ww.bare = mark.off == 0
	ww.record(ww.gz, newUUID(), "warcinfo", "", time.Now(), "application/warc-fields", nil, []byte(info), nil, nil)
	return ww, nil
}

// open opens the current file, cut back to size: records past the
// committed mark belong to URLs the database does not call done, which will
// be fetched and written again.
func (ww *warcWriter) open(size int64) error {
	path := filepath.Join(ww.dir, WARCName(ww.index, ww.gz != nil))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return fmt.Errorf("crawl: %w", err)
	}
	if _, err := f.Seek(size, io.SeekStart); err != nil {
		f.Close()
		return fmt.Errorf("crawl: %w", err)
	}
	ww.f = f
	if ww.w == nil {
		ww.w = bufio.NewWriterSize(f, 256<<10)
	} else {
		ww.w.Reset(f)
	}
	ww.cw = &countingWriter{w: ww.w, n: size}
	ww.current = WARCName(ww.index, ww.gz != nil)
	return nil
}

// rotate starts the next file when the current one has passed maxSize. The
// old file is flushed now and fsynced at the next sync, before the database
// records that records went to the new one.
func (ww *warcWriter) rotate() {
	if ww.maxSize <= 0 || ww.cw.n < ww.maxSize || ww.bare {
		return
	}
	if err := ww.w.Flush(); err != nil {
		return // the next sync reports it
	}
	ww.synced = append(ww.synced, ww.f)
	ww.index++
	if err := ww.open(0); err != nil {
		ww.index--
		ww.f = ww.synced[len(ww.synced)-1]
		ww.synced = ww.synced[:len(ww.synced)-1]
		return
	}
	ww.bare = true
	ww.record(ww.gz, newUUID(), "warcinfo", "", time.Now(), "application/warc-fields", nil, []byte(ww.info), nil, nil)
}

// name is the current file's name.
func (ww *warcWriter) name() string { return ww.current }

// response appends the response and request records of one fetch and
// returns the file and the response record's offset in it. k.body is what
// was kept of the payload; k.truncated says there was more. The digests
// and record ids come worked out by the worker (keep): the committer, one
// goroutine for the whole job, only copies and compresses bytes (issue 17,
// defect 3: per-URL cost).
func (ww *warcWriter) response(target string, at time.Time, k *kept) (string, int64) {
	ww.rotate()
	ww.bare = false
	off := ww.cw.n
	var respID [uuidURNLen]byte
	uuidURN(respID[:], k.respID)
	b := append(ww.extra[:0], "WARC-Payload-Digest: sha256:"...)
	b = base32.StdEncoding.AppendEncode(b, k.payload[:])
	b = append(b, "\r\n"...)
	if k.truncated {
		b = append(b, "WARC-Truncated: length\r\n"...)
	}
	b = appendIP(b, k.ip)
	ww.extra = b
	ww.record(ww.gz, k.respID, "response", target, at, "application/http;msgtype=response", k.respHead, k.body, &k.respBlock, b)
	if k.reqHead != nil {
		b := append(ww.extra[:0], "WARC-Concurrent-To: "...)
		b = append(b, respID[:]...)
		b = append(b, "\r\n"...)
		b = appendIP(b, k.ip)
		ww.extra = b
		ww.record(ww.stored, k.reqID, "request", target, at, "application/http;msgtype=request", k.reqHead, nil, &k.reqBlock, b)
	}
	return ww.name(), off
}

// appendIP appends a WARC-IP-Address line for ip, when known.
func appendIP(b []byte, ip netip.Addr) []byte {
	if !ip.IsValid() {
		return b
	}
	b = append(b, "WARC-IP-Address: "...)
	b = ip.AppendTo(b)
	return append(b, "\r\n"...)
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

// record writes one record: the header, a block of head followed by body
// (whose sha256 is block, worked out here when nil), and the two CRLFs that
// end a record (ISO 28500 §4); with gzip on (gz not nil), as a gzip member
// of its own. extra holds more header lines.
func (ww *warcWriter) record(gz *gzip.Writer, id [16]byte, typ, target string, at time.Time, ctype string, head, body []byte, block *[32]byte, extra []byte) {
	if block == nil {
		h := sha256.New()
		h.Write(head)
		h.Write(body)
		var sum [32]byte
		h.Sum(sum[:0])
		block = &sum
	}
	var urn [uuidURNLen]byte
	uuidURN(urn[:], id)
	b := append(ww.hdr[:0], "WARC/1.1\r\nWARC-Type: "...)
	b = append(b, typ...)
	b = append(b, "\r\nWARC-Record-ID: "...)
	b = append(b, urn[:]...)
	b = append(b, "\r\nWARC-Date: "...)
	b = at.UTC().AppendFormat(b, "2006-01-02T15:04:05.000000Z")
	b = append(b, "\r\n"...)
	if target != "" {
		b = append(b, "WARC-Target-URI: "...)
		b = append(b, target...)
		b = append(b, "\r\n"...)
	}
	if typ == "warcinfo" {
		b = append(b, "WARC-Filename: "...)
		b = append(b, ww.name()...)
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
	var w io.Writer = ww.cw
	if gz != nil {
		gz.Reset(ww.cw)
		w = gz
	}
	w.Write(b)
	w.Write(head)
	w.Write(body)
	w.Write(recordEnd)
	if gz != nil {
		gz.Close() // the member's end; errors surface at the flush in sync
	}
}

// recordEnd is the two CRLFs that end a record: a []byte, as an
// io.WriteString to the gzip writer would copy the string each time.
var recordEnd = []byte("\r\n\r\n")

// sync flushes and fsyncs the files written since the last sync, and
// returns how far they are committed.
func (ww *warcWriter) sync() (warcMark, error) {
	for len(ww.synced) > 0 {
		f := ww.synced[0]
		if err := f.Sync(); err != nil {
			return warcMark{}, fmt.Errorf("crawl: syncing %s: %w", filepath.Base(f.Name()), err)
		}
		f.Close()
		ww.synced = ww.synced[1:]
	}
	if err := ww.w.Flush(); err != nil {
		return warcMark{}, fmt.Errorf("crawl: writing %s: %w", ww.name(), err)
	}
	if err := ww.f.Sync(); err != nil {
		return warcMark{}, fmt.Errorf("crawl: syncing %s: %w", ww.name(), err)
	}
	return warcMark{ww.index, ww.cw.n}, nil
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
