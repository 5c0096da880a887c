package polite

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/polite-go/polite/robots"
)

// attempt is one try at a request, from admission to the store's verdict.
type attempt struct {
	req   *http.Request
	h     *Host
	id    uint64    // the request's id, for its Events
	obs   Observer  // the request's own Observer (WithObserver), nil for none
	n     int       // the attempt's number, 1 for the first
	now   time.Time // the last clock reading
	retry bool      // a failure may be retried: ask the host's budget
	grant bool      // a token was granted once: the budget has its share
	lease uint64    // the in-flight lease the store granted, 0 for none
	spare bool      // the token was waiting for the request (Admission.Spare)
	cost  int       // tokens each attempt takes (WithCost); 0 is 1
	low   bool      // background priority (WithPriority): yields tokens to waiting requests
	wait  bool      // counted among the host's requests waiting for a token or a slot

	resp   *http.Response
	err    error
	out    Outcome
	prev   Outcome // the previous attempt's outcome, for a retry's Events
	sent   int     // attempts sent
	status int
	block  string // the soft block's reason when out is Blocked
	v      Verdict

	first *firstSend // the first attempt's copy of req, when it needed one
}

// firstSend is what the first attempt of a request given a User-Agent (or
// with a name that is not ASCII, see wireHost) allocates beyond the header
// map: the shallow copy of the request, and the
// body that will hold the host's slot, in one allocation. The response
// points at the copy anyway (Response.Request), so the body keeps nothing
// alive that the response would not.
type firstSend struct {
	req  http.Request
	body slotBody
}

// do sends one admitted attempt, reads what it came to, and reports it to
// the store. It fails only when the request could not be prepared (its body
// could not be rewound); the slots are then still held.
func (t *Transport) do(ctx context.Context, a *attempt) error {
	req, h := a.req, a.h
	r := req
	if a.n > 1 || (t.UserAgent != "" && req.Header.Get("User-Agent") == "") {
		var err error
		if r, err = t.prepare(ctx, a); err != nil {
			return err
		}
	} else if host, ok := wireHost(sentHost(req)); ok {
		// A shallow copy, as withAgent makes, in the one allocation a
		// first attempt makes: only a name that is not ASCII costs it.
		a.first = &firstSend{req: *req}
		a.first.req.Host = host
		r = &a.first.req
	}
	start := a.now
	a.sent++
	t.emit(ctx, a.obs, Event{Kind: EventSend, Time: start, Host: h.Key(), ID: a.id, Attempt: a.n, Method: req.Method, PrevOutcome: a.prev})
	resp, err := t.base.RoundTrip(r)
	now := time.Now()
	a.now, a.resp, a.err, a.status, a.block = now, resp, err, 0, ""
	block := ""
	if resp != nil {
		a.status = resp.StatusCode
	}
	if o, ok := t.classify(resp, err); ok {
		a.out = o
		if o == Blocked {
			block, a.block = classifiedBlock, classifiedBlock
		}
	} else if err != nil {
		a.out = classifyError(ctx, err)
	} else {
		a.out = classifyStatus(a.status)
		if t.blocks.Peek(resp) {
			var peek []byte
			peek, resp.Body = peekBody(resp.Body, resp.ContentLength)
			block = t.blocks.Detect(resp, peek)
		} else {
			block = t.blocks.Detect(resp, nil)
		}
		if block != "" {
			a.out, a.block = Blocked, block
		}
	}
	t.emit(ctx, a.obs, Event{Kind: EventAttempt, Time: now, Host: h.Key(), ID: a.id, Status: a.status, Outcome: a.out,
		Attempt: a.n, Latency: now.Sub(start), Err: err, Header: header(resp), Method: req.Method, PrevOutcome: a.prev})
	rep := Report{Now: now, Sent: start, Outcome: a.out, Block: block, Status: a.status,
		Latency: now.Sub(start), Attempt: a.n, Retry: a.retry, Spare: a.spare, Aside: robots.IsFetch(req)}
	if resp != nil {
		rep.Header = resp.Header
	}
	a.v = t.store.Report(h, rep)
	t.emitVerdict(ctx, a)
	return nil
}

// emitVerdict says what a Report changed, in the order it changed it, with
// the inputs of each decision.
func (t *Transport) emitVerdict(ctx context.Context, a *attempt) {
	v, now, key, hd := &a.v, a.now, a.h.Key(), header(a.resp)
	if v.GiveUp && a.out == Throttled {
		t.emit(ctx, a.obs, Event{Kind: EventGiveUp, Time: now, Host: key, ID: a.id, Reason: ReasonRetryAfter, Status: a.status,
			Delay: v.Advertised, Requested: v.Advertised, Clamped: true, RetryAfter: retryAfter(hd), Header: hd})
	}
	if v.Pause > 0 {
		e := Event{Kind: EventPause, Time: now, Host: key, ID: a.id, Reason: v.PauseWhy, Delay: v.Pause, Status: a.status, Header: hd}
		if v.PauseWhy == ReasonRetryAfter {
			e.RetryAfter, e.Requested = retryAfter(hd), v.Advertised
			e.Clamped = v.Pause < v.Advertised
		}
		t.emit(ctx, a.obs, e)
	}
	if v.Blocked {
		t.emit(ctx, a.obs, Event{Kind: EventBlocked, Time: now, Host: key, ID: a.id, Reason: ReasonBlock, Detail: a.block, Status: a.status, Header: hd})
	}
	if v.QuotaPause > 0 {
		t.emit(ctx, a.obs, Event{Kind: EventPause, Time: now, Host: key, ID: a.id, Reason: ReasonRateLimit, Delay: v.QuotaPause, Header: hd})
	}
	if v.QuotaRate > 0 {
		t.emit(ctx, a.obs, Event{Kind: EventRate, Time: now, Host: key, ID: a.id, Reason: ReasonRateLimit, Rate: v.QuotaRate,
			Prev: v.RateFrom, Header: hd})
	}
	if v.Breaker.Changed() {
		t.emit(ctx, a.obs, Event{Kind: EventBreaker, Time: now, Host: key, ID: a.id, Reason: ReasonBreaker, Detail: v.Breaker.To.String(),
			Status: a.status})
	}
	if v.Rate > 0 {
		prev := v.RateFrom
		if v.QuotaRate > 0 {
			prev = v.QuotaRate
		}
		t.emit(ctx, a.obs, Event{Kind: EventRate, Time: now, Host: key, ID: a.id, Reason: ReasonAdaptive, Rate: v.Rate, Outcome: a.out,
			Prev: prev, Capacity: v.Capacity, CapacityErr: v.CapacityErr, Measured: v.Measured, Phase: v.Phase, Status: a.status})
	}
}

// header returns resp's header, nil without a response.
func header(resp *http.Response) http.Header {
	if resp == nil {
		return nil
	}
	return resp.Header
}

// retryAfter returns h's raw Retry-After field ("" for none); duplicates
// that ParseAfter accepted agree, so the first is the value.
func retryAfter(h http.Header) string {
	if vs := h["Retry-After"]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// prepare returns the request to send for this attempt: a clone with the
// user agent set and, on a retry, the body rewound.
func (t *Transport) prepare(ctx context.Context, a *attempt) (*http.Request, error) {
	req, attempt := a.req, a.n
	if attempt == 1 {
		a.first = new(firstSend)
		t.withAgent(&a.first.req, req)
		return &a.first.req, nil
	}
	r := req.Clone(ctx)
	if t.UserAgent != "" && r.Header.Get("User-Agent") == "" {
		r.Header.Set("User-Agent", t.UserAgent)
	}
	setWireHost(r)
	if req.Body != nil && req.Body != http.NoBody {
		b, err := req.GetBody()
		if err != nil {
			return nil, fmt.Errorf("polite: rewinding the body for attempt %d: %w", attempt, err)
		}
		r.Body = b
	}
	return r, nil
}

// withAgent makes r a shallow copy of req (as Request.WithContext makes)
// whose header map is a copy with the User-Agent added: the map is the only
// allocation, where Request.Clone makes five or more. The header's value slices are
// shared with req's and the agent's with every request; nothing on the
// send path writes to them.
func (t *Transport) withAgent(r, req *http.Request) {
	*r = *req
	r.Header = make(http.Header, len(req.Header)+1)
	for k, v := range req.Header {
		r.Header[k] = v
	}
	r.Header["User-Agent"] = t.agent
	setWireHost(r)
}

// setWireHost sets the Host field of r, a copy the Transport sends, to the
// ASCII form its name is keyed and dialed by when the name is not ASCII
// (see wireHost). The URL is left alone (it is the caller's, shared): the
// request line and the Host field are written from r.Host when it is set.
func setWireHost(r *http.Request) {
	if h, ok := wireHost(sentHost(r)); ok {
		r.Host = h
	}
}

// sentHost is the host net/http names in r's Host field.
func sentHost(r *http.Request) string {
	if r.Host == "" && r.URL != nil {
		return r.URL.Host
	}
	return r.Host
}

// replayable reports whether req may be sent again.
func replayable(req *http.Request, nonIdempotent bool) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	if _, ok := req.Header["Idempotency-Key"]; ok {
		return true
	}
	if _, ok := req.Header["X-Idempotency-Key"]; ok {
		return true
	}
	return nonIdempotent
}
