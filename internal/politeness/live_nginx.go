package politeness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/polite-go/polite/testbed"
)

// NginxSite is nginx configured as a rate-limited site on loopback: a
// static 1 KiB page for every path, or a proxy to one testbed backend.
type NginxSite struct {
	// Rate and Burst configure limit_req (requests per second; 0: none).
	Rate, Burst int
	// NoDelay answers beyond the burst at once; without it nginx delays
	// requests over the rate in its queue (up to Burst), and refuses beyond.
	NoDelay bool
	// Conn configures limit_conn: requests in processing at once (0: none).
	Conn int
	// Status is limit_req_status and limit_conn_status; 0 means 503.
	Status int
}

// capacity is what the site serves at most, in requests per second: its
// limit_req rate, or under limit_conn its connections over the backend's
// latency.
func (s NginxSite) capacity(backends []testbed.HostConfig) float64 {
	if s.Rate > 0 {
		return float64(s.Rate)
	}
	if s.Conn > 0 && len(backends) > 0 && backends[0].Latency > 0 {
		return float64(s.Conn) / backends[0].Latency.Seconds()
	}
	return 0
}

// config is nginx.conf for the site, listening on addr, with everything
// (pid, logs, temp files) under prefix.
func (s NginxSite) config(prefix, addr, backend string) string {
	status := s.Status
	if status == 0 {
		status = 503
	}
	var limits strings.Builder
	if s.Rate > 0 {
		fmt.Fprintf(&limits, "limit_req zone=rq burst=%d", s.Burst)
		if s.NoDelay {
			limits.WriteString(" nodelay")
		}
		fmt.Fprintf(&limits, ";\n      limit_req_status %d;\n", status)
	}
	if s.Conn > 0 {
		fmt.Fprintf(&limits, "      limit_conn cn %d;\n      limit_conn_status %d;\n", s.Conn, status)
	}
	serve := "root " + filepath.Join(prefix, "html") + ";\n      try_files /page.html =404;"
	if backend != "" {
		serve = "proxy_pass " + backend + ";"
	}
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;" // workers read the temp prefix, private to root
	}
	rate := max(s.Rate, 1)
	return fmt.Sprintf(`%s
worker_processes 1;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log warn;
events { worker_connections 1024; }
http {
  log_format live '$msec $request_time $status $request_uri';
  access_log off;
  client_body_temp_path %[2]s/tmp/body;
  proxy_temp_path %[2]s/tmp/proxy;
  limit_req_zone $server_port zone=rq:1m rate=%[3]dr/s;
  limit_conn_zone $server_port zone=cn:1m;
  server {
    listen %[4]s;
    access_log %[2]s/access.log live;
    location = /robots.txt { return 404; }
    location / {
      %[5]s      %[6]s
    }
  }
}
`, user, prefix, rate, addr, limits.String(), serve)
}

// nginx is an nginx process serving one site.
type nginx struct {
	*NginxProc
	url string
}

// NginxBinary finds nginx, installing Debian's nginx-light with apt-get
// when it is missing and we are root.
func NginxBinary(ctx context.Context) (string, error) {
	if p, err := exec.LookPath("nginx"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/nginx", "/usr/local/sbin/nginx"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if os.Geteuid() != 0 {
		return "", errors.New("politeness: nginx not found (apt-get install nginx-light)")
	}
	cmd := exec.CommandContext(ctx, "apt-get", "install", "-y", "--no-install-recommends", "nginx-light")
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("politeness: apt-get install nginx-light: %v: %s", err, lastLine(string(out)))
	}
	return "/usr/sbin/nginx", nil
}

// NginxProc is nginx running in the foreground with a prefix of its own
// (pid, logs, temp files, html/page.html), until Stop. The live
// benchmarks here and in internal/proxylive run it.
type NginxProc struct {
	Prefix string
	cmd    *exec.Cmd
	done   chan struct{}
}

// RunNginx prepares prefix (its temp directories and html/page.html, a
// 1 KiB page), writes conf to prefix/nginx.conf, runs nginx with it and
// returns once addr accepts connections.
func RunNginx(ctx context.Context, prefix, conf, addr string) (*NginxProc, error) {
	bin, err := NginxBinary(ctx)
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"html", "tmp/body", "tmp/proxy"} {
		if err := os.MkdirAll(filepath.Join(prefix, d), 0o755); err != nil {
			return nil, err
		}
	}
	page := "<!DOCTYPE html>\n<html><body><p>" + strings.Repeat("polite ", 140) + "</p></body></html>\n"
	if err := os.WriteFile(filepath.Join(prefix, "html", "page.html"), []byte(page), 0o644); err != nil {
		return nil, err
	}
	path := filepath.Join(prefix, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-p", prefix, "-c", path, "-e", filepath.Join(prefix, "error.log"), "-g", "daemon off;")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("nginx: %w", err)
	}
	n := &NginxProc{Prefix: prefix, cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(n.done) }()
	if err := WaitListen(addr, n.done, 10*time.Second); err != nil {
		n.Stop()
		b, _ := os.ReadFile(filepath.Join(prefix, "error.log"))
		return nil, fmt.Errorf("nginx: %v: %s", err, lastLine(string(b)))
	}
	return n, nil
}

// Stop ends nginx gracefully (SIGQUIT, which flushes its log buffer),
// then at once after 5 s.
func (n *NginxProc) Stop() {
	select {
	case <-n.done:
		return
	default:
	}
	n.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-n.done:
	case <-time.After(5 * time.Second):
		syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
		<-n.done
	}
}

// WaitListen waits until addr accepts a connection, the process ends
// (done closes) or d passes.
func WaitListen(addr string, done <-chan struct{}, d time.Duration) error {
	for deadline := time.Now().Add(d); ; {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-done:
			return errors.New("exited")
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("did not listen on %s within %v", addr, d)
		}
	}
}

// startNginx runs nginx serving site on a free loopback port until stop.
func startNginx(ctx context.Context, prefix string, site NginxSite, backend string) (*nginx, error) {
	addr, err := FreeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	p, err := RunNginx(ctx, prefix, site.config(prefix, addr, backend), addr)
	if err != nil {
		return nil, fmt.Errorf("politeness: %w", err)
	}
	return &nginx{NginxProc: p, url: "http://" + addr}, nil
}

// stop stops nginx.
func (n *nginx) stop() { n.Stop() }

// timeline reads the access log into 1-second windows from t0 (arrival =
// $msec - $request_time), each with capacity cap, and the latencies of the
// requests served. 429 and 503 are refusals.
func (n *nginx) timeline(t0 time.Time, capacity float64) ([]testbed.Second, []time.Duration, error) {
	f, err := os.Open(filepath.Join(n.Prefix, "access.log"))
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var secs []testbed.Second
	var lat []time.Duration
	start := float64(t0.UnixNano()) / 1e9
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 4 || fs[3] == "/robots.txt" {
			continue
		}
		end, err1 := strconv.ParseFloat(fs[0], 64)
		rt, err2 := strconv.ParseFloat(fs[1], 64)
		status, err3 := strconv.Atoi(fs[2])
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		i := max(int(end-rt-start), 0)
		for len(secs) <= i {
			secs = append(secs, testbed.Second{Start: time.Duration(len(secs)) * time.Second, Capacity: capacity})
		}
		w := &secs[i]
		w.Arrivals++
		switch status {
		case 429, 503:
			w.Rejected++
		default:
			w.Admitted++
			lat = append(lat, time.Duration(rt*float64(time.Second)))
		}
	}
	return secs, lat, sc.Err()
}

// FreeLoopbackAddr returns a 127.0.0.1 address with a port free just now.
func FreeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
