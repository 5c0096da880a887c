package politeness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/polite-go/polite/internal/redisproc"
)

// RedisBinary finds redis-server on PATH. Its absence is an error: a fleet
// row cannot run without it (make deps installs it).
func RedisBinary() (string, error) {
	p, err := exec.LookPath("redis-server")
	if err != nil {
		return "", errors.New("politeness: redis-server not found (apt-get install redis-server)")
	}
	return p, nil
}

// redisProc is a redis-server a fleet run shares: on a free loopback port,
// nothing persisted, its files under its own directory.
type redisProc struct {
	srv  *redisproc.Server
	addr string
}

// startRedis runs bin on a free 127.0.0.1 port with its files (and its
// log) in dir, and returns once it answers PING.
func startRedis(ctx context.Context, bin, dir string) (*redisProc, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	srv, err := redisproc.Run(bin, dir, "--logfile", filepath.Join(dir, "redis.log"))
	if err != nil {
		return nil, fmt.Errorf("politeness: %w", err)
	}
	return &redisProc{srv: srv, addr: srv.Addr}, nil
}

// url is the --redis URL of the server.
func (r *redisProc) url() string { return "redis://" + r.addr + "/0" }

// command sends an inline command and returns the whole reply: a bulk
// string's body, or the status line.
func (r *redisProc) command(cmd string) (string, error) {
	return r.srv.Command(cmd, 2*time.Second)
}

// redisStats is what a fleet's Redis did over a run.
type redisStats struct {
	// Scripts are the EVAL and EVALSHA calls: the scripts workers ran.
	Scripts int64
	// Commands are every command it answered, those scripts called
	// included (INFO commandstats counts both).
	Commands int64
	// CPU is the server's CPU time, user and system, in seconds.
	CPU float64
}

// stats reads INFO commandstats and cpu; info is the server's own text.
func (r *redisProc) stats() (st redisStats, info string, err error) {
	info, err = r.command("INFO commandstats cpu")
	if err != nil {
		return st, "", err
	}
	for line := range strings.Lines(info) {
		name, val, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch name {
		case "used_cpu_user", "used_cpu_sys":
			f, _ := strconv.ParseFloat(val, 64)
			st.CPU += f
			continue
		}
		cmd, ok := strings.CutPrefix(name, "cmdstat_")
		if !ok {
			continue
		}
		// cmdstat_evalsha:calls=1234,usec=5678,usec_per_call=4.60,...
		calls, _, _ := strings.Cut(strings.TrimPrefix(val, "calls="), ",")
		n, _ := strconv.ParseInt(calls, 10, 64)
		st.Commands += n
		if cmd == "eval" || cmd == "evalsha" {
			st.Scripts += n
		}
	}
	return st, info, nil
}

// stop ends the server at once: nothing of it is kept.
func (r *redisProc) stop() { r.srv.Kill() }
