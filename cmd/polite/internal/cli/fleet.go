package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/adaptive"
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

// parseOutage checks the outage flags (those of a fleet only: demo has
// none).
func (o *fetchOptions) parseOutage() error {
	if o.Redis == "" {
		return nil
	}
	if _, ok := redisstore.ParseOutage(o.Outage); !ok {
		return usageErr("--outage %q: want local, closed or open", o.Outage)
	}
	for name, d := range map[string]time.Duration{"--outage-local-for": o.OutageLocalFor, "--outage-closed-for": o.OutageClosedFor} {
		if d <= 0 {
			return usageErr("%s %v: must be positive", name, d)
		}
	}
	return nil
}

// fleetStore makes tr share its per-host state with the fleet through the
// Redis at o.Redis, under the fleet's name. It checks that Redis answers.
// The store's word on each phase of an outage goes to say, a line each.
func (o *fetchOptions) fleetStore(ctx context.Context, tr *polite.Transport, say func(string)) (w *fleetWatch, close func() error, err error) {
	outage, _ := redisstore.ParseOutage(o.Outage) // checked by parseOutage
	c, err := redisClient(o.Redis)
	if err != nil {
		return nil, nil, usageErr("%v", err)
	}
	ping, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := c.Ping(ping).Err(); err != nil {
		c.Close()
		return nil, nil, &exitError{code: ExitFatal, err: fmt.Errorf("--redis %s: %v", redact(o.Redis), err)}
	}
	s, err := redisstore.New(c, tr.Registry(), redisstore.Options{
		Prefix:       fleetPrefix(o.Fleet),
		Timeout:      redisTimeout,
		LocalOptions: tr.LocalOptions(),
		LeaseTTL:     o.Timeout + leaseMargin,
		Outage:       outage,
		MaxDegraded:  o.OutageLocalFor,
		Adaptive:     o.fleetAdaptive(),
		Logger:       slog.New(slog.NewTextHandler(lineWriter(say), &slog.HandlerOptions{Level: slog.LevelInfo})),
	})
	if err != nil {
		c.Close()
		return nil, nil, &exitError{code: ExitFatal, err: err}
	}
	tr.Store = s
	if tr.RobotsCache != nil {
		// One worker fetches a host's robots.txt, the others read it.
		tr.RobotsCache.Shared = redisstore.NewRobotsStore(c, fleetPrefix(o.Fleet), redisTimeout)
	}
	return &fleetWatch{s: s, c: c, redis: redact(o.Redis), closedFor: o.OutageClosedFor}, func() error {
		s.Close()
		return c.Close()
	}, nil
}

// lineWriter hands each line written to it (a log record) to say, which
// shows it without breaking the display.
type lineWriter func(string)

func (w lineWriter) Write(p []byte) (int, error) {
	w(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// fleetWatch follows the fleet's Redis through an outage (issue 29, item
// 2): the store logs each change of phase (Redis lost, local, closed,
// back); the watch gives the progress line its word on Redis, and stops
// the job once nothing has been sent for --outage-closed-for, so a fleet
// whose Redis never comes back ends in bounded time.
type fleetWatch struct {
	s         *redisstore.Store
	c         redis.UniversalClient // the fleet's Redis, for its frontier too
	redis     string                // the URL, password redacted
	closedFor time.Duration         // --outage-closed-for
}

// watchEvery is how often the watch looks at the store.
const watchEvery = time.Second

// redisGoneError stops a job whose Redis stayed away.
type redisGoneError struct {
	redis       string
	since       time.Time // unreachable since
	closedSince time.Time // nothing sent since
	closedFor   time.Duration
}

func (e *redisGoneError) Error() string {
	return fmt.Sprintf("Redis at %s unreachable since %s, nothing sent since %s (--outage-closed-for %v)",
		e.redis, clock(e.since), clock(e.closedSince), e.closedFor)
}

// note is the progress line's word on Redis at now (see redisNote).
func (w *fleetWatch) note(now time.Time) (string, bool) {
	return redisNote(w.s.Status(), w.closedFor, now)
}

// redisNote says what an outage does to the job at now: "" while Redis
// answers. halted: nothing is sent (closed), so a rate and an ETA would
// mean nothing and the note stands in their place.
func redisNote(st redisstore.Status, closedFor time.Duration, now time.Time) (note string, halted bool) {
	if !st.Degraded {
		return "", false
	}
	switch st.Mode {
	case redisstore.Closed:
		return fmt.Sprintf("waiting for Redis (closed since %s, %v; the job stops at %s unless it answers)",
			clock(st.ClosedSince), now.Sub(st.ClosedSince).Round(time.Second), clock(st.ClosedSince.Add(closedFor))), true
	case redisstore.Local:
		return fmt.Sprintf("Redis unreachable since %s: each host gets this worker's share until %s, then nothing",
			clock(st.Since), clock(st.LocalUntil)), false
	}
	return fmt.Sprintf("Redis unreachable since %s: each host gets its full rate from this worker (--outage open)", clock(st.Since)), false
}

// clock is an instant for a progress line or a message: the time of day,
// with its zone.
func clock(t time.Time) string { return t.Format("15:04:05Z07:00") }

// watch looks at the store every watchEvery until ctx ends, and calls stop
// once it has been closed for closedFor.
func (w *fleetWatch) watch(ctx context.Context, stop func(error)) {
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			st := w.s.Status()
			if st.Degraded && st.Mode == redisstore.Closed && now.Sub(st.ClosedSince) >= w.closedFor {
				stop(&redisGoneError{redis: w.redis, since: st.Since, closedSince: st.ClosedSince, closedFor: w.closedFor})
				return
			}
		}
	}
}

// fleetAdaptive is the fleet's controller for --adaptive: the one a single
// process runs (adaptiveConfig), its replicas kept alike through Redis.
// A rule's adaptive key is not heard in a fleet: --adaptive decides.
func (o *fetchOptions) fleetAdaptive() *adaptive.Config {
	if !o.Adaptive {
		return nil
	}
	return o.adaptiveConfig()
}
