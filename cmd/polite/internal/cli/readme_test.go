package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// The README keeps the flag list complete (issue 18): every flag of every
// command a user runs is named there, as `--name`.
func TestREADMENamesEveryFlag(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	root := newRoot(&env{}, nil)
	for _, cmd := range root.Commands() {
		if cmd.Hidden || cmd.Name() == "help" || cmd.Name() == "completion" {
			continue
		}
		cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden || f.Name == "help" {
				return
			}
			if !namesFlag(readme, f.Name) {
				t.Errorf("polite %s --%s: not named in README.md", cmd.Name(), f.Name)
			}
		})
	}
}

// namesFlag reports whether text names --name as a whole flag (not as the
// start of a longer one).
func namesFlag(text, name string) bool {
	for rest := text; ; {
		i := strings.Index(rest, "--"+name)
		if i < 0 {
			return false
		}
		rest = rest[i+2+len(name):]
		if rest == "" || !strings.ContainsRune("abcdefghijklmnopqrstuvwxyz-", rune(rest[0])) {
			return true
		}
	}
}
