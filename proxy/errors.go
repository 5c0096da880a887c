package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/breaker"
	"github.com/polite-go/polite/bucket"
	"github.com/polite-go/polite/robots"
)

// upstreamError answers a request the Transport did not bring an answer
// for: held past its max wait, refused by polite's gates, or failed on
// the way to the origin.
func (s *Server) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil && context.Cause(r.Context()) == r.Context().Err() {
		// The client went away: no one reads an answer. Its place in
		// the host's queue has been given back by the cancellation.
		return
	}
	a := classifyError(err, time.Now())
	if x, ok := r.Context().Value(optsKey{}).(*exchange); ok {
		if berr := x.body.failed(); berr != nil {
			// The client's body broke off (bad chunked framing, a
			// stall): its error, and what follows it on the connection
			// is no request.
			a = verdict{status: http.StatusBadRequest, errType: "http_request_error",
				detail: "polite proxy: reading the request body: " + berr.Error()}
		}
		if x.body != nil {
			// A body not read to its end may still be read by the
			// upstream side: the connection ends with this answer.
			w.Header().Set("Connection", "close")
		}
	}
	if a.held {
		s.stats.Held.Add(1)
	} else {
		s.stats.Refused.Add(1)
	}
	s.answer(w, r, a)
}

// verdict is how the proxy answers a request itself.
type verdict struct {
	status     int
	errType    string // RFC 9209 error type
	detail     string
	retryAfter time.Duration // > 0: Retry-After
	received   int           // the origin's last status, when it answered (received-status)
	held       bool
}

// errSwitched is an origin's 101 to a request that asked for no upgrade.
var errSwitched = errors.New("polite proxy: the origin switched protocols unasked")

// classifyError maps err, from the Transport or a tunnel's dial, to the
// proxy's answer.
func classifyError(err error, now time.Time) verdict {
	var (
		held    *heldError
		paused  *polite.PausedError
		blocked *polite.BlockedError
		open    *breaker.OpenError
		dis     *robots.DisallowedError
		dnsErr  *net.DNSError
		certErr *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		hostErr x509.HostnameError
		recErr  tls.RecordHeaderError
		alert   tls.AlertError
	)
	switch {
	case errors.As(err, &held):
		v := verdict{status: http.StatusTooManyRequests, errType: "http_request_denied", held: true,
			retryAfter: max(held.After, time.Millisecond),
			detail:     fmt.Sprintf("polite: host %s not ready within the max wait (%s), next in %v", held.Host, held.Reason, held.After.Round(time.Millisecond))}
		switch held.Reason {
		case polite.ReasonRetryAfter, polite.ReasonBreaker, polite.ReasonStore, polite.ReasonBlock:
			// The host (or the fleet's store) is unavailable, not
			// merely busy with this client's own requests.
			v.status = http.StatusServiceUnavailable
		}
		if held.Status != 0 {
			// The origin answered, and its retry would not come within
			// the max wait: its own status where it asked for patience,
			// else a bad gateway; never a 429 for an origin's 500.
			v.received = held.Status
			v.detail = fmt.Sprintf("polite: host %s answered %d; its retry (%s, in %v) would not come within the max wait", held.Host, held.Status, held.Reason, held.After.Round(time.Millisecond))
			switch held.Status {
			case http.StatusTooManyRequests, http.StatusServiceUnavailable:
				v.status = held.Status
			default:
				v.status, v.errType = http.StatusBadGateway, "destination_unavailable"
			}
		}
		return v
	case errors.As(err, &paused):
		return verdict{status: http.StatusServiceUnavailable, errType: "http_request_denied",
			retryAfter: max(paused.Until.Sub(now), time.Millisecond),
			detail:     fmt.Sprintf("polite: host %s paused until %s (%s)", paused.Host, paused.Until.UTC().Format(time.RFC3339), paused.Reason)}
	case errors.As(err, &blocked):
		return verdict{status: http.StatusForbidden, errType: "http_request_denied",
			detail: fmt.Sprintf("polite: host %s answered with a block (%s); polite sends it nothing more", blocked.Host, blocked.Reason)}
	case errors.As(err, &open):
		return verdict{status: http.StatusServiceUnavailable, errType: "destination_unavailable",
			retryAfter: max(open.Until.Sub(now), time.Millisecond),
			detail:     "polite: the host's circuit breaker is open after repeated failures"}
	case errors.Is(err, polite.ErrNotPublic):
		return verdict{status: http.StatusForbidden, errType: "destination_ip_prohibited",
			detail: "polite: the destination's address is not public (run the proxy with --allow-private to reach it)"}
	case errors.Is(err, polite.ErrRobotsUnreachable):
		return verdict{status: http.StatusServiceUnavailable, errType: "http_request_denied", retryAfter: time.Minute,
			detail: "polite: the host's robots.txt could not be fetched; its URLs are disallowed until it can be (RFC 9309)"}
	case errors.As(err, &dis):
		return verdict{status: http.StatusForbidden, errType: "http_request_denied",
			detail: fmt.Sprintf("polite: robots.txt disallows this URL (%s)", dis.Rule)}
	case errors.Is(err, bucket.ErrExceedsBurst):
		return verdict{status: http.StatusBadRequest, errType: "http_request_error",
			detail: "polite: Polite-Cost exceeds the host's burst: it could never be admitted"}
	case errors.Is(err, errSwitched):
		return verdict{status: http.StatusBadGateway, errType: "http_protocol_error",
			detail: "polite: the origin answered 101 Switching Protocols to a request that asked for no upgrade; polite proxy relays no switched protocol (open a CONNECT tunnel for WebSockets)"}
	case errors.Is(err, polite.ErrUnsupportedScheme):
		return verdict{status: http.StatusBadRequest, errType: "http_request_error", detail: err.Error()}
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return verdict{status: http.StatusBadGateway, errType: "dns_error", detail: fmt.Sprintf("polite: no such host %q", dnsErr.Name)}
		}
		if dnsErr.IsTimeout {
			return verdict{status: http.StatusGatewayTimeout, errType: "dns_timeout", detail: fmt.Sprintf("polite: looking up %q timed out", dnsErr.Name)}
		}
		return verdict{status: http.StatusBadGateway, errType: "dns_error", detail: fmt.Sprintf("polite: looking up %q: %v", dnsErr.Name, dnsErr.Err)}
	case errors.As(err, &certErr), errors.As(err, &unknown), errors.As(err, &hostErr):
		return verdict{status: http.StatusBadGateway, errType: "tls_certificate_error",
			detail: fmt.Sprintf("polite: the origin's certificate does not verify: %v", err)}
	case errors.As(err, &alert):
		return verdict{status: http.StatusBadGateway, errType: "tls_alert_received", detail: "polite: the origin ended TLS with an alert"}
	case errors.As(err, &recErr):
		return verdict{status: http.StatusBadGateway, errType: "tls_protocol_error", detail: "polite: the origin does not speak TLS here"}
	case errors.Is(err, syscall.ECONNREFUSED):
		return verdict{status: http.StatusBadGateway, errType: "connection_refused", detail: "polite: the origin refused the connection"}
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return verdict{status: http.StatusBadGateway, errType: "connection_terminated", detail: "polite: the origin closed the connection"}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), isTimeout(err):
		return verdict{status: http.StatusGatewayTimeout, errType: "http_response_timeout", detail: "polite: the origin did not answer in time"}
	}
	msg := strings.TrimPrefix(err.Error(), "polite: ")
	if strings.Contains(msg, "malformed HTTP") || strings.Contains(msg, "transport connection broken") {
		return verdict{status: http.StatusBadGateway, errType: "http_protocol_error", detail: "polite: the origin's answer is not HTTP: " + msg}
	}
	return verdict{status: http.StatusBadGateway, errType: "proxy_internal_error", detail: "polite: " + msg}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
