package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/polite-go/polite/proxy"
)

// parseProxyArgs runs argv through the command tree with proxy's run step
// replaced, and returns the options it would have run with.
func parseProxyArgs(t *testing.T, argv ...string) (*proxyOptions, int, string) {
	t.Helper()
	var got *proxyOptions
	r := runners{"proxy": func(_ context.Context, o any) error { got = o.(*proxyOptions); return nil }}
	var out, errb bytes.Buffer
	root := newRoot(&env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb}, r)
	root.SetArgs(argv)
	code := exitStatus(root.ExecuteContext(context.Background()), &errb)
	return got, code, errb.String()
}

func TestProxyFlags(t *testing.T) {
	o, code, stderr := parseProxyArgs(t, "proxy")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if o.Listen != "127.0.0.1:8899" || o.MaxWait != proxy.DefaultMaxWait || o.TunnelCap != o.Concurrency ||
		o.Workers != 256 || !o.Robots || !o.Adaptive || o.AllowPrivate || o.OwnList || o.Timeout != 30*time.Second {
		t.Errorf("defaults: %+v", o)
	}
	o, code, stderr = parseProxyArgs(t, "proxy", "--listen", "127.0.0.1:0", "--rate", "3", "--concurrency", "4",
		"--max-wait", "5s", "--intercept", "*.Example.com", "--intercept", "api.test", "--tunnel-cap", "2",
		"--retries", "0", "--allow-private", "--redis", "redis://127.0.0.1:1/0", "--fleet", "f")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if o.Rate != 3 || o.MaxRate != 3 || o.Concurrency != 4 || o.MaxWait != 5*time.Second || o.TunnelCap != 2 ||
		o.Retries != 0 || !o.AllowPrivate || !o.OwnList || o.Fleet != "f" || len(o.Intercept) != 2 {
		t.Errorf("options: %+v", o)
	}
	match := intercepts(o.Intercept)
	for host, want := range map[string]bool{"www.example.com": true, "WWW.EXAMPLE.COM.": true, "example.com": false, "api.test": true, "x.api.test": false} {
		if match(host) != want {
			t.Errorf("--intercept matches %s: %v, want %v", host, !want, want)
		}
	}
}

func TestProxyFlagErrors(t *testing.T) {
	for _, c := range []struct {
		argv []string
		says string
	}{
		{[]string{"proxy", "--listen", "0.0.0.0:8899"}, "open relay"},
		{[]string{"proxy", "--listen", "nowhere"}, "--listen \"nowhere\""},
		{[]string{"proxy", "--listen", "0.0.0.0:8899", "--proxy-auth", "nocolon"}, "ACCOUNT:PASSWORD"},
		{[]string{"proxy", "--proxy-auth", "a,b:c"}, "ACCOUNT:PASSWORD"},
		{[]string{"proxy", "--max-wait", "-1s"}, "--max-wait"},
		{[]string{"proxy", "--tunnel-cap", "-1"}, "--tunnel-cap"},
		{[]string{"proxy", "--intercept", "[bad"}, "--intercept \"[bad\""},
		{[]string{"proxy", "--rate", "fast"}, "--rate"},
		{[]string{"proxy", "extra"}, "unknown command"},
	} {
		_, code, stderr := parseProxyArgs(t, c.argv...)
		if code != ExitUsage || !strings.Contains(stderr, c.says) {
			t.Errorf("%v: exit %d, %q; want %d saying %q", c.argv, code, stderr, ExitUsage, c.says)
		}
	}
	// Beyond loopback with credentials is allowed.
	if _, code, stderr := parseProxyArgs(t, "proxy", "--listen", "0.0.0.0:8899", "--proxy-auth", "alice:s3cret"); code != 0 {
		t.Errorf("--listen 0.0.0.0 with --proxy-auth: exit %d: %s", code, stderr)
	}
}
