package crawl

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// TestCommitAllOrNothing: a batch whose marks break a constraint (two URLs
// given one seq) fails as a whole, though markDone's statements stop
// halfway without undoing their own rows (OR FAIL): no URL of it is done,
// and a batch after it commits.
func TestCommitAllOrNothing(t *testing.T) {
	st, err := openStore(filepath.Join(t.TempDir(), StateFile))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var lines []Line
	for i := range doneRows + 2 {
		lines = append(lines, Line{Text: fmt.Sprintf("http://a.test/%d", i), Host: "a.test"})
	}
	if _, err := st.add(context.Background(), lines); err != nil {
		t.Fatal(err)
	}
	var finished []done
	for i := range doneRows + 2 {
		finished = append(finished, done{id: int64(i + 1), seq: int64(i + 1), outcome: OK, line: []byte("{}\n")})
	}
	bad := append([]done(nil), finished...)
	bad[doneRows/2].seq = 1 // in the first statement, after rows it changed
	if err := st.commit(bad, nil, map[string]int64{metaSeq: 1}); err == nil {
		t.Fatal("commit with a repeated seq: no error")
	}
	_, doneBy, err := st.counts()
	if err != nil || len(doneBy) != 0 {
		t.Fatalf("after a failed commit: done %v, %v; want none", doneBy, err)
	}
	if v, _ := st.meta(metaSeq); v != 0 {
		t.Errorf("after a failed commit: seq mark %d, want 0", v)
	}
	if err := st.commit(finished, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, doneBy, _ := st.counts(); doneBy[OK] != len(finished) {
		t.Errorf("done %v, want %d ok", doneBy, len(finished))
	}
}
