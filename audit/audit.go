// Package audit writes polite's decisions as an audit log: one compact
// JSON line per Event (attempt, wait, pause, rate change, breaker change,
// give-up, block, robots), with the inputs of each decision (the raw
// Retry-After and RateLimit fields, what was asked and what applied, the
// previous rate, the controller's phase and capacity estimate) and the
// request id that joins it to the caller's records.
//
// A Log is a polite.Observer: set it as a Transport's Observer (or call
// it from one's own). It never drops an event: lines go to a buffer of
// bounded size that is written out when full, every FlushInterval and at
// Close, and only whole lines are written, so a process killed at any
// instant loses at most the lines of the last interval and never leaves
// half a line behind (Open trims one left by an older writer).
//
// Lines read back with Read, which skips a partial last line (a log being
// written) and reports malformed ones.
package audit

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/retry"
)

// Defaults for Options left zero.
const (
	DefaultFlushInterval = time.Second
	DefaultBufferSize    = 64 << 10
)

// Options configure a Log; the zero value is the default.
type Options struct {
	// FlushInterval is the longest a line waits in the buffer. If zero,
	// DefaultFlushInterval is used; a negative one writes every line at once.
	FlushInterval time.Duration
	// BufferSize bounds the bytes buffered; a line that does not fit makes
	// the buffer be written first. If zero, DefaultBufferSize is used.
	BufferSize int
}

// Log writes Events as JSON lines. It is safe for concurrent use; Observe
// takes the Log's lock for the time it encodes one line (and, when the
// buffer is full, writes it).
type Log struct {
	w       io.Writer
	closer  io.Closer // the file Open opened, nil otherwise
	maxBuf  int
	every   time.Duration
	stop    chan struct{}
	stopped chan struct{}

	mu     sync.Mutex // guards buf, err, lines, closed
	buf    []byte
	err    error // the first write error; later lines are still counted
	lines  int64
	closed bool
}

// New returns a Log writing to w. Close it to write out what is buffered
// and stop its flusher.
func New(w io.Writer, o Options) *Log {
	l := &Log{w: w, maxBuf: o.BufferSize, every: o.FlushInterval}
	if l.maxBuf <= 0 {
		l.maxBuf = DefaultBufferSize
	}
	if l.every == 0 {
		l.every = DefaultFlushInterval
	}
	l.buf = make([]byte, 0, l.maxBuf)
	if l.every > 0 {
		l.stop, l.stopped = make(chan struct{}), make(chan struct{})
		go l.flusher()
	}
	return l
}

// Open returns a Log appending to the file at path, creating it if need
// be. A partial last line a killed writer left is cut off first, so the
// lines appended start on a line of their own.
func Open(path string, o Options) (*Log, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	end, err := wholeLines(f)
	if err == nil {
		err = f.Truncate(end)
	}
	if err == nil {
		_, err = f.Seek(end, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("audit: %s: %w", path, err)
	}
	l := New(f, o)
	l.closer = f
	return l, nil
}

// wholeLines returns the size of f up to the end of its last whole line.
func wholeLines(f *os.File) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	end := st.Size()
	var chunk [4096]byte
	for end > 0 {
		n := int64(len(chunk))
		if n > end {
			n = end
		}
		if _, err := f.ReadAt(chunk[:n], end-n); err != nil {
			return 0, err
		}
		for i := n - 1; i >= 0; i-- {
			if chunk[i] == '\n' {
				return end - n + i + 1, nil
			}
		}
		end -= n
	}
	return 0, nil
}

func (l *Log) flusher() {
	defer close(l.stopped)
	tk := time.NewTicker(l.every)
	defer tk.Stop()
	for {
		select {
		case <-tk.C:
			l.Flush()
		case <-l.stop:
			return
		}
	}
}

// Observe writes e as one line; EventSend and EventDone are left out (the
// attempt's line says the same). Events after Close are dropped.
func (l *Log) Observe(e polite.Event) {
	if e.Kind == polite.EventSend || e.Kind == polite.EventDone {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	n := len(l.buf)
	l.buf = appendEvent(l.buf, &e)
	l.lines++
	switch {
	case l.every < 0:
		l.writeLocked(len(l.buf))
	case len(l.buf) > l.maxBuf:
		// Write the lines before this one, keep it: only whole lines
		// leave the buffer, and the buffer stays within about maxBuf.
		l.writeLocked(n)
	}
}

// Lines returns how many lines the Log was given.
func (l *Log) Lines() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lines
}

// writeLocked writes the buffer's first n bytes (whole lines) and keeps the
// rest.
func (l *Log) writeLocked(n int) {
	if n == 0 {
		return
	}
	if _, err := l.w.Write(l.buf[:n]); err != nil && l.err == nil {
		l.err = fmt.Errorf("audit: writing the log: %w", err)
	}
	rest := copy(l.buf, l.buf[n:])
	l.buf = l.buf[:rest]
	if cap(l.buf) > 2*l.maxBuf {
		l.buf = append(make([]byte, 0, l.maxBuf), l.buf...) // one long line grew it
	}
}

// Flush writes what is buffered and returns the first write error so far.
func (l *Log) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writeLocked(len(l.buf))
	return l.err
}

// Close writes what is buffered, stops the flusher and closes the file
// Open opened. It returns the first error writing the log met.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return l.err
	}
	l.closed = true
	l.mu.Unlock()
	if l.stop != nil {
		close(l.stop)
		<-l.stopped
	}
	err := l.Flush()
	if l.closer != nil {
		if cerr := l.closer.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("audit: %w", cerr))
		}
	}
	return err
}

// maxErr bounds the error message kept in a line.
const maxErr = 200

// maxRaw bounds the bytes a line keeps of each field it copies from a
// server: the raw Retry-After, the RateLimit fields (all together) and a
// detail. A server chooses their size, and 4 MB RateLimit fields made a
// 410 MB log of 8 MB lines, one over Read's 1 MiB making a job's report fail
// (issue 29, item 6). What is cut ends with cutMark and the field's whole
// length: "…(cut, 4194304 bytes)". A line stays well under maxLine.
const maxRaw = 1 << 10

// appendEvent appends e's line to b. Keys are short (see Record) and
// fields that do not apply are left out.
func appendEvent(b []byte, e *polite.Event) []byte {
	b = append(b, `{"t":`...)
	b = strconv.AppendInt(b, e.Time.UnixMilli(), 10)
	b = append(b, `,"k":`...)
	b = appendString(b, e.Kind.String())
	b = append(b, `,"h":`...)
	b = appendString(b, e.Host)
	if e.ID != 0 {
		b = append(b, `,"id":`...)
		b = strconv.AppendUint(b, e.ID, 10)
	}
	if e.Reason != "" {
		b = append(b, `,"r":`...)
		b = appendString(b, string(e.Reason))
	}
	if e.Attempt != 0 {
		b = append(b, `,"a":`...)
		b = strconv.AppendInt(b, int64(e.Attempt), 10)
	}
	if e.Status != 0 {
		b = append(b, `,"s":`...)
		b = strconv.AppendInt(b, int64(e.Status), 10)
	}
	if e.Kind == polite.EventAttempt {
		b = append(b, `,"o":`...)
		b = appendString(b, e.Outcome.String())
		b = appendMillis(b, "lat", e.Latency)
	}
	if e.Delay != 0 {
		b = appendMillis(b, "d", e.Delay)
	}
	if e.Kind == polite.EventRate {
		b = appendFloat(b, "rate", e.Rate)
		if e.Prev != 0 {
			b = appendFloat(b, "prev", e.Prev)
		}
	}
	if e.Capacity != 0 {
		b = appendFloat(b, "cap", e.Capacity)
		if e.CapacityErr != 0 {
			b = appendFloat(b, "cap_err", e.CapacityErr)
		}
		if e.Measured {
			b = append(b, `,"meas":true`...)
		}
	}
	if e.Phase != "" {
		b = append(b, `,"ph":`...)
		b = appendString(b, e.Phase)
	}
	if e.RetryAfter != "" {
		b = append(b, `,"ra":`...)
		b = appendRaw(b, e.RetryAfter, maxRaw)
	}
	if e.Requested != 0 {
		b = appendMillis(b, "req", e.Requested)
	}
	if e.Clamped {
		b = append(b, `,"cl":true`...)
	}
	if e.Reason == polite.ReasonRateLimit && e.Header != nil {
		b = appendRateLimit(b, e.Header)
	}
	if e.Detail != "" {
		b = append(b, `,"det":`...)
		b = appendRaw(b, e.Detail, maxRaw)
	}
	if e.Err != nil {
		b = append(b, `,"err":`...)
		b = appendRaw(b, e.Err.Error(), maxErr)
	}
	return append(b, "}\n"...)
}

// rateLimitFields are the fields a RateLimit decision reads
// (retry.ParseRateLimit), in the order the log lists them.
var rateLimitFields = retry.RateLimitFields

// appendRateLimit appends the raw RateLimit fields of h as "rl": one
// string "Name: value; Name: value", cut after maxRaw bytes.
func appendRateLimit(b []byte, h http.Header) []byte {
	size := 0 // of the whole string
	for _, name := range rateLimitFields {
		for _, v := range h[name] {
			if size > 0 {
				size += len("; ")
			}
			size += len(name) + len(": ") + len(v)
		}
	}
	if size == 0 {
		return b
	}
	w := bounded{b: append(b, `,"rl":"`...), room: maxRaw}
	whole := true
	for _, name := range rateLimitFields {
		for _, v := range h[name] {
			if w.room < maxRaw {
				whole = whole && w.add("; ")
			}
			whole = whole && w.add(name) && w.add(": ") && w.add(v)
		}
	}
	if !whole {
		w.b = appendCutMark(w.b, size)
	}
	return append(w.b, '"')
}

// appendRaw appends s as a JSON string, cut after max bytes and marked so.
func appendRaw(b []byte, s string, max int) []byte {
	w := bounded{b: append(b, '"'), room: max}
	if !w.add(s) {
		w.b = appendCutMark(w.b, len(s))
	}
	return append(w.b, '"')
}

// bounded appends escaped text to b, room bytes of it at the most.
type bounded struct {
	b    []byte
	room int
}

// add appends s, or as much of it as there is room for, cut at a rune's
// start, and reports whether all of it fit.
func (w *bounded) add(s string) bool {
	if len(s) <= w.room {
		w.b = appendEscaped(w.b, s)
		w.room -= len(s)
		return true
	}
	n := w.room
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	w.b = appendEscaped(w.b, s[:n])
	w.room = 0
	return false
}

// cutMark ends a field cut short, before its whole length in bytes.
const cutMark = "…(cut, "

func appendCutMark(b []byte, size int) []byte {
	b = append(b, cutMark...)
	b = strconv.AppendInt(b, int64(size), 10)
	return append(b, " bytes)"...)
}

func appendMillis(b []byte, key string, d time.Duration) []byte {
	b = append(b, `,"`...)
	b = append(b, key...)
	b = append(b, `":`...)
	return strconv.AppendFloat(b, math.Round(float64(d)/1e3)/1e3, 'f', -1, 64)
}

func appendFloat(b []byte, key string, f float64) []byte {
	b = append(b, `,"`...)
	b = append(b, key...)
	b = append(b, `":`...)
	switch {
	case math.IsInf(f, 0) || math.IsNaN(f) || f > 1e15:
		return append(b, "null"...) // no limit: JSON has no infinity
	default:
		return strconv.AppendFloat(b, math.Round(f*1e4)/1e4, 'f', -1, 64)
	}
}

func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	b = appendEscaped(b, s)
	return append(b, '"')
}

const hex = "0123456789abcdef"

// appendEscaped appends s escaped for a JSON string, with <, > and & as
// \u escapes (as encoding/json does, so a line is safe inside HTML) and
// invalid UTF-8 as U+FFFD.
func appendEscaped(b []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, `\u202`...)
			b = append(b, hex[r&0xf])
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return b
}
