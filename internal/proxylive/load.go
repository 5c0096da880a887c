package proxylive

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Load is one run of the load driver: Count requests, Concurrency at
// once, over keep-alive connections, stopped early at Limit.
type Load struct {
	Proxy       string // proxy URL; empty: direct
	Origin      string // http://127.0.0.1:PORT
	Paths       int    // requests cycle over this many paths under /load/
	Count       int
	Concurrency int
	Limit       time.Duration
}

// LoadResult is what the client saw.
type LoadResult struct {
	OK, Errors int
	Elapsed    time.Duration
	Latency    []time.Duration // of each OK request
	NewConns   int             // connections the client dialled
	FirstErr   string
}

// Rate is OK requests per second.
func (r LoadResult) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.OK) / r.Elapsed.Seconds()
}

// Run drives the load and returns when Count requests are done, Limit
// passes or ctx ends.
func (l Load) Run(ctx context.Context) LoadResult {
	tr := &http.Transport{
		MaxIdleConns:        l.Concurrency * 2,
		MaxIdleConnsPerHost: l.Concurrency * 2,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
	if l.Proxy != "" {
		u, err := url.Parse(l.Proxy)
		if err != nil {
			return LoadResult{Errors: 1, FirstErr: err.Error()}
		}
		tr.Proxy = http.ProxyURL(u) // explicit: the environment's proxy is never used for loopback
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	ctx, cancel := context.WithTimeout(ctx, l.Limit)
	defer cancel()
	var next, newConns atomic.Int64
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		if !i.Reused {
			newConns.Add(1)
		}
	}}
	var mu sync.Mutex // guards res
	var res LoadResult
	lats := make([][]time.Duration, l.Concurrency)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range l.Concurrency {
		wg.Go(func() {
			buf := make([]byte, 32<<10)
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= int64(l.Count) {
					return
				}
				u := fmt.Sprintf("%s/load/%d", l.Origin, i%int64(max(l.Paths, 1)))
				req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, u, nil)
				t0 := time.Now()
				resp, err := client.Do(req)
				if err == nil {
					_, err = io.CopyBuffer(io.Discard, resp.Body, buf)
					resp.Body.Close()
					if err == nil && resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				d := time.Since(t0)
				if err != nil {
					if ctx.Err() != nil {
						return // the limit cut it short: not the path's error
					}
					mu.Lock()
					res.Errors++
					if res.FirstErr == "" {
						res.FirstErr = err.Error()
					}
					mu.Unlock()
					continue
				}
				lats[w] = append(lats[w], d)
			}
		})
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	for _, l := range lats {
		res.Latency = append(res.Latency, l...)
	}
	res.OK = len(res.Latency)
	res.NewConns = int(newConns.Load())
	return res
}

// percentile is the p-quantile (0..1) of d by nearest rank.
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	k := int(math.Ceil(p*float64(len(s)))) - 1
	return s[min(max(k, 0), len(s)-1)]
}
