package crawl

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// metaBodies marks where a job keeps its bodies (bodiesMark): set by its
// first run, checked by every other.
const metaBodies = "bodies"

// bodiesMark is the meta value of a Bodies; 0 is none recorded.
func bodiesMark(b Bodies) int64 {
	switch b {
	case BodiesWARC:
		return 1
	case BodiesFiles:
		return 2
	case BodiesNone:
		return 3
	}
	return 0
}

func bodiesOfMark(v int64) Bodies {
	for _, b := range []Bodies{BodiesWARC, BodiesFiles, BodiesNone} {
		if bodiesMark(b) == v {
			return b
		}
	}
	return ""
}

// ErrBodiesChanged is matched (errors.Is) by the *BodiesChangedError of
// CheckRequest and Run.
var ErrBodiesChanged = errors.New("crawl: bodies kept elsewhere than the job's")

// BodiesChangedError refuses a run whose Options.Bodies differs from the
// job's first run's: its bodies would be split between the WARC files and
// bodies/ (and a CDXJ index of the WARC files would miss half; issue 33,
// item 10).
type BodiesChangedError struct {
	Dir      string
	Job, Run Bodies // the job's first run's, and this run's
}

func (e *BodiesChangedError) Error() string {
	return fmt.Sprintf("crawl: %s keeps its bodies as %s; a run keeping them as %s would split them: use a new directory for that (or %s to resume)",
		e.Dir, e.Job, e.Run, e.Job)
}

// Is makes errors.Is(err, ErrBodiesChanged) match.
func (e *BodiesChangedError) Is(target error) bool { return target == ErrBodiesChanged }

// checkBodies refuses a run keeping bodies elsewhere than the job's first
// run did, and records the first run's. A job from before the mark tells
// by its first result with a body: a warc_file, a file or neither.
func (j *Job) checkBodies() error {
	v, err := j.st.meta(metaBodies)
	if err != nil {
		return fmt.Errorf("crawl: reading state: %w", err)
	}
	if v == 0 {
		var line string
		err := j.st.db.QueryRow(`SELECT line FROM results WHERE json_extract(line, '$.bytes') > 0 LIMIT 1`).Scan(&line)
		switch {
		case err == nil:
			var r Result
			if json.Unmarshal([]byte(line), &r) == nil {
				switch {
				case r.WARCFile != "":
					v = bodiesMark(BodiesWARC)
				case r.File != "":
					v = bodiesMark(BodiesFiles)
				default:
					v = bodiesMark(BodiesNone)
				}
			}
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("crawl: reading state: %w", err)
		}
		if v == 0 {
			v = bodiesMark(j.opts.Bodies)
		}
		if err := j.st.commit(nil, nil, map[string]int64{metaBodies: v}); err != nil {
			return fmt.Errorf("crawl: %w", err)
		}
	}
	if was := bodiesOfMark(v); was != "" && was != j.opts.Bodies {
		return &BodiesChangedError{Dir: j.dir, Job: was, Run: j.opts.Bodies}
	}
	return nil
}
