package proxylive

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/polite-go/polite/internal/politeness"
)

// proxy is a forward proxy process on loopback: `polite proxy` or
// tinyproxy.
type proxy struct {
	cmd  *exec.Cmd
	URL  string // http://127.0.0.1:PORT
	done chan struct{}
	log  string // its stderr
}

// listenRE finds the address in `polite proxy`'s first stderr line,
// "polite proxy: listening on http://127.0.0.1:PORT ...".
var listenRE = regexp.MustCompile(`listening on (http://[^\s,;]+)`)

// listenURL is the proxy's URL in a line of its stderr, when the line
// announces it; only a loopback address counts.
func listenURL(line string) (string, bool) {
	m := listenRE.FindStringSubmatch(line)
	if m == nil {
		return "", false
	}
	u := strings.TrimRight(m[1], "/.")
	host, _, err := net.SplitHostPort(strings.TrimPrefix(u, "http://"))
	if err != nil {
		return "", false
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return "", false
	}
	return u, true
}

// startPolite runs `polite proxy --listen 127.0.0.1:0 args...` with its
// stderr in dir/name.log, and waits for the line that names its address.
func startPolite(bin, dir, name string, args ...string) (*proxy, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	argv := append([]string{"proxy", "--listen", "127.0.0.1:0"}, args...)
	fmt.Fprintf(logf, "# %s %s\n", bin, strings.Join(argv, " "))
	cmd := exec.Command(bin, argv...)
	cmd.Env = cleanEnv()
	cmd.Stdout = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("proxylive: polite proxy: %w", err)
	}
	p := &proxy{cmd: cmd, done: make(chan struct{}), log: logPath}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		announced := false
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logf, line)
			if u, ok := listenURL(line); ok && !announced {
				announced = true
				found <- u
			}
		}
		io.Copy(logf, stderr)
		cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	select {
	case p.URL = <-found:
	case <-p.done:
		return nil, fmt.Errorf("proxylive: polite proxy exited: %s", tail(logPath, 3))
	case <-time.After(15 * time.Second):
		p.stop()
		return nil, fmt.Errorf("proxylive: polite proxy named no address within 15 s: %s", tail(logPath, 3))
	}
	if err := politeness.WaitListen(strings.TrimPrefix(p.URL, "http://"), p.done, 10*time.Second); err != nil {
		p.stop()
		return nil, fmt.Errorf("proxylive: polite proxy: %v", err)
	}
	return p, nil
}

// startTinyproxy runs Debian's tinyproxy in the foreground on a free
// loopback port with a config of ours in dir: loopback clients only, no
// upstream proxy, no Via header, many clients.
func startTinyproxy(bin, dir string) (*proxy, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	addr, err := politeness.FreeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(addr)
	logPath := filepath.Join(dir, "tinyproxy.log")
	conf := filepath.Join(dir, "tinyproxy.conf")
	text := fmt.Sprintf(`Port %s
Listen 127.0.0.1
Timeout 120
MaxClients 1024
Allow 127.0.0.1
DisableViaHeader Yes
LogLevel Error
LogFile %q
`, port, logPath)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-d", "-c", conf)
	cmd.Env = cleanEnv()
	out, err := os.Create(filepath.Join(dir, "tinyproxy.out"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("proxylive: tinyproxy: %w", err)
	}
	p := &proxy{cmd: cmd, URL: "http://" + addr, done: make(chan struct{}), log: logPath}
	go func() { cmd.Wait(); out.Close(); close(p.done) }()
	if err := politeness.WaitListen(addr, p.done, 10*time.Second); err != nil {
		p.stop()
		return nil, fmt.Errorf("proxylive: tinyproxy: %v: %s", err, tail(out.Name(), 3))
	}
	return p, nil
}

// stop ends the proxy with SIGTERM, then its process group with SIGKILL
// after 5 s.
func (p *proxy) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// summary is the last line the proxy wrote (polite proxy's own count of
// what it did, once stopped).
func (p *proxy) summary() string { return tail(p.log, 1) }

// alive reports whether the proxy is still running.
func (p *proxy) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// cleanEnv is this process's environment without proxy settings, so each
// client gets exactly the proxy it is told.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToLower(k) {
		case "http_proxy", "https_proxy", "all_proxy", "no_proxy", "ftp_proxy", "requests_ca_bundle", "curl_ca_bundle", "node_extra_ca_certs", "ssl_cert_file":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// run runs a client to completion within d, its stdout returned and its
// stderr in errPath; the whole process group is killed at the deadline.
func run(ctx context.Context, d time.Duration, env []string, errPath string, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(cleanEnv(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout = &out
	if errPath != "" {
		f, err := os.Create(errPath)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		fmt.Fprintf(f, "# %s %s\n", name, strings.Join(args, " "))
		cmd.Stderr = f
	}
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("%s: killed after %v", name, d)
	}
	return out.Bytes(), err
}

// tail is the last n lines of a file, joined by " | ".
func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// ensure finds bin, installing the Debian package pkg with apt-get when
// it is missing and we are root. A python module is checked with
// /usr/bin/python3 -c 'import MOD' when bin is "python3:MOD".
func ensure(ctx context.Context, bin, pkg string) error {
	present := func() bool {
		if mod, ok := strings.CutPrefix(bin, "python3:"); ok {
			return exec.CommandContext(ctx, python, "-c", "import "+mod).Run() == nil
		}
		_, err := exec.LookPath(bin)
		return err == nil
	}
	if present() {
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("proxylive: %s missing (apt-get install %s)", bin, pkg)
	}
	install := func() error {
		cmd := exec.CommandContext(ctx, "apt-get", "install", "-y", "-qq", "--no-install-recommends", pkg)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("apt-get install %s: %v: %s", pkg, err, lastLine(string(out)))
		}
		return nil
	}
	if err := install(); err != nil {
		if out, uerr := exec.CommandContext(ctx, "apt-get", "update", "-qq").CombinedOutput(); uerr != nil {
			return fmt.Errorf("proxylive: apt-get update: %v: %s", uerr, lastLine(string(out)))
		}
		if err := install(); err != nil {
			return fmt.Errorf("proxylive: %w", err)
		}
	}
	if !present() {
		return fmt.Errorf("proxylive: %s still missing after installing %s", bin, pkg)
	}
	return nil
}

// python is Debian's interpreter, the one python3-scrapy and
// python3-requests are installed for (a pyenv python3 on PATH has neither).
const python = "/usr/bin/python3"

// undiciVersion is the undici installed with npm for the Node client.
const undiciVersion = "7.30.2"

// installUndici puts undici into dir/node_modules with npm.
func installUndici(ctx context.Context, dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "undici", "package.json")); err == nil {
		return nil
	}
	if _, err := exec.LookPath("node"); err != nil {
		return errors.New("proxylive: node not found")
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "install", "--prefix", dir, "--no-audit", "--no-fund", "--silent", "undici@"+undiciVersion)
	cmd.Env = os.Environ() // the registry may need the machine's proxy settings
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("proxylive: npm install undici@%s: %v: %s", undiciVersion, err, lastLine(string(out)))
	}
	return nil
}
