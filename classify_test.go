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
// page, which every such page a crawl fetches goes through.
func BenchmarkDetect(b *testing.B) {
	page := bytes.Repeat([]byte("<p>Some Ordinary Text of a page, nothing to see.</p>\n"), 20)
	resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/html"}}, ContentLength: int64(len(page))}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if DefaultBlocks.Detect(resp, page) != "" {
				b.Fatal("block")
			}
		}
	})
}
