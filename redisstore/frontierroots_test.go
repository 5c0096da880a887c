package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

func mustRoots(t *testing.T, f *Frontier) []string {
	t.Helper()
	rs, err := f.Roots(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// Roots added by several workers, some twice, read back sorted, each
// once; a Frontier on the same prefix reads them too.
func TestFrontierRoots(t *testing.T) {
	f, _, c := newFrontier(t, FrontierOptions{Prefix: "crawl:"})
	ctx := context.Background()
	if rs := mustRoots(t, f); len(rs) != 0 {
		t.Fatalf("Roots before any = %q, want none", rs)
	}
	a := []string{"https://b.example/", "https://a.example/docs/", "https://b.example/"}
	b := []string{"https://c.example/", "https://a.example/docs/"}
	var wg sync.WaitGroup
	for _, rs := range [][]string{a, b, a, b} {
		wg.Go(func() {
			if err := f.AddRoots(ctx, rs); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	want := []string{"https://a.example/docs/", "https://b.example/", "https://c.example/"}
	if rs := mustRoots(t, f); !slices.Equal(rs, want) {
		t.Errorf("Roots = %q, want %q", rs, want)
	}
	if err := f.AddRoots(ctx, nil); err != nil {
		t.Errorf("AddRoots(nil) = %v", err)
	}
	joiner, err := NewFrontier(c, FrontierOptions{Prefix: "crawl:"})
	if err != nil {
		t.Fatal(err)
	}
	if rs := mustRoots(t, joiner); !slices.Equal(rs, want) {
		t.Errorf("Roots of a joining worker = %q, want %q", rs, want)
	}
	other, err := NewFrontier(c, FrontierOptions{Prefix: "other:"})
	if err != nil {
		t.Fatal(err)
	}
	if rs := mustRoots(t, other); len(rs) != 0 {
		t.Errorf("Roots of another prefix = %q, want none", rs)
	}
	if err := f.AddRoots(ctx, []string{"https://d.example/", ""}); err == nil {
		t.Error("AddRoots with an empty root: no error")
	}
	if rs := mustRoots(t, f); !slices.Equal(rs, want) {
		t.Errorf("Roots after a refused AddRoots = %q, want %q", rs, want)
	}
}

// More roots than a few thousand: in batches, all read back (SSCAN's
// pages).
func TestFrontierRootsMany(t *testing.T) {
	f, _, _ := newFrontier(t, FrontierOptions{})
	var rs []string
	for i := range 5000 {
		rs = append(rs, fmt.Sprintf("https://h%05d.example/", i))
	}
	if err := f.AddRoots(context.Background(), rs); err != nil {
		t.Fatal(err)
	}
	if got := mustRoots(t, f); !slices.Equal(got, rs) {
		t.Errorf("Roots = %d roots, want the %d added", len(got), len(rs))
	}
}

// Past maxRoots, AddRoots is refused, naming the count, whether the list
// alone is too long or the set already holds others; what the set holds
// stays.
func TestFrontierRootsMax(t *testing.T) {
	defer func(n int) { maxRoots = n }(maxRoots)
	maxRoots = 4
	f, _, _ := newFrontier(t, FrontierOptions{})
	ctx := context.Background()
	err := f.AddRoots(ctx, []string{"a", "b", "c", "d", "e"})
	if !errors.Is(err, ErrTooManyRoots) || !strings.Contains(err.Error(), "5 roots, at most 4") {
		t.Errorf("AddRoots(5 roots) = %v, want ErrTooManyRoots naming 5", err)
	}
	if err := f.AddRoots(ctx, []string{"a", "b", "c"}); err != nil {
		t.Fatal(err)
	}
	err = f.AddRoots(ctx, []string{"a", "d", "e"})
	if !errors.Is(err, ErrTooManyRoots) || !strings.Contains(err.Error(), "5 roots, at most 4") {
		t.Errorf("AddRoots(2 more past 4) = %v, want ErrTooManyRoots naming 5", err)
	}
	if err := f.AddRoots(ctx, []string{"c", "d", "a"}); err != nil {
		t.Errorf("AddRoots(up to 4) = %v", err)
	}
	if rs := mustRoots(t, f); !slices.Equal(rs, []string{"a", "b", "c", "d"}) {
		t.Errorf("Roots = %q, want a to d", rs)
	}
}
