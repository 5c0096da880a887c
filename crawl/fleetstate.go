package crawl

import (
	"database/sql"
	"errors"
	"strings"
	"time"
)

// The fleet's rows in state.db (see fleet.go and the leases table).

// errNotFleetDir is the error of a fleet worker given a directory that
// holds a job of its own.
var errNotFleetDir = errors.New("the directory holds a job of its own (URLs loaded from a list, not leased from a fleet): give each fleet worker a directory of its own (--out)")

// addLeased records leased URLs: a new row for each URL this worker has
// not seen (or the row of one it saw but did not finish), with its lease.
// It returns the rows to fetch, and the results of URLs it had finished
// before, to send to the frontier under their new leases.
func (s *store) addLeased(ls []Leased) (rows []row, again []pendingAck, err error) {
	tx, err := s.db.Begin()
	if err != nil {
		return nil, nil, err
	}
	defer tx.Rollback()
	up, err := tx.Prepare(`INSERT INTO urls(url, host, lane) VALUES(?, ?, ?)
		ON CONFLICT(url) DO UPDATE SET host = excluded.host, lane = excluded.lane
		RETURNING id, state, attempts, not_before, reason, started, coalesce(outcome, ''), coalesce(result, '')`)
	if err != nil {
		return nil, nil, err
	}
	defer up.Close()
	lease, err := tx.Prepare(`INSERT OR REPLACE INTO leases(id, token, leases, expires, acked) VALUES(?, ?, ?, ?, 0)`)
	if err != nil {
		return nil, nil, err
	}
	defer lease.Close()
	for _, l := range ls {
		var (
			id, nb, st       int64
			state, out, line string
			r                = row{url: l.URL, host: l.Host, lane: l.Lane}
		)
		if r.lane >= numLanes {
			r.lane = LaneNormal // a frontier's lane this worker does not know
		}
		if err := up.QueryRow(l.URL, l.Host, r.lane).Scan(&id, &state, &r.attempts, &nb, &r.reason, &st, &out, &line); err != nil {
			return nil, nil, err
		}
		if _, err := lease.Exec(id, l.Token, l.Leases, l.Expires.UnixMilli()); err != nil {
			return nil, nil, err
		}
		if state == "done" {
			again = append(again, pendingAck{id: id, c: Committed{Leased: l, Outcome: out, Record: []byte(strings.TrimSuffix(line, "\n"))}})
			continue
		}
		r.id, r.notBefore, r.started = id, fromMillis(nb), fromMillis(st)
		r.lease = &leaseOf{Leased: l}
		rows = append(rows, r)
	}
	return rows, again, tx.Commit()
}

// unacked returns what an earlier run left: results committed here that
// the frontier has not taken (acks), and leased URLs not finished
// (unfinished). A directory with URLs of its own is refused.
func (s *store) unacked() (acks, unfinished []pendingAck, err error) {
	var own int
	if err := s.db.QueryRow(`SELECT count(*) FROM urls u WHERE state = 'pending' AND host != ''
		AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.id = u.id)`).Scan(&own); err != nil {
		return nil, nil, err
	}
	if own > 0 {
		return nil, nil, errNotFleetDir
	}
	rows, err := s.db.Query(`SELECT l.id, l.token, l.leases, l.expires, u.url, u.host, u.state,
		coalesce(u.outcome, ''), coalesce(u.result, '')
		FROM leases l JOIN urls u ON u.id = l.id WHERE l.acked = 0`)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			p          pendingAck
			exp        int64
			state, out string
			line       string
		)
		if err := rows.Scan(&p.id, &p.c.Token, &p.c.Leases, &exp, &p.c.URL, &p.c.Host, &state, &out, &line); err != nil {
			return nil, nil, err
		}
		p.c.Expires = time.UnixMilli(exp)
		if state == "done" {
			p.c.Outcome, p.c.Record = out, []byte(strings.TrimSuffix(line, "\n"))
			acks = append(acks, p)
		} else {
			unfinished = append(unfinished, p)
		}
	}
	return acks, unfinished, rows.Err()
}

// forget removes leased URLs not finished here, and their leases.
func (s *store) forget(ids []int64) error {
	return s.eachIn(ids, func(tx *sql.Tx, in string, args []any) error {
		if _, err := tx.Exec(`DELETE FROM leases WHERE id IN (`+in+`)`, args...); err != nil {
			return err
		}
		_, err := tx.Exec(`DELETE FROM urls WHERE state = 'pending' AND id IN (`+in+`)`, args...)
		return err
	})
}

// acked records the frontier's answers: ok taken, late refused.
func (s *store) acked(ok, late []int64) error {
	for _, set := range []struct {
		ids []int64
		v   int
	}{{ok, 1}, {late, -1}} {
		v := set.v
		if err := s.eachIn(set.ids, func(tx *sql.Tx, in string, args []any) error {
			_, err := tx.Exec(`UPDATE leases SET acked = ? WHERE id IN (`+in+`)`, append([]any{v}, args...)...)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// eachIn runs fn in one transaction over ids, inRows at a time, with the
// placeholders of an IN list and its arguments.
func (s *store) eachIn(ids []int64, fn func(tx *sql.Tx, in string, args []any) error) error {
	if len(ids) == 0 {
		return nil
	}
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	const inRows = 256
	for len(ids) > 0 {
		k := min(len(ids), inRows)
		args := make([]any, k)
		for i, id := range ids[:k] {
			args[i] = id
		}
		ids = ids[k:]
		if err := fn(tx, strings.TrimSuffix(strings.Repeat("?,", k), ","), args); err != nil {
			return err
		}
	}
	return tx.Commit()
}
