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

	"github.com/spf13/cobra"

	"github.com/polite-go/polite/cmd/polite/internal/term"
)

// Exit statuses (DESIGN.md, the CLI contract).
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

func version() string {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	return v
}

type versionOptions struct{}

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
