package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/redisstore"
)

// leaseMargin is how much longer than --timeout (which bounds a request,
// body included) an in-flight lease lives: a worker killed mid-request
// holds its slot that long at most.
const leaseMargin = 2 * time.Second

// redisTimeout bounds every call to the fleet's Redis: a dead Redis is seen
// within it, and no request waits longer on one.
const redisTimeout = 250 * time.Millisecond

// quiet drops go-redis's own log lines (a failed dial is logged per
// attempt): polite says what went wrong once, in its own words.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func init() { redis.SetLogger(quiet{}) }

// redisClient connects to the fleet's Redis: redis://[user:pass@]host:port/db
// (rediss:// for TLS), or a Cluster with ?addr=host:port for each further
// node. Commands are never retried by the client: a script whose reply was
// lost must not run twice.
func redisClient(raw string) (redis.UniversalClient, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
		return nil, fmt.Errorf("--redis %q: want redis://HOST:PORT/DB (or rediss://; a Cluster adds ?addr=HOST:PORT per node)", redact(raw))
	}
	if u.Query().Has("addr") {
		o, err := redis.ParseClusterURL(raw)
		if err != nil {
			return nil, fmt.Errorf("--redis %q: %v", redact(raw), err)
		}
		o.MaxRetries, o.DialTimeout, o.ReadTimeout, o.WriteTimeout = -1, redisTimeout, redisTimeout, redisTimeout
		return redis.NewClusterClient(o), nil
	}
	o, err := redis.ParseURL(raw)
	if err != nil {
		return nil, fmt.Errorf("--redis %q: %v", redact(raw), err)
	}
	o.MaxRetries, o.DialTimeout, o.ReadTimeout, o.WriteTimeout = -1, redisTimeout, redisTimeout, redisTimeout
	return redis.NewClient(o), nil
}

// redact drops a URL's password, for messages.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	return u.Redacted()
}

// fleetStore makes tr share its per-host state with the fleet through the
// Redis at o.Redis, under the fleet's name. It checks that Redis answers.
func (o *fetchOptions) fleetStore(ctx context.Context, e *env, tr *polite.Transport) (close func() error, err error) {
	outage, ok := redisstore.ParseOutage(o.Outage)
	if !ok {
		return nil, usageErr("--outage %q: want local, closed or open", o.Outage)
	}
	c, err := redisClient(o.Redis)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	ping, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := c.Ping(ping).Err(); err != nil {
		c.Close()
		return nil, &exitError{code: ExitFatal, err: fmt.Errorf("--redis %s: %v", redact(o.Redis), err)}
	}
	s, err := redisstore.New(c, tr.Registry(), redisstore.Options{
		Prefix:       "polite:" + o.Fleet + ":",
		Timeout:      redisTimeout,
		LocalOptions: tr.LocalOptions(),
		LeaseTTL:     o.Timeout + leaseMargin,
		Outage:       outage,
		Adaptive:     o.fleetAdaptive(),
		Logger:       slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelInfo})),
	})
	if err != nil {
		c.Close()
		return nil, &exitError{code: ExitFatal, err: err}
	}
	tr.Store = s
	return func() error {
		s.Close()
		return c.Close()
	}, nil
}

// fleetAdaptive is the fleet's AIMD for --adaptive (the Transport's own
// controller reads one client's answers; a fleet's are spread over its
// workers): up to --max-rate.
func (o *fetchOptions) fleetAdaptive() *redisstore.Adaptive {
	if !o.Adaptive {
		return nil
	}
	return &redisstore.Adaptive{Max: o.MaxRate}
}
