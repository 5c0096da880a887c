package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/polite-go/polite/crawl"
)

// cdxjOptions are the settings of `polite cdxj`.
type cdxjOptions struct {
	Out   string
	Write bool // to DIR/index.cdxj instead of stdout
}

func newCDXJCmd(e *env, runF func(context.Context, any) error) *cobra.Command {
	o := &cdxjOptions{}
	c := &cobra.Command{
		Use:   "cdxj [flags] DIR",
		Short: "A CDXJ index of a job's WARC files, for replay tools",
		Long: `Read the WARC files of DIR (a job's --out, run with --bodies warc) and write
a CDXJ index of their response records, sorted: one line per record with its
SURT key, its timestamp, and url, mime, status, digest, length, offset and
filename. pywb and ReplayWeb.page replay the WARC files with it; e.g. with
pywb: wb-manager init col; cp DIR/*.warc.gz collections/col/archive/;
polite cdxj DIR > collections/col/indexes/index.cdxj; wayback.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			o.Out = a[0]
			if runF != nil {
				return runF(c.Context(), o)
			}
			return runCDXJ(e, o)
		},
	}
	c.Flags().BoolVarP(&o.Write, "write", "w", false, "write DIR/index.cdxj instead of standard output")
	return c
}

func runCDXJ(e *env, o *cdxjOptions) error {
	if !o.Write {
		if _, err := crawl.WriteCDXJ(o.Out, e.stdout); err != nil {
			return &exitError{code: ExitFatal, err: err}
		}
		return nil
	}
	// Written aside and renamed, as the report is: a reader (pywb) never
	// sees half an index.
	n := 0
	err := writeAtomic(o.Out, "index.cdxj", func(w io.Writer) error {
		var err error
		n, err = crawl.WriteCDXJ(o.Out, w)
		return err
	})
	if err != nil {
		return &exitError{code: ExitFatal, err: err}
	}
	fmt.Fprintf(e.stderr, "polite: %d records indexed in %s\n", n, filepath.Join(o.Out, "index.cdxj"))
	return nil
}
