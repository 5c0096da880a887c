package redisstore

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// RobotsStore keeps robots.txt answers in Redis for a fleet's
// robots.Caches (robots.Cache.Shared): one worker fetches an origin's
// robots.txt and the others read it, instead of each fetching it (every
// fetch counts against the host's rate, and a burst of robots.txt and a
// page met a host's small burst with a 429 per worker). A key per origin,
// "<prefix>robots:<origin>", holds "<status>\n<body>" and expires with the
// answer.
type RobotsStore struct {
	c       redis.UniversalClient
	prefix  string
	timeout time.Duration
}

// NewRobotsStore returns a RobotsStore on c under prefix (the fleet's, as
// the Store's), each call bounded by timeout.
func NewRobotsStore(c redis.UniversalClient, prefix string, timeout time.Duration) *RobotsStore {
	if prefix == "" {
		prefix = "polite:"
	}
	if timeout <= 0 {
		timeout = time.Second
	}
	return &RobotsStore{c: c, prefix: prefix, timeout: timeout}
}

// Load returns origin's answer and how much longer it stands; no answer
// when Redis has none, or does not answer, or holds something malformed
// (the Cache then fetches).
func (s *RobotsStore) Load(ctx context.Context, origin string) (status int, body []byte, left time.Duration, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	key := s.prefix + "robots:" + origin
	pl := s.c.Pipeline()
	get := pl.Get(ctx, key)
	ttl := pl.PTTL(ctx, key)
	if _, err := pl.Exec(ctx); err != nil {
		return 0, nil, 0, false
	}
	head, rest, found := strings.Cut(get.Val(), "\n")
	code, err := strconv.Atoi(head)
	if !found || err != nil || code < 100 || code > 599 || ttl.Val() <= 0 {
		return 0, nil, 0, false
	}
	return code, []byte(rest), ttl.Val(), true
}

// Store keeps origin's answer for ttl; a failure keeps nothing.
func (s *RobotsStore) Store(ctx context.Context, origin string, status int, body []byte, ttl time.Duration) {
	if ttl <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	v := make([]byte, 0, len(body)+4)
	v = strconv.AppendInt(v, int64(status), 10)
	v = append(v, '\n')
	v = append(v, body...)
	s.c.Set(ctx, s.prefix+"robots:"+origin, v, ttl)
}
