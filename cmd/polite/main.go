// Command polite fetches URLs politely: per-host rates, concurrency caps,
// pauses on 429/503, retries within a budget, robots.txt — in a durable job
// that resumes after any interruption. Run 'polite --help', or start with
// 'polite demo'.
package main

import (
	"context"
	"os"

	"github.com/polite-go/polite/cmd/polite/internal/cli"
)

func main() {
	os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
