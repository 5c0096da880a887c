package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/polite-go/polite/internal/redistest"
	"github.com/polite-go/polite/robots"
)

var _ robots.SharedStore = (*RobotsStore)(nil)

// A robots.txt answer kept by one worker's store is read by another's,
// with what it has left; a malformed value, a missing key and an
// unreachable Redis are no answer.
func TestRobotsStore(t *testing.T) {
	addr := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	ctx := context.Background()
	a, b := NewRobotsStore(c, "polite:r:", time.Second), NewRobotsStore(c, "polite:r:", time.Second)
	if _, _, _, ok := b.Load(ctx, "https://example.com"); ok {
		t.Fatal("an answer before any was kept")
	}
	body := []byte("User-agent: *\nDisallow: /private/\n")
	a.Store(ctx, "https://example.com", 200, body, time.Hour)
	code, got, left, ok := b.Load(ctx, "https://example.com")
	if !ok || code != 200 || string(got) != string(body) || left <= 59*time.Minute || left > time.Hour {
		t.Fatalf("Load = %d %q %v %v", code, got, left, ok)
	}
	a.Store(ctx, "https://gone.example", 404, nil, time.Hour)
	if code, got, _, ok := b.Load(ctx, "https://gone.example"); !ok || code != 404 || len(got) != 0 {
		t.Fatalf("a 404: %d %q %v", code, got, ok)
	}
	c.Set(ctx, "polite:r:robots:https://bad.example", "two hundred\nx", time.Hour)
	if _, _, _, ok := b.Load(ctx, "https://bad.example"); ok {
		t.Fatal("a malformed value was an answer")
	}
	dead := NewRobotsStore(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1}), "polite:r:", 200*time.Millisecond)
	if _, _, _, ok := dead.Load(ctx, "https://example.com"); ok {
		t.Fatal("an unreachable Redis gave an answer")
	}
	dead.Store(ctx, "https://example.com", 200, body, time.Hour) // nothing, and no panic
}
