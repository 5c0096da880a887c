package robots_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"time"

	"github.com/polite-go/polite/robots"
)

const exampleRobots = `# example.com
User-agent: *
Disallow: /private/
Allow: /private/press/
Disallow: /*.pdf$
Crawl-delay: 2

User-agent: polite
Disallow: /search
Request-rate: 1/5s

Sitemap: https://example.com/sitemap.xml
`

func ExampleParse() {
	r := robots.Parse([]byte(exampleRobots))
	for _, path := range []string{"/private/notes", "/private/press/2026", "/report.pdf", "/report.pdf?v=2"} {
		v := r.Test("otherbot/2.0", path)
		fmt.Printf("%-20s allowed=%-5v %v (line %d)\n", path, v.Allowed, v.Rule, v.Rule.Line)
	}
	fmt.Println(r.Sitemaps())
	// Output:
	// /private/notes       allowed=false Disallow: /private/ (line 3)
	// /private/press/2026  allowed=true  Allow: /private/press/ (line 4)
	// /report.pdf          allowed=false Disallow: /*.pdf$ (line 5)
	// /report.pdf?v=2      allowed=true  (none) (line 0)
	// [https://example.com/sitemap.xml]
}

func ExampleRobots_Group() {
	r := robots.Parse([]byte(exampleRobots))
	// Only the product token of a User-Agent header counts.
	g := r.Group("polite/1.0 (+https://example.com/bot)")
	fmt.Println(g.Agent(), g.Line(), g.Rules())
	// A group that names the agent replaces "*": /private/ is not its business.
	fmt.Println(r.Allowed("polite/1.0", "https://example.com/private/notes"))
	fmt.Println(r.Allowed("polite/1.0", "https://example.com/search?q=x"))
	// Output:
	// polite 8 [Disallow: /search]
	// true
	// false
}

func ExampleRobots_TestURL() {
	r := robots.Parse([]byte(exampleRobots))
	// A client's request URL, checked without building u.RequestURI().
	u, _ := url.Parse("https://example.com/private/report.pdf?v=2#page=3")
	v := r.TestURL("otherbot/2.0", u)
	fmt.Println(v.Allowed, v.Rule)
	// Output:
	// false Disallow: /private/
}

func ExampleDelayPolicy() {
	r := robots.Parse([]byte(exampleRobots))
	policy := robots.DelayPolicy{Max: 30 * time.Second, Default: time.Second}
	fmt.Println(policy.Delay(r.Group("otherbot"))) // Crawl-delay: 2
	fmt.Println(policy.Delay(r.Group("polite")))   // Request-rate: 1/5s
	fmt.Println(policy.Delay(robots.Parse(nil).Group("polite")))
	// Output:
	// 2s
	// 5s
	// 1s
}

func ExampleCache() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			fmt.Fprint(w, exampleRobots)
		}
	}))
	defer srv.Close()

	cache := &robots.Cache{UserAgent: "polite/1.0"}
	u, _ := url.Parse(srv.URL + "/search?q=robots")
	r, err := cache.Get(context.Background(), u)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Source(), r.StatusCode())
	if v := r.Test("polite/1.0", u.RequestURI()); !v.Allowed {
		err = &robots.DisallowedError{URL: u.Path, Rule: v.Rule}
	}
	fmt.Println(errors.Is(err, robots.ErrDisallowed), err)
	// Output:
	// parsed 200
	// true robots: /search disallowed by line 9 "Disallow: /search"
}

// A client that checks every request keeps a Ref per host (beside its
// other per-host state) and asks with GetRef: once the host's robots.txt is
// cached, the answer takes no lock and no allocation. Get answers the
// same, under the cache's read lock.
func ExampleCache_GetRef() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, exampleRobots)
	}))
	defer srv.Close()

	cache := &robots.Cache{UserAgent: "polite/1.0"}
	var ref robots.Ref // one per host, for as long as the host is kept
	for _, path := range []string{"/", "/search?q=x", "/about"} {
		u, _ := url.Parse(srv.URL + path)
		r, err := cache.GetRef(context.Background(), u, &ref)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(path, r.TestURL("polite/1.0", u).Allowed)
	}
	// Output:
	// / true
	// /search?q=x false
	// /about true
}

// Record sees each robots.txt answer and the body read, before the Cache
// uses them: an archive keeps them next to the pages (crawl writes them to
// its WARC files). Answers other than a 2xx are recorded without a body.
func ExampleCache_record() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
	}))
	defer srv.Close()
	cache := &robots.Cache{Record: func(resp *http.Response, body []byte) {
		fmt.Printf("%s %d, %d bytes\n", resp.Request.URL.Path, resp.StatusCode, len(body))
	}}
	u, _ := url.Parse(srv.URL + "/private/x")
	cache.Get(context.Background(), u)
	cache.Get(context.Background(), u) // cached: fetched once
	// Output:
	// /robots.txt 200, 34 bytes
}
