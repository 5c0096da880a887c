package crawl

import (
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
// not_modified. With Follow, the links a page had are those the earlier
// job found on it (the URLs it added with that page as their parent),
// taken again under this job's scope: a site that did not change is
// crawled again in full with 304s.

// since is an earlier job read for its validators, through a read-only
// connection of its own.
type since struct {
	db       *sql.DB
	mu       sync.Mutex // the statements are used by every worker
	prev     *sql.Stmt
	children *sql.Stmt
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
	s := &since{db: db}
	if s.prev, err = db.Prepare(`SELECT id, coalesce(result, '') FROM urls WHERE url = ? AND state = 'done'`); err != nil {
		db.Close()
		return nil, fmt.Errorf("crawl: --since %s: not a job's %s: %w", dir, StateFile, err)
	}
	// A job from before --follow found no links: it has no parent column,
	// and its 304s bring none.
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM pragma_table_info('urls') WHERE name = 'parent'`).Scan(&n); err == nil && n > 0 {
		if s.children, err = db.Prepare(`SELECT url, kind FROM urls WHERE parent = ? ORDER BY id`); err != nil {
			db.Close()
			return nil, fmt.Errorf("crawl: --since %s: %w", dir, err)
		}
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

// linksOf returns the URLs the earlier job added with the URL of id as
// their parent, and their kinds.
func (s *since) linksOf(id int64) ([]foundLink, error) {
	if s.children == nil {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rows, err := s.children.Query(id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []foundLink
	for rows.Next() {
		var l foundLink
		if err := rows.Scan(&l.url, &l.kind); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
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
