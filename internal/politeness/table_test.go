package politeness

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/polite-go/polite/testbed"
)

var (
	flagTable     = flag.Bool("table", false, "run the politeness benchmark in fake time and print its table")
	flagScenarios = flag.String("scenarios", "", "with -table: comma-separated scenario names (default: all)")
	flagPolicies  = flag.String("policies", "", "with -table: comma-separated policy names (default: all)")
	flagJSON      = flag.String("json", "", "with -table: also write the JSON report to this file")
	flagTrace     = flag.Bool("trace", false, "with -table: print each host's timeline")
	flagDebug     = flag.Bool("debug", false, "with -table: print controller decisions (build with -tags adaptivetrace)")
	flagWorkers   = flag.Int("workers", 0, "with -table: requests kept going per host")
	flagBare      = flag.Bool("bare", false, "with -table: drive the policies bare, without polite.Transport")
)

func pick[T any](all []T, names string, name func(T) string) []T {
	if names == "" {
		return all
	}
	want := strings.Split(names, ",")
	var out []T
	for _, x := range all {
		if slices.Contains(want, name(x)) {
			out = append(out, x)
		}
	}
	return out
}

// TestTable prints the benchmark table: go test ./internal/politeness -run TestTable -table
func TestTable(t *testing.T) {
	if !*flagTable {
		t.Skip("run with -table")
	}
	scs := pick(testbed.Scenarios(), *flagScenarios, func(s testbed.Scenario) string { return s.Name })
	pols := pick(Peers(), *flagPolicies, func(p Policy) string { return p.Name })
	rep := &Report{}
	for _, p := range pols {
		rep.Policies = append(rep.Policies, p.Name)
	}
	for _, sc := range scs {
		for _, p := range pols {
			synctest.Test(t, func(t *testing.T) {
				if *flagDebug {
					defer traceTo(func(s string) { fmt.Println(s) })()
				}
				res, err := RunOne(t.Context(), sc, p, Options{Bare: *flagBare, Workers: *flagWorkers})
				if err != nil {
					t.Fatal(err)
				}
				rep.Results = append(rep.Results, res)
				if *flagTrace {
					for _, h := range res.Hosts {
						var b strings.Builder
						fmt.Fprintf(&b, "%s %s %s: sec cap sent served denied rate\n", sc.Name, p.Name, h.Host)
						for i := range h.Sent {
							fmt.Fprintf(&b, "%3d %5.0f %4d %4d %4d %7.2f\n", i, h.Capacity[i], h.Sent[i], h.Served[i], h.Denied[i], h.Rate[i])
						}
						t.Log("\n" + b.String())
					}
				}
			})
		}
	}
	var b strings.Builder
	rep.WriteTable(&b)
	t.Log("\n" + b.String())
	if *flagJSON != "" {
		f, err := os.Create(*flagJSON)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := rep.WriteJSON(f); err != nil {
			t.Fatal(err)
		}
	}
}
