package redisstore

import "github.com/polite-go/polite/adaptive"

// Adaptive tunes each host's rate for the whole fleet, in Redis, the way
// TCP and AWS's adaptive retry mode do (AIMD): a wave of throttles (the
// answers to requests sent before the first of them was heard, whichever
// workers sent them) cuts the rate once, by Backoff; while demand presses
// on the rate (the host's bucket is empty when an answer comes), it grows
// by Growth of itself per second. A rate nobody uses does not grow.
//
// It is not polite's own controller (package adaptive), which reads
// capacity from the whole stream of one client's answers: a fleet's
// stream is spread over its workers, and one script per answer keeps only
// what AIMD needs. The rate starts at the host's Limits.Rate (at Max when
// that is unlimited).
type Adaptive struct {
	// Min and Max bound the rate (adaptive.DefaultMin and DefaultMax if
	// zero).
	Min, Max float64
	// Backoff multiplies the rate on a throttle wave (0.5 if zero).
	Backoff float64
	// Growth is the rate's rise per second, as a fraction of it, while
	// demand presses on it (0.25 if zero: from 5 to 20 req/s in under 6 s).
	Growth float64
}

func (a Adaptive) withDefaults() Adaptive {
	if a.Min <= 0 {
		a.Min = adaptive.DefaultMin
	}
	if a.Max <= 0 {
		a.Max = adaptive.DefaultMax
	}
	if a.Backoff <= 0 || a.Backoff >= 1 {
		a.Backoff = adaptive.DefaultBackoff
	}
	if a.Growth <= 0 {
		a.Growth = 0.25
	}
	a.Max = max(a.Max, a.Min)
	return a
}

// adaptiveArgs are the report script's AIMD arguments.
func (s *Store) adaptiveArgs() []any {
	if s.o.Adaptive == nil {
		return []any{0, 0, 0, 0, 0}
	}
	a := s.o.Adaptive.withDefaults()
	return []any{1, a.Min, a.Max, a.Backoff, a.Growth}
}
