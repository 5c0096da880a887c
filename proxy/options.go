package proxy

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/polite-go/polite"
)

// maxCost is the largest Polite-Cost taken.
const maxCost = 1000

// maxWaitSeconds is the largest Polite-Max-Wait taken in whole seconds (a
// year; the Server's max wait cuts it anyway).
const maxWaitSeconds = 365 * 24 * 3600

// options are a request's Polite-* terms.
type options struct {
	priority polite.Priority
	cost     int // 0: not given
	noRetry  bool
	maxWait  time.Duration // with maxWaitSet; 0: do not hold
	// maxWaitSet: the request named its max wait.
	maxWaitSet bool
}

// optionNames are the keys options are given under, in the proxy user
// name and (with "Polite-" before them) as header fields.
var optionNames = []string{"priority", "cost", "no-retry", "max-wait"}

// set reads one option, named key (lower case), given as v in src (how an
// error names where it came from).
func (o *options) set(key, v, src string) error {
	v = strings.TrimSpace(v)
	switch key {
	case "priority":
		switch strings.ToLower(v) {
		case "interactive", "normal":
			o.priority = polite.Normal
		case "bulk", "background":
			o.priority = polite.Background
		default:
			return fmt.Errorf("%s %q: want interactive, normal or bulk", src, v)
		}
	case "cost":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxCost {
			return fmt.Errorf("%s %q: want a whole number of tokens from 1 to %d", src, v, maxCost)
		}
		o.cost = n
	case "no-retry":
		switch strings.ToLower(v) {
		case "1", "true", "yes":
			o.noRetry = true
		case "0", "false", "no":
			o.noRetry = false
		default:
			return fmt.Errorf("%s %q: want 1 or 0", src, v)
		}
	case "max-wait":
		d, err := time.ParseDuration(v)
		if err != nil {
			// Whole seconds, as Retry-After counts them.
			n, nerr := strconv.Atoi(v)
			if nerr != nil {
				return fmt.Errorf("%s %q: want a duration such as 10s or 500ms", src, v)
			}
			if n > maxWaitSeconds {
				return fmt.Errorf("%s %q: too long (at most %d seconds)", src, v, maxWaitSeconds)
			}
			d = time.Duration(n) * time.Second
		}
		if d < 0 {
			return fmt.Errorf("%s %q: must not be negative", src, v)
		}
		o.maxWait, o.maxWaitSet = d, true
	default:
		return fmt.Errorf("%s: unknown option %q (want one of %s)", src, key, strings.Join(optionNames, ", "))
	}
	return nil
}

// fromHeader reads the Polite-* fields of h over o.
func (o *options) fromHeader(h http.Header) error {
	for k, vs := range h {
		name, ok := strings.CutPrefix(k, "Polite-")
		if !ok || len(vs) == 0 || k == "Polite-Waited-Ms" || k == "Polite-Next-Request-In" {
			continue // not a Polite-* option; the proxy's own answer fields, echoed back, are ignored
		}
		if err := o.set(strings.ToLower(name), vs[len(vs)-1], k); err != nil {
			return err
		}
	}
	return nil
}

// stripPolite deletes h's Polite-* fields: they are the proxy's, never
// the origin's.
func stripPolite(h http.Header) {
	for k := range h {
		if strings.HasPrefix(k, "Polite-") {
			delete(h, k)
		}
	}
}

// credentials returns the user name and password of a Proxy-Authorization
// field in the Basic scheme; ok is false without one.
func credentials(h http.Header) (user, pass string, ok bool, err error) {
	v := h.Get("Proxy-Authorization")
	if v == "" {
		return "", "", false, nil
	}
	scheme, enc, found := strings.Cut(v, " ")
	if !found {
		// No scheme: the value may be the credentials themselves, and
		// is never repeated.
		return "", "", false, fmt.Errorf("Proxy-Authorization: want \"Basic\", a space and the credentials")
	}
	if !strings.EqualFold(scheme, "Basic") {
		if len(scheme) > 16 || strings.ContainsFunc(scheme, func(c rune) bool { return !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-') }) {
			return "", "", false, fmt.Errorf("Proxy-Authorization: scheme not supported (want Basic)")
		}
		return "", "", false, fmt.Errorf("Proxy-Authorization: scheme %q not supported (want Basic)", scheme)
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if err != nil {
		return "", "", false, fmt.Errorf("Proxy-Authorization: not base64: %v", err)
	}
	user, pass, found = strings.Cut(string(b), ":")
	if !found {
		return "", "", false, fmt.Errorf("Proxy-Authorization: no colon between user name and password")
	}
	return user, pass, true, nil
}

// fromUser reads the options in a proxy user name: comma-separated
// key=value pairs, after the account name when there is one
// ("alice,priority=bulk"). It returns the account name ("" for none).
func (o *options) fromUser(user string) (string, error) {
	account := ""
	for i, part := range strings.Split(user, ",") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			if i == 0 {
				account = part
				continue
			}
			return "", fmt.Errorf("proxy user name: %q is not key=value", part)
		}
		if err := o.set(strings.ToLower(strings.TrimSpace(k)), v, "proxy user name option "+k); err != nil {
			return "", err
		}
	}
	return account, nil
}

// context returns ctx carrying o's terms for a polite Transport.
func (o *options) context(ctx context.Context) context.Context {
	if o.priority != polite.Normal {
		ctx = polite.WithPriority(ctx, o.priority)
	}
	if o.cost > 1 {
		ctx = polite.WithCost(ctx, o.cost)
	}
	if o.noRetry {
		ctx = polite.WithoutRetries(ctx)
	}
	return ctx
}
