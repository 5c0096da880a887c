package crawl

import (
	"path/filepath"

	"github.com/polite-go/polite/audit"
)

// EventsFile is the job's audit log: one line per decision the Transport
// made for the job's requests (package audit), appended to by every run;
// each line's id is the id of its URL's line in results.jsonl.
const EventsFile = "events.jsonl"

// openEvents opens the job's audit log. The job's requests carry it as
// their Observer (polite.WithObserver), so a Transport shared with others
// logs only the job's.
func (j *Job) openEvents() error {
	l, err := audit.Open(filepath.Join(j.dir, EventsFile), audit.Options{})
	if err != nil {
		return err
	}
	j.events = l
	return nil
}
