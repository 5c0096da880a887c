package cli

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/polite-go/polite/internal/redistest"

	"github.com/polite-go/polite/crawl"
	"github.com/polite-go/polite/redisstore"
)

// The adapter passes lanes by number: the two packages must number them
// alike.
func TestLanesNumberedAlike(t *testing.T) {
	for _, l := range []crawl.Lane{crawl.LaneNormal, crawl.LaneInteractive, crawl.LaneBulk} {
		if got := redisstore.Lane(l).String(); got != l.String() {
			t.Errorf("crawl lane %d is %q, redisstore's %q", l, l, got)
		}
	}
}

// A JSON line's loopback URL opens its port as a plain line's does: the
// dialer lets the list's own loopback URLs through.
func TestLoopbackPortsOfJSONLines(t *testing.T) {
	l := &loopbackPorts{}
	io.ReadAll(l.tap(strings.NewReader("http://127.0.0.1:8081/a\n{\"url\": \"http://127.0.0.1:8082/a\", \"lane\": \"bulk\"}\n")))
	if !l.has(8081) || !l.has(8082) {
		t.Errorf("ports recorded: 8081 %v, 8082 %v; want both", l.has(8081), l.has(8082))
	}
}

// Credentials go to the hosts a fleet worker's list names as requests name
// them: normalised, so "https://API.Example.com:443/" is api.example.com.
func TestCredentialHostsNormalised(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: redistest.Start(t)})
	defer c.Close()
	f, err := redisstore.NewFrontier(c, redisstore.FrontierOptions{Prefix: "polite:creds:"})
	if err != nil {
		t.Fatal(err)
	}
	o := &fetchOptions{Header: http.Header{"Authorization": {"Bearer x"}}, MaxURLLen: 8192, Lane: "normal"}
	res, err := enqueue(context.Background(), f, strings.NewReader("https://API.Example.com:443/x\nhttp://b.example:8080/\n"), o)
	if err != nil || res.added != 2 || !res.hosts["api.example.com"] || !res.hosts["b.example:8080"] || len(res.hosts) != 2 {
		t.Errorf("enqueue: %+v, %v; want both hosts as requests name them", res, err)
	}
}
