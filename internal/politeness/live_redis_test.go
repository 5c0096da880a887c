package politeness

import (
	"os"
	"strings"
	"testing"
)

func TestStartRedis(t *testing.T) {
	bin, err := RedisBinary()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v (CI=true)", err)
		}
		t.Skip(err)
	}
	r, err := startRedis(t.Context(), bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer r.stop()
	if !strings.HasPrefix(r.url(), "redis://127.0.0.1:") {
		t.Errorf("url() = %q, want redis://127.0.0.1:PORT/0", r.url())
	}
	for range 3 {
		if line, err := r.command("PING"); err != nil || !strings.HasPrefix(line, "+PONG") {
			t.Fatalf("PING = %q, %v", line, err)
		}
	}
	if line, err := r.command(`EVAL "redis.call('SET','a','1') redis.call('SET','b','2') return 1" 0`); err != nil || line != ":1" {
		t.Fatalf("EVAL = %q, %v", line, err)
	}
	st, info, err := r.stats()
	if err != nil || st.Scripts != 1 || st.Commands < 6 || st.CPU <= 0 || !strings.Contains(info, "cmdstat_set:calls=2,") {
		t.Errorf("stats() = %+v, %v; want 1 script, ≥ 6 commands (3 PING, EVAL, 2 SET), CPU > 0\n%s", st, err, info)
	}
	r.stop()
	if _, err := r.command("PING"); err == nil {
		t.Error("PING answered after stop")
	}
}
