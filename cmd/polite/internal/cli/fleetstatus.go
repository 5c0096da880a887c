package cli

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"text/tabwriter"

	"github.com/polite-go/polite/cmd/polite/internal/term"
	"github.com/polite-go/polite/redisstore"
)

// runFleetStatus prints a fleet's frontier: its counts, outcomes, workers,
// the hosts with most URLs pending and the dead letters; or, with
// --results, its committed results.
func runFleetStatus(e *env, o *statusOptions) error {
	c, err := redisClient(o.Redis)
	if err != nil {
		return usageErr("%v", err)
	}
	defer c.Close()
	ctx := context.Background()
	f, err := redisstore.NewFrontier(c, redisstore.FrontierOptions{Prefix: fleetPrefix(o.Fleet), Timeout: frontierCallTimeout})
	if err != nil {
		return &exitError{code: ExitFatal, err: fmt.Errorf("--redis %s: %w", redact(o.Redis), err)}
	}
	w := e.stdout
	if o.Results {
		err := f.Results(ctx, func(_ string, rec []byte) error {
			_, err := fmt.Fprintf(w, "%s\n", rec)
			return err
		})
		if err != nil {
			return &exitError{code: ExitFatal, err: err}
		}
		return nil
	}
	st, err := f.Stats(ctx)
	if err != nil {
		return &exitError{code: ExitFatal, err: fmt.Errorf("--redis %s: %w", redact(o.Redis), err)}
	}
	state := "running"
	if st.Pending == 0 && st.Leased == 0 {
		state = "finished"
	}
	fmt.Fprintf(w, "fleet %q (%s): %d URLs, %d committed, %d pending, %d leased out, %d dead letters (%s)\n",
		o.Fleet, redact(o.Redis), st.Done+st.Pending+st.Leased+st.Dead, st.Done, st.Pending, st.Leased, st.Dead, state)
	fmt.Fprintf(w, "  results refused as late: %d; expired leases reclaimed: %d\n", st.Late, st.Reclaimed)
	for _, k := range slices.Sorted(maps.Keys(st.Outcomes)) {
		fmt.Fprintf(w, "  %-19s %d\n", term.Quote(k), st.Outcomes[k])
	}
	if len(st.Workers) > 0 {
		fmt.Fprintln(w, "\nworkers:")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "worker\tcommitted\tleases out")
		for _, k := range slices.Sorted(maps.Keys(st.Workers)) {
			ws := st.Workers[k]
			fmt.Fprintf(tw, "%s\t%d\t%d\n", term.Quote(k), ws.Committed, ws.Leased)
		}
		tw.Flush()
	}
	if len(st.Hosts) > 0 {
		hosts := slices.SortedFunc(maps.Keys(st.Hosts), func(a, b string) int {
			return cmp.Or(cmp.Compare(st.Hosts[b].Pending, st.Hosts[a].Pending), cmp.Compare(a, b))
		})
		more := ""
		if len(hosts) > o.Hosts {
			more = fmt.Sprintf(" (%d of %d, most pending first)", o.Hosts, len(hosts))
			hosts = hosts[:o.Hosts]
		}
		if st.HostsTruncated {
			more += fmt.Sprintf(" (of the first %d hosts read)", redisstore.StatsHosts)
		}
		fmt.Fprintf(w, "\nhosts%s:\n", more)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "host\tpending\tdone")
		for _, h := range hosts {
			fmt.Fprintf(tw, "%s\t%d\t%d\n", term.Quote(h), st.Hosts[h].Pending, st.Hosts[h].Done)
		}
		tw.Flush()
	}
	if st.Dead > 0 {
		fmt.Fprintf(w, "\ndead letters (%d; 'polite retry --redis %s --fleet %s' queues them again):\n", st.Dead, redact(o.Redis), o.Fleet)
		n := 0
		err := f.DeadLetters(ctx, func(d redisstore.DeadLetter) error {
			if n < o.Dead {
				fmt.Fprintf(w, "  %s  leased %d times: %s\n", term.Quote(d.URL), d.Leases, term.Quote(d.Reason))
			}
			n++
			return nil
		})
		if err != nil {
			return &exitError{code: ExitFatal, err: err}
		}
	}
	return nil
}

// runFleetRetry queues again a fleet's dead letters and its results with
// one of the outcomes.
func runFleetRetry(e *env, o *retryOptions) error {
	c, err := redisClient(o.Redis)
	if err != nil {
		return usageErr("%v", err)
	}
	defer c.Close()
	f, err := redisstore.NewFrontier(c, redisstore.FrontierOptions{Prefix: fleetPrefix(o.Fleet), Timeout: frontierCallTimeout})
	if err != nil {
		return &exitError{code: ExitFatal, err: fmt.Errorf("--redis %s: %w", redact(o.Redis), err)}
	}
	n, err := f.Retry(context.Background(), redisstore.RetryFilter{Dead: true, Outcomes: o.Outcomes})
	if err != nil {
		return &exitError{code: ExitFatal, err: fmt.Errorf("fleet %q: %w (%d queued again before the error)", o.Fleet, err, n)}
	}
	fmt.Fprintf(e.stdout, "fleet %q: %d URLs queued again (dead letters, and results %s); the fleet's workers fetch them\n", o.Fleet, n, term.Quote(fmt.Sprint(o.Outcomes)))
	return nil
}
