package crawl

import (
	"database/sql"
	"errors"
	"fmt"
)

// EachHost calls fn with each distinct host key of the job's URLs, until
// fn returns false: what a caller checks its per-host rules against
// (issue 33, item 11: a rule matching no listed host was accepted
// silently). It reads state.db, every row: a second or so for a million
// URLs.
func (j *Job) EachHost(fn func(host string) bool) error {
	errEnough := errors.New("enough")
	err := each(j.st.db, `SELECT DISTINCT host FROM urls WHERE host != ''`, func(rows *sql.Rows) error {
		var h string
		if err := rows.Scan(&h); err != nil {
			return err
		}
		if !fn(h) {
			return errEnough
		}
		return nil
	})
	if err != nil && err != errEnough {
		return fmt.Errorf("crawl: reading hosts: %w", err)
	}
	return nil
}
