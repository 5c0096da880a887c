package crawl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// File descriptors (issue 29, item 3). A job's connections, its state.db,
// WARC, results and events files all come from the process's limit
// (RLIMIT_NOFILE). Servers keep idle connections too (Go's for ever,
// nginx's 75 s), so a transport that keeps every host's idle connections
// for IdleConnTimeout, with no overall cap, used one descriptor per host
// met in the last 30 s: at 100,000 one-URL hosts, SQLite found none left.
// NewBase caps the idle connections over all hosts to what the limit
// leaves after the requests in flight and a reserve for the job's files.
const (
	// fdReserve is kept for the job's own files: stdio, the lock, state.db
	// (two connections, their WAL and shared memory, SQLite's temporary
	// files), results.jsonl, events.jsonl, the WARC files (the current and
	// the one rotated from), a metrics listener, with room to spare.
	fdReserve = 64
	// fdPerWorker is the descriptors one request in flight may hold: its
	// connection, a DNS lookup's sockets while it dials, a body file.
	fdPerWorker = 2
	// maxIdleConns bounds the idle connections when the limit is high or
	// unknown: an idle connection costs about 25 KB of buffers and
	// goroutine stacks as well as its descriptor.
	maxIdleConns = 4096
)

// idleConns is how many idle connections a job's transport keeps over all
// hosts, at a file descriptor limit of limit (0: unknown) with workers
// requests in flight: what is left after those and fdReserve, at least 1
// (0 would mean no cap to net/http) and at most maxIdleConns.
func idleConns(limit, workers int) int {
	if limit <= 0 {
		return maxIdleConns
	}
	return min(max(connBudget(limit, workers)-workers, 1), maxIdleConns)
}

// errNoFiles says what to do when the process runs out of file descriptors.
var errNoFiles = errors.New("too many open files: raise ulimit -n or lower --workers")

// namedEMFILE returns err saying so when it comes from running out of file
// descriptors (EMFILE, or ENFILE for the whole system), else err.
func namedEMFILE(err error) error {
	if err != nil && !errors.Is(err, errNoFiles) && (errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)) {
		return fmt.Errorf("%w: %w", errNoFiles, err)
	}
	return err
}

// namedFileErr is namedEMFILE for an error writing the job's files: SQLite
// says only "unable to open database file (14)", so when a probe cannot
// open a file either, that is what it was.
func namedFileErr(err error) error {
	if named := namedEMFILE(err); named != err || err == nil || errors.Is(err, errNoFiles) {
		return named
	}
	if outOfFiles() {
		return fmt.Errorf("%w: %w", errNoFiles, err)
	}
	return err
}

// outOfFiles reports whether the process cannot open a file for want of a
// descriptor right now.
func outOfFiles() bool {
	f, err := os.Open(os.DevNull)
	if err != nil {
		return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
	}
	f.Close()
	return false
}

// LimitConns makes t close its idle connections, HTTP/2 ones included,
// whenever a dial finds the connections it has open at what the file
// descriptor limit leaves for them (connBudget). net/http's MaxIdleConns,
// which NewBase sets, bounds only HTTP/1 connections: each HTTP/2 one
// stays open for IdleConnTimeout whatever their number, and most of the web
// answers HTTPS in HTTP/2. Closing every idle connection is blunt, but it
// happens only near the limit, and only idle ones are closed. It wraps
// t.DialContext (nil: a net.Dialer like net/http's default): call it after
// setting that.
func LimitConns(t *http.Transport, workers int) {
	if workers <= 0 {
		workers = DefaultWorkers
	}
	budget := int64(connBudget(fdLimit(), workers))
	dial := t.DialContext
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	open := new(atomic.Int64)
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if open.Load() >= budget {
			t.CloseIdleConnections()
		}
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		open.Add(1)
		return &countedConn{Conn: c, open: open}, nil
	}
}

// countedConn is a connection LimitConns counts until it is closed.
type countedConn struct {
	net.Conn
	open   *atomic.Int64
	closed atomic.Bool
}

func (c *countedConn) Close() error {
	if !c.closed.Swap(true) {
		c.open.Add(-1)
	}
	return c.Conn.Close()
}

// CloseWrite half-closes the connection when the one it counts can (a
// TCP connection): a CONNECT tunnel of polite proxy, dialed here, passes a
// client's end of sending on without closing what comes back.
func (c *countedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// connBudget is how many connections a job may have open at a file
// descriptor limit of limit (0: unknown) with workers requests in flight:
// the limit less fdReserve and one more per worker (a DNS lookup's sockets,
// a body file), at least workers; maxIdleConns more than the workers when
// the limit is unknown.
func connBudget(limit, workers int) int {
	if limit <= 0 {
		return maxIdleConns + workers
	}
	return max(limit-fdReserve-(fdPerWorker-1)*workers, workers)
}
