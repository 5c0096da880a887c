package redisproc

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Command reads each kind of reply: a status, an integer, a bulk string,
// and an error reply as an error.
func TestCommand(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server not found (CI=true): %v", err)
		}
		t.Skip("redis-server not found")
	}
	s, err := Run(bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Kill()
	for _, c := range []struct{ cmd, want string }{
		{"SET k v", "+OK"}, {"INCR n", ":1"}, {"GET k", "v"},
	} {
		if got, err := s.Command(c.cmd, time.Second); err != nil || got != c.want {
			t.Errorf("%s = %q, %v; want %q", c.cmd, got, err, c.want)
		}
	}
	if info, err := s.Command("INFO memory", time.Second); err != nil || !strings.Contains(info, "used_memory:") {
		t.Errorf("INFO memory = %.60q, %v", info, err)
	}
	if _, err := s.Command("NOSUCHCOMMAND", time.Second); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Errorf("an error reply: %v", err)
	}
}
