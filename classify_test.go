package polite

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
)

// TestDetectIgnoresCase: markers are found whatever the case of the page.
func TestDetectIgnoresCase(t *testing.T) {
	resp := &http.Response{StatusCode: http.StatusForbidden, Header: http.Header{}, ContentLength: -1}
	for _, m := range blockMarkers {
		page := []byte("<html><body>" + strings.ToUpper(m.marker) + "</body></html>")
		if got := DefaultBlocks.Detect(resp, page); got != m.reason {
			t.Errorf("Detect(403, %q) = %q, want %q", page, got, m.reason)
		}
	}
}

// BenchmarkDetect is the soft-block scan of an ordinary small HTML 200
// page, which every such page a crawl fetches goes through: one of short
// text, and one of prose like the testbed's pages (throughput.sh), whose
// words start with a marker's first byte often.
func BenchmarkDetect(b *testing.B) {
	for _, bc := range []struct{ name, text string }{
		{"text", "<p>Some Ordinary Text of a page, nothing to see.</p>\n"},
		{"prose", "<p>lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua polite crawler host rate token bucket</p>\n"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			page := bytes.Repeat([]byte(bc.text), 1024/len(bc.text)+1)
			resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/html"}}, ContentLength: int64(len(page))}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if DefaultBlocks.Detect(resp, page) != "" {
						b.Fatal("block")
					}
				}
			})
		})
	}
}

// FuzzDetect: the one-pass marker scan finds what lower-casing the page
// (ASCII letters: a Kelvin sign is no k in a challenge page) and searching
// it for each marker in turn finds.
func FuzzDetect(f *testing.F) {
	f.Add([]byte("<html><title>Just a moment...</title></html>"), 200)
	f.Add([]byte("<form><div class=\"G-RECAPTCHA\"></div></form>"), 403)
	f.Add([]byte("are you a robot? request unsuccessful. Incapsula incident ID"), 503)
	f.Add(bytes.Repeat([]byte("cf-turnstile "), 300), 200)
	f.Fuzz(func(t *testing.T, page []byte, status int) {
		if len(page) > MaxPeek {
			page = page[:MaxPeek]
		}
		resp := &http.Response{StatusCode: status, Header: http.Header{}, ContentLength: int64(len(page))}
		want := ""
		widgets := status != http.StatusOK || len(page) <= tinyPage
		lower := bytes.Clone(page)
		for i, c := range lower {
			if 'A' <= c && c <= 'Z' {
				lower[i] = c + 'a' - 'A'
			}
		}
		for _, m := range blockMarkers {
			if (widgets || !m.widget) && bytes.Contains(lower, []byte(m.marker)) {
				want = m.reason
				break
			}
		}
		if got := DefaultBlocks.Detect(resp, page); got != want {
			t.Errorf("Detect(%d, %q) = %q, want %q", status, page, got, want)
		}
	})
}
