package crawl

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Requeue puts the finished URLs whose outcome is one of outcomes back in
// the queue, as if never tried (attempts 0), and returns how many it
// re-queued: dead letters a later Run fetches again (issue 18, item 3). It
// is durable at once: the URLs' rows in state.db are pending again (the
// reason says what they were) and results.jsonl is rewritten from
// state.db without their lines, so that each URL keeps exactly one line,
// its newest. A crash midway leaves results.jsonl to be rewritten when the
// job is next opened. invalid_url lines are never re-queued: they are not
// URLs. Call it between Open and Run.
func (j *Job) Requeue(outcomes []string) (int, error) {
	for _, o := range outcomes {
		if !knownOutcome(o) {
			return 0, fmt.Errorf("crawl: unknown outcome %q (want one of %s)", o, strings.Join(Outcomes, ", "))
		}
		if o == InvalidURL || o == OK || o == NotModified {
			return 0, fmt.Errorf("crawl: outcome %q cannot be re-queued", o)
		}
	}
	n, err := j.st.requeue(outcomes)
	if err != nil || n == 0 {
		return n, err
	}
	return n, j.rewriteResults()
}

// requeue is Requeue's transaction: the URLs pending again, and
// results.jsonl's marks zeroed so that the next Open rewrites it from
// state.db should the rewrite not happen now.
func (s *store) requeue(outcomes []string) (int, error) {
	if len(outcomes) == 0 {
		return 0, nil
	}
	tx, err := s.db.Begin()
	if err != nil {
		return 0, fmt.Errorf("crawl: %w", err)
	}
	defer tx.Rollback()
	in := strings.TrimSuffix(strings.Repeat("?,", len(outcomes)), ",")
	args := make([]any, len(outcomes))
	for i, o := range outcomes {
		args[i] = o
	}
	which := `state = 'done' AND invalid IS NULL AND outcome IN (` + in + `)`
	if _, err := tx.Exec(`DELETE FROM results WHERE seq IN (SELECT seq FROM urls WHERE `+which+`)`, args...); err != nil {
		return 0, fmt.Errorf("crawl: re-queueing: %w", err)
	}
	r, err := tx.Exec(`UPDATE urls SET state = 'pending', seq = NULL, attempts = 0, not_before = 0,
		started = 0, reason = 're-queued (was ' || outcome || ')', outcome = NULL
		WHERE `+which, args...)
	if err != nil {
		return 0, fmt.Errorf("crawl: re-queueing: %w", err)
	}
	n, _ := r.RowsAffected()
	if n == 0 {
		return 0, nil
	}
	// results.jsonl is written again from the lines left; the next seq
	// follows the last one left.
	var last int64
	if err := tx.QueryRow(`SELECT coalesce(max(seq), 0) FROM results`).Scan(&last); err != nil {
		return 0, fmt.Errorf("crawl: re-queueing: %w", err)
	}
	for k, v := range map[string]int64{metaResultsSeq: 0, metaResultsOff: 0, metaSeq: last} {
		if err := setMeta(tx, k, v); err != nil {
			return 0, fmt.Errorf("crawl: re-queueing: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("crawl: re-queueing: %w", err)
	}
	return int(n), nil
}

// rewriteResults writes results.jsonl again from state.db, after Requeue
// set its marks to zero.
func (j *Job) rewriteResults() error {
	r := j.res
	r.buf, r.seq, r.off = r.buf[:0], 0, 0
	if err := r.f.Truncate(0); err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	if _, err := r.f.Seek(0, 0); err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	if err := j.st.unwritten(0, func(s int64, line string) error { return r.write(s, line) }); err != nil {
		return fmt.Errorf("crawl: reading state: %w", err)
	}
	if err := r.sync(); err != nil {
		return err
	}
	return j.st.commit(nil, nil, r.marks())
}

func knownOutcome(o string) bool {
	for _, k := range Outcomes {
		if k == o {
			return true
		}
	}
	return false
}

// Status is what state.db says of a job: see ReadStatus.
type Status struct {
	// Total is the number of lines in the job, Pending those not finished,
	// Outcomes the finished ones by outcome.
	Total, Pending int
	Outcomes       map[string]int
	// Waiting counts the pending URLs by why they last waited ("" for
	// never tried).
	Waiting map[string]int
	// Dead lists failed URLs (up to the limit asked for), DeadTotal counts
	// them all.
	Dead      []Result
	DeadTotal int
	// Hosts is each host's state, by host key.
	Hosts []HostStatus
	// Skips are the links a crawl (Options.Follow) did not take, by
	// reason and host, most first.
	Skips []Skip
}

// HostStatus is one host's line of a Status.
type HostStatus struct {
	Host                 string
	URLs, Done, OK       int
	Pending              int
	Throttled, Blocked   int // URLs that ended so
	Status429, Status503 int // URLs whose last status was 429 or 503
	// PausedUntil is the pause the host named beyond --max-retry-after,
	// kept so that a rerun leaves it alone until then (zero when none, or
	// over); PauseWhy its reason.
	PausedUntil time.Time
	PauseWhy    string
}

// ReadStatus reads a job's state.db in dir without taking the job's lock
// (a running job may be read), listing up to deadLimit dead letters.
func ReadStatus(dir string, deadLimit int) (*Status, error) {
	st, path, err := openExisting(dir)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	s := &Status{Waiting: map[string]int{}}
	if s.Skips, err = readSkips(st.db); err != nil {
		return nil, err
	}
	if s.Total, s.Outcomes, err = st.counts(); err != nil {
		return nil, fmt.Errorf("crawl: reading %s: %w", path, err)
	}
	err = each(st.db, `SELECT reason, count(*) FROM urls WHERE state = 'pending' GROUP BY reason`, func(rows *sql.Rows) error {
		var why string
		var n int
		err := rows.Scan(&why, &n)
		s.Waiting[why] = n
		s.Pending += n
		return err
	})
	if err == nil {
		err = st.db.QueryRow(`SELECT count(*) FROM urls WHERE state = 'done' AND outcome NOT IN ('ok', 'not_modified')`).Scan(&s.DeadTotal)
	}
	if err == nil {
		err = each(st.db, `SELECT r.line FROM urls u JOIN results r ON r.seq = u.seq
			WHERE u.state = 'done' AND u.outcome NOT IN ('ok', 'not_modified') ORDER BY u.seq LIMIT ?`, func(rows *sql.Rows) error {
			var line string
			if err := rows.Scan(&line); err != nil {
				return err
			}
			var r Result
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				return err
			}
			s.Dead = append(s.Dead, r)
			return nil
		}, deadLimit)
	}
	if err == nil {
		err = each(st.db, `SELECT u.host, count(*), sum(u.state = 'done'), sum(u.outcome IN ('ok', 'not_modified')), sum(u.state = 'pending'),
			sum(u.outcome = 'throttled'), sum(u.outcome = 'blocked'),
			sum(json_extract(r.line, '$.status') = 429), sum(json_extract(r.line, '$.status') = 503),
			coalesce(h.paused_until, 0), coalesce(h.reason, '')
			FROM urls u LEFT JOIN hosts h ON h.host = u.host LEFT JOIN results r ON r.seq = u.seq
			WHERE u.host != '' GROUP BY u.host ORDER BY u.host`, func(rows *sql.Rows) error {
			var h HostStatus
			var until int64
			var ok, t, b, s429, s503 sql.NullInt64
			if err := rows.Scan(&h.Host, &h.URLs, &h.Done, &ok, &h.Pending, &t, &b, &s429, &s503, &until, &h.PauseWhy); err != nil {
				return err
			}
			h.OK, h.Throttled, h.Blocked, h.Status429, h.Status503 = int(ok.Int64), int(t.Int64), int(b.Int64), int(s429.Int64), int(s503.Int64)
			if until > time.Now().UnixMilli() {
				h.PausedUntil = time.UnixMilli(until).UTC()
			} else {
				h.PauseWhy = ""
			}
			s.Hosts = append(s.Hosts, h)
			return nil
		})
	}
	if err != nil {
		return nil, fmt.Errorf("crawl: reading %s: %w", path, err)
	}
	return s, nil
}

// ReadCounts returns how many URLs the job in dir holds and how many of
// them are not finished: what a report needs of state.db, in two index
// reads where ReadStatus scans every row (a 100,000-URL job's report spent
// 0.4 s of CPU there).
func ReadCounts(dir string) (total, pending int, err error) {
	st, path, err := openExisting(dir)
	if err != nil {
		return 0, 0, err
	}
	defer st.Close()
	err = st.db.QueryRow(`SELECT count(*) FROM urls`).Scan(&total)
	if err == nil {
		err = st.db.QueryRow(`SELECT count(*) FROM urls WHERE state = 'pending'`).Scan(&pending)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("crawl: reading %s: %w", path, err)
	}
	return total, pending, nil
}

// ErrNoJob is returned (wrapped) by ReadStatus, ReadCounts and the like
// for a directory that holds no job.
var ErrNoJob = errors.New("crawl: no job here")

// openExisting opens dir's state.db, which must exist: reading a job never
// creates one.
func openExisting(dir string) (*store, string, error) {
	path := filepath.Join(dir, StateFile)
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, path, fmt.Errorf("%w: %s (no %s)", ErrNoJob, dir, StateFile)
		}
		return nil, path, fmt.Errorf("crawl: %w", err)
	}
	st, err := openStore(path)
	return st, path, err
}

// each runs query and calls fn for every row.
func each(db *sql.DB, query string, fn func(*sql.Rows) error, args ...any) error {
	rows, err := db.Query(query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Len returns the number of lines the job holds (every run's list), as
// state.db says.
func (j *Job) Len() (int, error) {
	var n int
	if err := j.st.db.QueryRow(`SELECT count(*) FROM urls`).Scan(&n); err != nil {
		return 0, fmt.Errorf("crawl: reading state: %w", err)
	}
	return n, nil
}

// Origins calls fn with each distinct scheme://host of the job's URLs
// (host as its key, lines that are not URLs left out), in no particular
// order. A job resumed without its list learns from it what the list
// named: polite fetch allows the loopback ports a list names (issue 33,
// item 13). It reads every URL of the job once.
func (j *Job) Origins(fn func(origin string)) error {
	err := each(j.st.db, `SELECT DISTINCT lower(substr(url, 1, instr(url, ':') - 1)), host FROM urls WHERE host != ''`, func(rows *sql.Rows) error {
		var scheme, host string
		if err := rows.Scan(&scheme, &host); err != nil {
			return err
		}
		fn(scheme + "://" + host)
		return nil
	})
	if err != nil {
		return fmt.Errorf("crawl: reading state: %w", err)
	}
	return nil
}
