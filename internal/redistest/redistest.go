// Package redistest starts a real redis-server on a free loopback port for
// a test, and stops it when the test ends.
package redistest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/polite-go/polite/internal/redisproc"
)

// Server is a redis-server a test started.
type Server struct {
	*redisproc.Server
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
	s, err := redisproc.Run(bin, t.TempDir(), args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Kill)
	return &Server{s}
}

// Restart starts the server again on the same port, empty.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if err := s.Server.Restart(); err != nil {
		t.Fatal(err)
	}
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
