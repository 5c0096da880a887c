package politeness

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"
)

// LiveSummary is a live scenario's runs of one row (one process, or a
// fleet) summed up: the median of each figure, and its spread (least and
// most).
type LiveSummary struct {
	Scenario, Twin, Target   string
	Fleet                    int    // workers of a fleet row, 0 for one process
	Row                      string // "one process", "fleet×4"
	Runs                     int
	Goodput, Refused, After  [3]float64 // median, min, max
	P95ms, P95Ratio, SettleS [3]float64 // settle: -1 never
	Unloaded                 [3]float64 // ms, measured before each run (0: none)
	Wall                     [3]float64
	Load                     float64 // most load seen at a run's start
	Errors                   int
}

// Summarize groups runs by scenario, in the order of scs, and within a
// scenario by row: one process first, then fleets by size.
func Summarize(scs []LiveScenario, runs []LiveRun) []LiveSummary {
	var fleets []int
	for _, r := range runs {
		if !slices.Contains(fleets, r.Fleet) {
			fleets = append(fleets, r.Fleet)
		}
	}
	slices.Sort(fleets)
	var out []LiveSummary
	for _, sc := range scs {
		for _, f := range fleets {
			if s, ok := summarize(sc, f, runs); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// summarize sums up the runs of scenario sc with fleet workers, if any.
func summarize(sc LiveScenario, fleet int, runs []LiveRun) (LiveSummary, bool) {
	s := LiveSummary{Scenario: sc.Name, Twin: sc.Twin, Target: sc.Target, Fleet: fleet, Row: rowName(fleet)}
	var good, ref, after, p95, ratio, unl, settle, wall []float64
	for _, r := range runs {
		if r.Scenario != sc.Name || r.Fleet != fleet {
			continue
		}
		if r.Err != "" {
			s.Errors++
		}
		s.Runs++
		s.Load = max(s.Load, r.Load)
		good = append(good, r.Goodput)
		ref = append(ref, r.Refused)
		after = append(after, r.RefusedAfter)
		p95 = append(p95, float64(r.P95)/1e6)
		ratio = append(ratio, r.P95Ratio)
		unl = append(unl, float64(r.Unloaded)/1e6)
		st := r.Settle.Seconds()
		if r.Settle < 0 {
			st = math.Inf(1) // never sorts last
		}
		settle = append(settle, st)
		wall = append(wall, r.Wall)
	}
	if s.Runs == 0 {
		return s, false
	}
	s.Goodput, s.Refused, s.After = spread(good), spread(ref), spread(after)
	s.P95ms, s.P95Ratio, s.SettleS, s.Wall = spread(p95), spread(ratio), spread(settle), spread(wall)
	s.Unloaded = spread(unl)
	return s, true
}

// spread returns the median (the lower middle of an even count), least and
// most of v.
func spread(v []float64) [3]float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return [3]float64{s[(len(s)-1)/2], s[0], s[len(s)-1]}
}

// WriteLiveTable writes the summaries as a text table; sims, when not nil,
// adds the simulated twin's figures by scenario name (beside one-process
// rows). A column names each row when a fleet row is among them.
func WriteLiveTable(w io.Writer, sums []LiveSummary, sims map[string]Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	rows := slices.ContainsFunc(sums, func(s LiveSummary) bool { return s.Fleet > 0 })
	fmt.Fprint(tw, "scenario\t")
	if rows {
		fmt.Fprint(tw, "row\t")
	}
	fmt.Fprint(tw, "runs\tgoodput\t429/503\tafter step\tp95 ms\tp95/unloaded\tsettle\twall s\tload\t")
	if sims != nil {
		fmt.Fprint(tw, "sim goodput\tsim 429/503\tsim p95/unl\tsim settle\t")
	}
	fmt.Fprintln(tw, "target\t")
	for _, s := range sums {
		runs := strconv.Itoa(s.Runs)
		if s.Errors > 0 {
			runs += fmt.Sprintf(" (%d err)", s.Errors)
		}
		fmt.Fprintf(tw, "%s\t", s.Scenario)
		if rows {
			fmt.Fprintf(tw, "%s\t", s.Row)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t", runs,
			pct(s.Goodput, 1), pct(s.Refused, 2), pct(s.After, 2),
			num(s.P95ms, 0), num(s.Unloaded, 1), num(s.P95Ratio, 2), settles(s.SettleS), num(s.Wall, 0), s.Load)
		if sims != nil {
			if r, ok := sims[s.Twin]; ok && s.Twin != "" && s.Fleet == 0 {
				fmt.Fprintf(tw, "%.1f%%\t%.2f%%\t%s\t%s\t", 100*r.Goodput, 100*r.Refused, fmtRatio(r.P95), fmtSettle(r.Settle))
			} else {
				fmt.Fprint(tw, "\t\t\t\t")
			}
		}
		fmt.Fprintf(tw, "%s\t\n", s.Target)
	}
	return tw.Flush()
}

func pct(v [3]float64, prec int) string {
	return fmt.Sprintf("%.*f%% (%.*f-%.*f)", prec, 100*v[0], prec, 100*v[1], prec, 100*v[2])
}

func num(v [3]float64, prec int) string {
	return fmt.Sprintf("%.*f (%.*f-%.*f)", prec, v[0], prec, v[1], prec, v[2])
}

func settles(v [3]float64) string {
	if v[2] == 0 {
		return "-"
	}
	f := func(x float64) string {
		if math.IsInf(x, 1) {
			return "never"
		}
		return fmtSettle(time.Duration(x * float64(time.Second)))
	}
	return f(v[0]) + " (" + f(v[1]) + "-" + f(v[2]) + ")"
}
