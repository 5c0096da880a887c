package crawl

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
)

// NotModified is the outcome of a URL a re-crawl asked about with the
// validators of an earlier job (Options.Since) and whose server answered
// 304 Not Modified: the page is as that job kept it.
const NotModified = "not_modified"

// Conditional re-crawl (issue 35, item 4): with Options.Since a job asks
// each URL an earlier job answered with an ETag or a Last-Modified with
// If-None-Match and If-Modified-Since, as a browser's cache does (RFC
// 9110 §13). A 304 costs the server a head and no body, and the result is
// not_modified. With Follow, the job takes in the earlier job's URLs
// (importURLs): a 304 page has no body to read links from, and its links
// were in the earlier crawl.

// since is an earlier job read for its validators, through a read-only
// connection of its own.
type since struct {
	db   *sql.DB
	mu   sync.Mutex // the statements are used by every worker
	prev *sql.Stmt
	dir  string
}

// prevAnswer is what an earlier job kept of a URL's answer.
type prevAnswer struct {
	id            int64
	etag, lastMod string
}

// openSince opens the job in dir read-only for its validators.
func openSince(dir string) (*since, error) {
	path := filepath.Join(dir, StateFile)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("crawl: --since %s: no job there: %w", dir, err)
	}
	dsn := (&url.URL{Scheme: "file", OmitHost: true, Path: path, RawQuery: url.Values{"_pragma": {
		"busy_timeout(10000)", "query_only(true)",
	}, "mode": {"ro"}}.Encode()}).String()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("crawl: --since %s: %w", dir, err)
	}
	db.SetMaxOpenConns(1)
	s := &since{db: db, dir: dir}
	// A job from before the results table keeps each line in its URL's
	// row; read-only, it stays so.
	q := `SELECT u.id, coalesce(r.line, '') FROM urls u LEFT JOIN results r ON r.seq = u.seq WHERE u.url = ? AND u.state = 'done'`
	if old, _ := hasColumn(db, "urls", "result"); old {
		q = `SELECT id, coalesce(result, '') FROM urls WHERE url = ? AND state = 'done'`
	}
	if s.prev, err = db.Prepare(q); err != nil {
		db.Close()
		return nil, fmt.Errorf("crawl: --since %s: not a job's %s: %w", dir, StateFile, err)
	}
	return s, nil
}

func (s *since) Close() error {
	if s == nil {
		return nil
	}
	return s.db.Close()
}

// answer returns what the earlier job kept of u's answer: its validators,
// when it ended ok with some.
func (s *since) answer(u string) (prevAnswer, bool) {
	var a prevAnswer
	var line string
	s.mu.Lock()
	err := s.prev.QueryRow(u).Scan(&a.id, &line)
	s.mu.Unlock()
	if err != nil {
		return a, false
	}
	var r struct {
		Outcome      string `json:"outcome"`
		ETag         string `json:"etag"`
		LastModified string `json:"last_modified"`
	}
	if json.Unmarshal([]byte(line), &r) != nil || (r.Outcome != OK && r.Outcome != NotModified) {
		return a, false
	}
	a.etag, a.lastMod = r.ETag, r.LastModified
	return a, a.etag != "" || a.lastMod != ""
}

// importURLs adds the earlier job's URLs to the job, once (a crawl,
// Options.Follow): each at the depth it had, with the page that named it,
// to be asked for with its validators. So a re-crawl fetches every URL the
// earlier crawl had, a 304 page's links included (a page that changed
// brings its new links), whatever path led to it then, and nothing of the
// earlier crawl is lost to a page that changed or failed this time.
func (j *Job) importURLs() error {
	if j.since == nil || j.opts.Follow == nil {
		return nil
	}
	if v, err := j.st.meta(metaSinceImported); err != nil || v == 1 {
		return err
	}
	path := filepath.Join(j.since.dir, StateFile)
	ctx := context.Background()
	conn, err := j.st.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	ro := (&url.URL{Scheme: "file", OmitHost: true, Path: path, RawQuery: "mode=ro"}).String()
	if _, err := conn.ExecContext(ctx, `ATTACH DATABASE ? AS prev`, ro); err != nil {
		return fmt.Errorf("crawl: --since %s: %w", j.since.dir, err)
	}
	defer conn.ExecContext(ctx, `DETACH DATABASE prev`)
	var parent string // an earlier job from before --follow has no parent column
	var n int
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM prev.pragma_table_info('urls') WHERE name = 'parent'`).Scan(&n); err != nil {
		return fmt.Errorf("crawl: --since %s: %w", j.since.dir, err)
	}
	cols := `u.url, u.host, u.lane, 0, 0, NULL`
	if n > 0 {
		parent = ` LEFT JOIN prev.urls p ON p.id = u.parent`
		cols = `u.url, u.host, u.lane, u.depth, u.kind, p.url`
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	r, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO urls(url, host, lane, depth, kind, via)
		SELECT `+cols+` FROM prev.urls u`+parent+` WHERE u.host != ''`)
	if err != nil {
		return fmt.Errorf("crawl: --since %s: taking in its URLs: %w", j.since.dir, err)
	}
	if err := setMeta(tx, metaSinceImported, 1); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if added, _ := r.RowsAffected(); added > 0 && j.opts.Logger != nil {
		j.opts.Logger.Info("crawl: took in the earlier job's URLs (--since)", "dir", j.since.dir, "urls", added)
	}
	return nil
}

// conditional adds the validators of the earlier job's answer to req, a
// GET of it's URL itself (not a redirect hop's), and notes them on it.
func (j *Job) conditional(req *http.Request, it *item) {
	it.since = prevAnswer{}
	if j.since == nil || it.cur != "" || req.Method != http.MethodGet {
		return
	}
	a, ok := j.since.answer(it.url)
	if !ok {
		return
	}
	if a.etag != "" {
		req.Header.Set("If-None-Match", a.etag)
	}
	if a.lastMod != "" {
		req.Header.Set("If-Modified-Since", a.lastMod)
	}
	it.since = a
}

// errNoSince is returned for a job dir that is the job itself.
var errNoSince = errors.New("crawl: --since names the job's own directory: give an earlier job's")

// sameDir reports whether a and b are one directory.
func sameDir(a, b string) (bool, error) {
	fa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(fa, fb), nil
}
