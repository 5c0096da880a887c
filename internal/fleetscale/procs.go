package fleetscale

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/polite-go/polite/internal/redisproc"
)

// Redis is a redis-server of the measurement's own, on a free loopback
// port, nothing persisted.
type Redis struct {
	srv *redisproc.Server
}

// StartRedis runs bin with its files and log in dir.
func StartRedis(bin, dir string) (*Redis, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	srv, err := redisproc.Run(bin, dir, "--logfile", filepath.Join(dir, "redis.log"))
	if err != nil {
		return nil, fmt.Errorf("fleetscale: %w", err)
	}
	return &Redis{srv: srv}, nil
}

// URL is the --redis URL of the server.
func (r *Redis) URL() string { return "redis://" + r.srv.Addr + "/0" }

// Stop kills the server.
func (r *Redis) Stop() { r.srv.Kill() }

// Do sends an inline command and returns the reply: a bulk string's body,
// or the status or integer line.
func (r *Redis) Do(cmd string) (string, error) {
	return r.srv.Command(cmd, 30*time.Second) // FLUSHALL of millions of keys takes a while
}

// Info is what INFO says of the server at one moment.
type Info struct {
	UsedMemory int64   // used_memory, bytes
	CPU        float64 // used_cpu_user + used_cpu_sys, seconds
	// Scripts are the EVAL/EVALSHA calls and ScriptUsec the server time
	// they took (with the commands they called); Commands and Usec count
	// every command, a script's inner calls included.
	Scripts, ScriptUsec, Commands, Usec int64
	Keys                                int64 // db0's keys
}

// Info reads INFO memory, cpu, commandstats and keyspace.
func (r *Redis) Info() (Info, error) {
	var in Info
	text, err := r.Do("INFO memory cpu commandstats keyspace")
	if err != nil {
		return in, err
	}
	for line := range strings.Lines(text) {
		name, val, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch name {
		case "used_memory":
			in.UsedMemory, _ = strconv.ParseInt(val, 10, 64)
		case "used_cpu_user", "used_cpu_sys":
			f, _ := strconv.ParseFloat(val, 64)
			in.CPU += f
		case "db0":
			keys, _, _ := strings.Cut(strings.TrimPrefix(val, "keys="), ",")
			in.Keys, _ = strconv.ParseInt(keys, 10, 64)
		}
		cmd, ok := strings.CutPrefix(name, "cmdstat_")
		if !ok {
			continue
		}
		// cmdstat_evalsha:calls=1234,usec=5678,usec_per_call=4.60,...
		var calls, usec int64
		for kv := range strings.SplitSeq(val, ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "calls":
				calls, _ = strconv.ParseInt(v, 10, 64)
			case "usec":
				usec, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		in.Commands += calls
		in.Usec += usec
		if cmd == "eval" || cmd == "evalsha" || cmd == "eval_ro" || cmd == "evalsha_ro" || cmd == "fcall" {
			in.Scripts += calls
			in.ScriptUsec += usec
		}
	}
	return in, nil
}

// Sub is what the server did between before and in.
func (in Info) Sub(before Info) Info {
	return Info{
		UsedMemory: in.UsedMemory - before.UsedMemory, CPU: in.CPU - before.CPU,
		Scripts: in.Scripts - before.Scripts, ScriptUsec: in.ScriptUsec - before.ScriptUsec,
		Commands: in.Commands - before.Commands, Usec: in.Usec - before.Usec,
		Keys: in.Keys - before.Keys,
	}
}

// Proc is a `polite` process.
type Proc struct {
	Name   string
	Args   []string
	cmd    *exec.Cmd
	stderr *os.File
	Wall   time.Duration // from start to exit
	CPU    time.Duration // user + system
	Err    error         // the exit's error, nil for status 0
	start  time.Time
}

// Start runs polite with args, its standard output and error into
// dir/name.out and dir/name.err.
func Start(ctx context.Context, polite, dir, name string, args ...string) (*Proc, error) {
	p := &Proc{Name: name, Args: args}
	out, err := os.Create(filepath.Join(dir, name+".out"))
	if err != nil {
		return nil, err
	}
	p.stderr, err = os.Create(filepath.Join(dir, name+".err"))
	if err != nil {
		out.Close()
		return nil, err
	}
	p.cmd = exec.CommandContext(ctx, polite, args...)
	p.cmd.Stdout, p.cmd.Stderr = out, p.stderr
	p.cmd.WaitDelay = 5 * time.Second
	p.start = time.Now()
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	return p, nil
}

// Wait waits for the process to end and records its wall and CPU time.
func (p *Proc) Wait() error {
	p.Err = p.cmd.Wait()
	p.Wall = time.Since(p.start)
	if st := p.cmd.ProcessState; st != nil {
		p.CPU = st.UserTime() + st.SystemTime()
	}
	p.cmd.Stdout.(*os.File).Close()
	p.stderr.Close()
	if p.Err != nil {
		return fmt.Errorf("%s: %w: %s", p.Name, p.Err, lastLine(p.Stderr()))
	}
	return nil
}

// Stderr is what the process wrote to its standard error.
func (p *Proc) Stderr() string {
	b, _ := os.ReadFile(p.stderr.Name())
	return string(b)
}

// Stdout is what the process wrote to its standard output.
func (p *Proc) Stdout() string {
	b, _ := os.ReadFile(p.cmd.Stdout.(*os.File).Name())
	return string(b)
}

// Run starts polite with args and waits for it.
func Run(ctx context.Context, polite, dir, name string, args ...string) (*Proc, error) {
	p, err := Start(ctx, polite, dir, name, args...)
	if err != nil {
		return nil, err
	}
	return p, p.Wait()
}

// selfCPU is this process's CPU time so far, user and system: the
// in-process servers' share of the machine.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
