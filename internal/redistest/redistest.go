// Package redistest starts a real redis-server on a free loopback port for
// a test, and stops it when the test ends.
package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a redis-server a test started.
type Server struct {
	Addr string

	bin  string
	args []string

	mu  sync.Mutex // guards cmd
	cmd *exec.Cmd
}

// Start runs redis-server on 127.0.0.1 with nothing persisted and returns
// its address. Without a redis-server binary the test is skipped, or fails
// under CI=true (where `make test` has installed it).
func Start(t testing.TB, args ...string) string {
	t.Helper()
	return StartServer(t, args...).Addr
}

// StartServer is Start, returning the server so the test can kill it and
// start it again.
func StartServer(t testing.TB, args ...string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server not found (CI=true): %v", err)
		}
		t.Skipf("redis-server not found: %v (apt-get install redis-server)", err)
	}
	s := &Server{bin: bin}
	for range 5 {
		port := freePort(t)
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		s.args = append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port),
			"--save", "", "--appendonly", "no", "--dir", t.TempDir()}, args...)
		if s.start() == nil {
			t.Cleanup(s.Kill)
			return s
		}
	}
	t.Fatal("redis-server did not start")
	return nil
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
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Kill()
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
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

// StartCluster runs a Redis Cluster of n masters (no replicas) on loopback
// and returns their addresses, once every slot is served.
func StartCluster(t testing.TB, n int) []string {
	t.Helper()
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = StartServer(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "2000").Addr
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("redis-cli not found: %v", err)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		out, err := exec.Command(cli, "-h", "127.0.0.1", "-p", strings.Split(addrs[0], ":")[1], "cluster", "info").Output()
		if err == nil && strings.Contains(string(out), "cluster_state:ok") {
			return addrs
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the Redis Cluster did not come up")
	return nil
}
