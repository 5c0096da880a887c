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

// LiveSummary is a live scenario's runs summed up: the median of each
// figure, and its spread (least and most).
type LiveSummary struct {
	Scenario, Twin, Target   string
	Runs                     int
	Goodput, Refused, After  [3]float64 // median, min, max
	P95ms, P95Ratio, SettleS [3]float64 // settle: -1 never
	Wall                     [3]float64
	Load                     float64 // most load seen at a run's start
	Errors                   int
}

// Summarize groups runs by scenario, in the order of scs.
func Summarize(scs []LiveScenario, runs []LiveRun) []LiveSummary {
	var out []LiveSummary
	for _, sc := range scs {
		s := LiveSummary{Scenario: sc.Name, Twin: sc.Twin, Target: sc.Target}
		var good, ref, after, p95, ratio, settle, wall []float64
		for _, r := range runs {
			if r.Scenario != sc.Name {
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
			st := r.Settle.Seconds()
			if r.Settle < 0 {
				st = math.Inf(1) // never sorts last
			}
			settle = append(settle, st)
			wall = append(wall, r.Wall)
		}
		if s.Runs == 0 {
			continue
		}
		s.Goodput, s.Refused, s.After = spread(good), spread(ref), spread(after)
		s.P95ms, s.P95Ratio, s.SettleS, s.Wall = spread(p95), spread(ratio), spread(settle), spread(wall)
		out = append(out, s)
	}
	return out
}

// spread returns the median (the lower middle of an even count), least and
// most of v.
func spread(v []float64) [3]float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return [3]float64{s[(len(s)-1)/2], s[0], s[len(s)-1]}
}

// WriteLiveTable writes the summaries as a text table; sims, when not nil,
// adds the simulated twin's figures by scenario name.
func WriteLiveTable(w io.Writer, sums []LiveSummary, sims map[string]Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "scenario\truns\tgoodput\t429/503\tafter step\tp95 ms\tp95/unloaded\tsettle\twall s\tload\t")
	if sims != nil {
		fmt.Fprint(tw, "sim goodput\tsim 429/503\tsim p95/unl\tsim settle\t")
	}
	fmt.Fprintln(tw, "target\t")
	for _, s := range sums {
		runs := strconv.Itoa(s.Runs)
		if s.Errors > 0 {
			runs += fmt.Sprintf(" (%d err)", s.Errors)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t", s.Scenario, runs,
			pct(s.Goodput, 1), pct(s.Refused, 2), pct(s.After, 2),
			num(s.P95ms, 0), num(s.P95Ratio, 2), settles(s.SettleS), num(s.Wall, 0), s.Load)
		if sims != nil {
			if r, ok := sims[s.Twin]; ok && s.Twin != "" {
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
