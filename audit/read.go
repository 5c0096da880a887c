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

// Read calls fn with each record of the log in r, in order, and stops at
// fn's first error. A last line without its newline (a log still being
// written, or cut by a kill) is skipped (ReadTail says how long it was); a
// malformed or overlong whole line is an error naming its number.
func Read(r io.Reader, fn func(*Record) error) error {
	_, err := ReadTail(r, fn)
	return err
}

// ReadTail is Read that also returns the length in bytes of the partial
// last line it skipped (0 when the log ends with a whole line).
func ReadTail(r io.Reader, fn func(*Record) error) (partial int, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var rec Record
	for n := 1; ; n++ {
		line, err := readLine(br)
		if err == io.EOF {
			return len(line), nil
		}
		if err != nil {
			return 0, fmt.Errorf("audit: line %d: %w", n, err)
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		rec = Record{}
		if err := json.Unmarshal(line, &rec); err != nil {
			return 0, fmt.Errorf("audit: line %d: %w", n, err)
		}
		if err := fn(&rec); err != nil {
			return 0, err
		}
	}
}

// readLine returns the next whole line, or io.EOF at the end with the
// partial last line there is.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == nil {
		return line, nil
	}
	if err == io.EOF {
		return line, io.EOF // the end, or a partial last line
	}
	if err != bufio.ErrBufferFull {
		return nil, err
	}
	long := append([]byte(nil), line...)
	for {
		line, err = br.ReadSlice('\n')
		long = append(long, line...)
		if len(long) > maxLine {
			return nil, fmt.Errorf("longer than %d bytes", maxLine)
		}
		switch err {
		case nil:
			return long, nil
		case bufio.ErrBufferFull:
		case io.EOF:
			return long, err // a partial last line
		default:
			return nil, err
		}
	}
}
