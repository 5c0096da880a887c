package links

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/klauspost/compress/gzip"
)

// The sitemaps.org protocol's limits, the defaults of SitemapOptions.
const (
	DefaultMaxURLs  = 50000
	DefaultMaxBytes = 50 << 20
)

// maxLoc is the longest <loc> or text line Sitemap considers; longer ones
// are skipped. The protocol allows 2,048 characters.
const maxLoc = 64 << 10

// ErrTooBig is the error, wrapped, that Sitemap returns when a sitemap has
// more than SitemapOptions.MaxBytes bytes (uncompressed) or more than
// SitemapOptions.MaxURLs entries. The entries before the limit have been
// delivered.
var ErrTooBig = errors.New("links: sitemap too big")

// SitemapOptions tunes Sitemap. The zero value is the default.
type SitemapOptions struct {
	// MaxURLs is the most entries Sitemap delivers; zero or less means
	// DefaultMaxURLs (50,000, the protocol's limit). One more entry stops
	// Sitemap with ErrTooBig.
	MaxURLs int
	// MaxBytes is the most bytes Sitemap reads, counted after gzip
	// decompression; zero or less means DefaultMaxBytes (50 MiB, the
	// protocol's limit). Beyond it Sitemap stops with ErrTooBig. The bound
	// applies to the compressed input as well, and to the output of each
	// layer of gzip.
	MaxBytes int64
}

// Entry is one entry of a sitemap: a page of a <urlset> or a text sitemap,
// or a child sitemap of a <sitemapindex>.
type Entry struct {
	// Loc is the absolute http or https URL, as written in the sitemap
	// (entities decoded, surrounding whitespace trimmed).
	Loc string
	// LastMod is the entry's <lastmod>, or the zero Time when it is absent
	// or not a W3C datetime.
	LastMod time.Time
}

// Sitemap reads a sitemap (sitemaps.org protocol) from r and calls fn for
// each entry, in order. index reports whether it was a <sitemapindex>,
// whose entries are child sitemaps.
//
// A sitemap is XML, a <urlset> of <url> or a <sitemapindex> of <sitemap>,
// each with a <loc> and an optional <lastmod>; element names are matched
// without regard to their namespace, so a sitemap with a wrong or missing
// xmlns reads fine, and extension elements (<image:loc> inside
// <image:image>) are ignored. A document whose first non-space byte is not
// '<' is a text sitemap: one URL per line, blank lines ignored. Either may
// start with a UTF-8 byte order mark, and either may be gzipped: gzip is
// recognised by its magic bytes, whatever the URL or Content-Type said,
// and one more layer of gzip inside is also undone.
//
// A <loc> or line that is not an absolute http or https URL is skipped and
// counted in skipped; so is an entry without <loc>. fn's error stops
// Sitemap and is returned as it is. A malformed document (bad XML, a root
// other than urlset or sitemapindex, binary data in a text sitemap) or a
// read error stops Sitemap with an error naming the line, after the
// entries before it were delivered; so does a limit of opts (ErrTooBig).
// Sitemap reads nothing after the root element's end (so a gzip trailer
// after it is not checked). It is safe to call concurrently.
func Sitemap(r io.Reader, opts SitemapOptions, fn func(Entry) error) (index bool, skipped int, err error) {
	s := sitemap{maxURLs: opts.MaxURLs, maxBytes: opts.MaxBytes, fn: fn}
	if s.maxURLs <= 0 {
		s.maxURLs = DefaultMaxURLs
	}
	if s.maxBytes <= 0 {
		s.maxBytes = DefaultMaxBytes
	}
	// Every layer's output is bounded, so that a bomb inside a bomb
	// cannot spin on gigabytes of empty deflate blocks either.
	br := bufio.NewReaderSize(&limitReader{r: r, n: s.maxBytes, max: s.maxBytes}, 64<<10)
	for layer := 0; layer < 2; layer++ {
		magic, _ := br.Peek(2)
		if len(magic) < 2 || magic[0] != 0x1f || magic[1] != 0x8b {
			break
		}
		gz, err := gzip.NewReader(br)
		if err != nil {
			if errors.Is(err, ErrTooBig) {
				return false, 0, err
			}
			return false, 0, fmt.Errorf("links: sitemap: bad gzip header: %w", err)
		}
		br = bufio.NewReaderSize(&limitReader{r: gz, n: s.maxBytes, max: s.maxBytes}, 64<<10)
	}
	// Skip a byte order mark, then look for '<' past leading space.
	if bom, _ := br.Peek(3); bytes.Equal(bom, []byte("\xef\xbb\xbf")) {
		br.Discard(3)
	}
	for {
		b, err := br.Peek(1)
		if err != nil {
			if err == io.EOF {
				return false, 0, nil // empty: no entries
			}
			return false, 0, s.readErr(err)
		}
		switch b[0] {
		case '<':
			err := s.xml(br)
			return s.index, s.skipped, err
		case ' ', '\t', '\r':
			br.Discard(1)
		case '\n':
			br.Discard(1)
			s.line++
		default:
			err := s.text(br)
			return false, s.skipped, err
		}
	}
}

// sitemap is the state of one Sitemap call.
type sitemap struct {
	maxURLs  int
	maxBytes int64
	fn       func(Entry) error
	index    bool
	skipped  int
	n        int // entries delivered
	line     int // lines before the current reader's first (text: lines read)
}

// limitReader reads at most n bytes of r and then fails with ErrTooBig if r
// has more.
type limitReader struct {
	r      io.Reader
	n, max int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		// One byte more tells a document of exactly max bytes from a
		// longer one.
		var b [1]byte
		for range 100 { // as bufio does, give up on a reader stuck at (0, nil)
			n, err := l.r.Read(b[:])
			if n > 0 {
				return 0, fmt.Errorf("links: sitemap larger than %d bytes: %w", l.max, ErrTooBig)
			}
			if err != nil {
				return 0, err
			}
		}
		return 0, io.ErrNoProgress
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

// deliver hands a <loc> or line to fn, or counts it as skipped.
func (s *sitemap) deliver(loc string, lastmod time.Time) error {
	loc = strings.TrimSpace(loc)
	if !absHTTP(loc) {
		s.skipped++
		return nil
	}
	if s.n == s.maxURLs {
		return fmt.Errorf("links: sitemap has more than %d URLs: %w", s.maxURLs, ErrTooBig)
	}
	s.n++
	return s.fn(Entry{Loc: loc, LastMod: lastmod})
}

// absHTTP reports whether s is an absolute http or https URL with a host.
func absHTTP(s string) bool {
	if len(s) == 0 || len(s) > maxLoc {
		return false
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return false
	}
	return u.Scheme == "http" || u.Scheme == "https"
}

func (s *sitemap) readErr(err error) error {
	if errors.Is(err, ErrTooBig) {
		return err
	}
	return fmt.Errorf("links: reading sitemap, line %d: %w", s.line+1, err)
}

// text reads a text sitemap, one URL per line (sitemaps.org "Text file").
func (s *sitemap) text(br *bufio.Reader) error {
	for {
		line, err := br.ReadSlice('\n')
		s.line++
		if err == bufio.ErrBufferFull {
			// Far longer than any URL: skip to the line's end.
			for err == bufio.ErrBufferFull {
				_, err = br.ReadSlice('\n')
			}
			s.skipped++
			line = nil
		}
		if err != nil && err != io.EOF {
			return s.readErr(err)
		}
		if bad := binary(line); bad {
			return fmt.Errorf("links: text sitemap line %d: not UTF-8 text", s.line)
		}
		if t := bytes.TrimSpace(line); len(t) > 0 {
			if e := s.deliver(string(t), time.Time{}); e != nil {
				return e
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// binary reports whether line has control characters other than tab and
// CR or is not UTF-8: it is not a text file.
func binary(line []byte) bool {
	for _, c := range line {
		if c < ' ' && c != '\t' && c != '\r' && c != '\n' || c == 0x7f {
			return true
		}
	}
	return !utf8.Valid(line)
}

// xml reads an XML sitemap.
func (s *sitemap) xml(br *bufio.Reader) error {
	d := xml.NewDecoder(br)
	d.CharsetReader = charsetReader
	var (
		depth   int
		inEntry bool
		field   int // 0, fieldLoc or fieldLastMod: the element whose text is collected
		text    []byte
		loc     string
		hasLoc  bool
		lastmod time.Time
	)
	const (
		fieldLoc = 1 + iota
		fieldLastMod
	)
	for {
		tok, err := d.Token()
		if err != nil {
			line, _ := d.InputPos()
			line += s.line
			var se *xml.SyntaxError
			switch {
			case err == io.EOF && depth == 0:
				return fmt.Errorf("links: sitemap has no root element")
			case errors.As(err, &se):
				return fmt.Errorf("links: malformed sitemap at line %d: %s", line, se.Msg)
			case errors.Is(err, ErrTooBig):
				return err
			default:
				return fmt.Errorf("links: reading sitemap, line %d: %w", line, err)
			}
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			switch depth {
			case 1:
				switch t.Name.Local {
				case "urlset":
				case "sitemapindex":
					s.index = true
				default:
					line, _ := d.InputPos()
					return fmt.Errorf("links: sitemap root element at line %d is <%s>, not <urlset> or <sitemapindex>", line+s.line, t.Name.Local)
				}
			case 2:
				inEntry = t.Name.Local == "url" || t.Name.Local == "sitemap"
				loc, hasLoc, lastmod = "", false, time.Time{}
			case 3:
				field = 0
				if inEntry && t.Name.Local == "loc" && !hasLoc {
					field = fieldLoc
				} else if inEntry && t.Name.Local == "lastmod" {
					field = fieldLastMod
				}
				text = text[:0]
			}
		case xml.CharData:
			if depth == 3 && field != 0 && len(text) <= maxLoc {
				text = append(text, t...)
			}
		case xml.EndElement:
			switch depth {
			case 1:
				return nil
			case 2:
				if inEntry {
					inEntry = false
					if !hasLoc {
						s.skipped++
					} else if err := s.deliver(loc, lastmod); err != nil {
						return err
					}
				}
			case 3:
				switch field {
				case fieldLoc:
					loc, hasLoc = string(text), true
				case fieldLastMod:
					lastmod = parseW3C(string(bytes.TrimSpace(text)))
				}
				field = 0
			}
			depth--
		}
	}
}

// charsetReader lets sitemaps that declare Latin-1 or ASCII read; the
// protocol requires UTF-8.
func charsetReader(charset string, r io.Reader) (io.Reader, error) {
	switch strings.ToLower(charset) {
	case "us-ascii", "ascii", "iso-8859-1", "latin1", "latin-1", "iso8859-1":
		return &latin1Reader{r: bufio.NewReader(r)}, nil
	}
	return nil, fmt.Errorf("links: sitemap encoding %q is not UTF-8", charset)
}

// latin1Reader decodes ISO 8859-1 to UTF-8.
type latin1Reader struct {
	r   *bufio.Reader
	buf []byte // decoded, not yet returned
}

func (l *latin1Reader) Read(p []byte) (int, error) {
	for len(l.buf) == 0 {
		c, err := l.r.ReadByte()
		if err != nil {
			return 0, err
		}
		l.buf = utf8.AppendRune(l.buf[:0], rune(c))
	}
	n := copy(p, l.buf)
	l.buf = l.buf[n:]
	return n, nil
}

// w3cLayouts are the W3C datetime forms (https://www.w3.org/TR/NOTE-datetime)
// and the common deviations: a space for the 'T', no time zone (UTC).
var w3cLayouts = []string{
	"2006-01-02T15:04:05Z07:00",
	"2006-01-02T15:04Z07:00",
	"2006-01-02",
	"2006-01",
	"2006",
	"2006-01-02T15:04:05",
	"2006-01-02 15:04:05Z07:00",
	"2006-01-02 15:04:05",
	"2006-01-02T15:04:05Z0700",
}

// parseW3C parses a <lastmod>, or returns the zero Time.
func parseW3C(s string) time.Time {
	for _, layout := range w3cLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t
		}
	}
	return time.Time{}
}
