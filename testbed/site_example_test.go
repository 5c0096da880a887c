package testbed_test

import (
	"fmt"
	"log"
	"net/http"

	"github.com/polite-go/polite/testbed"
)

// A generated site served on loopback, an access log kept in memory, and
// the oracle: what a crawl of one host to depth 2 must request. Here the
// "crawl" requests exactly that, and Check finds nothing wrong.
func ExampleSite() {
	web := testbed.Site{Hosts: 2, Pages: 200, Seed: 1}.MustGenerate()
	srv := testbed.NewServer(web.HostConfigs()...)
	access := &testbed.AccessLog{Keep: true}
	srv.SetAccessLog(access)
	if err := srv.Start(); err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	e := web.Expected(testbed.Crawl{Seeds: web.Seeds()[:1], Scope: "host", MaxDepth: 2})
	c := srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, u := range append(append(e.Robots, e.Fetch...), e.Trap...) {
		resp, err := c.Get(u)
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
	}
	fmt.Println(web.Seeds())
	fmt.Println(e.TrapPrefix, len(e.Trap), "months")
	fmt.Println(e.Check(access.Requests()))
	// Output:
	// [http://h00.site.test/ http://h01.site.test/]
	// http://h00.site.test/calendar/ 3 months
	// <nil>
}
