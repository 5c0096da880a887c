package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/polite-go/polite/cmd/polite/internal/term"
	"github.com/polite-go/polite/crawl"
)

// statusOptions are the settings of `polite status`.
type statusOptions struct {
	Out  string
	Dead int // dead letters listed
	// A fleet's frontier instead of a directory (issue 31): its Redis and
	// name, and whether to print its committed results (the merged view).
	Redis, Fleet string
	Results      bool
	Hosts        int  // hosts listed (0: all); a job's most troubled first, a fleet's most pending first
	JSON         bool // a job's status as one JSON document
}

func newStatusCmd(e *env, runF func(context.Context, any) error) *cobra.Command {
	o := &statusOptions{}
	c := &cobra.Command{
		Use:   "status [flags] DIR",
		Short: "What became of a job's URLs: outcomes, dead letters with reasons, per-host state",
		Long: `Read DIR/state.db (a job's --out) and print: the URLs by outcome and the
pending ones by why they wait; the dead letters (URLs that did not end ok)
with their reasons; and each host's state: URLs done and pending, how many
ended throttled (and with a last status of 429 or 503) or blocked, and a
pause the host named beyond --max-retry-after, until when and why. A running
job may be read. Re-queue dead letters with 'polite retry DIR'.`,
		Args: args(dirOrRedis),
		RunE: func(c *cobra.Command, a []string) error {
			if len(a) == 1 {
				o.Out = a[0]
			}
			if o.Dead < 0 {
				return usageErr("--dead %d: must not be negative", o.Dead)
			}
			if o.Results && o.Redis == "" {
				return usageErr("--results needs --redis: a job's results are DIR/results.jsonl")
			}
			if o.Hosts < 0 {
				return usageErr("--hosts %d: must not be negative (0 lists all)", o.Hosts)
			}
			if o.JSON && o.Redis != "" {
				return usageErr("--json reads a job's DIR; a fleet's results are --results")
			}
			if runF != nil {
				return runF(c.Context(), o)
			}
			return runStatus(e, o)
		},
	}
	c.Flags().IntVar(&o.Dead, "dead", 50, "dead letters listed (results.jsonl has them all)")
	c.Flags().StringVar(&o.Redis, "redis", "", "a fleet's Redis `URL`: read its frontier instead of a DIR (outcomes, workers, hosts, leases out, dead letters)")
	c.Flags().StringVar(&o.Fleet, "fleet", "default", "the fleet's `NAME`, with --redis")
	c.Flags().BoolVar(&o.Results, "results", false, "with --redis: print every committed result, one JSON line per URL, each URL once (the fleet's merged results.jsonl)")
	c.Flags().IntVar(&o.Hosts, "hosts", 20, "hosts listed, the most troubled first (failed, throttled, paused, then most pending; with --redis, most pending first); 0 for all")
	c.Flags().BoolVar(&o.JSON, "json", false, "print a job's status as one JSON document (every host, most troubled first), for programs")
	return c
}

func runStatus(e *env, o *statusOptions) error {
	if o.Redis != "" {
		return runFleetStatus(e, o)
	}
	s, err := crawl.ReadStatus(o.Out, o.Dead)
	if err != nil {
		return jobErr(o.Out, err)
	}
	sortTroubled(s.Hosts)
	if o.JSON {
		return writeStatusJSON(e.stdout, o.Out, s)
	}
	w := e.stdout
	fmt.Fprintf(w, "%s: %d URLs, %d finished, %d pending\n", o.Out, s.Total, s.Total-s.Pending, s.Pending)
	for _, k := range crawl.Outcomes {
		if n := s.Outcomes[k]; n > 0 {
			fmt.Fprintf(w, "  %-19s %d\n", k, n)
		}
	}
	if s.Pending > 0 {
		fmt.Fprintln(w, "\npending, by why they wait:")
		whys := make([]string, 0, len(s.Waiting))
		for k := range s.Waiting {
			whys = append(whys, k)
		}
		sort.Strings(whys)
		for _, k := range whys {
			name := k
			if name == "" {
				name = "not tried yet"
			}
			fmt.Fprintf(w, "  %-30s %d\n", term.Quote(name), s.Waiting[k])
		}
	}
	if len(s.Skips) > 0 {
		by := map[string]int{}
		var reasons []string
		for _, sk := range s.Skips {
			if by[sk.Reason] == 0 {
				reasons = append(reasons, sk.Reason)
			}
			by[sk.Reason] += sk.Links
		}
		sort.Slice(reasons, func(a, b int) bool { return by[reasons[a]] > by[reasons[b]] })
		fmt.Fprintln(w, "\nlinks not followed (--follow), by reason:")
		for _, r := range reasons {
			fmt.Fprintf(w, "  %-19s %d\n", r, by[r])
		}
	}
	if s.DeadTotal > 0 {
		fmt.Fprintf(w, "\ndead letters (%d):\n", s.DeadTotal)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "outcome\tstatus\tattempts\turl\treason")
		for _, r := range s.Dead {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", r.Outcome, r.Status, r.Attempts, term.Quote(r.URL), term.Quote(r.Error))
		}
		tw.Flush()
		if n := s.DeadTotal - len(s.Dead); n > 0 {
			fmt.Fprintf(w, "  ... and %d more (--dead, or %s)\n", n, crawl.ResultsFile)
		}
		fmt.Fprintf(w, "re-queue them with: polite retry %s [--outcome LIST]\n", o.Out)
	}
	if len(s.Hosts) > 0 {
		hosts := s.Hosts
		if o.Hosts > 0 && len(hosts) > o.Hosts {
			hosts = hosts[:o.Hosts]
		}
		fmt.Fprintf(w, "\nhosts (%d of %d, the most troubled first):\n", len(hosts), len(s.Hosts))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "host\turls\tdone\tok\tpending\tthrottled\t429\t503\tblocked\tpaused until\t")
		for _, h := range hosts {
			paused := "-"
			if !h.PausedUntil.IsZero() {
				paused = h.PausedUntil.Format(time.RFC3339) + " (" + term.Quote(h.PauseWhy) + ")"
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t\n", term.Quote(h.Host), h.URLs, h.Done, h.OK, h.Pending,
				h.Throttled, h.Status429, h.Status503, h.Blocked, paused)
		}
		tw.Flush()
		if n := len(s.Hosts) - len(hosts); n > 0 {
			fmt.Fprintf(w, "  ... and %d more hosts (--hosts 0 lists all; --json for programs)\n", n)
		}
	}
	return nil
}

// jobErr is the error of a command given a DIR: one that holds no job is
// the user's to fix (exit 2, naming DIR), not a fatal error of polite's
// (issue 33, item 12).
func jobErr(dir string, err error) error {
	if errors.Is(err, crawl.ErrNoJob) {
		return usageErr("DIR %s: no job here (no %s): give a job's --out", dir, crawl.StateFile)
	}
	return &exitError{code: ExitFatal, err: err}
}

// sortTroubled orders hosts the most troubled first: URLs that failed
// (ended, not ok), then throttled answers, a pause, and URLs pending;
// ties by name. 3,000 hosts in lexical order hid the few that mattered
// (issue 33, item 7).
func sortTroubled(hs []crawl.HostStatus) {
	key := func(h crawl.HostStatus) [4]int {
		paused := 0
		if !h.PausedUntil.IsZero() {
			paused = 1
		}
		return [4]int{h.Done - h.OK, h.Status429 + h.Status503 + h.Throttled, paused, h.Pending}
	}
	sort.SliceStable(hs, func(a, b int) bool {
		ka, kb := key(hs[a]), key(hs[b])
		for i := range ka {
			if ka[i] != kb[i] {
				return ka[i] > kb[i]
			}
		}
		return hs[a].Host < hs[b].Host
	})
}

// statusJSON is `polite status --json`: a job's status for programs, its
// keys part of the CLI contract.
type statusJSON struct {
	Dir       string         `json:"dir"`
	Total     int            `json:"total"`
	Pending   int            `json:"pending"`
	Outcomes  map[string]int `json:"outcomes"`
	Waiting   map[string]int `json:"waiting"`
	DeadTotal int            `json:"dead_total"`
	Dead      []crawl.Result `json:"dead"`
	Hosts     []hostJSON     `json:"hosts"`
	// Skipped are a crawl's links not taken (--follow), by reason and
	// the host of the pages that had them.
	Skipped []crawl.Skip `json:"skipped,omitempty"`
}

type hostJSON struct {
	Host        string     `json:"host"`
	URLs        int        `json:"urls"`
	Done        int        `json:"done"`
	OK          int        `json:"ok"`
	Pending     int        `json:"pending"`
	Throttled   int        `json:"throttled"`
	Blocked     int        `json:"blocked"`
	Status429   int        `json:"status_429"`
	Status503   int        `json:"status_503"`
	PausedUntil *time.Time `json:"paused_until,omitempty"`
	PauseWhy    string     `json:"pause_why,omitempty"`
}

func writeStatusJSON(w io.Writer, dir string, s *crawl.Status) error {
	out := statusJSON{Dir: dir, Total: s.Total, Pending: s.Pending, Outcomes: s.Outcomes, Waiting: s.Waiting,
		DeadTotal: s.DeadTotal, Dead: s.Dead, Hosts: make([]hostJSON, len(s.Hosts)), Skipped: s.Skips}
	if out.Dead == nil {
		out.Dead = []crawl.Result{}
	}
	for i, h := range s.Hosts {
		out.Hosts[i] = hostJSON{Host: h.Host, URLs: h.URLs, Done: h.Done, OK: h.OK, Pending: h.Pending, Throttled: h.Throttled,
			Blocked: h.Blocked, Status429: h.Status429, Status503: h.Status503, PauseWhy: h.PauseWhy}
		if !h.PausedUntil.IsZero() {
			t := h.PausedUntil.UTC()
			out.Hosts[i].PausedUntil = &t
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return &exitError{code: ExitFatal, err: err}
	}
	return nil
}

// retryOptions are the settings of `polite retry`.
type retryOptions struct {
	Out      string
	Outcomes []string
	// A fleet's frontier instead of a directory (issue 31).
	Redis, Fleet string
}

// retryable are the outcomes `polite retry` re-queues by default: every
// failure a later attempt may turn out otherwise.
var retryable = []string{crawl.HTTPError, crawl.Throttled, crawl.Blocked, crawl.RobotsDisallowed,
	crawl.RobotsUnreachable, crawl.NetworkError, crawl.Timeout, crawl.RedirectLoop}

func newRetryCmd(e *env, runF func(context.Context, any) error) *cobra.Command {
	o := &retryOptions{}
	var list string
	c := &cobra.Command{
		Use:   "retry [flags] DIR | --redis URL --fleet NAME",
		Short: "Re-queue a job's dead letters so the next fetch tries them again",
		Long: `Put the finished URLs of the job in DIR (its --out) that ended with one of
--outcome back in its queue, in state.db, as if never tried. Their lines leave
results.jsonl; running 'polite fetch --out DIR' again with the job's flags
(no list needed: the job's URLs are in its state.db; its flags, --rate,
--config, -H, are not) fetches them and records their new outcome. A pause a host named beyond
--max-retry-after still holds (see 'polite status DIR').

With --redis, the same in a fleet's frontier: its committed results with one
of --outcome, and its dead letters (URLs leased again and again without a
result), go back in its queues; the fleet's running workers fetch them, or
the next 'polite fetch --redis URL --fleet NAME' does.

Outcomes that may be re-queued: ` + strings.Join(retryable, ", ") + `.`,
		Example: `  polite retry out --outcome throttled,network_error,timeout
  polite fetch --out out`,
		Args: args(dirOrRedis),
		RunE: func(c *cobra.Command, a []string) error {
			if len(a) == 1 {
				o.Out = a[0]
			}
			o.Outcomes = nil
			for _, s := range strings.Split(list, ",") {
				s = strings.TrimSpace(s)
				if s == "" {
					continue
				}
				ok := false
				for _, k := range retryable {
					ok = ok || k == s
				}
				if !ok {
					return usageErr("--outcome %q: want a comma-separated list of %s", s, strings.Join(retryable, ", "))
				}
				o.Outcomes = append(o.Outcomes, s)
			}
			if len(o.Outcomes) == 0 {
				return usageErr("--outcome %q: name at least one outcome", list)
			}
			if runF != nil {
				return runF(c.Context(), o)
			}
			return runRetry(e, o)
		},
	}
	c.Flags().StringVar(&list, "outcome", strings.Join([]string{crawl.Throttled, crawl.NetworkError, crawl.Timeout, crawl.RobotsUnreachable}, ","),
		"comma-separated `LIST` of outcomes to re-queue")
	c.Flags().StringVar(&o.Redis, "redis", "", "a fleet's Redis `URL`: re-queue in its frontier instead of a DIR")
	c.Flags().StringVar(&o.Fleet, "fleet", "default", "the fleet's `NAME`, with --redis")
	return c
}

func runRetry(e *env, o *retryOptions) error {
	if o.Redis != "" {
		return runFleetRetry(e, o)
	}
	if _, err := crawl.ReadStatus(o.Out, 0); err != nil { // no job: say so, create nothing
		return jobErr(o.Out, err)
	}
	job, err := crawl.Open(o.Out, crawl.Options{Bodies: crawl.BodiesNone})
	if err != nil {
		return &exitError{code: ExitFatal, err: err}
	}
	n, err := job.Requeue(o.Outcomes)
	if cerr := job.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return &exitError{code: ExitFatal, err: err}
	}
	fmt.Fprintf(e.stdout, "%d URLs re-queued (%s) in %s; run 'polite fetch --out %s' with the job's flags to fetch them again (no list needed)\n",
		n, strings.Join(o.Outcomes, ", "), o.Out, o.Out)
	if s, err := crawl.ReadStatus(o.Out, 0); err == nil {
		for _, h := range s.Hosts {
			if !h.PausedUntil.IsZero() && h.Pending > 0 {
				fmt.Fprintf(e.stdout, "note: %s asked for a pause until %s (%s); its %d pending URLs end throttled again until then\n",
					term.Quote(h.Host), h.PausedUntil.Format(time.RFC3339), term.Quote(h.PauseWhy), h.Pending)
			}
		}
	}
	return nil
}

// dirOrRedis takes a job's DIR, or none with --redis (a fleet's frontier).
func dirOrRedis(c *cobra.Command, a []string) error {
	redis, _ := c.Flags().GetString("redis")
	switch {
	case redis == "":
		return cobra.ExactArgs(1)(c, a)
	case len(a) > 0:
		return fmt.Errorf("give a job's DIR or a fleet's --redis URL, not both")
	}
	return nil
}
