package polite

import (
	"errors"
	"fmt"
	"time"
)

// ErrBlocked is returned (wrapped in *BlockedError) for requests to a host
// that answered with a soft block.
var ErrBlocked = errors.New("polite: host blocked us")

// ErrPaused is returned (wrapped in *PausedError) for requests to a host
// paused for longer than MaxRetryAfter.
var ErrPaused = errors.New("polite: host paused")

// ErrRobotsUnreachable is returned (wrapped, with the *robots.DisallowedError
// of robots.txt's implied "Disallow: /") for a URL whose host's robots.txt
// could not be fetched (5xx, 429, no answer): it is disallowed for now, until
// the robots cache fetches the file again (RFC 9309 §2.3.1.3), not for good.
var ErrRobotsUnreachable = errors.New("polite: robots.txt unreachable")

// ErrUnsupportedScheme is returned (wrapped), before anything is sent, for
// a URL whose scheme is not http or https. Like ErrNoHost it is permanent:
// retrying cannot help (issue 17, defect 8: both were retried as network
// errors, six attempts each).
var ErrUnsupportedScheme = errors.New("polite: unsupported URL scheme (want http or https)")

// BlockedError says which host blocked and how it was recognised.
type BlockedError struct {
	Host   string
	Reason string
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("polite: host %q blocked us (%s)", e.Host, e.Reason)
}

// Unwrap returns ErrBlocked.
func (e *BlockedError) Unwrap() error { return ErrBlocked }

// PausedError says which host is paused, until when, and why.
type PausedError struct {
	Host   string
	Until  time.Time
	Reason Reason
}

func (e *PausedError) Error() string {
	return fmt.Sprintf("polite: host %q paused until %s (%s)", e.Host, e.Until.Format(time.RFC3339), e.Reason)
}

// Unwrap returns ErrPaused.
func (e *PausedError) Unwrap() error { return ErrPaused }

// Error is a request that failed without a response after polite's retries.
type Error struct {
	Host     string
	Attempts int
	Err      error
}

func (e *Error) Error() string {
	return fmt.Sprintf("polite: host %q: %d attempts: %v", e.Host, e.Attempts, e.Err)
}

// Unwrap returns the last attempt's error.
func (e *Error) Unwrap() error { return e.Err }
