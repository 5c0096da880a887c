package crawl

import "fmt"

// EachHost calls fn with each distinct host key of the job's URLs, until
// fn returns false: what a caller checks its per-host rules against
// (issue 33, item 11: a rule matching no listed host was accepted
// silently). It reads state.db, every row: a second or so for a million
// URLs.
func (j *Job) EachHost(fn func(host string) bool) error {
	rows, err := j.st.db.Query(`SELECT DISTINCT host FROM urls WHERE host != ''`)
	if err != nil {
		return fmt.Errorf("crawl: reading hosts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			return fmt.Errorf("crawl: reading hosts: %w", err)
		}
		if !fn(h) {
			break
		}
	}
	return rows.Err()
}
