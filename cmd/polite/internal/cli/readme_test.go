package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/polite-go/polite/crawl"
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

func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The README's command list (the block under "## The CLI") names every
// command and subcommand a user runs, and no command that does not exist
// (issue 33: guard and proxy were missing from it).
func TestREADMEListsEveryCommand(t *testing.T) {
	text := readme(t)
	i := strings.Index(text, "## The CLI")
	if i < 0 {
		t.Fatal("README.md has no \"## The CLI\" section")
	}
	block := text[i:]
	block = block[strings.Index(block, "```")+3:]
	block = block[:strings.Index(block, "```")]
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^polite((?: [a-z]+)+)`).FindAllStringSubmatch(block, -1) {
		listed[strings.TrimSpace(m[1])] = true
	}
	have := map[string]bool{}
	var walk func(c *cobra.Command, path string)
	walk = func(c *cobra.Command, path string) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			p := strings.TrimSpace(path + " " + sub.Name())
			have[p] = true
			if sub.HasSubCommands() {
				walk(sub, p)
			}
			if sub.Runnable() && !listed[p] {
				t.Errorf("polite %s: not in README.md's command list", p)
			}
		}
	}
	walk(newRoot(&env{}, nil), "")
	for p := range listed {
		// "polite fetch URLFILE" reads as fetch: the longest prefix that
		// is a command.
		words := strings.Fields(p)
		for len(words) > 0 && !have[strings.Join(words, " ")] {
			words = words[:len(words)-1]
		}
		if len(words) == 0 {
			t.Errorf("README.md's command list names polite %s, which is no command", p)
		}
	}
}

// The README's outcomes table lists exactly the outcomes results.jsonl
// can hold (crawl.Outcomes), and its exit statuses are the CLI's.
func TestREADMEOutcomesAndExits(t *testing.T) {
	text := readme(t)
	var table []string
	o := text[strings.Index(text, "**Outcomes**"):]
	o = o[:strings.Index(o, "|\n\n")]
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(o, -1) {
		table = append(table, m[1])
	}
	want := slices.Clone(crawl.Outcomes)
	slices.Sort(want)
	slices.Sort(table)
	if !slices.Equal(table, want) {
		t.Errorf("README.md's outcomes table: %q\nresults.jsonl's outcomes:  %q", table, want)
	}
	i := strings.Index(text, "**Exit status**")
	if i < 0 {
		t.Fatal("README.md has no **Exit status**")
	}
	exits := text[i : i+strings.Index(text[i:], "\n\n")]
	for code, what := range map[int]string{ExitOK: "0 when every URL ended ok", ExitFailures: "4 when the job finished",
		ExitUsage: "2 for bad usage", ExitFatal: "1 for a fatal error"} {
		if !strings.Contains(strings.Join(strings.Fields(exits), " "), what) {
			t.Errorf("README.md's exit statuses do not say %q (exit %d)", what, code)
		}
	}
}
