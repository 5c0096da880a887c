package cli

import (
	"regexp"
	"testing"

	"github.com/polite-go/polite/guard"
)

var fileLine = regexp.MustCompile(`^guard\.toml:\d+: `)

// FuzzGuardConfig: any file gives a config guard.New accepts, or an error
// that names the file and line; never a panic.
func FuzzGuardConfig(f *testing.F) {
	for _, s := range []string{
		guardConfigHelp[len("A --config file (TOML); every key is optional:\n\n"):],
		"[identity]\nrate = 5\nburst = 10\n",
		"trusted_proxies = [\"10.0.0.0/8\", \"2001:db8::/32\"]\nproxy_header = \"Forwarded\"\nuser_header = \"X-User\"\n",
		"[[cost]]\npattern = \"GET /items/{id}\"\ncost = 3\n[[cost]]\npattern = \"/search/\"\ncost = 0\n",
		"[tenant]\nrate = 1\nname = \"identity\"\n",
		"ipv6_prefix = 56\nipv4_prefix = 24\nmax_keys = 1000\nsecret = \"s\"\noutage = \"closed\"\n",
		"[identity\n",
		"[global]\nrate = 1e400\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		var c guard.Config
		_, err := parseGuardConfig("guard.toml", []byte(src), &c)
		if err != nil {
			if !fileLine.MatchString(err.Error()) {
				t.Fatalf("error %q does not name the file and line", err)
			}
			return
		}
		if _, err := guard.New(c); err != nil {
			t.Fatalf("accepted a config guard.New refuses: %v", err)
		}
	})
}
