package main

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
	_ "modernc.org/sqlite"
)

// floor is -durable's work (see the package doc): the least a fetch that
// keeps polite fetch's kill -9 promise and writes its WARC must do, done
// as polite fetch does it (the same SQLite settings and multi-row
// statements, the same gzip library and levels, the same group commit),
// and nothing else.
type floor struct {
	db      *sql.DB
	warc    *os.File
	wb      *bufio.Writer
	results *os.File
	gz, raw *gzip.Writer
	recs    chan answer
	done    chan error
	seq     int64
	cw      counter // the WARC's writer, counting its bytes
}

// answer is one URL's answer, read whole.
type answer struct {
	id             int
	url            string
	head, body     []byte
	block, body256 [32]byte
	at             time.Time
}

const (
	batchMax  = 2048                  // crawl's maxBatch
	batchWait = 50 * time.Millisecond // crawl's DefaultCommitInterval
	rowsPer   = 128                   // crawl's doneRows
)

func openFloor(dir string, urls []string) (*floor, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	q := url.Values{"_pragma": {"journal_mode(WAL)", "busy_timeout(10000)", "synchronous(NORMAL)", "foreign_keys(OFF)"}}
	db, err := sql.Open("sqlite", (&url.URL{Scheme: "file", OmitHost: true, Path: filepath.Join(dir, "state.db"), RawQuery: q.Encode()}).String())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	for _, st := range []string{
		`CREATE TABLE urls (id INTEGER PRIMARY KEY, url TEXT NOT NULL UNIQUE, state TEXT NOT NULL DEFAULT 'pending', seq INTEGER, outcome TEXT)`,
		`CREATE TABLE results (seq INTEGER PRIMARY KEY, line TEXT NOT NULL)`,
	} {
		if _, err := db.Exec(st); err != nil {
			return nil, err
		}
	}
	// The list, loaded as polite fetch loads it: many rows a statement.
	tx, err := db.Begin()
	if err != nil {
		return nil, err
	}
	for lo := 0; lo < len(urls); lo += rowsPer {
		hi := min(lo+rowsPer, len(urls))
		args := make([]any, 0, 2*(hi-lo))
		for i := lo; i < hi; i++ {
			args = append(args, i, urls[i])
		}
		stmt := "INSERT INTO urls(id, url) VALUES (?, ?)" + strings.Repeat(", (?, ?)", hi-lo-1)
		if _, err := tx.Exec(stmt, args...); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	f := &floor{db: db, recs: make(chan answer, batchMax), done: make(chan error, 1)}
	if f.warc, err = os.Create(filepath.Join(dir, "bodies.warc.gz")); err != nil {
		return nil, err
	}
	if f.results, err = os.Create(filepath.Join(dir, "results.jsonl")); err != nil {
		return nil, err
	}
	f.wb = bufio.NewWriterSize(f.warc, 256<<10)
	f.cw.w = f.wb
	f.gz, _ = gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
	f.raw, _ = gzip.NewWriterLevel(io.Discard, gzip.NoCompression)
	go func() { f.done <- f.commit() }()
	return f, nil
}

// keep reads resp whole, with its digests, and hands it to the committer.
func (f *floor) keep(id int, u string, resp *http.Response) error {
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var h strings.Builder
	fmt.Fprintf(&h, "%s %s\r\n", resp.Proto, resp.Status)
	resp.Header.Write(&h)
	h.WriteString("\r\n")
	a := answer{id: id, url: u, head: []byte(h.String()), body: body, at: time.Now()}
	a.body256 = sha256.Sum256(body)
	d := sha256.New()
	d.Write(a.head)
	d.Write(body)
	d.Sum(a.block[:0])
	f.recs <- a
	return nil
}

func (f *floor) close() error {
	close(f.recs)
	err := <-f.done
	for _, c := range []io.Closer{f.warc, f.results, f.db} {
		if e := c.Close(); err == nil {
			err = e
		}
	}
	return err
}

// commit writes the answers in batches, each step durable before the next:
// the WARC, then the transaction, then results.jsonl.
func (f *floor) commit() error {
	batch := make([]answer, 0, batchMax)
	tm := time.NewTimer(time.Hour)
	for {
		a, ok := <-f.recs
		if !ok {
			return nil
		}
		batch = append(batch[:0], a)
		tm.Reset(batchWait)
	fill:
		for len(batch) < batchMax {
			select {
			case a, ok := <-f.recs:
				if !ok {
					break fill
				}
				batch = append(batch, a)
			case <-tm.C:
				break fill
			}
		}
		tm.Stop()
		if err := f.flush(batch); err != nil {
			return err
		}
	}
}

func (f *floor) flush(batch []answer) error {
	lines := make([]string, len(batch))
	for i, a := range batch {
		off := f.record(f.gz, "response", a.url, a.at, "application/http;msgtype=response", a.head, a.body, a.block,
			"WARC-Payload-Digest: sha256:"+base32.StdEncoding.EncodeToString(a.body256[:])+"\r\n")
		req := []byte("GET " + a.url + " HTTP/1.1\r\nHost: x\r\nUser-Agent: bareclient\r\n\r\n")
		f.record(f.raw, "request", a.url, a.at, "application/http;msgtype=request", req, nil, sha256.Sum256(req), "")
		lines[i] = `{"url":` + strconv.Quote(a.url) + `,"outcome":"ok","status":200,"warc_offset":` + strconv.FormatInt(off, 10) + "}\n"
	}
	if err := f.wb.Flush(); err != nil {
		return err
	}
	if err := f.warc.Sync(); err != nil {
		return err
	}
	tx, err := f.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for lo := 0; lo < len(batch); lo += rowsPer {
		hi := min(lo+rowsPer, len(batch))
		up := make([]any, 0, 3*(hi-lo))
		ins := make([]any, 0, 2*(hi-lo))
		for i := lo; i < hi; i++ {
			f.seq++
			up = append(up, batch[i].id, f.seq, "ok")
			ins = append(ins, f.seq, lines[i])
		}
		if _, err := tx.Exec(`UPDATE OR FAIL urls SET state = 'done', seq = v.column2, outcome = v.column3 FROM (VALUES (?, ?, ?)`+
			strings.Repeat(", (?, ?, ?)", hi-lo-1)+`) AS v WHERE urls.id = v.column1`, up...); err != nil {
			return err
		}
		if _, err := tx.Exec(`INSERT OR FAIL INTO results(seq, line) VALUES (?, ?)`+strings.Repeat(", (?, ?)", hi-lo-1), ins...); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	for _, l := range lines {
		if _, err := io.WriteString(f.results, l); err != nil {
			return err
		}
	}
	return f.results.Sync()
}

// record writes one WARC record as a gzip member of its own and returns
// its offset.
func (f *floor) record(gz *gzip.Writer, typ, target string, at time.Time, ctype string, head, body []byte, block [32]byte, extra string) int64 {
	off := f.cw.n
	var id [16]byte
	rand.Read(id[:])
	h := "WARC/1.1\r\nWARC-Type: " + typ + "\r\nWARC-Target-URI: " + target + "\r\nWARC-Date: " + at.UTC().Format(time.RFC3339Nano) +
		"\r\nWARC-Record-ID: <urn:uuid:" + hex.EncodeToString(id[:]) + ">\r\nContent-Type: " + ctype +
		"\r\nWARC-Block-Digest: sha256:" + base32.StdEncoding.EncodeToString(block[:]) + "\r\n" + extra +
		"Content-Length: " + strconv.Itoa(len(head)+len(body)) + "\r\n\r\n"
	gz.Reset(&f.cw)
	io.WriteString(gz, h)
	gz.Write(head)
	gz.Write(body)
	io.WriteString(gz, "\r\n\r\n")
	gz.Close()
	return off
}

type counter struct {
	w io.Writer
	n int64
}

func (c *counter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
