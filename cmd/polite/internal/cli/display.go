package cli

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/polite-go/polite/bucket"

	"github.com/polite-go/polite/cmd/polite/internal/term"
	"github.com/polite-go/polite/crawl"
)

// display shows a running job: a bubbletea view on a terminal, a log line
// every few seconds elsewhere, or nothing.
type display struct {
	stop func()
	// say shows a notice (such as Ctrl-C's) without breaking the view: on
	// the terminal it becomes a line of the view, elsewhere a line of its
	// own.
	say func(string)
}

const (
	barEvery     = 250 * time.Millisecond
	logEvery     = 5 * time.Second
	loadEvery    = time.Second // a log line's cadence while the list loads
	slowestEvery = time.Second
	tableRows    = 8
)

// noteFunc gives the progress line a word on the fleet's Redis at an
// instant (see redisNote): "" while it answers; halted when nothing is
// sent, the note then standing in for the rate and the ETA. nil without a
// fleet.
type noteFunc func(time.Time) (note string, halted bool)

func startDisplay(mode string, job *crawl.Job, w io.Writer, note noteFunc) *display {
	switch mode {
	case "bar":
		return startBar(job, w, note)
	case "log":
		return startLog(job, w, note)
	}
	return &display{stop: func() {}, say: func(s string) { fmt.Fprintln(w, s) }}
}

// rateMeter turns successive counts into a rate over the last few seconds.
type rateMeter struct {
	at []time.Time
	n  []int64
}

func (m *rateMeter) add(t time.Time, n int64) float64 {
	m.at = append(m.at, t)
	m.n = append(m.n, n)
	for len(m.at) > 2 && t.Sub(m.at[0]) > 10*time.Second {
		m.at, m.n = m.at[1:], m.n[1:]
	}
	if d := t.Sub(m.at[0]).Seconds(); d > 0 {
		return float64(n-m.n[0]) / d
	}
	return 0
}

// estimate is the time left: the URLs left at the job's recent throughput,
// or the slowest host's own estimate when that is longer (its URLs left at
// the rate it is held to, after its pause), and which one it is.
type estimate struct {
	eta     time.Duration // -1: unknown
	slowest *crawl.Slowest
}

func estimateLeft(left int, rate float64, slow crawl.Slowest, haveSlow bool) estimate {
	e := estimate{eta: -1}
	if left == 0 {
		return estimate{}
	}
	if rate > 0 {
		e.eta = time.Duration(float64(left) / rate * float64(time.Second))
	}
	if haveSlow && slow.ETA > e.eta {
		e.eta, e.slowest = slow.ETA, &slow
	}
	return e
}

func (e estimate) String() string {
	if e.eta < 0 {
		return "?"
	}
	s := e.eta.Round(time.Second).String()
	if e.eta > 0 && e.eta < time.Second {
		s = "<1s"
	}
	if sl := e.slowest; sl != nil {
		s += fmt.Sprintf(" (slowest: %s, %d left at %s/s", term.Quote(sl.Host), sl.Left, fmtRate(sl.Rate))
		if sl.Held > 0 {
			// A figure that waits on a timer says so (issue 33, item
			// 15): after a block re-check it may grow again.
			in := sl.Held.Round(time.Second).String()
			if sl.Held < time.Second {
				in = "<1s"
			}
			s += fmt.Sprintf(", after its %s in %s", sl.HeldBy, in)
		}
		s += ")"
	}
	return s
}

// loadingLine is the progress line while the job is not fetching yet: the
// list's loading, with the entries read so far (a million-line list took
// 12 s of blank terminal, issue 33, item 9), then the job's state read;
// "" once the job runs.
func loadingLine(p crawl.Progress) string {
	switch {
	case p.Loading:
		return fmt.Sprintf("loading the URL list: %s read…", plural(p.Read, "line"))
	case p.Total == 0 && p.Done == 0:
		return "reading the job's state…"
	}
	return ""
}

// plural says n things in English: "1 line", "1,200 lines".
func plural(n int, what string) string {
	s := commas(n) + " " + what
	if n != 1 {
		s += "s"
	}
	return s
}

// commas writes n with thousands separated: 1,200,000.
func commas(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// startLog writes one structured line every logEvery, and one a second
// while the list loads (a million-line list takes seconds: the first
// line comes within the first second, issue 33, item 9).
func startLog(job *crawl.Job, w io.Writer, note noteFunc) *display {
	var mu sync.Mutex // one line at a time
	lg := slog.New(slog.NewTextHandler(w, nil))
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(loadEvery)
		defer t.Stop()
		var m rateMeter
		last := time.Now()
		m.add(last, int64(job.Progress(0).DoneNow))
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				p := job.Progress(3)
				if p.Loading {
					mu.Lock()
					lg.Info("loading", "read", p.Read)
					mu.Unlock()
					continue
				}
				if now.Sub(last) < logEvery-loadEvery/2 {
					continue
				}
				last = now
				r := m.add(now, int64(p.DoneNow))
				slow, ok := job.Slowest()
				attrs := []any{"done", p.Done, "total", p.Total}
				attrs = append(attrs, pace(r, estimateLeft(p.Total-p.Done, r, slow, ok), note, now)...)
				attrs = append(attrs, "in_flight", p.InFlight, "queued", p.Queued, "waiting", p.Delayed)
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
					busy = append(busy, fmt.Sprintf("%s(%d in flight, %d left%s)", hostLabel(h), h.InFlight, h.Left, why))
				}
				if len(busy) > 0 {
					attrs = append(attrs, "busiest", strings.Join(busy, " "))
				}
				mu.Lock()
				lg.Info("progress", attrs...)
				mu.Unlock()
			}
		}
	})
	say := func(s string) {
		mu.Lock()
		fmt.Fprintln(w, s)
		mu.Unlock()
	}
	return &display{stop: func() { close(done); wg.Wait() }, say: say}
}

// pace is the progress line's rate and ETA, with the fleet's word on Redis;
// while nothing is sent (Redis closed) that word in their place: a rate of
// 0 and an ETA from before would say nothing true (issue 29, item 2).
func pace(rate float64, est estimate, note noteFunc, now time.Time) []any {
	n, halted := note.at(now)
	if halted {
		return []any{"status", n}
	}
	attrs := []any{"rate", fmt.Sprintf("%.1f/s", rate), "eta", est.String()}
	if n != "" {
		attrs = append(attrs, "redis", n)
	}
	return attrs
}

// at calls f, when there is one.
func (f noteFunc) at(now time.Time) (string, bool) {
	if f == nil {
		return "", false
	}
	return f(now)
}

// hostLabel is a host row's name: the host, and the budget it draws on when
// that is not its own (--key domain|ip).
func hostLabel(h crawl.HostProgress) string {
	if h.Budget != "" {
		return h.Host + " [" + h.Budget + "]"
	}
	return h.Host
}

// barModel is the bubbletea model of the terminal display.
type barModel struct {
	job      *crawl.Job
	p        crawl.Progress
	rate     float64
	meter    rateMeter
	hostRate map[string]*hostMeter // the rate each shown host gets
	slow     crawl.Slowest
	haveSlow bool
	slowAt   time.Time
	notice   string
	width    int
	height   int
	note     noteFunc
	redis    string // note's word at the last sample
	halted   bool
}

// hostMeter is one host row's sending rate.
type hostMeter struct {
	m    rateMeter
	rate float64
	seen time.Time
}

type (
	tickMsg   time.Time
	noticeMsg string
)

func tick() tea.Cmd { return tea.Tick(barEvery, func(t time.Time) tea.Msg { return tickMsg(t) }) }

func (m *barModel) Init() tea.Cmd { return tick() }

func (m *barModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case noticeMsg:
		m.notice = string(msg)
	case tickMsg:
		m.sample(time.Time(msg))
		return m, tick()
	}
	return m, nil
}

// sample reads the job's progress at now.
func (m *barModel) sample(now time.Time) {
	m.p = m.job.Progress(tableRows)
	m.rate = m.meter.add(now, int64(m.p.DoneNow))
	m.redis, m.halted = m.note.at(now)
	if now.Sub(m.slowAt) >= slowestEvery {
		m.slow, m.haveSlow = m.job.Slowest()
		m.slowAt = now
	}
	if m.hostRate == nil {
		m.hostRate = map[string]*hostMeter{}
	}
	for _, h := range m.p.Hosts {
		hm := m.hostRate[h.Host]
		if hm == nil {
			hm = &hostMeter{}
			m.hostRate[h.Host] = hm
		}
		hm.rate = hm.m.add(now, h.Requests)
		hm.seen = now
	}
	for k, hm := range m.hostRate {
		if now.Sub(hm.seen) > 30*time.Second {
			delete(m.hostRate, k)
		}
	}
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

// The table's layouts, widest first: a terminal narrower than a layout's
// width gets the next one, and one narrower than the last none.
var layouts = []struct {
	width, host int
	full        bool // in flight, blocked and p95 columns too
}{
	{100, 28, true},
	{60, 20, false},
}

// render draws the view to fit the terminal: every line cut to its width,
// the host table narrowed or left out, and as many rows as its height has
// room for.
func (m *barModel) render() string {
	p := m.p
	width, height := m.width, m.height
	if width <= 0 {
		width = 80
	}
	if height <= 0 {
		height = 24
	}
	var b strings.Builder
	line := func(style *lipgloss.Style, s string) {
		s = fit(s, width)
		if style != nil {
			s = style.Render(s)
		}
		b.WriteString(s)
		b.WriteByte('\n')
	}
	if l := loadingLine(p); l != "" {
		line(nil, l)
	} else {
		frac := 0.0
		if p.Total > 0 {
			frac = float64(p.Done) / float64(p.Total)
		}
		est := estimateLeft(p.Total-p.Done, m.rate, m.slow, m.haveSlow)
		text := fmt.Sprintf(" %d/%d  %.0f/s  ETA %s", p.Done, p.Total, m.rate, est)
		if m.halted {
			text = fmt.Sprintf(" %d/%d  %s", p.Done, p.Total, m.redis)
		}
		if barW := min(50, width-len([]rune(text))); barW >= 5 {
			full := min(barW, int(frac*float64(barW)))
			b.WriteString(styleBar.Render(strings.Repeat("█", full)) + styleDim.Render(strings.Repeat("░", barW-full)))
			line(nil, text)
		} else {
			line(nil, strings.TrimPrefix(text, " "))
		}
	}
	counts := fmt.Sprintf("in flight %d  queued %d  waiting %d", p.InFlight, p.Queued, p.Delayed)
	for _, o := range crawl.Outcomes {
		if n := p.Outcomes[o]; n > 0 {
			counts += fmt.Sprintf("  %s %d", o, n)
		}
	}
	line(nil, counts)
	used := 2
	if m.redis != "" && !m.halted {
		line(&styleWarn, m.redis)
		used++
	}
	if m.notice != "" {
		line(&styleWarn, term.Quote(m.notice))
		used++
	}
	rows := min(len(p.Hosts), height-used-3) // a blank line, the header, and the cursor's line
	lay := -1
	for i, l := range layouts {
		if width >= l.width {
			lay = i
			break
		}
	}
	if rows <= 0 || lay < 0 {
		return b.String()
	}
	l := layouts[lay]
	b.WriteByte('\n')
	if l.full {
		line(&styleTitle, fmt.Sprintf("%-*s %13s %9s %6s %6s %7s %8s  %s", l.host, "busiest hosts", "got/limit", "in flight", "left", "429s", "blocked", "p95", "held back by"))
	} else {
		line(&styleTitle, fmt.Sprintf("%-*s %13s %6s %6s  %s", l.host, "busiest hosts", "got/limit", "left", "429s", "held back by"))
	}
	for _, h := range p.Hosts[:rows] {
		got := 0.0
		if hm := m.hostRate[h.Host]; hm != nil {
			got = hm.rate
		}
		rate := fmt.Sprintf("%.1f/%s", got, fmtRate(h.Rate))
		var s string
		if l.full {
			s = fmt.Sprintf("%-*s %13s %9d %6d %6d %7d %8s  %s", l.host, fit(term.Quote(hostLabel(h)), l.host), rate, h.InFlight, h.Left,
				h.Throttled, h.Blocked, fmtDur(h.P95), term.Quote(h.Why))
		} else {
			s = fmt.Sprintf("%-*s %13s %6d %6d  %s", l.host, fit(term.Quote(hostLabel(h)), l.host), rate, h.Left, h.Throttled, term.Quote(h.Why))
		}
		var style *lipgloss.Style
		switch {
		case h.Blocked > 0:
			style = &styleBad
		case h.Paused > 0 || strings.HasPrefix(h.Why, "breaker"):
			style = &styleWarn
		}
		line(style, s)
	}
	return b.String()
}

// fit cuts s to n terminal cells (one per rune: host names and the view's
// own text), marking the cut.
func fit(s string, n int) string {
	if n <= 0 {
		return ""
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// humanBytes writes a byte count as people read it: "29 B", "1.5 MiB",
// "12 GiB" (powers of 1024, as --max-body takes them).
func humanBytes(n int64) string {
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB"}
	v, u := float64(n)/1024, 0
	for v >= 1024 && u < len(units)-1 {
		v, u = v/1024, u+1
	}
	if v < 10 {
		return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[u]
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + " " + units[u]
}

// perSecond writes a rate with the digits it needs: "0.5", "2.3", "150"
// (a job held at 0.5/s said "0/s", issue 33, item 5).
func perSecond(r float64) string {
	switch {
	case r <= 0 || math.IsNaN(r) || math.IsInf(r, 0):
		return "0"
	case r < 10:
		return strconv.FormatFloat(r, 'g', 2, 64)
	}
	return strconv.FormatFloat(math.Round(r), 'f', 0, 64)
}

func fmtRate(r float64) string {
	if r == 0 || r >= bucket.Inf {
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
func startBar(job *crawl.Job, w io.Writer, note noteFunc) *display {
	m := &barModel{job: job, note: note}
	m.sample(time.Now())
	prog := tea.NewProgram(m, tea.WithOutput(w), tea.WithInput(nil), tea.WithoutSignalHandler())
	done := make(chan struct{})
	go func() {
		defer close(done)
		prog.Run()
	}()
	// Notices reach the view through a queue and a goroutine of their
	// own: prog.Send waits until the view takes the message, and the view
	// may itself be waiting (a sample asks the job and the store, whose
	// loggers say things): say must never block. Once the view has stopped,
	// notices are written to w as lines.
	notes, quit, fwd := make(chan string, 64), make(chan struct{}), make(chan struct{})
	var stopped atomic.Bool
	go func() {
		defer close(fwd)
		for {
			select {
			case s := <-notes:
				prog.Send(noticeMsg(s))
			case <-quit:
				return
			}
		}
	}()
	return &display{
		stop: func() {
			prog.Quit()
			<-done
			stopped.Store(true)
			close(quit)
			<-fwd
			for {
				select {
				case s := <-notes:
					fmt.Fprintln(w, s)
				default:
					return
				}
			}
		},
		say: func(s string) {
			if !stopped.Load() {
				select {
				case notes <- s:
					return
				default: // a flood of notices: the rest as plain lines
				}
			}
			fmt.Fprintln(w, s)
		},
	}
}

// writeSummary writes the end-of-job report: counts by outcome and a line
// per host (the n with the most URLs).
func writeSummary(w io.Writer, p crawl.Progress, sum crawl.Summary, dir string, n int) {
	fmt.Fprintf(w, "\n%d URLs in %s", sum.Total, dir)
	if sum.DoneNow > 0 && sum.Elapsed > 0 {
		fmt.Fprintf(w, ": %d finished in %s (%s/s)", sum.DoneNow, sum.Elapsed.Round(100*time.Millisecond), perSecond(float64(sum.DoneNow)/sum.Elapsed.Seconds()))
	}
	fmt.Fprintln(w)
	if p.Dropped > 0 {
		fmt.Fprintf(w, "  (%s of the list repeated a URL it had named: dropped, each fetched once)\n", plural(p.Dropped, "line"))
	}
	for _, o := range crawl.Outcomes {
		if c := sum.Outcomes[o]; c > 0 {
			fmt.Fprintf(w, "  %-18s %d\n", o, c)
		}
	}
	if left := sum.Total - sum.Done; left > 0 {
		fmt.Fprintf(w, "  %-18s %d\n", "not finished", left)
	}
	writeStats(w, sum.Stats)
	writeHostTable(w, p.Hosts, n, termWidth(w))
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
			name = "no answer" // "none×24" read as nothing (issue 33, item 5)
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
			fmt.Fprintf(w, " %s×%d;", term.Quote(k), st.Retries[k])
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "bytes kept (this run): %s\n", humanBytes(st.Bytes))
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
			fmt.Fprintf(w, " %s %s;", term.Quote(h), st.Paused[h].Round(time.Millisecond))
		}
		fmt.Fprintln(w)
	}
}
