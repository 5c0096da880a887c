package politeness

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteTable writes the report as a text table: one row per scenario and
// policy.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tpolicy\tgoodput\t429/503\tsettle\tp95/unloaded\tpeak/cap\trequests\t")
	prev := ""
	for _, res := range r.Results {
		name := res.Scenario
		if name == prev {
			name = ""
		}
		prev = res.Scenario
		fmt.Fprintf(tw, "%s\t%s\t%.1f%%\t%.2f%%\t%s\t%s\t%.2f×\t%d\t\n",
			name, res.Policy, 100*res.Goodput, 100*res.Refused,
			fmtSettle(res.Settle), fmtRatio(res.P95), res.Peak, res.Requests)
	}
	return tw.Flush()
}

func fmtSettle(d time.Duration) string {
	switch {
	case d < 0:
		return "never"
	case d == 0:
		return "-"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 0, 64) + " s"
}

func fmtRatio(v float64) string {
	if v == 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + "×"
}

// WriteJSON writes the report as indented JSON, timelines included.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// trimFloat formats a rate without trailing zeros: 10, 2.5.
func trimFloat(f float64) string {
	return strings.TrimSuffix(strconv.FormatFloat(f, 'f', -1, 64), ".0")
}

// WriteLegend says what the table's columns mean and what each policy is.
func WriteLegend(w io.Writer, policies []Policy) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\ncolumns (from the hosts' own records):")
	for _, c := range [][2]string{
		{"goodput", "requests the hosts served, as a share of their hidden capacity over the run"},
		{"429/503", "share of requests the hosts refused (throttled or shed): how often the policy made a host say no"},
		{"settle", "after a capacity step, time until 3 s of requests were within 10 % of the new capacity (never: did not; -: no step)"},
		{"p95/unloaded", "the worst host's server-side p95 latency (queueing included) over its unloaded latency"},
		{"peak/cap", "the busiest 1-second window's requests over what the host could serve in it"},
		{"requests", "requests the hosts received"},
	} {
		fmt.Fprintf(tw, "  %s\t%s\n", c[0], c[1])
	}
	fmt.Fprintln(tw, "policies:")
	for _, p := range policies {
		fmt.Fprintf(tw, "  %s\t%s\n", p.Name, p.About)
	}
	return tw.Flush()
}
