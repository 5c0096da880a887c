package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/polite-go/polite/cmd/polite/internal/report"
	"github.com/polite-go/polite/cmd/polite/internal/term"
	"github.com/polite-go/polite/crawl"
)

// reportOptions are the settings of `polite report`.
type reportOptions struct {
	Out string
}

// ReportFile is the page `polite report DIR` writes in DIR.
const ReportFile = "report.html"

func newReportCmd(e *env, runF func(context.Context, any) error) *cobra.Command {
	o := &reportOptions{}
	return &cobra.Command{
		Use:   "report DIR",
		Short: "Write DIR/report.html (and DIR/hosts.csv): a job's totals, throughput, status mix, hosts and throttling, as plots",
		Long: `Read a job's state.db, results.jsonl and events.jsonl (its audit log) in DIR
and write DIR/report.html, one offline page: totals and what politeness cost
(time waited by reason, time paused); throughput over time by outcome; the
status mix with 429 and 503 called out; the hosts table (sortable); and for
the most throttled hosts the rate polite set against the rate they served and
their capacity estimate, with 429s, pauses and open breakers marked, and
latency; hosts by state and requests in flight over time, Retry-After asked
for against applied, retries per URL and the errors grouped. Every host's row
goes to DIR/hosts.csv. The plots are SVG in the page: it needs no network and no
JavaScript to read. A running job may be reported on: the page is a
snapshot. Open it with a browser (xdg-open DIR/report.html).`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			o.Out = a[0]
			if runF != nil {
				return runF(c.Context(), o)
			}
			path, unread, err := writeReport(o.Out)
			if err != nil {
				return jobErr(o.Out, err)
			}
			fmt.Fprintln(e.stdout, path)
			if unread != "" {
				fmt.Fprintf(e.stderr, "polite: report: %s\n", term.Quote(unread))
			}
			return nil
		},
	}
}

// writeReport writes dir's report page and, beside it, hosts.csv (every
// host's row), and returns the page's path and, when lines of the job's
// files could not be read and were left out, a sentence saying so. Each
// file is written to a temporary file and renamed, so a reader never sees
// half of one.
func writeReport(dir string) (path, unread string, err error) {
	total, pending, err := crawl.ReadCounts(dir)
	if err != nil {
		return "", "", err
	}
	results, err := openOptional(filepath.Join(dir, crawl.ResultsFile))
	if err != nil {
		return "", "", err
	}
	defer closeOptional(results)
	events, err := openOptional(filepath.Join(dir, crawl.EventsFile))
	if err != nil {
		return "", "", err
	}
	defer closeOptional(events)
	skips, err := crawl.ReadSkips(dir)
	if err != nil {
		return "", "", err
	}
	job := report.Job{Total: total, Pending: pending}
	for _, s := range skips {
		job.Skips = append(job.Skips, report.Skip{Reason: s.Reason, Host: s.Host, Links: s.Links, Example: s.Example})
	}
	d, err := report.Read(reader(results), reader(events), job)
	if err != nil {
		return "", "", fmt.Errorf("report: %s: %w", dir, err)
	}
	d.Dir = dir
	if err := writeAtomic(dir, report.CSVFile, func(w io.Writer) error { return report.WriteCSV(w, d) }); err != nil {
		return "", "", err
	}
	path = filepath.Join(dir, ReportFile)
	if err := writeAtomic(dir, ReportFile, func(w io.Writer) error { return report.Write(w, d) }); err != nil {
		return "", "", err
	}
	if n := d.Unread.Lines; n > 0 {
		unread = fmt.Sprintf("%d lines of %s could not be read and were left out (the first: %v)", n, crawl.EventsFile, d.Unread.First)
	}
	if n := d.ResultsUnread; n > 0 {
		unread = strings.TrimPrefix(unread+fmt.Sprintf("; %d lines of %s could not be read and were left out", n, crawl.ResultsFile), "; ")
	}
	return path, unread, nil
}

// writeAtomic writes dir/name with write through a temporary file it then
// renames, so a reader never sees half a file.
func writeAtomic(dir, name string, write func(io.Writer) error) error {
	path := filepath.Join(dir, name)
	tmp, err := os.CreateTemp(dir, ".report-*")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	defer os.Remove(tmp.Name())
	err = write(tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("report: writing %s: %w", path, err)
	}
	return nil
}

// openOptional opens path, or returns nil when it does not exist.
func openOptional(path string) (*os.File, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return f, nil
}

func closeOptional(f *os.File) {
	if f != nil {
		f.Close()
	}
}

// reader returns f as a Reader, nil for a nil f.
func reader(f *os.File) io.Reader {
	if f == nil {
		return nil
	}
	return f
}
