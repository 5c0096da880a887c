package cli

import (
	"strings"
	"testing"

	"github.com/polite-go/polite/crawl/scope"
)

func TestFollowFlags(t *testing.T) {
	got, code, stderr := parse(t, "fetch", "--follow", "--scope", "domain", "--include", `^https://a\.test/`, "--exclude", `\.pdf$`,
		"--max-depth", "3", "--max-per-host", "50", "--sitemaps", "--assets", "--strip-params", "tracking,sid", "--max-urls", "900", "urls.txt")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	f := got.(*fetchOptions).follow
	if f == nil {
		t.Fatal("no crawl.Follow")
	}
	r := f.Rules
	if r.Mode != scope.Domain || r.MaxDepth != 3 || len(r.Include) != 1 || len(r.Exclude) != 1 || f.MaxPerHost != 50 ||
		!f.Sitemaps || !f.Assets || f.MaxURLs != 900 {
		t.Errorf("follow = %+v", f)
	}
	if n := len(r.Norm.StripParams); n != len(scope.DefaultStripParams)+1 || r.Norm.StripParams[n-1] != "sid" {
		t.Errorf("strip params %v", r.Norm.StripParams)
	}
	got, _, _ = parse(t, "fetch", "urls.txt")
	if got.(*fetchOptions).follow != nil {
		t.Error("a crawl without --follow")
	}
	for _, tc := range []struct{ args, want string }{
		{"--include x", "--include applies to a crawl: add --follow"},
		{"--sitemaps", "--sitemaps applies to a crawl: add --follow"},
		{"--follow --scope page", "--scope"},
		{"--follow --include (", `--include "("`},
		{"--follow --max-depth -1", "--max-depth -1: must not be negative"},
		{"--follow --strip-params a=b", `--strip-params "a=b"`},
	} {
		_, code, stderr := parse(t, append(append([]string{"fetch"}, strings.Fields(tc.args)...), "urls.txt")...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, %q; want exit %d naming %q", tc.args, code, stderr, ExitUsage, tc.want)
		}
	}
}
