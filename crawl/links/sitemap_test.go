package links

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/klauspost/compress/gzip"
)

// readSitemap runs Sitemap and returns the entries as "loc" or "loc
// lastmod".
func readSitemap(r io.Reader, opts SitemapOptions) (got []string, index bool, skipped int, err error) {
	index, skipped, err = Sitemap(r, opts, func(e Entry) error {
		s := e.Loc
		if !e.LastMod.IsZero() {
			s += " " + e.LastMod.Format(time.RFC3339Nano)
		}
		got = append(got, s)
		return nil
	})
	return got, index, skipped, err
}

func gz(t testing.TB, s string) string {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := io.WriteString(w, s); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

const urlset = `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
  <url>
    <loc>https://example.com/</loc>
    <lastmod>2026-11-01</lastmod>
    <changefreq>daily</changefreq>
    <priority>1.0</priority>
  </url>
  <url>
    <loc>
      https://example.com/a?x=1&amp;y=2
    </loc>
    <image:image><image:loc>https://example.com/img.jpg</image:loc></image:image>
    <lastmod>2026-11-02T10:30:00+01:00</lastmod>
  </url>
  <url><loc><![CDATA[https://example.com/cdata?a=1&b=2]]></loc></url>
</urlset>
`

func TestSitemap(t *testing.T) {
	want := []string{"https://example.com/ 2026-11-01T00:00:00Z", "https://example.com/a?x=1&y=2 2026-11-02T10:30:00+01:00", "https://example.com/cdata?a=1&b=2"}
	for _, tc := range []struct {
		name    string
		doc     string
		want    []string
		index   bool
		skipped int
	}{
		{name: "urlset", doc: urlset, want: want},
		{name: "gzip", doc: gz(t, urlset), want: want},
		{name: "gzip inside gzip", doc: gz(t, gz(t, urlset)), want: want},
		{name: "gzip trailer after the root is not read", doc: gz(t, urlset)[:len(gz(t, urlset))-8], want: want},
		{name: "byte order mark", doc: "\ufeff" + urlset, want: want},
		{name: "no namespace", doc: `<urlset><url><loc>https://example.com/</loc></url></urlset>`, want: []string{"https://example.com/"}},
		{name: "other namespace prefix", doc: `<s:urlset xmlns:s="http://www.sitemaps.org/schemas/sitemap/0.9"><s:url><s:loc>https://example.com/</s:loc></s:url></s:urlset>`, want: []string{"https://example.com/"}},
		{name: "sitemapindex", doc: `<?xml version="1.0"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap><loc>https://example.com/s1.xml.gz</loc><lastmod>2026-01</lastmod></sitemap>
  <sitemap><lastmod>2026</lastmod><loc>https://example.com/s2.xml</loc></sitemap>
</sitemapindex>`, index: true, want: []string{"https://example.com/s1.xml.gz 2026-01-01T00:00:00Z", "https://example.com/s2.xml 2026-01-01T00:00:00Z"}},
		{name: "skipped locs", doc: `<urlset>
<url><loc>/relative</loc></url>
<url><loc>ftp://example.com/</loc></url>
<url><loc>https://exa mple.com/</loc></url>
<url><loc></loc></url>
<url><lastmod>2026-01-01</lastmod></url>
<url><loc>http:opaque</loc></url>
<url><loc>HTTP://example.com/ok</loc></url>
</urlset>`, skipped: 6, want: []string{"HTTP://example.com/ok"}},
		{name: "first loc counts", doc: `<urlset><url><loc>https://example.com/1</loc><loc>https://example.com/2</loc></url></urlset>`, want: []string{"https://example.com/1"}},
		{name: "lastmod forms", doc: `<urlset>
<url><loc>https://example.com/1</loc><lastmod>2026-11-02T10:30Z</lastmod></url>
<url><loc>https://example.com/2</loc><lastmod> 2026-11-02T10:30:00.25-05:00 </lastmod></url>
<url><loc>https://example.com/3</loc><lastmod>2026-11-02 10:30:00</lastmod></url>
<url><loc>https://example.com/4</loc><lastmod>yesterday</lastmod></url>
<url><loc>https://example.com/5</loc><lastmod>2026-13-45</lastmod></url>
</urlset>`, want: []string{"https://example.com/1 2026-11-02T10:30:00Z", "https://example.com/2 2026-11-02T10:30:00.25-05:00", "https://example.com/3 2026-11-02T10:30:00Z", "https://example.com/4", "https://example.com/5"}},
		{name: "comments and unknown elements", doc: `<urlset><!-- <url><loc>https://example.com/c</loc></url> --><foo><loc>https://example.com/foo</loc></foo><url><x:y xmlns:x="z"/><loc>https://example.com/ok</loc></url></urlset>`, want: []string{"https://example.com/ok"}},
		{name: "latin-1", doc: "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><urlset><url><loc>https://example.com/caf\xe9</loc></url></urlset>", want: []string{"https://example.com/café"}},
		{name: "nothing after the root is read", doc: `<urlset><url><loc>https://example.com/</loc></url></urlset><junk`, want: []string{"https://example.com/"}},
		{name: "empty", doc: "", want: nil},
		{name: "only space", doc: "\n\n \t\n", want: nil},
		{name: "text", doc: "\ufeffhttps://example.com/1\r\n\n  https://example.com/2  \nnot a url\n\nhttps://example.com/3", skipped: 1, want: []string{"https://example.com/1", "https://example.com/2", "https://example.com/3"}},
		{name: "gzipped text", doc: gz(t, "https://example.com/1\nhttps://example.com/2\n"), want: []string{"https://example.com/1", "https://example.com/2"}},
		{name: "text with a very long line", doc: "https://example.com/1\nhttps://example.com/" + strings.Repeat("x", 200<<10) + "\nhttps://example.com/3\n", skipped: 1, want: []string{"https://example.com/1", "https://example.com/3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []struct {
				name string
				r    io.Reader
			}{{"whole", strings.NewReader(tc.doc)}, {"byte by byte", iotest.OneByteReader(strings.NewReader(tc.doc))}} {
				got, index, skipped, err := readSitemap(r.r, SitemapOptions{})
				if err != nil || index != tc.index || skipped != tc.skipped || !slices.Equal(got, tc.want) {
					t.Errorf("Sitemap(%s %.60q) = %q, index %v, skipped %d, %v; want %q, %v, %d, nil",
						r.name, tc.doc, got, index, skipped, err, tc.want, tc.index, tc.skipped)
				}
			}
		})
	}
}

func TestSitemapErrors(t *testing.T) {
	three := `<urlset><url><loc>https://example.com/1</loc></url><url><loc>https://example.com/2</loc></url><url><loc>https://example.com/3</loc></url></urlset>`
	whole := gz(t, three)
	// A gzipped sitemap cut in half delivers the entries in the half
	// that inflates.
	var doc strings.Builder
	var bigWant []string
	doc.WriteString("<urlset>\n")
	for i := range 2000 {
		fmt.Fprintf(&doc, "<url><loc>https://example.com/%d/%x</loc></url>\n", i, i*7919*7919)
		bigWant = append(bigWant, fmt.Sprintf("https://example.com/%d/%x", i, i*7919*7919))
	}
	doc.WriteString("</urlset>\n")
	big := gz(t, doc.String())
	bigCut, _, _, _ := readSitemap(strings.NewReader(big[:len(big)/2]), SitemapOptions{})
	if len(bigCut) < 500 || len(bigCut) > 1500 {
		t.Fatalf("half a gzipped sitemap of 2000 entries delivers %d", len(bigCut))
	}
	for _, tc := range []struct {
		name    string
		doc     string
		opts    SitemapOptions
		want    []string // delivered before the error
		errHas  string
		tooBig  bool
		skipped int
	}{
		{name: "html page", doc: "<!DOCTYPE html>\n<html><body>404</body></html>", errHas: "line 2"},
		{name: "wrong root", doc: "\n\n<rss><channel/></rss>", errHas: "line 3 is <rss>"},
		{name: "non-XML junk", doc: "<\x00\x01\x02\xff junk", errHas: "malformed sitemap at line 1"},
		{name: "binary text", doc: "https://example.com/1\n\x89PNG\r\n\x1a\n\x00\x00", want: []string{"https://example.com/1"}, errHas: "text sitemap line 2"},
		{name: "not UTF-8 text", doc: "https://example.com/1\nhttps://example.com/\xff\n", want: []string{"https://example.com/1"}, errHas: "text sitemap line 2: not UTF-8"},
		{name: "malformed after entries", doc: "<urlset>\n<url><loc>https://example.com/1</loc></url>\n<url><loc>https://example.com/2</loc></url>\n<url><loc>https://example.com/3</lo></url>", want: []string{"https://example.com/1", "https://example.com/2"}, errHas: "line 4"},
		{name: "unclosed", doc: "<urlset>\n<url><loc>https://example.com/1</loc></url>\n<url><loc>https://example.com/2</loc>", want: []string{"https://example.com/1"}, errHas: "unexpected EOF"},
		{name: "unknown entity", doc: "<urlset><url><loc>https://example.com/&nbsp;</loc></url></urlset>", errHas: "malformed sitemap"},
		{name: "unknown encoding", doc: `<?xml version="1.0" encoding="Shift_JIS"?><urlset/>`, errHas: `encoding "Shift_JIS"`},
		{name: "no root", doc: `<?xml version="1.0"?>`, errHas: "no root element"},
		{name: "truncated gzip", doc: big[:len(big)/2], want: bigWant[:len(bigCut)], errHas: "unexpected EOF"},
		{name: "bad gzip header", doc: "\x1f\x8b\x00junk", errHas: "bad gzip header"},
		{name: "MaxURLs", doc: three, opts: SitemapOptions{MaxURLs: 2}, want: []string{"https://example.com/1", "https://example.com/2"}, tooBig: true, errHas: "more than 2 URLs"},
		{name: "MaxURLs text", doc: "https://example.com/1\nhttps://example.com/2\nhttps://example.com/3\n", opts: SitemapOptions{MaxURLs: 2}, want: []string{"https://example.com/1", "https://example.com/2"}, tooBig: true},
		{name: "MaxBytes", doc: three, opts: SitemapOptions{MaxBytes: 70}, want: []string{"https://example.com/1"}, tooBig: true, errHas: "larger than 70 bytes"},
		{name: "MaxBytes gzipped", doc: whole, opts: SitemapOptions{MaxBytes: 70}, want: []string{"https://example.com/1"}, tooBig: true, errHas: "larger than 70 bytes"},
		{name: "MaxBytes text", doc: "https://example.com/1\nhttps://example.com/2\nhttps://example.com/3\n", opts: SitemapOptions{MaxBytes: 50}, want: []string{"https://example.com/1", "https://example.com/2"}, tooBig: true},
		{name: "MaxBytes cuts a line", doc: "https://example.com/1\nhttps://example.com/2\nhttps://example.com/3\n", opts: SitemapOptions{MaxBytes: 30}, want: []string{"https://example.com/1"}, tooBig: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, skipped, err := readSitemap(strings.NewReader(tc.doc), tc.opts)
			if err == nil || !strings.HasPrefix(err.Error(), "links: ") || !strings.Contains(err.Error(), tc.errHas) || errors.Is(err, ErrTooBig) != tc.tooBig {
				t.Errorf("Sitemap(%.200q) error = %v, want one containing %q (ErrTooBig %v)", tc.doc, err, tc.errHas, tc.tooBig)
			}
			if !slices.Equal(got, tc.want) || skipped != tc.skipped {
				t.Errorf("Sitemap(%.200q) = %q, skipped %d; want %q, %d", tc.doc, got, skipped, tc.want, tc.skipped)
			}
		})
	}
}

func TestSitemapExactLimits(t *testing.T) {
	doc := "https://example.com/1\nhttps://example.com/2\n"
	got, _, _, err := readSitemap(strings.NewReader(doc), SitemapOptions{MaxURLs: 2, MaxBytes: int64(len(doc))})
	if err != nil || len(got) != 2 {
		t.Errorf("Sitemap at exactly MaxURLs and MaxBytes = %q, %v; want 2 entries, nil", got, err)
	}
}

// TestSitemapBomb checks that a gzip bomb stops at MaxBytes, and quickly:
// 10 GiB of zeros would take minutes to inflate.
func TestSitemapBomb(t *testing.T) {
	var b bytes.Buffer
	w, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	io.WriteString(w, "<urlset><url><loc>https://example.com/1</loc></url><url><loc>https://example.com/")
	filler := bytes.Repeat([]byte("a"), 1<<20)
	for range 64 { // 64 MiB inflated, about 64 KiB compressed
		w.Write(filler)
	}
	w.Close()
	for _, doc := range []string{b.String(), gz(t, b.String())} {
		n := 0
		_, _, err := Sitemap(strings.NewReader(doc), SitemapOptions{MaxBytes: 1 << 20}, func(Entry) error { n++; return nil })
		if !errors.Is(err, ErrTooBig) || n != 1 {
			t.Errorf("Sitemap(gzip bomb of %d bytes) = %d entries, %v; want 1, ErrTooBig", len(doc), n, err)
		}
	}
}

func TestSitemapCallbackError(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	_, _, err := Sitemap(strings.NewReader(urlset), SitemapOptions{}, func(Entry) error {
		n++
		if n == 2 {
			return stop
		}
		return nil
	})
	if err != stop || n != 2 {
		t.Errorf("Sitemap with fn failing at the 2nd entry = %d calls, %v; want 2, %v", n, err, stop)
	}
}

func TestSitemapReadError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("<urlset><url><loc>https://example.com/1</loc></url>\n<url>"), iotest.ErrReader(boom))
	got, _, _, err := readSitemap(r, SitemapOptions{})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "line 2") || len(got) != 1 {
		t.Errorf("Sitemap(failing reader) = %q, %v; want 1 entry and an error at line 2 wrapping %v", got, err, boom)
	}
}

func FuzzSitemap(f *testing.F) {
	f.Add([]byte(urlset), uint8(0))
	f.Add([]byte(gz(f, urlset)), uint8(2))
	f.Add([]byte("https://example.com/\nx\n\n"), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, max uint8) {
		opts := SitemapOptions{MaxURLs: int(max), MaxBytes: 1 << 20}
		maxURLs := opts.MaxURLs
		if maxURLs <= 0 {
			maxURLs = DefaultMaxURLs
		}
		var got []Entry
		index, skipped, err := Sitemap(bytes.NewReader(data), opts, func(e Entry) error {
			got = append(got, e)
			return nil
		})
		if len(got) > maxURLs {
			t.Fatalf("Sitemap(%.200q) delivered %d entries, more than MaxURLs %d", data, len(got), maxURLs)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "links: ") {
			t.Fatalf("Sitemap(%.200q) error %q lacks the package prefix", data, err)
		}
		for _, e := range got {
			u, perr := url.Parse(e.Loc)
			if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || e.Loc != strings.TrimSpace(e.Loc) {
				t.Fatalf("Sitemap(%.200q) delivered %q, not an absolute http(s) URL: %v", data, e.Loc, perr)
			}
		}
		// The same document gzipped reads the same, unless it was gzip
		// itself (then two layers are undone, not three).
		if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
			return
		}
		var got2 []Entry
		index2, skipped2, err2 := Sitemap(strings.NewReader(gz(t, string(data))), opts, func(e Entry) error {
			got2 = append(got2, e)
			return nil
		})
		if index != index2 || skipped != skipped2 || !slices.Equal(got, got2) || (err == nil) != (err2 == nil) {
			t.Fatalf("Sitemap(%.200q) = %d entries, %v, %d, %v; gzipped %d entries, %v, %d, %v",
				data, len(got), index, skipped, err, len(got2), index2, skipped2, err2)
		}
	})
}

func BenchmarkSitemap(b *testing.B) {
	var s strings.Builder
	s.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` + "\n")
	for i := range 1000 {
		fmt.Fprintf(&s, "<url><loc>https://example.com/products/item-%d.html</loc><lastmod>2026-11-%02dT10:00:00Z</lastmod><changefreq>weekly</changefreq></url>\n", i, i%28+1)
	}
	s.WriteString("</urlset>\n")
	doc := s.String()
	b.ReportAllocs()
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if _, _, err := Sitemap(strings.NewReader(doc), SitemapOptions{}, func(Entry) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}
