package cli

import (
	"cmp"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/polite-go/polite/crawl"
)

// display shows a running job: a bubbletea view on a terminal, a log line
// every few seconds elsewhere, or nothing.
type display struct {
	stop func()
}

const (
	barEvery  = 250 * time.Millisecond
	logEvery  = 5 * time.Second
	tableRows = 8
)

func startDisplay(mode string, job *crawl.Job, w io.Writer) *display {
	switch mode {
	case "bar":
		return startBar(job, w)
	case "log":
		return startLog(job, w)
	}
	return &display{stop: func() {}}
}

// rateMeter turns successive done counts into a rate over the last few
// seconds.
type rateMeter struct {
	at   []time.Time
	done []int
}

func (m *rateMeter) add(t time.Time, done int) float64 {
	m.at = append(m.at, t)
	m.done = append(m.done, done)
	for len(m.at) > 2 && t.Sub(m.at[0]) > 10*time.Second {
		m.at, m.done = m.at[1:], m.done[1:]
	}
	if d := t.Sub(m.at[0]).Seconds(); d > 0 {
		return float64(done-m.done[0]) / d
	}
	return 0
}

func eta(left int, rate float64) string {
	if left == 0 {
		return "0s"
	}
	if rate <= 0 {
		return "?"
	}
	return time.Duration(float64(left) / rate * float64(time.Second)).Round(time.Second).String()
}

// startLog writes one structured line every logEvery.
func startLog(job *crawl.Job, w io.Writer) *display {
	lg := slog.New(slog.NewTextHandler(w, nil))
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(logEvery)
		defer t.Stop()
		var m rateMeter
		m.add(time.Now(), job.Progress(0).Done)
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				p := job.Progress(3)
				r := m.add(now, p.Done)
				attrs := []any{"done", p.Done, "total", p.Total, "rate", fmt.Sprintf("%.1f/s", r),
					"eta", eta(p.Total-p.Done, r), "in_flight", p.InFlight, "queued", p.Queued, "waiting", p.Delayed}
				for _, o := range crawl.Outcomes {
					if n := p.Outcomes[o]; n > 0 && o != crawl.OK {
						attrs = append(attrs, o, n)
					}
				}
				var busy []string
				for _, h := range p.Hosts {
					why := ""
					if h.Why != "" {
						why = ", " + h.Why
					}
					busy = append(busy, fmt.Sprintf("%s(%d in flight, %d left%s)", h.Host, h.InFlight, h.Left, why))
				}
				if len(busy) > 0 {
					attrs = append(attrs, "busiest", strings.Join(busy, " "))
				}
				lg.Info("progress", attrs...)
			}
		}
	})
	return &display{stop: func() { close(done); wg.Wait() }}
}

// barModel is the bubbletea model of the terminal display.
type barModel struct {
	job   *crawl.Job
	p     crawl.Progress
	rate  float64
	meter rateMeter
	width int
}

type tickMsg time.Time

func tick() tea.Cmd { return tea.Tick(barEvery, func(t time.Time) tea.Msg { return tickMsg(t) }) }

func (m *barModel) Init() tea.Cmd { return tick() }

func (m *barModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width = msg.Width
	case tickMsg:
		m.p = m.job.Progress(tableRows)
		m.rate = m.meter.add(time.Time(msg), m.p.Done)
		return m, tick()
	}
	return m, nil
}

var (
	styleTitle = lipgloss.NewStyle().Bold(true)
	styleBar   = lipgloss.NewStyle().Foreground(lipgloss.Color("42"))
	styleDim   = lipgloss.NewStyle().Faint(true)
	styleWarn  = lipgloss.NewStyle().Foreground(lipgloss.Color("214"))
	styleBad   = lipgloss.NewStyle().Foreground(lipgloss.Color("203"))
)

func (m *barModel) View() tea.View {
	return tea.NewView(m.render())
}

func (m *barModel) render() string {
	p := m.p
	width := m.width
	if width <= 0 {
		width = 80
	}
	var b strings.Builder
	barW := max(10, min(50, width-40))
	frac := 0.0
	if p.Total > 0 {
		frac = float64(p.Done) / float64(p.Total)
	}
	full := int(frac * float64(barW))
	b.WriteString(styleBar.Render(strings.Repeat("█", full)) + styleDim.Render(strings.Repeat("░", barW-full)))
	fmt.Fprintf(&b, " %d/%d  %.0f/s  ETA %s\n", p.Done, p.Total, m.rate, eta(p.Total-p.Done, m.rate))
	fmt.Fprintf(&b, "in flight %d  queued %d  waiting %d", p.InFlight, p.Queued, p.Delayed)
	for _, o := range crawl.Outcomes {
		if n := p.Outcomes[o]; n > 0 {
			s := fmt.Sprintf("  %s %d", o, n)
			if o != crawl.OK {
				s = styleWarn.Render(s)
			}
			b.WriteString(s)
		}
	}
	b.WriteString("\n\n")
	if len(p.Hosts) > 0 {
		b.WriteString(styleTitle.Render(fmt.Sprintf("%-28s %8s %9s %6s %6s %7s %8s  %s", "busiest hosts", "rate/s", "in flight", "left", "429s", "blocked", "p95", "held back by")))
		b.WriteString("\n")
		for _, h := range p.Hosts {
			note := ""
			switch {
			case h.Blocked > 0:
				note = styleBad.Render(cmp.Or(h.Why, "blocked"))
			case h.Paused > 0 || strings.HasPrefix(h.Why, "breaker"):
				note = styleWarn.Render(h.Why)
			case h.Why != "":
				note = styleDim.Render(h.Why)
			}
			fmt.Fprintf(&b, "%-28s %8s %9d %6d %6d %7d %8s  %s\n", trunc(h.Host, 28), fmtRate(h.Rate), h.InFlight, h.Left,
				h.Throttled, h.Blocked, fmtDur(h.P95), note)
		}
	}
	return b.String()
}

func trunc(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

func fmtRate(r float64) string {
	if r == 0 {
		return "∞"
	}
	return fmt.Sprintf("%.1f", r)
}

func fmtDur(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return d.Round(time.Millisecond).String()
}

// startBar runs the bubbletea display on w until stop.
func startBar(job *crawl.Job, w io.Writer) *display {
	m := &barModel{job: job}
	m.p = job.Progress(tableRows)
	m.meter.add(time.Now(), m.p.Done)
	prog := tea.NewProgram(m, tea.WithOutput(w), tea.WithInput(nil), tea.WithoutSignalHandler())
	done := make(chan struct{})
	go func() {
		defer close(done)
		prog.Run()
	}()
	return &display{stop: func() {
		prog.Quit()
		<-done
	}}
}

// writeSummary writes the end-of-job report: counts by outcome and a line
// per host (the n with the most URLs).
func writeSummary(w io.Writer, p crawl.Progress, sum crawl.Summary, dir string, n int) {
	fmt.Fprintf(w, "\n%d URLs in %s", sum.Total, dir)
	if sum.DoneNow > 0 && sum.Elapsed > 0 {
		fmt.Fprintf(w, ": %d finished in %s (%.0f/s)", sum.DoneNow, sum.Elapsed.Round(100*time.Millisecond), float64(sum.DoneNow)/sum.Elapsed.Seconds())
	}
	fmt.Fprintln(w)
	for _, o := range crawl.Outcomes {
		if c := sum.Outcomes[o]; c > 0 {
			fmt.Fprintf(w, "  %-18s %d\n", o, c)
		}
	}
	if left := sum.Total - sum.Done; left > 0 {
		fmt.Fprintf(w, "  %-18s %d\n", "not finished", left)
	}
	writeStats(w, sum.Stats)
	hosts := p.Hosts
	sort.SliceStable(hosts, func(a, b int) bool { return hosts[a].Requests > hosts[b].Requests })
	shown := 0
	for _, h := range hosts {
		if h.Requests > 0 || h.Done > 0 {
			shown++
		}
	}
	if shown == 0 {
		return
	}
	width := len("host")
	for _, h := range hosts {
		width = max(width, len(h.Host))
	}
	fmt.Fprintf(w, "\n%-*s %8s %6s %6s %7s %7s %9s %7s %7s\n", width, "host", "requests", "done", "failed", "429/503", "blocked", "no answer", "p95", "rate/s")
	i := 0
	for _, h := range hosts {
		if h.Requests == 0 && h.Done == 0 {
			continue
		}
		if i == n {
			break
		}
		i++
		fmt.Fprintf(w, "%-*s %8d %6d %6d %7d %7d %9d %7s %7s\n", width, h.Host, h.Requests, h.Done, h.Failed, h.Throttled, h.Blocked, h.Errors, fmtDur(h.P95), fmtRate(h.Rate))
	}
	if shown > n {
		fmt.Fprintf(w, "  … and %d more hosts\n", shown-n)
	}
	fmt.Fprintf(w, "\nresults: %s/%s\n", dir, crawl.ResultsFile)
}

// writeStats writes a run's closing figures: URLs by last status, retries
// by reason, bytes kept.
func writeStats(w io.Writer, st crawl.Stats) {
	if len(st.Statuses) == 0 {
		return
	}
	codes := make([]int, 0, len(st.Statuses))
	for c := range st.Statuses {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	fmt.Fprint(w, "\nstatus (this run):")
	for _, c := range codes {
		name := strconv.Itoa(c)
		if c == 0 {
			name = "none"
		}
		fmt.Fprintf(w, " %s×%d", name, st.Statuses[c])
	}
	fmt.Fprintln(w)
	if len(st.Retries) > 0 {
		whys := make([]string, 0, len(st.Retries))
		n := 0
		for k, v := range st.Retries {
			whys = append(whys, k)
			n += v
		}
		sort.Slice(whys, func(a, b int) bool {
			if st.Retries[whys[a]] != st.Retries[whys[b]] {
				return st.Retries[whys[a]] > st.Retries[whys[b]]
			}
			return whys[a] < whys[b]
		})
		fmt.Fprintf(w, "retries (this run): %d:", n)
		for _, k := range whys {
			fmt.Fprintf(w, " %s×%d;", k, st.Retries[k])
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "bytes kept (this run): %d\n", st.Bytes)
	if len(st.Paused) > 0 {
		hosts := make([]string, 0, len(st.Paused))
		for h := range st.Paused {
			hosts = append(hosts, h)
		}
		sort.Slice(hosts, func(a, b int) bool {
			if st.Paused[hosts[a]] != st.Paused[hosts[b]] {
				return st.Paused[hosts[a]] > st.Paused[hosts[b]]
			}
			return hosts[a] < hosts[b]
		})
		fmt.Fprint(w, "time paused (this run):")
		for i, h := range hosts {
			if i == 10 {
				fmt.Fprintf(w, " … and %d more hosts", len(hosts)-i)
				break
			}
			fmt.Fprintf(w, " %s %s;", h, st.Paused[h].Round(time.Millisecond))
		}
		fmt.Fprintln(w)
	}
}
