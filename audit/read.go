package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Record is one line of an audit log, as Read decodes it. Times are in
// milliseconds; fields that did not apply are zero.
type Record struct {
	T       int64    `json:"t"`  // Unix milliseconds
	Kind    string   `json:"k"`  // polite.EventKind's name: attempt, wait, give-up, rate, breaker, blocked, pause, robots
	Host    string   `json:"h"`  // the host key
	ID      uint64   `json:"id"` // the request id
	Reason  string   `json:"r"`
	Attempt int      `json:"a"`
	Status  int      `json:"s"`
	Outcome string   `json:"o"`   // an attempt's outcome
	Latency float64  `json:"lat"` // an attempt's latency, ms
	Delay   float64  `json:"d"`   // a wait's or pause's length, ms
	Rate    *float64 `json:"rate"`
	Prev    float64  `json:"prev"`
	Cap     float64  `json:"cap"`
	CapErr  float64  `json:"cap_err"`
	Meas    bool     `json:"meas"`
	Phase   string   `json:"ph"`
	RA      string   `json:"ra"`  // the raw Retry-After
	Req     float64  `json:"req"` // what the host asked for, ms
	Clamped bool     `json:"cl"`
	RL      string   `json:"rl"` // the raw RateLimit fields
	Detail  string   `json:"det"`
	Err     string   `json:"err"`
}

// Time returns the record's time.
func (r *Record) Time() time.Time { return time.UnixMilli(r.T) }

// maxLine bounds a line Read accepts.
const maxLine = 1 << 20

// errLong is the error of a line longer than maxLine.
var errLong = fmt.Errorf("longer than %d bytes", maxLine)

// Read calls fn with each record of the log in r, in order, and stops at
// fn's first error. A last line without its newline (a log still being
// written, or cut by a kill) is skipped (ReadTail says how long it was); a
// malformed or overlong whole line is an error naming its number
// (ReadSkipping skips those too).
func Read(r io.Reader, fn func(*Record) error) error {
	_, err := ReadTail(r, fn)
	return err
}

// ReadTail is Read that also returns the length in bytes of the partial
// last line it skipped (0 when the log ends with a whole line).
func ReadTail(r io.Reader, fn func(*Record) error) (partial int, err error) {
	s, err := read(r, fn, false)
	return s.Partial, err
}

// Skipped says what ReadSkipping left out of a log.
type Skipped struct {
	// Partial is the length in bytes of a last line without its newline.
	Partial int
	// Lines counts the whole lines that are not a record: longer than
	// 1 MiB, or not JSON of one.
	Lines int
	// First says why the first of them was left out, naming its line
	// number; nil when Lines is 0.
	First error
}

// ReadSkipping is ReadTail that skips and counts, instead of stopping at,
// a whole line it cannot read (overlong or malformed): one such line made
// `polite report` fail for a whole job (issue 29, item 6). It holds at most
// 1 MiB of a line. It stops at fn's first error or at the reader's.
func ReadSkipping(r io.Reader, fn func(*Record) error) (Skipped, error) {
	return read(r, fn, true)
}

func read(r io.Reader, fn func(*Record) error, skip bool) (Skipped, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var rec Record
	var s Skipped
	for n := 1; ; n++ {
		line, size, err := readLine(br, skip)
		if err == io.EOF {
			s.Partial = size
			return s, nil
		}
		if err == errLong && skip {
			s.skip(fmt.Errorf("audit: line %d: %w", n, err))
			continue
		}
		if err != nil {
			return s, fmt.Errorf("audit: line %d: %w", n, err)
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		rec = Record{}
		if !scanRecord(line, &rec) {
			rec = Record{}
			if err := json.Unmarshal(line, &rec); err != nil {
				if !skip {
					return s, fmt.Errorf("audit: line %d: %w", n, err)
				}
				s.skip(fmt.Errorf("audit: line %d: %w", n, err))
				continue
			}
		}
		if err := fn(&rec); err != nil {
			return s, err
		}
	}
}

func (s *Skipped) skip(err error) {
	s.Lines++
	if s.First == nil {
		s.First = err
	}
}

// readLine returns the next whole line and its length, or io.EOF at the
// end with the partial last line there is and its length. A line longer
// than maxLine is errLong; with drain, the rest of it is read (not kept)
// first, and when the reader ends before its newline it is a partial last
// line: io.EOF and its length.
func readLine(br *bufio.Reader, drain bool) ([]byte, int, error) {
	line, err := br.ReadSlice('\n')
	if err == nil || err == io.EOF {
		return line, len(line), err // io.EOF: the end, or a partial last line
	}
	if err != bufio.ErrBufferFull {
		return nil, 0, err
	}
	long := append([]byte(nil), line...)
	for {
		line, err = br.ReadSlice('\n')
		long = append(long, line...)
		if len(long) > maxLine {
			break
		}
		switch err {
		case nil:
			return long, len(long), nil
		case bufio.ErrBufferFull:
		case io.EOF:
			return long, len(long), err // a partial last line
		default:
			return nil, 0, err
		}
	}
	if !drain {
		return nil, 0, errLong
	}
	size := len(long)
	for err == bufio.ErrBufferFull {
		line, err = br.ReadSlice('\n')
		size += len(line)
	}
	switch err {
	case nil:
		return nil, size, errLong
	case io.EOF:
		return nil, size, io.EOF
	}
	return nil, 0, err
}
