package redisstore

import (
	"context"
	"fmt"
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
//
// The admit calls and releases a pipeline carries for one node go further:
// merged into one run of the admit script (merge), which loads each host
// in turn. Each of them cost Redis a script call of its own before (the
// arguments' tables, the prelude's functions, TIME); they now share one.
// On a Cluster or a Ring, whose nodes hold hosts by their hash tag, only
// one host's calls are merged.

// call is one script call waiting for its pipeline. An admit call or a
// release (kind 'a' or 'r') is merged with the others its pipeline
// carries for the same Redis node into one run of the admit script
// (merge); any other goes as it is.
type call struct {
	script   *redis.Script // kind 0: the script
	kind     byte
	tag      string // the host key: its keys' hash tag
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
// maxMerged bounds the calls one merged call carries, maxMergedArgs their
// arguments: a run of the script holds Redis for all of them.
const (
	maxPipeline   = 256
	maxSenders    = 2
	maxMerged     = 64
	maxMergedArgs = 4096
)

// pipelined runs c in the store's next pipeline, by deadline, and
// returns its reply.
func (s *Store) pipelined(deadline time.Time, c *call) (any, error) {
	c.deadline, c.done = deadline, make(chan struct{})
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

// A merged call's reply is split among its calls.
type merged struct {
	calls []*call
	cmd   *redis.Cmd
}

// merge groups batch's admit calls and releases into merged calls, each
// for one node: on a single Redis (a Client) any calls, on a Cluster or
// a Ring those of one host (its hash tag names their slot). It returns
// the merged calls and the calls left to go as they are.
func (s *Store) merge(batch []*call) ([][]*call, []*call) {
	_, single := s.c.(*redis.Client)
	var groups [][]*call
	var rest []*call
	open := map[string]int{} // a group still open to more calls, by tag ("" on a single Redis)
	args := map[int]int{}    // the arguments of each group
	for _, c := range batch {
		if c.kind == 0 {
			rest = append(rest, c)
			continue
		}
		tag := ""
		if !single {
			tag = c.tag
		}
		g, ok := open[tag]
		if !ok || len(groups[g]) >= maxMerged || args[g]+len(c.args) > maxMergedArgs {
			g = len(groups)
			groups = append(groups, nil)
			open[tag] = g
		}
		groups[g] = append(groups[g], c)
		args[g] += len(c.args) + 2
	}
	return groups, rest
}

// mergedArgs returns the keys and arguments of one run of the admit
// script carrying calls (see the end of admit.lua): the number of calls,
// the Store's settings (runArgs), then each call's.
func (s *Store) mergedArgs(calls []*call) ([]string, []any) {
	var keys []string
	args := make([]any, 1+nRun)
	a := args[1:]
	args[0] = len(calls)
	a[rnKeepBlocked], a[rnOpenDelay], a[rnCut] = flag(s.o.KeepBlocked), s.br.OpenDelay.Microseconds(), s.cut()
	a[rnBudgetRatio], a[rnBudgetMin], a[rnBudgetWindow] = s.budget.Ratio, s.budget.MinPerSecond, s.budget.Window.Seconds()
	a[rnLeaseTTL], a[rnAdaptive], a[rnCreditLife] = s.lease, flag(s.o.Adaptive != nil), creditLife.Microseconds()
	for _, c := range calls {
		keys = append(keys, c.keys...)
		args = append(args, string(c.kind), len(c.args))
		args = append(args, c.args...)
	}
	return keys, args
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
	groups, rest := s.merge(batch)
	var ms []merged
	var cmds []*redis.Cmd
	piped := len(groups)+len(rest) > 1
	if !piped {
		if len(groups) == 1 {
			keys, args := s.mergedArgs(groups[0])
			ms = []merged{{groups[0], admitScript.Run(ctx, s.c, keys, args...)}}
		} else {
			c := rest[0]
			cmds = []*redis.Cmd{c.script.Run(ctx, s.c, c.keys, c.args...)}
		}
	} else {
		pl := s.c.Pipeline()
		for _, g := range groups {
			keys, args := s.mergedArgs(g)
			ms = append(ms, merged{g, admitScript.EvalSha(ctx, pl, keys, args...)})
		}
		cmds = make([]*redis.Cmd, len(rest))
		for i, c := range rest {
			cmds[i] = c.script.EvalSha(ctx, pl, c.keys, c.args...)
		}
		pl.Exec(ctx) // each command holds its own error
	}
	for _, m := range ms {
		res, err := m.cmd.Result()
		if err != nil && piped && isNoScript(err) {
			// Not run: Redis lacks the script (first use, or a restart).
			// Run loads it.
			keys, args := s.mergedArgs(m.calls)
			res, err = admitScript.Run(ctx, s.c, keys, args...).Result()
		}
		replies, _ := res.([]any)
		if err == nil && len(replies) != len(m.calls) {
			err = fmt.Errorf("a merged call of %d calls got %d replies", len(m.calls), len(replies))
		}
		for i, c := range m.calls {
			if c.err = err; err == nil {
				c.res = replies[i]
			}
			close(c.done)
		}
	}
	for i, c := range rest {
		c.res, c.err = cmds[i].Result()
		if c.err != nil && piped && isNoScript(c.err) {
			c.res, c.err = c.script.Run(ctx, s.c, c.keys, c.args...).Result()
		}
		close(c.done)
	}
}

func isNoScript(err error) bool {
	return strings.HasPrefix(err.Error(), "NOSCRIPT")
}
