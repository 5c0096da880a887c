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
	up, err := tx.Prepare(`INSERT INTO urls(url, host, lane, depth, via, kind, hops) VALUES(?, ?, ?, ?, nullif(?, ''), ?, ?)
		ON CONFLICT(url) DO UPDATE SET host = excluded.host, lane = excluded.lane, depth = excluded.depth, via = excluded.via,
			kind = excluded.kind, hops = excluded.hops
		RETURNING id, state, attempts, not_before, reason, started, coalesce(outcome, ''),
			coalesce((SELECT line FROM results WHERE results.seq = urls.seq), '')`)
	if err != nil {
		return nil, nil, err
	}
	defer up.Close()
	lease, err := tx.Prepare(`INSERT OR REPLACE INTO leases(id, token, leases, expires, acked) VALUES(?, ?, ?, ?, 0)`)
	if err != nil {
		return nil, nil, err
	}
	defer lease.Close()
	acked, err := tx.Prepare(`SELECT acked FROM leases WHERE id = ?`)
	if err != nil {
		return nil, nil, err
	}
	defer acked.Close()
	// A URL fetched anew has no result until it is done again: its line
	// stays in results.jsonl, not in the results table, which keeps one
	// line per URL done (for the dead letters, and for a rewrite after a
	// Requeue).
	unline, err := tx.Prepare(`DELETE FROM results WHERE seq = (SELECT seq FROM urls WHERE id = ?)`)
	if err != nil {
		return nil, nil, err
	}
	defer unline.Close()
	reset, err := tx.Prepare(`UPDATE urls SET state = 'pending', seq = NULL, attempts = 0, not_before = 0, reason = '', started = 0 WHERE id = ?`)
	if err != nil {
		return nil, nil, err
	}
	defer reset.Close()
	for _, l := range ls {
		var (
			id, nb, st       int64
			state, out, line string
			r                = row{url: l.URL, host: l.Host, lane: l.Lane, depth: l.Depth, foundOn: l.FoundOn, kind: l.Kind}
		)
		if r.lane >= numLanes {
			r.lane = LaneNormal // a frontier's lane this worker does not know
		}
		if err := up.QueryRow(l.URL, l.Host, r.lane, l.Depth, l.FoundOn, l.Kind, l.Hops).Scan(&id, &state, &r.attempts, &nb, &r.reason, &st, &out, &line); err != nil {
			return nil, nil, err
		}
		if state == "done" {
			// Done here: a result the frontier has not answered for (its
			// commit failed, or this worker died first) is sent under
			// the new lease; one it took or refused before is not this
			// lease's answer (polite retry queued the URL again): it is
			// fetched anew.
			var a int
			switch err := acked.QueryRow(id).Scan(&a); {
			case err == sql.ErrNoRows:
				a = 1 // a result of the directory's own job, not the fleet's
			case err != nil:
				return nil, nil, err
			}
			if a == 0 {
				if _, err := lease.Exec(id, l.Token, l.Leases, l.Expires.UnixMilli()); err != nil {
					return nil, nil, err
				}
				again = append(again, pendingAck{id: id, c: Committed{Leased: l, Outcome: out, Record: []byte(strings.TrimSuffix(line, "\n"))}})
				continue
			}
			if _, err := unline.Exec(id); err != nil {
				return nil, nil, err
			}
			if _, err := reset.Exec(id); err != nil {
				return nil, nil, err
			}
			r.attempts, nb, r.reason, st = 0, 0, "", 0
		}
		if _, err := lease.Exec(id, l.Token, l.Leases, l.Expires.UnixMilli()); err != nil {
			return nil, nil, err
		}
		r.id, r.notBefore, r.started = id, fromMillis(nb), fromMillis(st)
		r.lease = l
		rows = append(rows, r)
	}
	return rows, again, tx.Commit()
}

// unacked returns what an earlier run left: results committed here that
// the frontier has not taken (acks), and leased URLs not finished
// (unfinished). A directory with URLs of its own is refused.
func (s *store) unacked(fleetID int64) (acks, unfinished []pendingAck, err error) {
	changed := false // another crawl's leases: their tokens mean nothing to this one
	if fleetID != 0 {
		// A result the frontier took or refused is settled for that
		// crawl: leased here again (polite retry queued it anew), the URL
		// is fetched anew. Under another crawl (the frontier begun anew:
		// a Redis that lost its data, or the next crawl on this --out),
		// the directory's results stand, as a job's do for a rerun on
		// its --out: each is sent to the new frontier when it leases the
		// URL here.
		had, err := s.meta(metaFleet)
		if err != nil {
			return nil, nil, err
		}
		if had != fleetID {
			changed = had != 0
			tx, err := s.db.Begin()
			if err != nil {
				return nil, nil, err
			}
			defer tx.Rollback()
			if _, err := tx.Exec(`UPDATE leases SET acked = 0 WHERE acked != 0`); err != nil {
				return nil, nil, err
			}
			if err := setMeta(tx, metaFleet, fleetID); err != nil {
				return nil, nil, err
			}
			if err := tx.Commit(); err != nil {
				return nil, nil, err
			}
		}
	}
	var own int
	if err := s.db.QueryRow(`SELECT count(*) FROM urls u WHERE state = 'pending' AND host != ''
		AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.id = u.id)`).Scan(&own); err != nil {
		return nil, nil, err
	}
	if own > 0 {
		return nil, nil, errNotFleetDir
	}
	rows, err := s.db.Query(`SELECT l.id, l.token, l.leases, l.expires, u.url, u.host, u.state,
		coalesce(u.outcome, ''), coalesce(r.line, '')
		FROM leases l JOIN urls u ON u.id = l.id LEFT JOIN results r ON r.seq = u.seq WHERE l.acked = 0`)
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
			if !changed { // else sent when the new crawl leases the URL here
				p.c.Outcome, p.c.Record = out, []byte(strings.TrimSuffix(line, "\n"))
				acks = append(acks, p)
			}
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

// acked records the frontier's answers for the leases sent: taken (1) or
// refused (-1), each only while the row holds that lease (the URL may have
// been leased here again since, with another token).
func (s *store) acked(sent []pendingAck, taken []bool) error {
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	st, err := tx.Prepare(`UPDATE leases SET acked = ? WHERE id = ? AND token = ?`)
	if err != nil {
		return err
	}
	defer st.Close()
	for i, p := range sent {
		v := -1
		if taken[i] {
			v = 1
		}
		if _, err := st.Exec(v, p.id, p.c.Token); err != nil {
			return err
		}
	}
	return tx.Commit()
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
