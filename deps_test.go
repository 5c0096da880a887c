package polite_test

import (
	"os"
	"strings"
	"testing"
)

// TestLibraryDependencies keeps the library's go.mod small: the CLI and the
// crawl job are modules of their own so that cobra, bubbletea and SQLite
// never reach a library user's build.
func TestLibraryDependencies(t *testing.T) {
	b, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"golang.org/x/net": true, "golang.org/x/text": true}
	inRequire := false
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case f[0] == "require" && len(f) > 1 && f[1] == "(":
			inRequire = true
		case f[0] == ")":
			inRequire = false
		case f[0] == "require" && len(f) > 1:
			if !allowed[f[1]] {
				t.Errorf("go.mod requires %s; the library's dependencies are golang.org/x/net only", f[1])
			}
		case inRequire:
			if !allowed[f[0]] {
				t.Errorf("go.mod requires %s; the library's dependencies are golang.org/x/net only", f[0])
			}
		}
	}
}
