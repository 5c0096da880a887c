package followlive

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Row is one figure of the table: the part it belongs to, what was
// measured, the goal, and what produced it. Bad marks a figure that
// missed its goal. A Figure starting with "command" is a command line,
// printed above its part's table.
type Row struct {
	Part     string `json:"part"`
	Figure   string `json:"figure"`
	Measured string `json:"measured"`
	Goal     string `json:"goal,omitempty"`
	From     string `json:"from,omitempty"`
	Bad      bool   `json:"bad,omitempty"`
}

// maxCell bounds a table cell; figures.json has every figure whole.
const maxCell = 120

// WriteTable writes rows as a table per part, in the order the parts
// first appear: the part's commands, then its figures, a missed goal
// marked "✗".
func WriteTable(w io.Writer, rows []Row) {
	var parts []string
	byPart := map[string][]Row{}
	for _, r := range rows {
		if _, ok := byPart[r.Part]; !ok {
			parts = append(parts, r.Part)
		}
		byPart[r.Part] = append(byPart[r.Part], r)
	}
	for _, p := range parts {
		fmt.Fprintf(w, "\n== %s\n", p)
		for _, r := range byPart[p] {
			if strings.HasPrefix(r.Figure, "command") {
				fmt.Fprintf(w, "%s: $ %s", r.Figure, r.Measured)
				if r.From != "" {
					fmt.Fprintf(w, "   [%s]", r.From)
				}
				fmt.Fprintln(w)
			}
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "figure\tmeasured\tgoal\tfrom")
		for _, r := range byPart[p] {
			if strings.HasPrefix(r.Figure, "command") {
				continue
			}
			mark := ""
			if r.Bad {
				mark = "✗ "
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", cut(r.Figure), cut(mark+r.Measured), cut(r.Goal), cut(r.From))
		}
		tw.Flush()
	}
}

func cut(s string) string {
	s = strings.ReplaceAll(s, "\t", " ")
	if r := []rune(s); len(r) > maxCell {
		return string(r[:maxCell-1]) + "…"
	}
	return s
}
