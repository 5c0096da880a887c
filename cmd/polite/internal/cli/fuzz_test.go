package cli

import (
	"strings"
	"testing"
)

// The TOML files a user hands polite: per-host rules (fetch --config) and
// the testbed's hosts (testbed --config). Whatever they hold, reading them
// ends in a config or an error that names the file, never a panic.

func FuzzRulesConfig(f *testing.F) {
	for _, seed := range []string{
		"[[rule]]\nhosts = \"*.example.com\"\nrate = 5\nburst = 2\nconcurrency = 2\n",
		"[[rule]]\nhosts = \"a.test\"\nrate = \"inf\"\nretries = -1\nsmooth = true\n",
		"[[rule]]\nhosts = \"[\"\n", "[[rule]]\nrate = 1e999\n", "rate = 5\n", "[[rule]\n", "",
		"[[rule]]\nhosts = \"x\"\nburst = -3\nunknown = 1\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		c, err := parseConfig("rules.toml", src)
		if err != nil && !strings.Contains(err.Error(), "rules.toml") {
			t.Errorf("error %q does not name the file", err)
		}
		if err == nil && c == nil {
			t.Error("no config and no error")
		}
	})
}

func FuzzTestbedConfig(f *testing.F) {
	for _, seed := range []string{
		"[[host]]\nName = \"a.test\"\nRate = 20\nBurst = 5\nLatency = \"10ms\"\n",
		"[[host]]\nName = \"b.test\"\nStatus = 503\nRetryAfter = \"seconds\"\n",
		"[[host]]\nName = \"\"\n", "[[host]]\nName = \"a\"\n[[host]]\nName = \"A\"\n", "", "[[host]\n",
		"[[host]]\nName = \"c\"\nRate = -1\nServers = 1e9\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		hosts, err := parseTestbedConfig("testbed.toml", src)
		if err != nil && !strings.Contains(err.Error(), "testbed.toml") {
			t.Errorf("error %q does not name the file", err)
		}
		if err == nil && len(hosts) == 0 {
			t.Error("no hosts and no error")
		}
	})
}
