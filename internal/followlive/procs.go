package followlive

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Proc is one process of the built CLI (or another program), its
// standard output and error in dir/name.out and dir/name.err.
type Proc struct {
	Name string
	Args []string
	// Wall is from start to exit, CPU its user + system time and MaxRSS
	// its peak resident set, once it has exited. MaxRSS is the process's
	// own VmHWM (/proc/PID/status), read every 20 ms while it runs: Go
	// starts a child with vfork, and Linux counts the parent's resident
	// set at the exec in the child's rusage ru_maxrss, so ru_maxrss of a
	// child of this (large) test process says the test's size, not the
	// child's (a 1M-page crawl measured 361 MiB so, 149 MiB by GNU time).
	// ru_maxrss is the fallback when /proc cannot be read.
	Wall   time.Duration
	CPU    time.Duration
	MaxRSS int64 // bytes
	hwm    atomic.Int64
	stopHW chan struct{}
	hwDone chan struct{}
	Start  time.Time
	End    time.Time

	cmd      *exec.Cmd
	out, err *os.File
	waited   bool
	waitErr  error
}

// start runs bin with args, in its own process group.
func start(ctx context.Context, bin, dir, name string, args ...string) (*Proc, error) {
	p := &Proc{Name: name, Args: args}
	var err error
	if p.out, err = os.Create(filepath.Join(dir, name+".out")); err != nil {
		return nil, err
	}
	if p.err, err = os.Create(filepath.Join(dir, name+".err")); err != nil {
		p.out.Close()
		return nil, err
	}
	fmt.Fprintf(p.err, "# %s %s\n", bin, strings.Join(args, " "))
	p.cmd = exec.CommandContext(ctx, bin, args...)
	p.cmd.Env = cleanEnv()
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.err
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p.cmd.Cancel = func() error { return syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) }
	p.cmd.WaitDelay = 5 * time.Second
	p.Start = time.Now()
	if err := p.cmd.Start(); err != nil {
		p.out.Close()
		p.err.Close()
		return nil, err
	}
	p.watchRSS()
	return p, nil
}

// watchRSS starts watching the started process's VmHWM (see MaxRSS).
func (p *Proc) watchRSS() {
	p.stopHW, p.hwDone = make(chan struct{}), make(chan struct{})
	go p.watchHWM()
}

// watchHWM keeps the process's VmHWM, as read from /proc, until stopHW.
func (p *Proc) watchHWM() {
	defer close(p.hwDone)
	path := fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, err := os.ReadFile(path); err == nil {
			if kb := vmHWM(b); kb > 0 {
				p.hwm.Store(kb * 1024)
			}
		}
		select {
		case <-p.stopHW:
			return
		case <-tick.C:
		}
	}
}

// vmHWM reads the VmHWM line of a /proc/PID/status, in kB (0 if none).
func vmHWM(status []byte) int64 {
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

// Wait waits for the process to end and records its figures. An exit
// status of 4 (a crawl finished with some URLs not ok: 404s, robots
// disallowed) is no error.
func (p *Proc) Wait() error {
	if p.waited {
		return p.waitErr
	}
	p.waited = true
	err := p.cmd.Wait()
	p.End = time.Now()
	if p.stopHW != nil {
		close(p.stopHW)
		<-p.hwDone
	}
	p.Wall = p.End.Sub(p.Start)
	if st := p.cmd.ProcessState; st != nil {
		p.CPU = st.UserTime() + st.SystemTime()
		if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
			p.MaxRSS = ru.Maxrss * 1024 // kilobytes on Linux
		}
		if hw := p.hwm.Load(); hw > 0 {
			p.MaxRSS = hw
		}
	}
	p.out.Close()
	p.err.Close()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 4 {
		err = nil
	}
	if err != nil {
		err = fmt.Errorf("%s: %w: %s", p.Name, err, lastLine(p.Stderr()))
	}
	p.waitErr = err
	return err
}

// Kill sends SIGKILL to the process (and only to it: its group is its
// own) and waits for it.
func (p *Proc) Kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.Wait()
}

// Stderr is what the process wrote to its standard error.
func (p *Proc) Stderr() string {
	b, _ := os.ReadFile(p.err.Name())
	return string(b)
}

// Stdout is what the process wrote to its standard output.
func (p *Proc) Stdout() string {
	b, _ := os.ReadFile(p.out.Name())
	return string(b)
}

// run starts bin with args and waits for it.
func run(ctx context.Context, bin, dir, name string, args ...string) (*Proc, error) {
	p, err := start(ctx, bin, dir, name, args...)
	if err != nil {
		return nil, err
	}
	return p, p.Wait()
}

// Testbed is a `polite testbed --site` process serving on one loopback
// address, routed by Host header.
type Testbed struct {
	Addr string // 127.0.0.1:PORT
	Log  string // its --access-log
	// Ready is how long it took from start to listening (the site's
	// generation, mostly).
	Ready time.Duration
	Proc  *Proc

	done chan struct{}
}

// listenRE finds the address in testbed's "listening on ADDR, routed by
// Host header" line.
var listenRE = regexp.MustCompile(`^listening on (127\.0\.0\.1:[0-9]+),`)

// startTestbed runs `polite testbed --site site --addr 127.0.0.1:0
// --access-log dir/name.log` (and extra flags) and waits, within wait,
// for the line that names its address.
func startTestbed(ctx context.Context, bin, dir, name, site string, wait time.Duration, extra ...string) (*Testbed, error) {
	log := filepath.Join(dir, name+".log")
	args := append([]string{"testbed", "--site", site, "--addr", "127.0.0.1:0", "--access-log", log}, extra...)
	p := &Proc{Name: name, Args: args}
	errf, err := os.Create(filepath.Join(dir, name+".err"))
	if err != nil {
		return nil, err
	}
	outf, err := os.Create(filepath.Join(dir, name+".out"))
	if err != nil {
		errf.Close()
		return nil, err
	}
	p.out, p.err = outf, errf
	fmt.Fprintf(errf, "# %s %s\n", bin, strings.Join(args, " "))
	p.cmd = exec.CommandContext(ctx, bin, args...)
	p.cmd.Env = cleanEnv()
	p.cmd.Stderr = errf
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p.cmd.Cancel = func() error { return syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) }
	p.cmd.WaitDelay = 5 * time.Second
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.Start = time.Now()
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("followlive: testbed: %w", err)
	}
	p.watchRSS()
	tb := &Testbed{Log: log, Proc: p, done: make(chan struct{})}
	found := make(chan string, 1)
	copied := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			fmt.Fprintln(outf, sc.Text())
			if m := listenRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		io.Copy(outf, stdout)
		close(copied)
	}()
	go func() {
		<-copied
		close(tb.done)
	}()
	select {
	case tb.Addr = <-found:
		tb.Ready = time.Since(p.Start)
		return tb, nil
	case <-tb.done:
		p.Wait()
		return nil, fmt.Errorf("followlive: testbed exited: %s", lastLine(p.Stderr()))
	case <-time.After(wait):
		tb.Stop()
		return nil, fmt.Errorf("followlive: testbed named no address within %v", wait)
	}
}

// Stop ends the testbed with SIGINT (it prints its per-host table and
// exits), or SIGKILL after 20 s, and waits for it; the access log is
// complete then.
func (tb *Testbed) Stop() {
	p := tb.Proc
	if p.waited {
		return
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-tb.done:
	case <-time.After(20 * time.Second):
		p.cmd.Process.Signal(syscall.SIGKILL)
	}
	p.Wait()
}

// sqlite runs one query against a job's state.db with the sqlite3 CLI,
// read-only, and returns its output.
func sqlite(ctx context.Context, db, query string) (string, error) {
	bin, err := exec.LookPath("sqlite3")
	if err != nil {
		return "", errors.New("sqlite3 not found")
	}
	out, err := exec.CommandContext(ctx, bin, "-readonly", db, query).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("sqlite3: %v: %s", err, lastLine(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

// cleanEnv is this process's environment without proxy settings: every
// process talks to loopback servers directly (wget through the one named
// by its -e http_proxy).
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToLower(k) {
		case "http_proxy", "https_proxy", "all_proxy", "no_proxy":
			continue
		}
		env = append(env, kv)
	}
	return env
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// loadAvg is /proc/loadavg's three averages.
func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
