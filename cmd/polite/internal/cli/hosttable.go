package cli

import (
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	xterm "github.com/charmbracelet/x/term"

	"github.com/polite-go/polite/cmd/polite/internal/term"
	"github.com/polite-go/polite/crawl"
)

// termWidth returns the width of the terminal w is, 0 when it is none (a
// file, a pipe: no limit).
func termWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok || !isTerminal(w) {
		return 0
	}
	cols, _, err := xterm.GetSize(f.Fd())
	if err != nil || cols <= 0 {
		return 0
	}
	return cols
}

// hostCol is a column of the closing hosts table; drop orders the columns
// left out first when a terminal is too narrow for all (0: never).
type hostCol struct {
	head string
	cell func(h *crawl.HostProgress) string
	drop int
}

var hostCols = []hostCol{
	{"requests", func(h *crawl.HostProgress) string { return strconv.FormatInt(h.Requests, 10) }, 0},
	{"done", func(h *crawl.HostProgress) string { return strconv.FormatInt(h.Done, 10) }, 0},
	{"failed", func(h *crawl.HostProgress) string { return strconv.FormatInt(h.Failed, 10) }, 0},
	{"429/503", func(h *crawl.HostProgress) string { return strconv.FormatInt(h.Throttled, 10) }, 3},
	{"blocked", func(h *crawl.HostProgress) string { return strconv.FormatInt(h.Blocked, 10) }, 1},
	{"no answer", func(h *crawl.HostProgress) string { return strconv.FormatInt(h.Errors, 10) }, 2},
	{"p95", func(h *crawl.HostProgress) string { return fmtDur(h.P95) }, 4},
	{"rate/s", func(h *crawl.HostProgress) string { return fmtRate(h.Rate) }, 0},
}

// minHostW is the narrowest the host column is cut to.
const minHostW = 12

// writeHostTable writes the closing table of hosts, the n with the most
// requests, each column as wide as its widest cell. Within width (0: no
// limit) every row fits one line: the host names are cut first, to
// minHostW, then the columns that matter least are left out, and a line
// under the table says which (issue 33, item 5: rows wrapped on a narrow
// terminal, and the demo's on an 80-column one).
func writeHostTable(w io.Writer, hosts []crawl.HostProgress, n, width int) {
	sort.SliceStable(hosts, func(a, b int) bool { return hosts[a].Requests > hosts[b].Requests })
	var rows []*crawl.HostProgress
	shown := 0
	for i := range hosts {
		if hosts[i].Requests == 0 && hosts[i].Done == 0 {
			continue
		}
		shown++
		if len(rows) < n {
			rows = append(rows, &hosts[i])
		}
	}
	if shown == 0 {
		return
	}
	names := make([]string, len(rows))
	hostW := len("host")
	for i, h := range rows {
		names[i] = term.Quote(h.Host)
		hostW = max(hostW, len([]rune(names[i])))
	}
	cells := make([][]string, len(hostCols))
	widths := make([]int, len(hostCols))
	for c, col := range hostCols {
		widths[c] = len(col.head)
		for _, h := range rows {
			v := col.cell(h)
			cells[c] = append(cells[c], v)
			widths[c] = max(widths[c], len(v))
		}
	}
	keep := make([]bool, len(hostCols))
	total := hostW
	for c := range hostCols {
		keep[c] = true
		total += 1 + widths[c]
	}
	if width > 0 && total > width {
		cut := min(hostW, max(minHostW, hostW-(total-width)))
		total -= hostW - cut
		hostW = cut
	}
	var dropped []string
	for rank := 1; width > 0 && total > width; rank++ {
		c := slices.IndexFunc(hostCols, func(col hostCol) bool { return col.drop == rank })
		if c < 0 {
			break
		}
		keep[c] = false
		total -= 1 + widths[c]
		dropped = append(dropped, hostCols[c].head)
	}
	if width > 0 && len(dropped) > 0 {
		// Room the dropped columns left goes back to the names.
		full := hostW
		for _, nm := range names {
			full = max(full, len([]rune(nm)))
		}
		grow := min(full, hostW+width-total) - hostW
		hostW += max(grow, 0)
	}
	var b strings.Builder
	line := func(name string, cell func(c int) string) {
		b.WriteString(fitName(name, hostW))
		for c := range hostCols {
			if keep[c] {
				fmt.Fprintf(&b, " %*s", widths[c], cell(c))
			}
		}
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	line("host", func(c int) string { return hostCols[c].head })
	for i := range rows {
		line(names[i], func(c int) string { return cells[c][i] })
	}
	if shown > n {
		fmt.Fprintf(&b, "  … and %d more hosts\n", shown-n)
	}
	if len(dropped) > 0 {
		b.WriteString(wrap("  left out to fit "+strconv.Itoa(width)+" columns: "+strings.Join(dropped, ", "), width, "    "))
	}
	io.WriteString(w, b.String())
}

// fitName pads s to w runes, or cuts it to w with "…" in its middle (the
// ends of a host name tell most).
func fitName(s string, w int) string {
	r := []rune(s)
	if len(r) <= w {
		return s + strings.Repeat(" ", w-len(r))
	}
	head := (w - 1) / 2
	return string(r[:head]) + "…" + string(r[len(r)-(w-1-head):])
}

// wrap breaks s at spaces into lines of at most width runes (a word
// longer than that on a line of its own), each after the first indented.
func wrap(s string, width int, indent string) string {
	var b strings.Builder
	n := 0
	for i, word := range strings.Split(s, " ") {
		l := len([]rune(word))
		switch {
		case i == 0:
		case n+1+l > width && n > len(indent):
			b.WriteString("\n" + indent)
			n = len(indent)
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += l
	}
	b.WriteByte('\n')
	return b.String()
}
