package crawl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/polite-go/polite/bucket"
)

// Learned rates (issue 33, item 14): a resumed 1,000,000-URL job ran at
// 267 URLs/s for its first seconds against 1,900 before, every host's
// adaptive rate cold again. The job keeps each host's rate in state.db, at
// most every RateCheckpoint and when Run ends (a write of one row per
// host the Transport holds, never one per request), and ReadRates hands
// them to the next run's Transport.StartRate.

// RateCheckpoint is how often Run records the hosts' rates while it runs.
const RateCheckpoint = 10 * time.Second

const ratesSchema = `
CREATE TABLE IF NOT EXISTS rates (
	host TEXT PRIMARY KEY, -- the budget's key (polite.Transport.State's)
	rate REAL NOT NULL,    -- its rate in force at the last checkpoint, requests per second
	at   INTEGER NOT NULL  -- unix ms of that checkpoint
);
`

// adaptive reports whether the job's Transport adapts its hosts' rates:
// only then is a rate learned.
func (j *Job) adaptive() bool { return j.tr.Adaptive != nil || j.tr.NewRater != nil }

// saveRates records the rate in force of every host the Transport holds.
func (j *Job) saveRates(now time.Time) error {
	type hostRate struct {
		host string
		rate float64
	}
	var rates []hostRate
	for st := range j.tr.Hosts() {
		if st.Rate > 0 && st.Rate < bucket.Inf {
			rates = append(rates, hostRate{st.Key, st.Rate})
		}
	}
	if len(rates) == 0 {
		return nil
	}
	tx, err := j.st.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	stmt, err := tx.Prepare(`INSERT INTO rates(host, rate, at) VALUES(?, ?, ?)
		ON CONFLICT(host) DO UPDATE SET rate = excluded.rate, at = excluded.at`)
	if err != nil {
		return err
	}
	for _, r := range rates {
		if _, err := stmt.Exec(r.host, r.rate, now.UnixMilli()); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// checkpointRates records the hosts' rates every RateCheckpoint until ctx
// ends, then once more.
func (j *Job) checkpointRates(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(RateCheckpoint)
	defer tick.Stop()
	for {
		select {
		case now := <-tick.C:
			if err := j.saveRates(now); err != nil {
				j.logError("recording rates", err)
			}
		case <-ctx.Done():
			if err := j.saveRates(time.Now()); err != nil {
				j.logError("recording rates", err)
			}
			return
		}
	}
}

// ReadRates returns the rates the job in dir recorded for its hosts (see
// RateCheckpoint), by the key polite.Transport.StartRate is asked with:
// none for a dir without a job.
func ReadRates(dir string) (map[string]float64, error) {
	st, path, err := openExisting(dir)
	if errors.Is(err, ErrNoJob) {
		return map[string]float64{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer st.Close()
	rates := map[string]float64{}
	rows, err := st.db.Query(`SELECT host, rate FROM rates`)
	if err != nil {
		return nil, fmt.Errorf("crawl: reading %s: %w", path, err)
	}
	defer rows.Close()
	for rows.Next() {
		var h string
		var r float64
		if err := rows.Scan(&h, &r); err != nil {
			return nil, fmt.Errorf("crawl: reading %s: %w", path, err)
		}
		rates[h] = r
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("crawl: reading %s: %w", path, err)
	}
	return rates, nil
}
