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

// gcPercent is a fetch's GOGC: the heap grows to three times what is live
// before a collection, not twice. A fetch allocates some 14 KB a URL
// around a live heap of a few tens of MB, so at GOGC=100 the collector
// runs often; at 200, throughput.sh measured 85.1–85.9 µs of CPU a URL
// where GOGC=100 took 89.4–91.2 (three pairs, issue 34, part 2), for
// peak RSS 175–184 MB where it was 137–140. The soft memory limit bounds
// the heap as before: near it the collector runs more often whatever GOGC
// says.
const gcPercent = 200

// limitMemory sets the soft memory limit of a fetch unless GOMEMLIMIT set
// one, and its GOGC unless GOGC did, and returns what restores them.
func limitMemory(workers int, maxBody int64) (restore func()) {
	oldPercent := -2 // none set
	if os.Getenv("GOGC") == "" {
		oldPercent = debug.SetGCPercent(gcPercent)
	}
	restorePercent := func() {
		if oldPercent != -2 {
			debug.SetGCPercent(oldPercent)
		}
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		return restorePercent
	}
	old := debug.SetMemoryLimit(softMemoryLimit(workers, maxBody))
	return func() {
		debug.SetMemoryLimit(old)
		restorePercent()
	}
}
