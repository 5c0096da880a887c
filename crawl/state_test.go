package crawl

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/bucket"
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
		finished = append(finished, done{id: int64(i + 1), seq: int64(i + 1), outcome: OK, line: "{}\n"})
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
	var kept int
	if err := st.db.QueryRow(`SELECT count(*) FROM results`).Scan(&kept); err != nil || kept != 0 {
		t.Errorf("after a failed commit: %d results lines, %v; want none", kept, err)
	}
	if err := st.commit(finished, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, doneBy, _ := st.counts(); doneBy[OK] != len(finished) {
		t.Errorf("done %v, want %d ok", doneBy, len(finished))
	}
}

// A job from before the results table (each line in its URL's row, in a
// result column): its lines move to the table when it is opened, those
// not yet in results.jsonl (a crash after the commit) are written from
// there, its dead letters read, and --since reads such a job as it is
// (read-only, never moved).
func TestStateBeforeResultsTable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/b" {
			http.Error(w, "no", http.StatusBadGateway)
			return
		}
		w.Header().Set("ETag", `"v1"`)
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	tr := func() *polite.Transport {
		return &polite.Transport{Base: srv.Client().Transport, IgnoreRobots: true, Limits: polite.Limits{Rate: bucket.Inf, Concurrency: 4}}
	}
	list := srv.URL + "/a\n" + srv.URL + "/b\n" + srv.URL + "/c\nnot a url\n"
	dir := t.TempDir()
	runJob(t, dir, tr(), list, Options{Bodies: BodiesNone, Retries: -1})
	want, err := os.ReadFile(filepath.Join(dir, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(want), "\n")
	lines = lines[:len(lines)-1]
	if len(lines) != 4 {
		t.Fatalf("results.jsonl has %d lines, want 4", len(lines))
	}

	// The job as an earlier version left it, killed after committing its
	// last two URLs, before writing their lines.
	db, err := sql.Open("sqlite", filepath.Join(dir, StateFile))
	if err != nil {
		t.Fatal(err)
	}
	cut := int64(len(lines[0]) + len(lines[1]))
	_, err = db.Exec(`ALTER TABLE urls ADD COLUMN result TEXT;
		UPDATE urls SET result = (SELECT line FROM results WHERE results.seq = urls.seq);
		DROP TABLE results;
		UPDATE meta SET value = 2 WHERE key = 'results_seq';
		UPDATE meta SET value = ? WHERE key = 'results_off';`, cut)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, ResultsFile), cut); err != nil {
		t.Fatal(err)
	}
	old := t.TempDir()
	copyFile(t, filepath.Join(dir, StateFile), filepath.Join(old, StateFile))

	// --since reads the old job without moving anything.
	sum := runJob(t, t.TempDir(), tr(), srv.URL+"/a\n", Options{Bodies: BodiesNone, Since: old})
	if sum.Outcomes[NotModified] != 1 {
		t.Errorf("--since a job from before the table: %v, want 1 not_modified", sum.Outcomes)
	}
	if has, err := hasColumnIn(t, filepath.Join(old, StateFile)); err != nil || !has {
		t.Errorf("--since moved the earlier job's lines: result column %v, %v", has, err)
	}

	s, err := ReadStatus(dir, 10)
	if err != nil {
		t.Fatal(err)
	}
	if s.DeadTotal != 2 || len(s.Dead) != 2 || s.Dead[0].Outcome != InvalidURL || s.Dead[1].URL != srv.URL+"/b" {
		t.Errorf("dead letters %d %+v, want the line not a URL and /b", s.DeadTotal, s.Dead)
	}
	j, err := Open(dir, Options{Bodies: BodiesNone})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := j.st.db.QueryRow(`SELECT count(*) FROM results`).Scan(&n); err != nil || n != 4 {
		t.Errorf("results table: %d lines, %v; want 4", n, err)
	}
	j.Close()
	if has, err := hasColumnIn(t, filepath.Join(dir, StateFile)); err != nil || has {
		t.Errorf("urls keeps its result column: %v, %v", has, err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, ResultsFile)); string(got) != string(want) {
		t.Errorf("results.jsonl after opening:\n%s\nwant\n%s", got, want)
	}
	// And it resumes: a retry of /b, its line rewritten from the table.
	j, err = Open(dir, Options{Bodies: BodiesNone})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := j.Requeue([]string{HTTPError}); n != 1 || err != nil {
		t.Errorf("Requeue(http_error) = %d, %v; want 1", n, err)
	}
	j.Close()
	runJob(t, dir, tr(), list, Options{Bodies: BodiesNone, Retries: -1})
	rs := readResults(t, dir)
	if len(rs) != 4 || rs[3].URL != srv.URL+"/b" {
		t.Errorf("after the retry: %d lines, the last %+v; want 4, /b last", len(rs), rs[len(rs)-1])
	}
}

// hasColumnIn says whether the job's state.db at path keeps urls.result.
func hasColumnIn(t *testing.T, path string) (bool, error) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return false, err
	}
	defer db.Close()
	return hasColumn(db, "urls", "result")
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
