package politeness

import (
	"strings"
	"testing"
)

// A fleet row sits beside its scenario's one-process row, named.
func TestLiveTableRows(t *testing.T) {
	scs := []LiveScenario{{Name: "a"}, {Name: "b"}}
	runs := []LiveRun{
		{Scenario: "b", Fleet: 4, Row: rowName(4), Goodput: 0.9},
		{Scenario: "a", Fleet: 4, Row: rowName(4), Goodput: 0.8},
		{Scenario: "a", Row: rowName(0), Goodput: 0.99},
		{Scenario: "a", Run: 1, Row: rowName(0), Goodput: 0.97},
	}
	sums := Summarize(scs, runs)
	var got []string
	for _, s := range sums {
		got = append(got, s.Scenario+" "+s.Row)
	}
	if want := "a one process|a fleet×4|b fleet×4"; strings.Join(got, "|") != want {
		t.Fatalf("Summarize rows = %q, want %q", strings.Join(got, "|"), want)
	}
	if s := sums[0]; s.Runs != 2 || s.Goodput[0] != 0.97 {
		t.Errorf("one-process row: %d runs, goodput %v; want 2 runs, median 0.97", s.Runs, s.Goodput)
	}
	var b strings.Builder
	WriteLiveTable(&b, sums, nil)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if !strings.Contains(lines[0], "row") || !strings.Contains(lines[2], "fleet×4") {
		t.Errorf("table with fleet rows:\n%s", b.String())
	}

	// Without a fleet row the table is as it was: no row column.
	b.Reset()
	WriteLiveTable(&b, Summarize(scs, runs[2:]), nil)
	if strings.Contains(b.String(), "row") || strings.Contains(b.String(), "one process") {
		t.Errorf("table of one-process rows names them:\n%s", b.String())
	}
}
