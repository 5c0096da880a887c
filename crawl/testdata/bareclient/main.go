// Command bareclient is the floor `make throughput` measures polite against:
// the same URL list fetched by net/http alone, with the same 128 workers and
// nothing else (no state, no WARC, no robots.txt, no limits). What polite
// fetch costs above it is the crawl job's own work.
//
//	go run ./crawl/testdata/bareclient URLS_FILE
//	go run ./crawl/testdata/bareclient -durable DIR URLS_FILE
//
// With -durable, it also does the least a fetch that keeps polite's
// promises must (durable.go): the URLs loaded into SQLite, and each batch
// of answers (at most 2048, or 50 ms) written as a gzip WARC (a response
// record at BestSpeed with its block and payload digests, a request record
// stored), fsynced, marked done with its results line in one transaction,
// and the lines appended to results.jsonl, fsynced: polite fetch's group
// commit, without its scheduler, limits, robots.txt or report. What polite
// fetch costs above that floor is its own machinery.
//
// It prints one line: URLs fetched, wall time, URLs/s and the process's CPU
// per URL. Run it only against the loopback testbed, as throughput.sh does.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const workers = 128

func main() {
	durable := flag.String("durable", "", "keep state, WARC and results in this directory, as polite fetch does")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: bareclient [-durable DIR] URLS_FILE")
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bareclient:", err)
		os.Exit(1)
	}
	var urls []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		urls = append(urls, sc.Text())
	}
	f.Close()
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "bareclient:", err)
		os.Exit(1)
	}

	// Keep-alive per host as polite fetch keeps it (crawl/job.go).
	client := &http.Client{
		Transport: &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: 30 * time.Second},
		Timeout:   30 * time.Second,
	}
	var next, ok, failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	var d *floor
	if *durable != "" {
		if d, err = openFloor(*durable, urls); err != nil {
			fmt.Fprintln(os.Stderr, "bareclient:", err)
			os.Exit(1)
		}
	}
	for range workers {
		wg.Go(func() {
			buf := make([]byte, 32<<10)
			for {
				i := next.Add(1) - 1
				if i >= int64(len(urls)) {
					return
				}
				resp, err := client.Get(urls[i])
				if err != nil {
					failed.Add(1)
					continue
				}
				if d != nil {
					err = d.keep(int(i), urls[i], resp)
				} else {
					_, err = io.CopyBuffer(io.Discard, resp.Body, buf)
				}
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					failed.Add(1)
					continue
				}
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	if d != nil {
		if err := d.close(); err != nil {
			fmt.Fprintln(os.Stderr, "bareclient:", err)
			os.Exit(1)
		}
	}
	wall := time.Since(start)
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	n := len(urls)
	name := "bare net/http"
	if d != nil {
		name = "bare net/http, durable"
	}
	fmt.Printf("%s: %d ok, %d failed of %d in %.2fs: %.0f URLs/s, CPU %.2fs (%.1f µs/URL)\n", name,
		ok.Load(), failed.Load(), n, wall.Seconds(), float64(n)/wall.Seconds(), cpu.Seconds(), float64(cpu.Microseconds())/float64(max(n, 1)))
	if failed.Load() > 0 {
		os.Exit(1)
	}
}
