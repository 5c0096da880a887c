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
