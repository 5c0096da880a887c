package crawl

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // database/sql driver "sqlite"
)

// The state database, state.db in the job's directory. A user may open it
// with the sqlite3 shell:
//
//	sqlite3 polite-out/state.db "select state, outcome, count(*) from urls group by 1, 2"
//
// urls holds one row per distinct line of the list; meta holds the marks that
// tie the files beside the database to it (see commit).
const schema = `
CREATE TABLE IF NOT EXISTS urls (
	id         INTEGER PRIMARY KEY,     -- the order URLs were added in
	url        TEXT    NOT NULL UNIQUE, -- as written in the list (cut when too long)
	host       TEXT    NOT NULL,        -- canonical host key; '' for an invalid line
	invalid    TEXT,                    -- why the line is not a URL to fetch; NULL if it is
	state      TEXT    NOT NULL DEFAULT 'pending', -- pending | done
	attempts   INTEGER NOT NULL DEFAULT 0, -- requests sent so far
	not_before INTEGER NOT NULL DEFAULT 0, -- unix ms before which it is not tried again
	reason     TEXT    NOT NULL DEFAULT '', -- why it waits (last attempt's outcome)
	started    INTEGER NOT NULL DEFAULT 0, -- unix ms of the first attempt
	seq        INTEGER,                 -- its line's rank in results.jsonl, once done (results.seq)
	outcome    TEXT,                    -- the contract's outcome, once done
	lane       INTEGER NOT NULL DEFAULT 0, -- 0 normal, 1 interactive, 2 bulk (crawl.Lane); 0 for an invalid line
	depth      INTEGER NOT NULL DEFAULT 0, -- links followed from a listed URL to it (--follow); 0 for a listed one
	parent     INTEGER,                 -- the id of the URL whose page or sitemap named it (--follow); NULL for a listed one
	kind       INTEGER NOT NULL DEFAULT 0, -- 0 a page, 1 a sitemap (--sitemaps)
	via        TEXT,                    -- a fleet worker's leased URL: the page that named it (the frontier's found_on)
	hops       INTEGER NOT NULL DEFAULT 0 -- redirects (refreshes, sitemap indexes) in a row that led to it (--follow)
);
-- Fleet mode (fleet.go): the frontier's lease on each URL leased, and whether
-- the frontier took its result (1), refused it (-1: the lease had gone to
-- another worker) or has not answered yet (0).
CREATE TABLE IF NOT EXISTS leases (
	id      INTEGER PRIMARY KEY,  -- the URL's id in urls
	token   INTEGER NOT NULL,     -- the lease's fencing token
	leases  INTEGER NOT NULL,     -- how many times the frontier leased the URL
	expires INTEGER NOT NULL,     -- unix ms
	acked   INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
-- The results.jsonl line of each URL done, by seq: rows are only appended
-- (at the table's end, seq growing), where a line kept in its URL's row of
-- urls grew a row in the middle of the table (issue 34, part 2). A
-- re-queued URL's line goes (Requeue).
CREATE TABLE IF NOT EXISTS results (
	seq  INTEGER PRIMARY KEY, -- the line's rank in results.jsonl, the URL's urls.seq
	line TEXT    NOT NULL     -- the line, newline included
);
-- Discovery (--follow; discover.go): the roots of the scope the listed URLs
-- set, the URLs found per host (for --max-per-host), and the links not
-- taken, by reason and by the host of the page that named them (for
-- max_per_host, the host that reached its cap), with the first such link.
CREATE TABLE IF NOT EXISTS roots (root TEXT PRIMARY KEY);
-- Links past --max-depth, with each page that named them: a shorter path
-- to one of those pages later brings them in (discoverer).
CREATE TABLE IF NOT EXISTS deep (
	url    TEXT    NOT NULL,
	host   TEXT    NOT NULL,
	lane   INTEGER NOT NULL,
	depth  INTEGER NOT NULL,
	parent INTEGER NOT NULL,
	kind   INTEGER NOT NULL,
	PRIMARY KEY (url, parent)
);
CREATE INDEX IF NOT EXISTS deep_parent ON deep(parent);
-- A fleet worker's links found (--follow with a frontier), committed with
-- the result that found them and sent to the frontier before that result
-- (fleet.go).
CREATE TABLE IF NOT EXISTS outbox (
	url      TEXT    PRIMARY KEY,
	host     TEXT    NOT NULL,
	lane     INTEGER NOT NULL,
	depth    INTEGER NOT NULL,
	found_on TEXT    NOT NULL,
	kind     INTEGER NOT NULL,
	hops     INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS found_hosts (host TEXT PRIMARY KEY, n INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS skips (
	reason  TEXT    NOT NULL,
	host    TEXT    NOT NULL,
	n       INTEGER NOT NULL,
	example TEXT    NOT NULL,
	PRIMARY KEY (reason, host)
);
CREATE TABLE IF NOT EXISTS hosts (
	host         TEXT    PRIMARY KEY, -- host key
	paused_until INTEGER NOT NULL,    -- unix ms: a pause beyond --max-retry-after the host named
	reason       TEXT    NOT NULL     -- its reason (retry-after, ratelimit, ...)
);
`

// indexes are created once the urls table has every column (see migrate).
const indexes = `
CREATE UNIQUE INDEX IF NOT EXISTS urls_seq ON urls(seq) WHERE seq IS NOT NULL;
-- The pending URLs of each host, by lane, in order, for Run to stream
-- (issue 17, defect 3; issue 31, item 4): a URL leaves it when it is done.
-- It replaces urls_pending, on (host, id), of jobs from before lanes.
DROP INDEX IF EXISTS urls_pending;
CREATE INDEX IF NOT EXISTS urls_lanes ON urls(host, lane, id) WHERE state = 'pending';
-- The URLs each page led to (--follow), for a re-crawl's 304s (since.go).
CREATE INDEX IF NOT EXISTS urls_parent ON urls(parent) WHERE parent IS NOT NULL;
`

// migrate brings the urls table of a job from an earlier version up to
// schema: jobs from before lanes get the lane column, every URL normal;
// jobs from before --follow the depth, parent and kind columns, every URL
// a listed page; jobs from before the results table have their lines moved
// there (moveResults). Another process may migrate the same file at once
// (polite status reads a job without its lock): a column added or dropped
// meanwhile is no error.
func migrate(db *sql.DB) error {
	if err := addColumns(db); err != nil {
		return err
	}
	return moveResults(db)
}

// hasColumn says whether table has the column name.
func hasColumn(db interface {
	QueryRow(string, ...any) *sql.Row
}, table, name string) (bool, error) {
	var n int
	err := db.QueryRow(`SELECT count(*) FROM pragma_table_info(?) WHERE name = ?`, table, name).Scan(&n)
	return n > 0, err
}

// moveResults moves the lines of a job from before the results table from
// urls's result column to the table, and drops the column, in one
// transaction: once, rewriting urls (some seconds for a million URLs), so
// that every reader finds each line in one place. A program from before
// the table then fails on such a job rather than keep lines where no
// reader looks.
func moveResults(db *sql.DB) error {
	if ok, err := hasColumn(db, "urls", "result"); err != nil || !ok {
		return err
	}
	err := func() error {
		tx, err := db.Begin()
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if ok, err := hasColumn(tx, "urls", "result"); err != nil || !ok {
			return err
		}
		if _, err := tx.Exec(`INSERT INTO results(seq, line) SELECT seq, result FROM urls
			WHERE result IS NOT NULL AND seq IS NOT NULL ORDER BY seq`); err != nil {
			return err
		}
		if _, err := tx.Exec(`ALTER TABLE urls DROP COLUMN result`); err != nil {
			return err
		}
		return tx.Commit()
	}()
	if err != nil {
		if ok, _ := hasColumn(db, "urls", "result"); !ok {
			return nil // moved by another process meanwhile
		}
		return fmt.Errorf("moving results to their table: %w", err)
	}
	return nil
}

// addColumns adds the columns of urls a job from an earlier version lacks.
func addColumns(db *sql.DB) error {
	for _, c := range [...]struct{ name, def string }{
		{"lane", "INTEGER NOT NULL DEFAULT 0"},
		{"depth", "INTEGER NOT NULL DEFAULT 0"},
		{"parent", "INTEGER"},
		{"kind", "INTEGER NOT NULL DEFAULT 0"},
		{"via", "TEXT"},
		{"hops", "INTEGER NOT NULL DEFAULT 0"},
	} {
		has := func() (bool, error) { return hasColumn(db, "urls", c.name) }
		if ok, err := has(); err != nil {
			return err
		} else if ok {
			continue
		}
		if _, err := db.Exec(`ALTER TABLE urls ADD COLUMN ` + c.name + ` ` + c.def); err != nil {
			if ok, _ := has(); !ok {
				return err
			}
		}
	}
	return nil
}

// Marks in the meta table.
const (
	metaResultsSeq    = "results_seq"    // the last seq whose line results.jsonl holds
	metaResultsOff    = "results_off"    // results.jsonl's size after that line
	metaWARCOff       = "warc_off"       // the current WARC file's size after the last committed record
	metaWARCFile      = "warc_file"      // the current WARC file's number (WARCName)
	metaWARCGzip      = "warc_gzip"      // 1: the job's WARC files are gzipped, 2: not; 0: a job from before either
	metaSeq           = "seq"            // the last seq given out
	metaFleet         = "fleet"          // a fleet worker's frontier (Options.FrontierID)
	metaLoading       = "loading"        // 1 while a Load has not read its list to the end
	metaSinceImported = "since_imported" // 1 once the URLs of Options.Since's job are in the job (with Follow)
)

// store is the job's SQLite database. All writes go through one connection
// (database/sql serialises them), in transactions; rd is a second, read-only
// connection through which Run streams pending URLs while the committer
// writes (WAL lets it read the last commit meanwhile).
type store struct {
	db *sql.DB
	rd *sql.DB
	// The feeder's queries on rd, prepared once: prepared anew, each cost
	// more than the rows it read.
	qNext, qCount, qWindow, qPlain *sql.Stmt
	// rich says the last window read had a row that was not plain, so the
	// next is read whole, not tried plain first: a --follow crawl's every
	// found URL has a depth and a parent (window).
	rich atomic.Bool
}

func openStore(path string) (*store, error) {
	dsn := func(extra ...string) string {
		return (&url.URL{Scheme: "file", OmitHost: true, Path: path, RawQuery: url.Values{"_pragma": append([]string{
			"journal_mode(WAL)", "busy_timeout(10000)", "synchronous(NORMAL)", "foreign_keys(OFF)",
		}, extra...)}.Encode()}).String()
	}
	db, err := sql.Open("sqlite", dsn())
	if err != nil {
		return nil, fmt.Errorf("crawl: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1) // one writer; WAL lets sqlite3 readers in meanwhile
	if err := errors.Join(execAll(db, schema), execAll(db, ratesSchema), migrate(db), execAll(db, indexes)); err != nil {
		db.Close()
		return nil, fmt.Errorf("crawl: %s: %w", path, err)
	}
	rd, err := sql.Open("sqlite", dsn("query_only(true)", "cache_size(-8192)"))
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("crawl: open %s: %w", path, err)
	}
	rd.SetMaxOpenConns(1)
	st := &store{db: db, rd: rd}
	for _, q := range []struct {
		stmt **sql.Stmt
		sql  string
	}{
		{&st.qNext, `SELECT min(host) FROM urls WHERE state = 'pending' AND host > ?`},
		{&st.qCount, `SELECT lane, count(*) FROM urls WHERE state = 'pending' AND host = ? GROUP BY lane`},
		// A found URL comes with the URL of the page that named it. No
		// LIMIT: window stops reading after its n rows (the index gives
		// them in order), where a LIMIT bound to a parameter made SQLite
		// prepare the statement anew on every run (a fifth of a window's
		// time; issue 34, part 2).
		{&st.qWindow, `SELECT u.id, u.url, coalesce(u.invalid, ''), u.attempts, u.not_before, u.reason, u.started,
			u.depth, u.kind, coalesce(p.url, u.via, '')
			FROM urls u LEFT JOIN urls p ON p.id = u.parent
			WHERE u.state = 'pending' AND u.host = ? AND u.lane = ? AND u.id > ? ORDER BY u.id`},
		// qWindow's rows when they are plain (plainWindow): three columns
		// read where qWindow reads ten, each a call into the driver, and
		// no join.
		{&st.qPlain, `SELECT id, url, invalid IS NULL AND attempts = 0 AND not_before = 0 AND reason = ''
			AND started = 0 AND depth = 0 AND kind = 0 AND parent IS NULL AND via IS NULL
			FROM urls WHERE state = 'pending' AND host = ? AND lane = ? AND id > ? ORDER BY id`},
	} {
		if *q.stmt, err = rd.Prepare(q.sql); err != nil {
			st.Close()
			return nil, fmt.Errorf("crawl: %s: %w", path, err)
		}
	}
	return st, nil
}

// cacheFor sizes the writer's page cache for a job of n URLs: 64 bytes a
// URL, from SQLite's default 2 MB up to 64 MB. Load's inserts land all over
// the url index, and with a cache smaller than that index each of its
// pages was read back and rewritten for every batch (a 1,000,000-URL list
// took 19 s to load with the default, 10 s with 64 MB and 100,000-line
// batches; 32 MB did not help). Bounded, so memory does not grow with the
// job past a million URLs; beyond some millions the index outgrows the
// cache and loading slows again. The writer is one connection, so the
// pragma holds for every statement after it.
func (s *store) cacheFor(n int64) error {
	kb := min(max(n*64/1024, 2048), 64<<10)
	_, err := s.db.Exec(fmt.Sprintf("PRAGMA cache_size = -%d", kb))
	return err
}

// maxID returns the largest id given out so far (0 for none): about the
// number of URLs in the job, in one index seek.
func (s *store) maxID() (int64, error) {
	var n sql.NullInt64
	err := s.db.QueryRow(`SELECT max(id) FROM urls`).Scan(&n)
	return n.Int64, err
}

func (s *store) Close() error { return errors.Join(s.rd.Close(), s.db.Close()) }

// execAll runs statements whose results are not needed; an error stops
// them.
func execAll(db *sql.DB, stmts string) error {
	_, err := db.Exec(stmts)
	return err
}

func (s *store) meta(key string) (int64, error) {
	var v int64
	err := s.db.QueryRow(`SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return v, err
}

func setMeta(tx *sql.Tx, key string, v int64) error {
	_, err := tx.Exec(`INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, key, v)
	return err
}

// add inserts lines not in the job yet, in one transaction, and returns how
// many were new.
func (s *store) add(ctx context.Context, lines []Line) (int, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	// Many rows per statement: one Exec through database/sql and the
	// driver costs more than SQLite's own work for a row (Load of 100,000
	// URLs: 1.2 s of CPU one row at a time).
	var full *sql.Stmt
	n := 0
	args := make([]any, 0, 4*addRows)
	for len(lines) > 0 {
		k := min(len(lines), addRows)
		args = args[:0]
		for _, l := range lines[:k] {
			var inv any
			lane := l.Lane
			if l.Problem != "" {
				// Never fetched; finishInvalid reads them all in the
				// normal lane.
				inv, lane = l.Problem, LaneNormal
			}
			args = append(args, l.Text, l.Host, inv, lane)
		}
		lines = lines[k:]
		var r sql.Result
		if k == addRows {
			if full == nil {
				if full, err = tx.PrepareContext(ctx, insertRows(addRows)); err != nil {
					return 0, err
				}
			}
			r, err = full.ExecContext(ctx, args...)
		} else {
			r, err = tx.ExecContext(ctx, insertRows(k), args...)
		}
		if err != nil {
			return 0, err
		}
		m, _ := r.RowsAffected()
		n += int(m)
	}
	return n, tx.Commit()
}

// addRows is how many URLs one INSERT statement of add takes.
const addRows = 128

// insertRows is the statement inserting k URLs, those already in the job
// left alone (with the lane they came with).
func insertRows(k int) string {
	var b strings.Builder
	b.WriteString(`INSERT OR IGNORE INTO urls(url, host, invalid, lane) VALUES (?, ?, ?, ?)`)
	for range k - 1 {
		b.WriteString(`, (?, ?, ?, ?)`)
	}
	return b.String()
}

// row is a pending URL as stored.
type row struct {
	id        int64
	url, host string
	invalid   string
	attempts  int
	notBefore time.Time
	reason    string
	started   time.Time
	lane      Lane
	lease     Leased // fleet mode
	// Discovery (--follow): links followed from a listed URL to it, what
	// it is, and the URL of the page that named it ("" for a listed one).
	depth   int
	kind    Kind
	foundOn string
}

// pendingCounts returns how many URLs not done the job has, good ones
// (with a host) and lines that are not URLs.
func (s *store) pendingCounts() (good, invalid int, err error) {
	err = s.db.QueryRow(`SELECT count(*) FILTER (WHERE host != ''), count(*) FILTER (WHERE host = '')
		FROM urls WHERE state = 'pending'`).Scan(&good, &invalid)
	return good, invalid, err
}

// hostCount returns how many hosts have URLs not done.
func (s *store) hostCount() (int, error) {
	var n int
	err := s.db.QueryRow(`SELECT count(DISTINCT host) FROM urls WHERE state = 'pending' AND host != ''`).Scan(&n)
	return n, err
}

// nextHost returns the first host key after after (in byte order) with URLs
// not done, or "" when there is none: one seek in urls_pending.
func (s *store) nextHost(ctx context.Context, after string) (string, error) {
	var h sql.NullString
	err := s.qNext.QueryRowContext(ctx, after).Scan(&h)
	return h.String, err
}

// hostPending returns how many URLs of host are not done, by lane.
func (s *store) hostPending(ctx context.Context, host string) (n [numLanes]int, err error) {
	rows, err := s.qCount.QueryContext(ctx, host)
	if err != nil {
		return n, err
	}
	defer rows.Close()
	for rows.Next() {
		var l int64
		var k int
		if err := rows.Scan(&l, &k); err != nil {
			return n, err
		}
		if l < 0 || l >= int64(numLanes) {
			return n, fmt.Errorf("host %s: %d URLs in lane %d, which is no lane", host, k, l)
		}
		n[l] = k
	}
	return n, rows.Err()
}

// window calls fn for at most n URLs of host in lane not done, with ids
// after after, in the order they were added ("" is the host of the lines
// that are not URLs, all in LaneNormal).
func (s *store) window(ctx context.Context, host string, lane Lane, after int64, n int, fn func(row)) error {
	if !s.rich.Load() {
		k, last, done, err := s.plainWindow(ctx, host, lane, after, n, fn)
		if done || err != nil {
			return err
		}
		// The rest of the window, from its first row that is not plain.
		after, n = last, n-k
		s.rich.Store(true)
	}
	rows, err := s.qWindow.QueryContext(ctx, host, lane, after)
	if err != nil {
		return err
	}
	defer rows.Close()
	plain := true
	for ; n > 0 && rows.Next(); n-- {
		r := row{host: host, lane: lane}
		var nb, st int64
		if err := rows.Scan(&r.id, &r.url, &r.invalid, &r.attempts, &nb, &r.reason, &st, &r.depth, &r.kind, &r.foundOn); err != nil {
			return err
		}
		r.notBefore, r.started = fromMillis(nb), fromMillis(st)
		plain = plain && r.invalid == "" && r.attempts == 0 && nb == 0 && r.reason == "" && st == 0 && r.depth == 0 && r.kind == 0 && r.foundOn == ""
		fn(r)
	}
	if plain {
		s.rich.Store(false)
	}
	return rows.Err()
}

// plainWindow is window while its rows are plain: listed URLs never
// tried, whose columns past id and url hold their defaults. It stops at
// the first row that is not, and reports how many rows it gave fn, the
// last one's id, and whether that was the whole window.
func (s *store) plainWindow(ctx context.Context, host string, lane Lane, after int64, n int, fn func(row)) (k int, last int64, done bool, err error) {
	rows, err := s.qPlain.QueryContext(ctx, host, lane, after)
	if err != nil {
		return 0, 0, false, err
	}
	defer rows.Close()
	last = after
	for ; k < n && rows.Next(); k++ {
		r := row{host: host, lane: lane}
		var plain bool
		if err := rows.Scan(&r.id, &r.url, &plain); err != nil {
			return k, last, false, err
		}
		if !plain {
			return k, last, false, nil
		}
		fn(r)
		last = r.id
	}
	return k, last, true, rows.Err()
}

// counts returns the number of URLs in the job and the done ones by outcome.
func (s *store) counts() (total int, done map[string]int, err error) {
	if err := s.db.QueryRow(`SELECT count(*) FROM urls`).Scan(&total); err != nil {
		return 0, nil, err
	}
	rows, err := s.db.Query(`SELECT outcome, count(*) FROM urls WHERE state = 'done' GROUP BY outcome`)
	if err != nil {
		return 0, nil, err
	}
	defer rows.Close()
	done = map[string]int{}
	for rows.Next() {
		var o string
		var n int
		if err := rows.Scan(&o, &n); err != nil {
			return 0, nil, err
		}
		done[o] = n
	}
	return total, done, rows.Err()
}

// unwritten calls fn with every done URL's results line after seq, in order.
func (s *store) unwritten(after int64, fn func(seq int64, line string) error) error {
	rows, err := s.db.Query(`SELECT seq, line FROM results WHERE seq > ? ORDER BY seq`, after)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		var line string
		if err := rows.Scan(&seq, &line); err != nil {
			return err
		}
		if err := fn(seq, line); err != nil {
			return err
		}
	}
	return rows.Err()
}

// done is a finished URL on its way to the database.
type done struct {
	id      int64
	seq     int64
	outcome string
	line    string // its results.jsonl line, newline included
	size    int    // line's length, while the batch's lines are made
}

// later is a URL put off, on its way to the database.
type later struct {
	id        int64
	attempts  int
	notBefore time.Time
	reason    string
	started   time.Time
}

// hostPause is a host's pause beyond MaxRetryAfter, on its way to the
// database.
type hostPause struct {
	host   string
	until  time.Time
	reason string
}

// pauses calls fn for every host pause recorded that ends after now.
func (s *store) pauses(now time.Time, fn func(hostPause)) error {
	rows, err := s.db.Query(`SELECT host, paused_until, reason FROM hosts WHERE paused_until > ?`, now.UnixMilli())
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var p hostPause
		var ms int64
		if err := rows.Scan(&p.host, &ms, &p.reason); err != nil {
			return err
		}
		p.until = time.UnixMilli(ms)
		fn(p)
	}
	return rows.Err()
}

// commit records a batch in one transaction: finished URLs with their seq and
// line, put-off URLs' attempts and not-before, host pauses, and the marks.
func (s *store) commit(finished []done, deferred []later, marks map[string]int64, paused ...hostPause) error {
	return s.commitTx(finished, deferred, marks, paused, nil)
}

// commitTx is commit, with also (when not nil) run in the same
// transaction: the links the batch's answers named (discoverer.add).
func (s *store) commitTx(finished []done, deferred []later, marks map[string]int64, paused []hostPause, also func(*sql.Tx) error) error {
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := markDone(tx, finished); err != nil {
		return err
	}
	if len(deferred) > 0 {
		st, err := tx.Prepare(`UPDATE urls SET attempts = ?, not_before = ?, reason = ?, started = ? WHERE id = ? AND state = 'pending'`)
		if err != nil {
			return err
		}
		for _, l := range deferred {
			if _, err := st.Exec(l.attempts, millis(l.notBefore), l.reason, millis(l.started), l.id); err != nil {
				return err
			}
		}
	}
	for _, p := range paused {
		if _, err := tx.Exec(`INSERT INTO hosts(host, paused_until, reason) VALUES(?, ?, ?)
			ON CONFLICT(host) DO UPDATE SET paused_until = max(paused_until, excluded.paused_until),
			reason = CASE WHEN excluded.paused_until > paused_until THEN excluded.reason ELSE reason END`,
			p.host, p.until.UnixMilli(), p.reason); err != nil {
			return err
		}
	}
	for k, v := range marks {
		if err := setMeta(tx, k, v); err != nil {
			return err
		}
	}
	if also != nil {
		if err := also(tx); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// markDone records finished URLs done, with their seq and outcome, and
// appends their results lines to results: doneRows of them per statement
// (UPDATE … FROM VALUES, INSERT … VALUES), as add inserts, since one Exec
// per row through database/sql cost more than SQLite's work for it.
func markDone(tx *sql.Tx, finished []done) error {
	var fullUpdate, fullInsert *sql.Stmt
	n := min(len(finished), doneRows)
	args := make([]any, 0, 3*n)
	lines := make([]any, 0, 2*n)
	for len(finished) > 0 {
		k := min(len(finished), doneRows)
		args, lines = args[:0], lines[:0]
		for _, d := range finished[:k] {
			seq := any(d.seq) // boxed once for both statements
			args = append(args, d.id, seq, d.outcome)
			lines = append(lines, seq, d.line)
		}
		finished = finished[k:]
		var err error
		if k == doneRows {
			if fullUpdate == nil {
				if fullUpdate, err = tx.Prepare(updateDone(doneRows)); err != nil {
					return err
				}
				if fullInsert, err = tx.Prepare(insertResults(doneRows)); err != nil {
					return err
				}
			}
			if _, err = fullUpdate.Exec(args...); err == nil {
				_, err = fullInsert.Exec(lines...)
			}
		} else if _, err = tx.Exec(updateDone(k), args...); err == nil {
			_, err = tx.Exec(insertResults(k), lines...)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// doneRows is how many finished URLs one statement of markDone records.
const doneRows = 128

// updateDone is the statement recording k finished URLs. OR FAIL: a
// statement that may stop halfway on a constraint (urls_seq's uniqueness)
// and must then undo its own rows makes SQLite keep a statement journal
// of every page it changes, spilled past 64 KiB to a temporary file, a
// pwrite a page (0.25 s of 11 s CPU for 100,000 URLs in throughput.sh;
// issue 34, part 2). On such a failure commit rolls back the whole
// transaction anyway, so the statement need not undo anything.
func updateDone(k int) string {
	var b strings.Builder
	b.WriteString(`UPDATE OR FAIL urls SET state = 'done', seq = v.column2, outcome = v.column3
		FROM (VALUES (?, ?, ?)`)
	for range k - 1 {
		b.WriteString(`, (?, ?, ?)`)
	}
	b.WriteString(`) AS v WHERE urls.id = v.column1`)
	return b.String()
}

// insertResults is the statement appending k results lines. OR FAIL, as
// updateDone: a seq taken already fails the commit.
func insertResults(k int) string {
	var b strings.Builder
	b.WriteString(`INSERT OR FAIL INTO results(seq, line) VALUES (?, ?)`)
	for range k - 1 {
		b.WriteString(`, (?, ?)`)
	}
	return b.String()
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
