package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/frontier_roots.lua
var frontierRootsLua string

var rootsScript = redis.NewScript(frontierRootsLua)

// MaxRoots bounds a frontier's scope roots: the set is one key, in one
// Cluster slot, read whole by every worker that joins.
const MaxRoots = 1_000_000

// maxRoots is MaxRoots, but for tests.
var maxRoots = MaxRoots

// ErrTooManyRoots is wrapped by AddRoots's error when the roots would be
// more than MaxRoots.
var ErrTooManyRoots = errors.New("redisstore: frontier: too many scope roots")

// rootsBatch is how many roots one script call adds at most.
const rootsBatch = 1000

// rootsKey is the key of the scope roots' set. It carries shard 0's hash
// tag, so that on a Cluster it lives in one slot with that shard's keys
// and the roots script touches one slot.
func (f *Frontier) rootsKey() string { return f.o.Prefix + "{f0}:roots" }

// AddRoots adds scope roots to the set the fleet shares (issue 35): a
// worker that enqueues its list adds its seeds' roots, and one that joins
// without a list reads them with Roots, so that every worker follows
// links within the same scope. A root is opaque to the frontier (the
// crawl's spelling of it) and must not be empty. Adding a root the set
// holds changes nothing, so AddRoots is idempotent.
//
// The set holds at most MaxRoots: roots past it are refused with an error
// wrapping ErrTooManyRoots that names the count. Roots go in batches of a
// thousand, each added whole or not at all; on an error the batches
// before it stay added. With WaitAOF set AddRoots returns only once
// Redis has them in its append-only file.
func (f *Frontier) AddRoots(ctx context.Context, roots []string) error {
	rs := slices.Clone(roots)
	slices.Sort(rs)
	rs = slices.Compact(rs)
	if len(rs) > 0 && rs[0] == "" {
		return errors.New("redisstore: frontier: an empty scope root")
	}
	if len(rs) > maxRoots {
		return fmt.Errorf("%w: %d roots, at most %d", ErrTooManyRoots, len(rs), maxRoots)
	}
	key := []string{f.rootsKey()}
	var calls []*fcall
	for b := range slices.Chunk(rs, rootsBatch) {
		args := make([]any, 0, len(b)+1)
		args = append(args, maxRoots)
		for _, r := range b {
			args = append(args, r)
		}
		calls = append(calls, &fcall{script: rootsScript, keys: key, args: args})
	}
	// One batch after another: a batch refused stops those after it.
	for _, c := range calls {
		if err := f.run(ctx, []*fcall{c}, true); err != nil {
			return err
		}
		n, err := c.cmd.Int64()
		if err != nil {
			return fmt.Errorf("redisstore: frontier: roots reply: %w", err)
		}
		if n < 0 {
			return fmt.Errorf("%w: %d roots, at most %d", ErrTooManyRoots, -n, maxRoots)
		}
	}
	return nil
}

// Roots returns the fleet's scope roots (see AddRoots), sorted; none if
// no worker has added any.
func (f *Frontier) Roots(ctx context.Context) ([]string, error) {
	seen := map[string]bool{} // SSCAN may return a member twice
	var cursor uint64
	for {
		c, cancel := context.WithTimeout(ctx, f.o.Timeout)
		ms, next, err := f.c.SScan(c, f.rootsKey(), cursor, "", 1000).Result()
		cancel()
		if err != nil {
			return nil, fmt.Errorf("redisstore: frontier: roots: %w", err)
		}
		for _, m := range ms {
			seen[m] = true
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	roots := make([]string, 0, len(seen))
	for r := range seen {
		roots = append(roots, r)
	}
	slices.Sort(roots)
	return roots, nil
}
