package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/polite-go/polite/adaptive"
	"github.com/polite-go/polite/internal/politeness"
	"github.com/polite-go/polite/testbed"
)

// benchOptions are the settings of `polite bench`.
type benchOptions struct {
	Opts politeness.Options
	JSON string // also write the report as JSON here

	// --live: this binary's own `fetch`, in processes of their own,
	// against testbed hosts and nginx on loopback, in real time.
	Live     bool
	LiveOpts politeness.LiveOptions

	// The user's own policy, one more row when any of these is given:
	// --rate (the start, and the ceiling unless --max-rate), --max-rate,
	// --adaptive and --config, as fetch reads them.
	Yours    bool
	Rate     float64
	MaxRate  float64
	Adaptive bool
	Config   string
	Rules    *config
}

func newBenchCmd(e *env, runF func(context.Context, any) error) *cobra.Command {
	o := &benchOptions{}
	var scenarios, policies []string
	c := &cobra.Command{
		Use:   "bench [flags]",
		Short: "Run the politeness benchmark: rate policies against the testbed's scenarios",
		Long: `Run rate policies (polite's adaptive controller and its peers: static rates,
AIMD, AWS's adaptive retry mode, Scrapy's AutoThrottle) against the testbed's
standard scenarios, and measure from the hosts' own records how much of each
host's hidden capacity a policy used (goodput) and how often it made the host
refuse. Hosts are served in memory (or on loopback with --realtime); a run
takes each scenario's duration (--duration to shorten it).

With --live the benchmark runs as a user would meet it: this binary's own
fetch (polite fetch --rate 5 --max-rate 200 --concurrency 8 --retries 8
--timeout 5s), in a process of its own per run, in real time, against testbed
hosts and nginx (limit_req, limit_conn; Debian's nginx-light is installed with
apt-get when missing) on loopback, measured from the servers' side: --runs
runs per scenario, median and spread. About 10 minutes.`,
		Example: `  polite bench --duration 20s
  polite bench --scenario step-down --scenario retry-after --json bench.json
  polite bench --live --scenario nginx-delay --runs 1`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			fl := c.Flags()
			o.Yours = fl.Changed("rate") || fl.Changed("max-rate") || fl.Changed("adaptive") || fl.Changed("config")
			if fl.Changed("rate") && !fl.Changed("max-rate") {
				o.MaxRate = o.Rate // a rate the user names is a ceiling, as in fetch
			}
			if err := o.parse(scenarios, policies); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), o)
			}
			return runBench(c.Context(), e, o)
		},
	}
	f := c.Flags()
	f.StringSliceVar(&scenarios, "scenario", nil, "scenario `NAME` to run, repeatable (default: all: "+strings.Join(scenarioNames(), ", ")+")")
	f.StringSliceVar(&policies, "policy", nil, "policy `NAME` to compare, repeatable (default: all)")
	f.DurationVar(&o.Opts.Duration, "duration", 0, "length of each scenario run (0: the scenario's own, about a minute)")
	f.BoolVar(&o.Opts.Realtime, "realtime", false, "serve the hosts on loopback sockets instead of in memory")
	f.BoolVar(&o.Opts.Parallel, "parallel", true, "run a scenario's policies at once, each against its own hosts")
	f.BoolVar(&o.Opts.Bare, "bare", false, "drive policies through a minimal limiter instead of polite.Transport")
	f.IntVar(&o.Opts.Workers, "workers", politeness.DefaultWorkers, "requests kept going per host (the demand)")
	f.IntVar(&o.Opts.Concurrency, "concurrency", politeness.DefaultConcurrency, "the client's cap on requests in flight per host")
	f.StringVar(&o.JSON, "json", "", "also write the report as JSON to `FILE`")
	f.BoolVar(&o.Live, "live", false, "run the live benchmark instead: this binary's fetch against testbed hosts and nginx, in real time (scenarios: "+strings.Join(liveNames(), ", ")+")")
	f.IntVar(&o.LiveOpts.Runs, "runs", 3, "with --live: runs of each scenario")
	f.IntVar(&o.LiveOpts.Parallel, "live-parallel", 3, "with --live: runs at once")
	f.Float64Var(&o.Rate, "rate", 2, "your policy: each host's starting rate (and its ceiling, unless --max-rate)")
	f.Float64Var(&o.MaxRate, "max-rate", DefaultMaxRate, "your policy: the ceiling of an adaptive rate")
	f.BoolVar(&o.Adaptive, "adaptive", true, "your policy: adapt each host's rate (false: a fixed --rate)")
	f.StringVar(&o.Config, "config", "", "your policy: a fetch --config `FILE` of per-host rules, matched against the scenarios' host names")
	return c
}

func liveNames() []string {
	var n []string
	for _, s := range politeness.LiveScenarios() {
		n = append(n, s.Name)
	}
	return n
}

func scenarioNames() []string {
	var n []string
	for _, s := range testbed.Scenarios() {
		n = append(n, s.Name)
	}
	return n
}

func (o *benchOptions) parse(scenarios, policies []string) error {
	if o.Live && o.Yours {
		return usageErr("--live runs polite fetch as the live scenarios set it; --rate, --max-rate, --adaptive and --config add your policy to the simulated benchmark only")
	}
	if o.Live {
		for _, name := range scenarios {
			i := slices.IndexFunc(politeness.LiveScenarios(), func(s politeness.LiveScenario) bool { return s.Name == name })
			if i < 0 {
				return usageErr("--scenario %q: want one of %s", name, strings.Join(liveNames(), ", "))
			}
			o.LiveOpts.Scenarios = append(o.LiveOpts.Scenarios, politeness.LiveScenarios()[i])
		}
		if o.LiveOpts.Runs < 1 || o.LiveOpts.Parallel < 1 {
			return usageErr("--runs and --live-parallel must be at least 1")
		}
		return nil
	}
	for _, name := range scenarios {
		i := slices.IndexFunc(testbed.Scenarios(), func(s testbed.Scenario) bool { return s.Name == name })
		if i < 0 {
			return usageErr("--scenario %q: want one of %s", name, strings.Join(scenarioNames(), ", "))
		}
		o.Opts.Scenarios = append(o.Opts.Scenarios, testbed.Scenarios()[i])
	}
	var names []string
	for _, p := range politeness.Peers() {
		names = append(names, p.Name)
	}
	for _, name := range policies {
		i := slices.IndexFunc(politeness.Peers(), func(p politeness.Policy) bool { return p.Name == name })
		if i < 0 {
			return usageErr("--policy %q: want one of %s", name, strings.Join(names, ", "))
		}
		o.Opts.Policies = append(o.Opts.Policies, politeness.Peers()[i])
	}
	if o.Opts.Duration < 0 || (o.Opts.Duration > 0 && o.Opts.Duration < time.Second) {
		return usageErr("--duration %v: want 0 or at least 1s", o.Opts.Duration)
	}
	if o.Opts.Workers < 1 || o.Opts.Concurrency < 1 {
		return usageErr("--workers and --concurrency must be at least 1")
	}
	return o.parseYours()
}

// parseYours checks the user's policy and adds it to the policies run.
func (o *benchOptions) parseYours() error {
	if !o.Yours {
		return nil
	}

	if !(o.Rate > 0) || !(o.MaxRate > 0) {
		return usageErr("--rate %v, --max-rate %v: want rates above 0", o.Rate, o.MaxRate)
	}
	if o.Config != "" {
		var err error
		if o.Rules, err = loadConfig(o.Config); err != nil {
			return &exitError{code: ExitUsage, err: err}
		}
	}
	if o.Opts.Policies == nil {
		o.Opts.Policies = politeness.Peers()
	}
	o.Opts.Policies = append(o.Opts.Policies, o.yours())
	return nil
}

// yours is the policy of the user's flags: per host, the rule's rate,
// max_rate and adaptive keys over --rate, --max-rate and --adaptive.
func (o *benchOptions) yours() politeness.Policy {
	about := fmt.Sprintf("your flags: --rate %g --max-rate %g --adaptive=%t", o.Rate, o.MaxRate, o.Adaptive)
	if o.Config != "" {
		about += " --config " + o.Config
	}
	return politeness.Policy{
		Name:  "yours",
		About: about,
		NewRater: func(host string, now time.Time) adaptive.Rater {
			rate, ceiling, on := o.Rate, o.MaxRate, o.Adaptive
			if o.Rules != nil {
				if i := o.Rules.match.RuleIndex(host); i >= 0 {
					r := o.Rules.Rules[i]
					if r.Rate != nil {
						rate, ceiling = float64(*r.Rate), float64(*r.Rate)
					}
					if r.MaxRate != nil && *r.MaxRate > 0 {
						ceiling = float64(*r.MaxRate)
					}
					if r.Adaptive != nil {
						on = *r.Adaptive
					}
				}
			}
			if !on {
				return politeness.Static(rate).NewRater(host, now)
			}
			return adaptive.New(adaptive.Config{Initial: min(rate, ceiling), Max: ceiling}, now)
		},
	}
}

func runBench(ctx context.Context, e *env, o *benchOptions) error {
	if o.Live {
		return runBenchLive(ctx, e, o)
	}
	o.Opts.Progress = e.stderr
	rep, err := politeness.Run(ctx, o.Opts)
	if err != nil {
		return &exitError{code: ExitFatal, err: err}
	}
	if err := rep.WriteTable(e.stdout); err != nil {
		return &exitError{code: ExitFatal, err: err}
	}
	pols := o.Opts.Policies
	if pols == nil {
		pols = politeness.Peers()
	}
	if err := politeness.WriteLegend(e.stdout, pols); err != nil {
		return &exitError{code: ExitFatal, err: err}
	}
	if o.JSON != "" {
		f, err := os.Create(o.JSON)
		if err != nil {
			return &exitError{code: ExitFatal, err: err}
		}
		err = rep.WriteJSON(f)
		if cerr := f.Close(); err == nil {
			err = cerr // a write that failed only at close is lost as surely
		}
		if err != nil {
			return &exitError{code: ExitFatal, err: fmt.Errorf("--json: %w", err)}
		}
	}
	return nil
}

func runBenchLive(ctx context.Context, e *env, o *benchOptions) error {
	exe, err := os.Executable()
	if err != nil {
		return &exitError{code: ExitFatal, err: err}
	}
	lo := o.LiveOpts
	lo.Polite, lo.Progress = exe, e.stderr
	runs, err := politeness.RunLive(ctx, lo)
	if err != nil {
		return &exitError{code: ExitFatal, err: err}
	}
	scs := lo.Scenarios
	if scs == nil {
		scs = politeness.LiveScenarios()
	}
	if err := politeness.WriteLiveTable(e.stdout, politeness.Summarize(scs, runs), nil); err != nil {
		return &exitError{code: ExitFatal, err: err}
	}
	if o.JSON != "" {
		b, _ := json.MarshalIndent(runs, "", "  ")
		if err := os.WriteFile(o.JSON, b, 0o644); err != nil {
			return &exitError{code: ExitFatal, err: fmt.Errorf("--json: %w", err)}
		}
	}
	return nil
}
