// Package cli is the polite command: its subcommands, their flags, and the
// live display. cmd/polite/main.go calls Main and nothing else.
//
// Each subcommand has an options struct, a cobra command that parses argv
// into it, and a run function taking the options; tests check argv →
// options without running anything.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/polite-go/polite/cmd/polite/internal/term"
)

// Exit statuses (README.md's "Exit status", the CLI contract).
const (
	ExitOK       = 0 // every URL ended ok
	ExitFatal    = 1 // a fatal error (or a job interrupted before its end)
	ExitUsage    = 2 // bad usage or config
	ExitFailures = 4 // the job finished and some URLs failed (all recorded)
)

// exitError carries an exit status out of a command.
type exitError struct {
	code int
	err  error // nil: the command printed what it had to say
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageErr is a bad-usage or bad-config error: exit status 2.
func usageErr(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// env is what commands read and write besides their options.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// Main runs the polite command with args (without the program name) and
// returns its exit status.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	root := newRoot(e, nil)
	root.SetArgs(args)
	if profileStop != nil {
		defer profileStop()
	}
	return exitStatus(root.ExecuteContext(ctx), stderr)
}

// profileStop, when set (a build with -tags cpuprofile), ends the profile
// Main's command was measured with.
var profileStop func()

// exitStatus reports err on stderr and returns the exit status it stands
// for.
func exitStatus(err error, stderr io.Writer) int {
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, "polite:", term.QuoteLines(ee.err.Error())) // it may quote a server or a list
		}
		return ee.code
	}
	// cobra's own errors: unknown command or flag, bad flag value, wrong
	// number of arguments.
	fmt.Fprintln(stderr, "polite:", term.QuoteLines(err.Error()))
	fmt.Fprintln(stderr, "Run 'polite --help' for usage.")
	return ExitUsage
}

// runners replaces the run step of commands, for tests: a command whose
// name is a key calls its function with the parsed options instead.
type runners map[string]func(ctx context.Context, opts any) error

func newRoot(e *env, r runners) *cobra.Command {
	root := &cobra.Command{
		Use:   "polite",
		Short: "polite: HTTP clients that limit themselves per host",
		Long: `polite fetches URLs politely: every host gets its own rate, burst, cap on
requests in flight, pause when it says "slow down", retries that never turn
into an attack, and robots.txt. A job is durable: kill it at any moment and
run the same command again to resume.

Start with 'polite demo': a crawl of simulated hosts on loopback that shows
every mechanism within a minute.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
	}
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetIn(e.stdin)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		var bad *pflag.InvalidValueError
		if errors.As(err, &bad) {
			// "--retry-on \"abc\": not an HTTP status", not pflag's
			// "invalid argument ... for ... flag: strconv.ParseInt: ..."
			// (issue 33, item 12).
			return usageErr("--%s %q: %s\nRun '%s --help' for usage.", bad.GetFlag().Name, bad.GetValue(), flagCause(errors.Unwrap(bad)), c.CommandPath())
		}
		return usageErr("%w\nRun '%s --help' for usage.", err, c.CommandPath())
	})
	root.AddCommand(
		newFetchCmd(e, r["fetch"]),
		newDemoCmd(e, r["demo"]),
		newTestbedCmd(e, r["testbed"]),
		newRobotsCmd(e, r["robots"]),
		newStatusCmd(e, r["status"]),
		newCDXJCmd(e, r["cdxj"]),
		newReportCmd(e, r["report"]),
		newRetryCmd(e, r["retry"]),
		newBenchCmd(e, r["bench"]),
		newGuardCmd(e, r["guard"]),
		newProxyCmd(e, r["proxy"]),
		newVersionCmd(e),
	)
	root.CompletionOptions.HiddenDefaultCmd = true
	return root
}

// flagCause says why a flag's value was refused, in the flag's terms
// rather than the parser's.
func flagCause(err error) string {
	var num *strconv.NumError
	switch {
	case err == nil:
		return "not a valid value"
	case errors.As(err, &num) && num.Func == "ParseBool":
		return "want true or false"
	case errors.As(err, &num) && errors.Is(num.Err, strconv.ErrRange):
		return "out of range"
	case errors.As(err, &num):
		return "not a number"
	case strings.HasPrefix(err.Error(), "time: "):
		return "want a duration such as 500ms, 30s or 2m"
	}
	return err.Error()
}

// args wraps a cobra positional-argument check so that its failure is a
// usage error.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, a []string) error {
		if err := check(c, a); err != nil {
			return usageErr("%s: %w\nRun '%s --help' for usage.", c.CommandPath(), err, c.CommandPath())
		}
		return nil
	}
}

// version is polite's version: the module's when it was installed at
// one, else "(devel)" with the commit it was built from, when the build
// recorded one ("(devel) 3c8f50c1a2b4+dirty 2026-11-26").
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(devel)"
	}
	return versionOf(bi)
}

func versionOf(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, at, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev == "" {
		return "(devel)"
	}
	v := "(devel) " + rev[:min(len(rev), 12)] + dirty
	if t, err := time.Parse(time.RFC3339, at); err == nil {
		v += " " + t.UTC().Format(time.DateOnly)
	}
	return v
}

func newVersionCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print polite's version",
		Args:  args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			fmt.Fprintf(e.stdout, "polite %s\n", version())
			if bi, ok := debug.ReadBuildInfo(); ok {
				fmt.Fprintf(e.stdout, "%s %s/%s\n", bi.GoVersion, runtime.GOOS, runtime.GOARCH)
				for _, s := range bi.Settings {
					if s.Key == "vcs.revision" || s.Key == "vcs.time" || s.Key == "vcs.modified" {
						fmt.Fprintf(e.stdout, "%s %s\n", s.Key, s.Value)
					}
				}
			}
			return nil
		},
	}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
