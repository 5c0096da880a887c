package crawl

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// metaRequest marks the method and body a job was first run with (see
// requestMark).
const metaRequest = "request"

// newRequest builds the request of it's next attempt to target: the job's
// method and body, or a GET after a redirect that turned it into one.
func (j *Job) newRequest(ctx context.Context, it *item, target string) (*http.Request, error) {
	method := j.method()
	var body io.Reader
	if it.asGet {
		method = http.MethodGet
	} else if j.opts.Body != nil {
		body = bytes.NewReader(j.opts.Body) // NewRequest sets GetBody: a retry sends it again
	}
	return http.NewRequestWithContext(ctx, method, target, body)
}

// method is the job's request method.
func (j *Job) method() string {
	if j.opts.Method == "" {
		return http.MethodGet
	}
	return j.opts.Method
}

// redirectsAsGet reports whether a redirect with this status turns the
// job's requests into GETs without a body (RFC 9110, section 15.4: what
// user agents do for 301 and 302 with POST, and 303 always).
func (j *Job) redirectsAsGet(status int) bool {
	switch j.method() {
	case http.MethodGet, http.MethodHead:
		return false
	}
	return status == http.StatusMovedPermanently || status == http.StatusFound || status == http.StatusSeeOther
}

// requestMark is the mark of a method and body: the first 8 bytes of the
// SHA-256 of both. Zero means GET without a body, as a job made before
// methods existed was fetched.
func requestMark(method string, body []byte) int64 {
	if method == http.MethodGet && body == nil {
		return 0
	}
	h := sha256.New()
	io.WriteString(h, method)
	h.Write([]byte{0})
	h.Write(body)
	if body == nil {
		h.Write([]byte{1}) // no body is not an empty one
	}
	return int64(binary.BigEndian.Uint64(h.Sum(nil)))
}

// ErrRequestChanged is returned (wrapped) by CheckRequest and Run for a
// job run with a method or body other than its first run's.
var ErrRequestChanged = errors.New("crawl: another method or body than the job's")

// requestChanged is CheckRequest's refusal: errors.Is(err,
// ErrRequestChanged) matches it.
type requestChanged string

func (e requestChanged) Error() string        { return string(e) }
func (e requestChanged) Is(target error) bool { return target == ErrRequestChanged }

// CheckRequest refuses to run a job with a method or body other than the
// one it was first run with (ErrRequestChanged): its results would mix two
// jobs; or keeping its bodies elsewhere (Options.Bodies; a
// *BodiesChangedError, matching ErrBodiesChanged). The first run records
// them. Run checks it too; a caller checks it first to refuse before
// loading a list into the job or saying anything of it.
//
// It also refuses a job run without a Frontier on a fleet worker's
// directory (ErrFleetDir): its URLs are leased from the fleet's frontier,
// and a run of its own would fetch them outside the fleet's budgets and
// give the frontier no result, so that other workers fetch them again.
func (j *Job) CheckRequest() error {
	if err := j.checkFleetDir(); err != nil {
		return err
	}
	if err := j.checkRequest(); err != nil {
		return err
	}
	return j.checkBodies()
}

// ErrFleetDir is CheckRequest's error for a job run without a Frontier on
// a fleet worker's directory (the mirror of a fleet worker given a job's).
var ErrFleetDir = errors.New("crawl: the directory is a fleet worker's (its URLs are leased from a fleet's frontier): run it with its fleet (--redis and --fleet), or use another directory")

func (j *Job) checkFleetDir() error {
	if j.opts.Frontier != nil {
		return nil
	}
	id, err := j.st.meta(metaFleet)
	if err != nil {
		return fmt.Errorf("crawl: reading state: %w", err)
	}
	leased := 0
	if id == 0 {
		if err := j.st.db.QueryRow(`SELECT count(*) FROM leases`).Scan(&leased); err != nil {
			return fmt.Errorf("crawl: reading state: %w", err)
		}
	}
	if id != 0 || leased > 0 {
		return ErrFleetDir
	}
	return nil
}

func (j *Job) checkRequest() error {
	want := requestMark(j.method(), j.opts.Body)
	var v int64
	err := j.st.db.QueryRow(`SELECT value FROM meta WHERE key = ?`, metaRequest).Scan(&v)
	switch {
	case err == sql.ErrNoRows:
		tx, err := j.st.db.Begin()
		if err != nil {
			return fmt.Errorf("crawl: %w", err)
		}
		defer tx.Rollback()
		if err := setMeta(tx, metaRequest, want); err != nil {
			return fmt.Errorf("crawl: %w", err)
		}
		return tx.Commit()
	case err != nil:
		return fmt.Errorf("crawl: reading state: %w", err)
	case v != want:
		return requestChanged(fmt.Sprintf("crawl: %s was fetched with another method or body than %s %s; use a new directory for a different request (or the same method and body to resume)",
			j.dir, j.method(), bodyDesc(j.opts.Body)))
	}
	return nil
}

// bodyDesc describes a body for a message, never quoting it (it may hold
// secrets).
func bodyDesc(b []byte) string {
	if b == nil {
		return "without a body"
	}
	return fmt.Sprintf("with a %d-byte body", len(b))
}
