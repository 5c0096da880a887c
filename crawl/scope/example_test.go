package scope_test

import (
	"fmt"
	"regexp"

	"github.com/polite-go/polite/crawl/scope"
)

func Example() {
	s := scope.New(scope.Rules{
		Mode:     scope.Domain,
		Exclude:  []*regexp.Regexp{regexp.MustCompile(`/logout`)},
		MaxDepth: 2,
		Norm:     scope.NormOptions{StripParams: scope.DefaultStripParams},
	})
	if err := s.AddSeed("https://www.example.co.uk/"); err != nil {
		panic(err)
	}

	// Links found on the seed's page (depth 0), resolved against its URL.
	for _, link := range []string{
		"https://shop.Example.co.uk:443/a/../cart?utm_source=news&id=7#top",
		"https://other.example/",
		"https://www.example.co.uk/logout",
		"mailto:info@example.co.uk",
		"https://www.example.co.uk/a/b/a/b/a/",
	} {
		norm, why := s.Check(link, 0)
		switch {
		case why == scope.OK:
			fmt.Println("take", norm)
		case norm == "":
			fmt.Println("skip", why)
		default:
			fmt.Println("skip", why, norm)
		}
	}
	// A link on a page at depth 2 would be at depth 3.
	_, why := s.Check("https://www.example.co.uk/deep", 2)
	fmt.Println("skip", why)
	fmt.Println(s.Roots())
	// Output:
	// take https://shop.example.co.uk/cart?id=7
	// skip off_scope https://other.example/
	// skip excluded https://www.example.co.uk/logout
	// skip bad_url
	// skip trap_repeat https://www.example.co.uk/a/b/a/b/a/
	// skip max_depth
	// [example.co.uk]
}

func ExampleNormalize() {
	for _, raw := range []string{
		"HTTP://User:Pw@Bücher.Example.:80/a/./b/../%7ec%2f?q=a+b&&x=%e2%82%ac#frag",
		"https://[2001:DB8::1]:443",
		"http://h/?b=2&fbclid=x&a=1",
		"http://h/100%",
	} {
		n, err := scope.Normalize(raw, scope.NormOptions{StripParams: scope.DefaultStripParams, SortQuery: true})
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(n)
	}
	// Output:
	// http://xn--bcher-kva.example/a/~c%2F?q=a+b&x=%E2%82%AC
	// https://[2001:db8::1]/
	// http://h/?a=1&b=2
	// scope: URL "http://h/100%": bad percent-escape "%" in the path
}

func ExamplePattern() {
	a := scope.Pattern("https://example.com/cal/2026/12?day=3")
	b := scope.Pattern("https://example.com/cal/2027/01?day=15")
	c := scope.Pattern("https://example.com/about")
	fmt.Println(a == b, a == c)
	// Output: true false
}
