package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/polite-go/polite/testbed"
)

// demoOptions are the settings of `polite demo`: a fetch's, against the
// built-in testbed.
type demoOptions struct {
	fetch fetchOptions
	Pages map[string]int // URLs per demo host
}

// demoPages is how many URLs the demo asks of each host: enough for every
// mechanism to show, few enough to finish within a minute.
var demoPages = map[string]int{
	"fast.test": 300, "slow.test": 40, "drop.test": 250, "retry.test": 80,
	"busy.test": 30, "waf.test": 40, "robots.test": 20, "knee.test": 80,
}

var demoAbout = map[string]string{
	"fast.test":   "50 req/s: plenty of room",
	"slow.test":   "5 req/s, 100 ms: a small host",
	"drop.test":   "50 req/s, then 10 req/s after 6 s",
	"retry.test":  "10 req/s: 429 with Retry-After and RateLimit headers",
	"busy.test":   "5 req/s: 503 with Retry-After as a date",
	"waf.test":    "soft-blocks after 20 pages (a WAF challenge)",
	"robots.test": "robots.txt: Disallow /private/, Crawl-delay 1",
	"knee.test":   "never 429s: latency climbs past 20 req/s",
}

func newDemoCmd(e *env, runF func(context.Context, any) error) *cobra.Command {
	o := &demoOptions{Pages: demoPages}
	fo := &o.fetch
	var rate, key string
	c := &cobra.Command{
		Use:   "demo [flags]",
		Short: "Crawl built-in simulated hosts on loopback: every mechanism within a minute",
		Long: `Run 'polite fetch' against simulated hosts served on loopback by this very
process: no network, no setup. The hosts differ in capacity; one answers 429
with Retry-After, one 503 with a date, one loses capacity mid-run, one
soft-blocks, one has a robots.txt with a Crawl-delay, one only grows slower.
Watch each host's rate, pauses and blocks, then read the results.

The output goes to a new temporary directory unless --out names one; run the
demo again with the same --out, or interrupt it and run it again, to see a
job resume.`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if err := fo.parse(rate, "10MiB", key, "warc"); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), o)
			}
			return runDemo(c.Context(), e, o)
		},
	}
	f := c.Flags()
	addPolicyFlags(f, fo, &rate, &key)
	f.Lookup("rate").DefValue = "10"
	f.Set("rate", "10")
	f.Lookup("concurrency").DefValue = "4"
	f.Set("concurrency", "4")
	f.StringVar(&fo.Out, "out", "", "the job's `DIR` (default: a new temporary directory)")
	f.IntVar(&fo.Workers, "workers", 32, "requests in flight over all hosts")
	f.StringVar(&fo.Progress, "progress", "auto", "live display: bar, log, none or auto")
	f.SortFlags = false
	fo.Retries = 5
	fo.MaxDelay = 10e9
	fo.MaxRetryAfter = 60e9
	fo.HostGiveUp = 5 * 60e9
	fo.BlockRecheck = 2e9 // crawl.DefaultBlockRecheck; 0 would be never
	fo.Timeout = 10e9
	fo.Grace = 5e9
	fo.MaxURLLen = 8 << 10
	fo.WARCGzip = true
	fo.WARCMaxSize = 1 << 30 // crawl.DefaultWARCMaxSize
	return c
}

func runDemo(ctx context.Context, e *env, o *demoOptions) error {
	fo := &o.fetch
	hosts := testbed.DemoHosts()
	srv := testbed.NewServer(hosts...)
	if err := srv.Start(); err != nil {
		return &exitError{code: ExitFatal, err: err}
	}
	defer srv.Close()
	if fo.Out == "" {
		dir, err := os.MkdirTemp("", "polite-demo-")
		if err != nil {
			return &exitError{code: ExitFatal, err: err}
		}
		fo.Out = dir
	}
	fo.base = srv.Transport()
	fo.list = strings.NewReader(demoList(hosts, o.Pages))
	fo.summaryN = len(hosts)

	fmt.Fprintf(e.stdout, "polite demo: %d simulated hosts on %s (loopback), output in %s\n\n", len(hosts), srv.Addr(), fo.Out)
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	for _, h := range hosts {
		fmt.Fprintf(tw, "  %s\t%d URLs\t%s\n", h.Name, o.Pages[h.Name], demoAbout[h.Name])
	}
	tw.Flush()
	fmt.Fprintf(e.stdout, "\nEach host starts at %s req/s", fmtRate(fo.Rate))
	if fo.Adaptive {
		fmt.Fprint(e.stdout, " and adapts to what it bears")
	}
	fmt.Fprintf(e.stdout, ", at most %d in flight.\n", fo.Concurrency)
	err := runFetch(ctx, e, fo)
	fmt.Fprintf(e.stdout, "\nLook inside: head %s/results.jsonl; sqlite3 %s/state.db 'select outcome, count(*) from urls group by 1'\n", fo.Out, fo.Out)
	fmt.Fprintf(e.stdout, "Open the report in a browser: xdg-open %s (or open, on macOS)\n", filepath.Join(fo.Out, ReportFile))
	// The demo's hosts block, disallow and hand out bad lines on purpose:
	// URLs that end that way are the demo working, so a finished demo exits
	// 0. (polite fetch would exit 4.)
	var ee *exitError
	if errors.As(err, &ee) && ee.code == ExitFailures {
		fmt.Fprintln(e.stdout, "The failures above are the simulated hosts' doing, as designed; polite fetch would exit 4 here.")
		return nil
	}
	return err
}

// demoList is the demo's URL list: the hosts' pages interleaved, a few
// /private/ pages on robots.test, and two lines that are not URLs.
func demoList(hosts []testbed.HostConfig, pages map[string]int) string {
	var b strings.Builder
	b.WriteString("# polite demo\nnot a url\nftp://fast.test/file.txt\n")
	most := 0
	for _, n := range pages {
		most = max(most, n)
	}
	for p := range most {
		for _, h := range hosts {
			if p >= pages[h.Name] {
				continue
			}
			path := fmt.Sprintf("/page/%d", p)
			if h.Name == "robots.test" && p%5 == 4 {
				path = fmt.Sprintf("/private/%d", p)
			}
			fmt.Fprintf(&b, "http://%s%s\n", h.Name, path)
		}
	}
	return b.String()
}
