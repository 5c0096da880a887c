package redisstore

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// A worker's script calls, whatever their host, are pipelined: while a
// pipeline is out, the calls that come meanwhile queue, and go together
// in the next one (a Cluster client splits it per node). Redis then reads
// and answers many calls per system call, which is most of what a small
// script costs it besides the script itself, and so does the worker. No
// call waits longer than the pipeline in flight plus its own.

// call is one script call waiting for its pipeline.
type call struct {
	script   *redis.Script
	keys     []string
	args     []any
	deadline time.Time
	res      any
	err      error
	done     chan struct{}
}

// pipe queues a Store's script calls.
type pipe struct {
	mu      sync.Mutex
	senders int // callers sending the queue, at most maxSenders
	q       []*call
}

// maxPipeline bounds the calls of one pipeline; maxSenders the pipelines
// out at once (more would only split the queue into smaller ones).
const (
	maxPipeline = 256
	maxSenders  = 2
)

// pipelined runs script on keys with args in the store's next pipeline,
// by deadline, and returns its reply.
func (s *Store) pipelined(deadline time.Time, script *redis.Script, keys []string, args []any) (any, error) {
	c := &call{script: script, keys: keys, args: args, deadline: deadline, done: make(chan struct{})}
	p := &s.pipe
	p.mu.Lock()
	p.q = append(p.q, c)
	if p.senders >= maxSenders {
		p.mu.Unlock()
		<-c.done
		return c.res, c.err
	}
	p.senders++
	p.mu.Unlock()
	for {
		p.mu.Lock()
		n := min(len(p.q), maxPipeline)
		if n == 0 {
			p.senders--
			p.mu.Unlock()
			break
		}
		batch := p.q[:n:n]
		p.q = p.q[n:]
		p.mu.Unlock()
		s.send1(batch)
	}
	<-c.done
	return c.res, c.err
}

// send1 sends one pipeline and answers its calls.
func (s *Store) send1(batch []*call) {
	// The latest deadline of the batch: the earliest would fail every call
	// of it for one that is nearly out of time (a call sent again after a
	// lost reply), and mark the store degraded. Every deadline is at most
	// Options.Timeout after its call began, so none waits past twice that.
	deadline := batch[0].deadline
	for _, c := range batch[1:] {
		if c.deadline.After(deadline) {
			deadline = c.deadline
		}
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var cmds []*redis.Cmd
	if len(batch) == 1 {
		c := batch[0]
		cmds = []*redis.Cmd{c.script.Run(ctx, s.c, c.keys, c.args...)}
	} else {
		pl := s.c.Pipeline()
		cmds = make([]*redis.Cmd, len(batch))
		for i, c := range batch {
			cmds[i] = c.script.EvalSha(ctx, pl, c.keys, c.args...)
		}
		pl.Exec(ctx) // each command holds its own error
	}
	for i, c := range batch {
		c.res, c.err = cmds[i].Result()
		if c.err != nil && len(batch) > 1 && isNoScript(c.err) {
			// Not run: Redis lacks the script (first use, or a restart).
			// Run loads it.
			c.res, c.err = c.script.Run(ctx, s.c, c.keys, c.args...).Result()
		}
		close(c.done)
	}
}

func isNoScript(err error) bool {
	return strings.HasPrefix(err.Error(), "NOSCRIPT")
}
