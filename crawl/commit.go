package crawl

import (
	"crypto/sha256"
	"database/sql"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"time"
)

// kept is what a finished fetch leaves for the WARC files: the heads are
// formatted, the digests worked out and the record ids drawn by the worker,
// in parallel with the others, and nothing holds on to the response (whose
// body wrappers may pin buffers).
type kept struct {
	reqHead, respHead   []byte
	body                []byte
	ip                  netip.Addr // the server's, when known (WARC-IP-Address)
	truncated           bool
	payload             [32]byte // sha256 of body
	respBlock, reqBlock [32]byte // sha256 of respHead+body, of reqHead
	respID, reqID       [16]byte
	// target and at are a redirect hop's URL and time (keepHop); a URL's
	// final response has its result's.
	target string
	at     time.Time
}

// keep formats what the WARC files keep of resp; payload is body's sha256.
func keep(resp *http.Response, body []byte, truncated bool, payload [32]byte, ip netip.Addr) *kept {
	k := &kept{respHead: responseHead(resp), body: body, truncated: truncated, payload: payload, respID: newUUID(), ip: ip}
	h := sha256.New()
	h.Write(k.respHead)
	h.Write(body)
	h.Sum(k.respBlock[:0])
	if resp.Request != nil {
		k.reqHead = requestHead(resp.Request)
		k.reqBlock = sha256.Sum256(k.reqHead)
		k.reqID = newUUID()
	}
	return k
}

// commitMsg is a finished URL (it, res, kept), a put-off one (later), or a
// host's long pause (pause).
type commitMsg struct {
	it     *item
	res    *Result
	kept   *kept
	hops   []*kept // the redirects followed before kept, in order
	later  *later
	pause  *hostPause
	robots *robotsFetch
	found  *found // the links its answer named (Options.Follow)
	size   int64  // kept's bytes, held in the job's backlog until written
	// foundSize is found's, held in the job's foundBacklog until added.
	foundSize int64
}

const maxBatch = 2048

// committer writes finished URLs in batches (group commit), in this order,
// each step only after the one before it is durable:
//
//  1. their bodies to the WARC files, fsynced;
//  2. one transaction: each URL done, with its seq and results line, and
//     the WARC size after step 1 (plus the marks of the previous batch's
//     step 3);
//  3. their lines to results.jsonl, fsynced.
//
// A crash between 1 and 2 leaves records past the WARC mark: cut on reopen.
// A crash between 2 and 3 leaves committed lines missing from results.jsonl:
// written on reopen, from the database. So each line is written exactly
// once, whatever the instant of the crash.
func (j *Job) committer() error {
	var firstErr error
	batch := make([]commitMsg, 0, maxBatch)
	tm := time.NewTimer(time.Hour)
	tm.Stop()
	for {
		m, ok := <-j.commits
		if !ok {
			break
		}
		batch = append(batch[:0], m)
		tm.Reset(j.opts.CommitInterval)
	fill:
		for len(batch) < maxBatch {
			select {
			case m, ok := <-j.commits:
				if !ok {
					break fill
				}
				batch = append(batch, m)
			case <-tm.C:
				break fill
			}
		}
		tm.Stop()
		if firstErr == nil {
			if err := j.flush(batch); err != nil {
				err = namedFileErr(err)
				firstErr = err
				j.logError("commit", err)
				j.fatal() // keep draining: workers finishing must not block
			}
		}
		// Released once per batch: each release wakes the waiters on a
		// channel made anew (an allocation a URL, when per message).
		var size, foundSize int64
		for _, m := range batch {
			size += m.size
			foundSize += m.foundSize
		}
		j.backlog.release(size)
		j.foundBacklog.release(foundSize)
		clear(batch)
	}
	if firstErr != nil {
		return firstErr
	}
	// The last batch's lines are written: record that.
	return namedFileErr(j.st.commit(nil, nil, j.res.marks()))
}

func (j *Job) flush(batch []commitMsg) error {
	finished := j.res.done[:0]
	var deferred []later
	var paused []hostPause
	robots := false
	seq := j.res.seq
	// The batch's results lines, one after another, in a buffer kept from
	// batch to batch, and one string of them all for the database and the
	// fleet acks (a string per line was a copy per URL).
	lines := j.res.lines[:0]
	for _, m := range batch {
		if m.robots != nil {
			if j.warc != nil {
				j.warc.response(m.robots.url, m.robots.at, m.robots.kept)
				robots = true
			}
			continue
		}
		if m.pause != nil {
			paused = append(paused, *m.pause)
			continue
		}
		if m.later != nil {
			l := *m.later
			l.reason = cut(l.reason)
			deferred = append(deferred, l)
			continue
		}
		redactResult(m.res)
		m.res.ID = m.it.id
		if j.warc != nil {
			for _, h := range m.hops {
				j.warc.response(redact(h.target), h.at, h)
			}
		}
		if m.kept != nil && j.warc != nil {
			// Under the URL that answered: after redirects, not the
			// listed one (issue 29, item 11).
			target := m.res.URL
			if m.res.FinalURL != "" {
				target = m.res.FinalURL
			}
			name, off := j.warc.response(target, m.res.Finished, m.kept)
			m.res.WARCFile, m.res.WARC = name, &off
		}
		from := len(lines)
		var err error
		if lines, err = m.res.appendJSON(lines); err != nil {
			return fmt.Errorf("crawl: encoding a result: %w", err)
		}
		lines = append(lines, '\n')
		seq++
		finished = append(finished, done{id: m.it.id, seq: seq, outcome: m.res.Outcome, size: len(lines) - from})
	}
	text, off := string(lines), 0
	// Kept for the next batch: nothing holds on to them past this one
	// (the database, results.jsonl and the fleet's acks copy the lines).
	j.res.lines, j.res.done = lines, finished
	for i := range finished {
		finished[i].line = text[off : off+finished[i].size]
		off += finished[i].size
	}
	marks := j.res.marks()
	if len(finished) > 0 {
		marks[metaSeq] = seq
	}
	if j.warc != nil && (len(finished) > 0 || robots) {
		mark, err := j.warc.sync()
		if err != nil {
			return err
		}
		marks[metaWARCOff], marks[metaWARCFile] = mark.off, int64(mark.index)
	}
	var founds []*found
	for _, m := range batch {
		if m.found != nil {
			founds = append(founds, m.found)
		}
	}
	var added foundCount
	var also func(*sql.Tx) error
	if len(founds) > 0 {
		also = func(tx *sql.Tx) (err error) {
			added, err = j.disc.add(tx, founds)
			return err
		}
	}
	if err := j.st.commitTx(finished, deferred, marks, paused, also); err != nil {
		return fmt.Errorf("crawl: committing to %s: %w", StateFile, err)
	}
	if len(founds) > 0 {
		if !j.disc.fleet { // a fleet worker's finds are the frontier's to hand out
			j.mu.Lock()
			j.total += j.disc.total - j.discBase
			j.discBase = j.disc.total
			j.mu.Unlock()
		}
		j.sched.foundAdded(len(founds), added)
	}
	j.mu.Lock()
	for _, d := range finished {
		j.outcomes[d.outcome]++
		j.doneNow++
	}
	j.mu.Unlock()
	for _, d := range finished {
		if err := j.res.write(d.seq, d.line); err != nil {
			return err
		}
	}
	if err := j.res.sync(); err != nil {
		return err
	}
	if j.fl != nil {
		j.fl.queue(fleetAcks(batch, finished))
	}
	return nil
}

// resultsFile is results.jsonl and how far it is written, with the
// committer's scratch for a batch's lines (flush).
type resultsFile struct {
	f   *os.File
	seq int64 // the last seq written
	off int64 // the file's size
	buf []byte
	// lines and done are flush's, reused batch to batch: made anew, they
	// were 0.7 KB a URL of the 14 KB a fetch allocates (issue 34, part 2).
	lines []byte
	done  []done
}

func (r *resultsFile) write(seq int64, line string) error {
	r.buf = append(r.buf, line...)
	r.seq = seq
	if len(r.buf) >= 256<<10 {
		return r.flushBuf()
	}
	return nil
}

func (r *resultsFile) flushBuf() error {
	n, err := r.f.Write(r.buf)
	r.off += int64(n)
	r.buf = r.buf[:0]
	if err != nil {
		return fmt.Errorf("crawl: writing %s: %w", ResultsFile, err)
	}
	return nil
}

func (r *resultsFile) sync() error {
	if err := r.flushBuf(); err != nil {
		return err
	}
	if err := r.f.Sync(); err != nil {
		return fmt.Errorf("crawl: syncing %s: %w", ResultsFile, err)
	}
	return nil
}

// marks are the meta values saying how far results.jsonl is written.
func (r *resultsFile) marks() map[string]int64 {
	return map[string]int64{metaResultsSeq: r.seq, metaResultsOff: r.off}
}

func (r *resultsFile) Close() error {
	err := r.sync()
	if e := r.f.Close(); err == nil {
		err = e
	}
	return err
}

// reconcile brings results.jsonl and the WARC files in line with the database
// after whatever ended the last run: each file is cut back to the size the
// database recorded, and the results of URLs committed since are written.
func (j *Job) reconcile() error {
	get := func(k string) int64 {
		v, err := j.st.meta(k)
		if err != nil && j.opts.Logger != nil {
			j.opts.Logger.Warn("crawl: reading state", "key", k, "error", err)
		}
		return v
	}
	rseq, roff, seq := get(metaResultsSeq), get(metaResultsOff), get(metaSeq)
	wmark := warcMark{index: int(get(metaWARCFile)), off: get(metaWARCOff)}
	f, err := os.OpenFile(filepath.Join(j.dir, ResultsFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	j.res = &resultsFile{f: f, seq: rseq, off: roff}
	if fi, err := f.Stat(); err == nil && fi.Size() < roff {
		return fmt.Errorf("crawl: %s is shorter (%d bytes) than the job recorded (%d): was it edited?", ResultsFile, fi.Size(), roff)
	}
	if err := f.Truncate(roff); err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	if _, err := f.Seek(roff, 0); err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	n := 0
	err = j.st.unwritten(rseq, func(s int64, line string) error {
		n++
		return j.res.write(s, line)
	})
	if err != nil {
		return fmt.Errorf("crawl: reading state: %w", err)
	}
	if j.res.seq != seq && seq != 0 {
		return fmt.Errorf("crawl: %s: results end at %d, the job at %d", StateFile, j.res.seq, seq)
	}
	if err := j.res.sync(); err != nil {
		return err
	}
	if n > 0 || roff == 0 {
		if err := j.st.commit(nil, nil, j.res.marks()); err != nil {
			return fmt.Errorf("crawl: %w", err)
		}
		if n > 0 && j.opts.Logger != nil {
			j.opts.Logger.Info("crawl: wrote results committed before the last run ended", "lines", n)
		}
	}
	if j.opts.Bodies == BodiesWARC {
		const info = "software: polite\r\nformat: WARC File Format 1.1\r\nconformsTo: http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\n"
		gz, err := j.warcGzip()
		if err != nil {
			return err
		}
		max := j.opts.WARCMaxSize
		if max == 0 {
			max = DefaultWARCMaxSize
		}
		if j.warc, err = openWARC(j.dir, wmark, gz, max, info); err != nil {
			return err
		}
	}
	return nil
}

// warcGzip says whether the job's WARC files are gzipped: as the job was
// first run (a job from before gzip, with a bodies.warc, stays
// uncompressed), else as Options.WARCPlain says, recorded for the reruns.
func (j *Job) warcGzip() (bool, error) {
	v, err := j.st.meta(metaWARCGzip)
	if err != nil {
		return false, fmt.Errorf("crawl: reading %s: %w", StateFile, err)
	}
	switch v {
	case 1:
		return true, nil
	case 2:
		return false, nil
	}
	gz := !j.opts.WARCPlain
	if _, err := os.Stat(filepath.Join(j.dir, WARCName(0, false))); err == nil {
		gz = false
	}
	v = 2
	if gz {
		v = 1
	}
	if err := j.st.commit(nil, nil, map[string]int64{metaWARCGzip: v}); err != nil {
		return false, fmt.Errorf("crawl: %w", err)
	}
	return gz, nil
}
