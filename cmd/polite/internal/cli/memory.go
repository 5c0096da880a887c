package cli

import (
	"os"
	"runtime/debug"

	"github.com/polite-go/polite/crawl"
)

// memoryRest is what a fetch needs besides bodies: hosts, queues, SQLite's
// caches, connections. The throughput runs peak at about 200 MB RSS.
const memoryRest = 256 << 20

// softMemoryLimit is the soft memory limit of a fetch (issue 29, item 14):
// its bodies, --workers × --max-body being read and crawl.DefaultMaxBacklog
// waiting for the WARC files, and memoryRest. The collector runs when the
// heap nears it, so peak RSS stays near what the job holds instead of
// twice that (GOGC=100 lets the heap double before a collection; measured
// at 64 × 10 MiB: 1.5 GB peak RSS without it, 1.0 GB with one at 1000 MiB).
// A soft limit never fails: a job that holds more only collects more often.
func softMemoryLimit(workers int, maxBody int64) int64 {
	return int64(workers)*maxBody + crawl.DefaultMaxBacklog + memoryRest
}

// limitMemory sets the soft memory limit of a fetch unless GOMEMLIMIT set
// one, and returns what restores the one before.
func limitMemory(workers int, maxBody int64) (restore func()) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	old := debug.SetMemoryLimit(softMemoryLimit(workers, maxBody))
	return func() { debug.SetMemoryLimit(old) }
}
