package guard

import (
	"context"
	"time"
)

// Level names a level of the hierarchy. A request needs a yes from every
// level in play; a refusal at any of them changes none.
type Level int

// The levels, from the narrowest to the widest.
const (
	Identity Level = iota // the user, else the client's address prefix
	Tenant                // the user's tenant (organisation, account)
	Global                // everyone behind this guard
)

// NumLevels is the number of levels.
const NumLevels = 3

var levelNames = [NumLevels]string{"identity", "tenant", "global"}

// String returns the level's name.
func (l Level) String() string {
	if l >= 0 && l < NumLevels {
		return levelNames[l]
	}
	return "unknown"
}

// Store keeps the levels' buckets. Decide runs one admission for every
// level of r at once: it takes r.Cost tokens from all of them when each has
// them, and changes nothing otherwise. A Store is safe for concurrent use.
//
// The guard checks cost against every level's burst before it asks, so a
// Store never sees a request that can never pass.
type Store interface {
	Decide(ctx context.Context, r *Request, d *Decision) error
}

// Request is one admission asked of a Store. Its slices belong to the
// guard and are valid only during Decide.
type Request struct {
	// Cost is the tokens the request takes from each level in play; at
	// least 1.
	Cost int64
	// Tag is what all the request's keys share in a store that places
	// keys (a Redis Cluster hash tag): the tenant, else the identity.
	Tag []byte
	// Levels are the buckets asked; a level with a nil Key is not in play.
	Levels [NumLevels]Bucket
}

// Bucket names one level's bucket and its settings.
type Bucket struct {
	// Key names the bucket; it starts with a byte naming the level ('i',
	// 't' or 'g') and is unique across levels.
	Key []byte
	// Burst is the capacity in tokens; Interval the span one token covers
	// (1/rate, rounded up to the nanosecond).
	Burst    int64
	Interval time.Duration
}

// Decision is a Store's answer.
type Decision struct {
	// Allowed: every level in play had the tokens, and gave them.
	Allowed bool
	// Debt is each level's state after the decision (before it, when
	// refused): how far ahead of now its bucket is full again. A level
	// holds Burst - Debt/Interval tokens.
	Debt [NumLevels]time.Duration
	// Interval is the span per token each level's arithmetic used: the
	// request's, or coarser when the store counts in coarser units (the
	// Redis store counts microseconds).
	Interval [NumLevels]time.Duration
}
