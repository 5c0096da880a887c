package crawl

import (
	"slices"
	"strings"
	"testing"
)

// Origins names every scheme://host of a job's URLs, once each, so that a
// job resumed without its list knows what the list named (issue 33, item
// 13): http and https on a host key without a port are two origins.
func TestOrigins(t *testing.T) {
	j, err := Open(t.TempDir(), Options{Bodies: BodiesNone})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	list := "http://127.0.0.1:8080/a\nhttp://127.0.0.1:8080/b\nHTTPS://localhost/c\nhttp://localhost/d\nftp://x.test/\nnot a url\n"
	if _, err := j.Load(strings.NewReader(list)); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := j.Origins(func(o string) { got = append(got, o) }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want := []string{"http://127.0.0.1:8080", "http://localhost", "https://localhost"}
	if !slices.Equal(got, want) {
		t.Errorf("Origins = %q, want %q", got, want)
	}
}
