package crawl_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/crawl"
	"github.com/polite-go/polite/testbed"
)

// A job over two simulated hosts: run it, then run it again on the same
// directory, which finds nothing left to do.
func Example() {
	srv := testbed.NewServer(testbed.HostConfig{Name: "a.test"}, testbed.HostConfig{Name: "b.test"})
	if err := srv.Start(); err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	dir, _ := os.MkdirTemp("", "crawl-example-")
	defer os.RemoveAll(dir)
	list := "http://a.test/1\nhttp://b.test/1\nhttp://a.test/status/404\nftp://a.test/x\n"

	for run := 1; run <= 2; run++ {
		tr := &polite.Transport{Base: srv.Transport(), Limits: polite.Limits{Rate: 50}}
		job, err := crawl.Open(dir, crawl.Options{Transport: tr, Bodies: crawl.BodiesNone})
		if err != nil {
			log.Fatal(err)
		}
		if _, err := job.Load(strings.NewReader(list)); err != nil {
			log.Fatal(err)
		}
		sum, err := job.Run(context.Background(), nil)
		job.Close()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("run %d: %d of %d done (%d now): ok %d, http_error %d, invalid_url %d\n", run, sum.Done, sum.Total,
			sum.DoneNow, sum.Outcomes[crawl.OK], sum.Outcomes[crawl.HTTPError], sum.Outcomes[crawl.InvalidURL])
	}
	// Output:
	// run 1: 4 of 4 done (4 now): ok 2, http_error 1, invalid_url 1
	// run 2: 4 of 4 done (0 now): ok 2, http_error 1, invalid_url 1
}
