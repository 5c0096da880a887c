package links_test

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/polite-go/polite/crawl/links"
)

func ExampleHTML() {
	page := `<html><head>
<base href="/docs/">
<meta name="robots" content="noindex">
<link rel="stylesheet" href="style.css">
<link rel="next" href="page-2.html">
</head><body>
<a href="intro.html#start">Intro</a>
<a href="../about" rel="nofollow">About</a>
<a href="mailto:info@example.com">Mail</a>
<script>document.write('<a href="/hidden">')</script>
<img src="logo.png" srcset="logo-2x.png 2x">
</body></html>`
	base, _ := url.Parse("https://example.com/index.html")
	found, p, err := links.HTML(nil, strings.NewReader(page), base, "polite", links.Options{})
	if err != nil {
		panic(err)
	}
	for _, l := range found {
		fmt.Println(l.Kind, l.URL, l.NoFollow)
	}
	fmt.Printf("base %s, noindex %v, nofollow %v\n", p.Base, p.NoIndex, p.NoFollow)
	// Output:
	// related https://example.com/docs/page-2.html false
	// anchor https://example.com/docs/intro.html false
	// anchor https://example.com/about true
	// base https://example.com/docs/, noindex true, nofollow false
}

func ExampleSitemap() {
	sitemap := `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>https://example.com/</loc><lastmod>2026-11-01</lastmod></url>
  <url><loc>https://example.com/news?page=2&amp;sort=new</loc></url>
  <url><loc>/relative/is/skipped</loc></url>
</urlset>`
	index, skipped, err := links.Sitemap(strings.NewReader(sitemap), links.SitemapOptions{}, func(e links.Entry) error {
		fmt.Println(e.Loc, e.LastMod.Format("2006-01-02"))
		return nil
	})
	fmt.Println(index, skipped, err)
	// Output:
	// https://example.com/ 2026-11-01
	// https://example.com/news?page=2&sort=new 0001-01-01
	// false 1 <nil>
}
