package crawl

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/textproto"
	"strconv"
	"strings"
)

// WARCRecord is one record read by ReadWARC: where it lies in its file, its
// header fields, and for response records the HTTP status and Content-Type
// of the response it holds.
type WARCRecord struct {
	// Offset is where the record starts in its file, Length how many bytes
	// of the file it takes: for a .warc.gz, its gzip member.
	Offset, Length int64
	Header         textproto.MIMEHeader // WARC-Type, WARC-Target-URI, WARC-Date, …
	// Status and MIME are read from the start of a response record's
	// block (an HTTP response); 0 and "" otherwise.
	Status int
	MIME   string
}

// Limits on what ReadWARC accepts: a header larger than this is not a WARC
// record this job wrote, nor any sane one.
const (
	maxWARCHeader = 64 << 10
	maxHTTPHead   = 64 << 10
)

// ReadWARC reads the WARC records of r, a WARC file (gzipped, a member per
// record, when gzipped is set), and calls fn with each in order. It stops at
// fn's first error and returns it. A malformed record gives an error that
// says at which offset and what was wrong; ReadWARC never panics on what a
// file holds.
func ReadWARC(r io.Reader, gzipped bool, fn func(WARCRecord) error) error {
	cr := &countReader{r: r}
	br := bufio.NewReaderSize(cr, 64<<10)
	pos := func() int64 { return cr.n - int64(br.Buffered()) }
	var zr *gzip.Reader
	for {
		start := pos()
		if _, err := br.Peek(1); err == io.EOF {
			return nil
		}
		var rec io.Reader
		if gzipped {
			var err error
			if zr == nil {
				zr, err = gzip.NewReader(br)
			} else {
				err = zr.Reset(br)
			}
			if err != nil {
				return fmt.Errorf("crawl: WARC at offset %d: not a gzip member: %w", start, err)
			}
			zr.Multistream(false)
			rec = zr
		}
		rbr := br
		if gzipped {
			rbr = bufio.NewReaderSize(rec, 64<<10) // the member's own: read ahead within it
		}
		wr, err := readRecord(rbr)
		if err != nil {
			return fmt.Errorf("crawl: WARC record at offset %d: %w", start, err)
		}
		if gzipped {
			// The member holds one record: drain its end (and its trailer).
			if _, err := io.Copy(io.Discard, rbr); err != nil {
				return fmt.Errorf("crawl: WARC record at offset %d: %w", start, err)
			}
		}
		wr.Offset, wr.Length = start, pos()-start
		if err := fn(wr); err != nil {
			return err
		}
	}
}

// readRecord reads one record from br: the version line, the header, the
// block (of which only a response's HTTP head is kept) and the CRLF CRLF.
// It reads no further than the record's end.
func readRecord(br *bufio.Reader) (WARCRecord, error) {
	var wr WARCRecord
	ver, err := readLine(br)
	if err != nil {
		return wr, fmt.Errorf("reading the version line: %w", err)
	}
	if !strings.HasPrefix(ver, "WARC/1.") {
		return wr, fmt.Errorf("version line %q: want WARC/1.0 or WARC/1.1", trimQuote(ver))
	}
	hdr := textproto.MIMEHeader{}
	size, last := 0, ""
	for {
		line, err := readLine(br)
		if err != nil {
			return wr, fmt.Errorf("reading the header: %w", err)
		}
		if line == "" {
			break
		}
		if size += len(line); size > maxWARCHeader {
			return wr, fmt.Errorf("header over %d bytes", maxWARCHeader)
		}
		if (line[0] == ' ' || line[0] == '\t') && last != "" {
			vs := hdr[last]
			vs[len(vs)-1] += " " + strings.TrimSpace(line)
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || k == "" {
			return wr, fmt.Errorf("header line %q: want Name: value", trimQuote(line))
		}
		last = textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(k))
		hdr[last] = append(hdr[last], strings.TrimSpace(v))
	}
	wr.Header = hdr
	n, err := strconv.ParseInt(hdr.Get("Content-Length"), 10, 64)
	if err != nil || n < 0 {
		return wr, fmt.Errorf("Content-Length %q: want a byte count", trimQuote(hdr.Get("Content-Length")))
	}
	block := io.LimitReader(br, n)
	if hdr.Get("WARC-Type") == "response" && strings.HasPrefix(hdr.Get("Content-Type"), "application/http") {
		head, err := readHTTPHead(block)
		if err != nil {
			return wr, err
		}
		wr.Status, wr.MIME = head.status, head.mime
	}
	if _, err := io.Copy(io.Discard, block); err != nil {
		return wr, fmt.Errorf("reading the block: %w", err)
	}
	var tail [4]byte
	if _, err := io.ReadFull(br, tail[:]); err != nil || string(tail[:]) != "\r\n\r\n" {
		return wr, errors.New("the block is not followed by CRLF CRLF (Content-Length wrong, or the file cut short)")
	}
	return wr, nil
}

// readLine reads a line ending in CRLF (or LF) from br, without it; a line
// longer than br's buffer is an error, not a reason to grow.
func readLine(br *bufio.Reader) (string, error) {
	b, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return "", fmt.Errorf("a line over %d bytes", br.Size())
	}
	if err == io.EOF && len(b) > 0 {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return "", err
	}
	return string(bytes.TrimRight(b, "\r\n")), nil
}

type httpHead struct {
	status int
	mime   string
}

// readHTTPHead reads the status line and Content-Type of an HTTP response
// from the start of r.
func readHTTPHead(r io.Reader) (httpHead, error) {
	var h httpHead
	tp := textproto.NewReader(bufio.NewReader(io.LimitReader(r, maxHTTPHead)))
	line, err := tp.ReadLine()
	if err != nil {
		return h, fmt.Errorf("reading the response's status line: %w", err)
	}
	proto, rest, _ := strings.Cut(line, " ")
	code, _, _ := strings.Cut(rest, " ")
	if !strings.HasPrefix(proto, "HTTP/") || len(code) != 3 {
		return h, fmt.Errorf("status line %q: want HTTP/x.y and a 3-digit status", trimQuote(line))
	}
	if h.status, err = strconv.Atoi(code); err != nil {
		return h, fmt.Errorf("status line %q: want HTTP/x.y and a 3-digit status", trimQuote(line))
	}
	hdr, err := tp.ReadMIMEHeader()
	if err != nil && !errors.Is(err, io.EOF) {
		return h, fmt.Errorf("reading the response's header: %w", err)
	}
	h.mime, _, _ = strings.Cut(hdr.Get("Content-Type"), ";")
	h.mime = strings.TrimSpace(h.mime)
	return h, nil
}

// trimQuote cuts s to 80 bytes for an error message.
func trimQuote(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
