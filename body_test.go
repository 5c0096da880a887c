package polite

import (
	"bytes"
	"io"
	"testing"
)

// peekBody hands back the first bytes of a body and a body that still reads
// whole, whether it reads into a buffer of the announced size or a pooled
// one (unknown size, or too big to peek whole).
func TestPeekBody(t *testing.T) {
	small := []byte("<html>a small page</html>")
	big := bytes.Repeat([]byte("x"), MaxPeek+100)
	for _, c := range []struct {
		name string
		body []byte
		size int64
		peek int
	}{
		{"announced", small, int64(len(small)), len(small)},
		{"unknown", small, -1, len(small)},
		{"empty", nil, 0, 0},
		{"big", big, int64(len(big)), MaxPeek},
		{"big unknown", big, -1, MaxPeek},
	} {
		t.Run(c.name, func(t *testing.T) {
			peek, rc := peekBody(io.NopCloser(bytes.NewReader(c.body)), c.size)
			if !bytes.Equal(peek, c.body[:c.peek]) {
				t.Errorf("peek = %d bytes, want the first %d", len(peek), c.peek)
			}
			got, err := io.ReadAll(rc)
			if err != nil || !bytes.Equal(got, c.body) {
				t.Errorf("ReadAll = %d bytes, %v; want the %d of the body", len(got), err, len(c.body))
			}
			if err := rc.Close(); err != nil {
				t.Errorf("Close = %v", err)
			}
		})
	}
}
