package polite

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"time"

	"github.com/polite-go/polite/robots"
)

// robotsKnown says that req needs no robots.txt fetched before it goes:
// robots.txt is off, req fetches it, or its rules are cached for req's
// host (h: its state).
func (t *Transport) robotsKnown(req *http.Request, h *Host) bool {
	t.init()
	if t.robots == nil || req.URL == nil || robots.IsFetch(req) {
		return true
	}
	_, ok := t.robots.Cached(req.URL, &t.ext(h).robotsRef)
	return ok
}

// checkRobots refuses a URL robots.txt disallows, and keeps the host's rate
// under the Crawl-delay each time a new copy of robots.txt is in force.
func (t *Transport) checkRobots(ctx context.Context, req *http.Request, h *Host) error {
	p := t.ext(h)
	rb, ok := t.robots.Cached(req.URL, &p.robotsRef)
	if !ok {
		// robots.txt is fetched as a request of its own: the terms of
		// the request that happened to need it (its cost, priority, no
		// retries, its own Observer) are not its terms, and must not
		// make it fail for every later request to the host. Only here,
		// off the cached path, does clearing them cost an allocation.
		fetchCtx := ctx
		if _, set := ctx.Value(optsKey{}).(reqOpts); set {
			fetchCtx = context.WithValue(ctx, optsKey{}, reqOpts{})
		}
		var err error
		if rb, err = t.robots.GetRef(fetchCtx, req.URL, &p.robotsRef); err != nil {
			return fmt.Errorf("polite: robots.txt for %q: %w", h.Key(), err)
		}
	}
	if p.robots.Swap(rb) != rb {
		t.applyCrawlDelay(ctx, h, rb)
	}
	v := rb.TestURL(t.robotsAgent(), req.URL)
	if v.Allowed {
		return nil
	}
	u := *req.URL
	u.RawQuery, u.Fragment, u.User = "", "", nil // never log credentials or query strings
	ro := optsOf(ctx)
	t.emit(ctx, ro.obs, Event{Kind: EventRobots, Time: time.Now(), Host: h.Key(), ID: ro.id, Reason: ReasonRobots,
		Detail: fmt.Sprintf("%s (line %d, %s)", v.Rule, v.Rule.Line, rb.Source())})
	err := &robots.DisallowedError{URL: u.String(), Rule: v.Rule}
	if rb.Source() == robots.Unreachable {
		// Disallowed for now only (RFC 9309 §2.3.1.3): say so, so that a
		// scheduler can try the URL again once robots.txt is re-fetched.
		if cause := rb.Err(); cause != nil {
			// Why it could not be fetched rides along: a destination
			// refused (ErrNotPublic) is no reason to wait and retry.
			return fmt.Errorf("%w: %w (fetching robots.txt: %w)", ErrRobotsUnreachable, err, cause)
		}
		return fmt.Errorf("%w: %w", ErrRobotsUnreachable, err)
	}
	return err
}

// ext returns h's hostPolicy, for the per-host state the Transport keeps
// itself whatever its Store: the robots.txt copy in force and the requests
// waiting (see Registry.policy).
func (t *Transport) ext(h *Host) *hostPolicy { return t.reg.policy(h) }

// applyCrawlDelay makes the robots.txt delay the host's ceiling: rate
// 1/delay, burst 1, so consecutive requests are at least delay apart. A copy
// without one lifts the ceiling.
func (t *Transport) applyCrawlDelay(ctx context.Context, h *Host, rb *robots.Robots) {
	g := rb.Group(t.robotsAgent())
	d := t.CrawlDelay.Delay(g)
	now := time.Now()
	if d <= 0 {
		t.store.SetCeiling(h, now, ReasonCrawlDelay, 0)
		return
	}
	from := t.store.State(h, now).Rate
	rate, _ := t.store.SetCeiling(h, now, ReasonCrawlDelay, 1/d.Seconds())
	agent, line := "*", 0
	if g != nil {
		agent, line = g.Agent(), g.Line()
	}
	// What robots.txt asked for, before the policy's cap.
	asked := robots.DelayPolicy{Max: math.MaxInt64, Default: t.CrawlDelay.Default}.Delay(g)
	ro := optsOf(ctx)
	t.emit(ctx, ro.obs, Event{Kind: EventRate, Time: now, Host: h.Key(), ID: ro.id, Reason: ReasonCrawlDelay, Rate: rate,
		Prev: from, Delay: d, Requested: asked, Clamped: asked > d, Detail: fmt.Sprintf("group %q (line %d)", agent, line)})
}

// robotsAgent is the product token robots.txt groups are matched against.
func (t *Transport) robotsAgent() string {
	if t.UserAgent != "" {
		return t.UserAgent
	}
	return DefaultRobotsAgent
}

// CachedRobots returns the robots.txt in force for u's origin, as the
// Transport last fetched it, or nil when robots.txt is off or not fetched
// yet. It never fetches: a crawl reads the sitemaps it names after its
// first request to the host.
func (t *Transport) CachedRobots(u *url.URL) *robots.Robots {
	t.init()
	if t.robots == nil || u == nil {
		return nil
	}
	rb, _ := t.robots.Peek(u)
	return rb
}
