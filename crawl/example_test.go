package crawl_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/bucket"
	"github.com/polite-go/polite/crawl"
	"github.com/polite-go/polite/crawl/scope"
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

// A crawl (Options.Follow) of a generated site of two hosts from one of
// their home pages: the links its pages name within the scope join the
// job, each URL once, and the crawl ends when there are none left.
func Example_follow() {
	web := testbed.Site{Hosts: 2, Pages: 100, Seed: 1, NoCalendar: true}.MustGenerate()
	srv := testbed.NewServer(web.HostConfigs()...)
	if err := srv.Start(); err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	dir, _ := os.MkdirTemp("", "crawl-follow-")
	defer os.RemoveAll(dir)

	tr := &polite.Transport{Base: srv.Transport(), Limits: polite.Limits{Rate: bucket.Inf, Concurrency: 4}}
	job, err := crawl.Open(dir, crawl.Options{Transport: tr, Bodies: crawl.BodiesNone,
		Follow: &crawl.Follow{Rules: scope.Rules{Mode: scope.Domain}, Sitemaps: true}})
	if err != nil {
		log.Fatal(err)
	}
	defer job.Close()
	if _, err := job.Load(strings.NewReader(web.Seeds()[0] + "\n")); err != nil {
		log.Fatal(err)
	}
	sum, err := job.Run(context.Background(), nil)
	if err != nil {
		log.Fatal(err)
	}
	want := web.Expected(testbed.Crawl{Seeds: web.Seeds()[:1], Scope: "domain", MaxDepth: -1, Sitemaps: true})
	fmt.Println("every URL finished:", sum.Done == sum.Total && !sum.Interrupted)
	fmt.Println("more than the seed:", sum.Total > 1)
	fmt.Println("every page the site's oracle expects has a result:", sum.Total >= len(want.Fetch))
	// Output:
	// every URL finished: true
	// more than the seed: true
	// every page the site's oracle expects has a result: true
}
