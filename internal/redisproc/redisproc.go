// Package redisproc runs a real redis-server on a free loopback port,
// nothing persisted: for tests (internal/redistest wraps it) and for the
// live benchmark's fleet rows (internal/politeness), which the CLI builds
// in, so it does not import package testing.
package redisproc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Server is a running redis-server.
type Server struct {
	Addr string

	bin  string
	args []string

	mu  sync.Mutex // guards cmd
	cmd *exec.Cmd
}

// Run runs bin (a redis-server) on a free 127.0.0.1 port with nothing
// persisted and its files in dir, and returns once it answers PING; the
// caller Kills it.
func Run(bin, dir string, args ...string) (*Server, error) {
	s := &Server{bin: bin}
	var last error
	for range 5 { // a free port may be taken before redis binds it
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		s.args = append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port),
			"--save", "", "--appendonly", "no", "--dir", dir}, args...)
		if last = s.start(); last == nil {
			return s, nil
		}
	}
	return nil, fmt.Errorf("redis-server did not start: %w", last)
}

// start runs the server and waits until it answers.
func (s *Server) start() error {
	cmd := exec.Command(s.bin, s.args...)
	if err := cmd.Start(); err != nil {
		return err
	}
	if !ready(s.Addr, 5*time.Second) {
		cmd.Process.Kill()
		cmd.Wait()
		return fmt.Errorf("redis-server on %s did not answer", s.Addr)
	}
	s.mu.Lock()
	s.cmd = cmd
	s.mu.Unlock()
	return nil
}

// Kill stops the server at once (SIGKILL); its data is gone.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd := s.cmd
	s.cmd = nil
	s.mu.Unlock()
	if cmd != nil {
		cmd.Process.Kill()
		cmd.Wait()
	}
}

// Restart starts the server again on the same port, empty.
func (s *Server) Restart() error {
	s.Kill()
	return s.start()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ready reports whether a PING at addr is answered within d.
func ready(addr string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			c.SetDeadline(time.Now().Add(time.Second))
			fmt.Fprint(c, "PING\r\n")
			line, err := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if err == nil && strings.HasPrefix(line, "+PONG") {
				return true
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// Command sends an inline command (INFO, FLUSHALL, ...) and returns its
// reply: a bulk string's body, or the status or integer line; an error
// reply is an error. The whole exchange is bounded by timeout.
func (s *Server) Command(cmd string, timeout time.Duration) (string, error) {
	c, err := net.DialTimeout("tcp", s.Addr, min(timeout, time.Second))
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := fmt.Fprintf(c, "%s\r\n", cmd); err != nil {
		return "", err
	}
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil {
		return "", err
	}
	switch {
	case strings.HasPrefix(line, "-"):
		return "", errors.New("redis " + cmd + ": " + strings.TrimSpace(line[1:]))
	case !strings.HasPrefix(line, "$"):
		return strings.TrimSpace(line), nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil || n < 0 {
		return "", fmt.Errorf("redis %s: reply %q", cmd, line)
	}
	b := make([]byte, n+2)
	if _, err := io.ReadFull(br, b); err != nil {
		return "", err
	}
	return string(b[:n]), nil
}
