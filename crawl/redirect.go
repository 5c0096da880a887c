package crawl

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// hopWait is the least a redirect hop waits when its host has no free
// slot: the scheduler asks about the URL's host, not the hop's.
const hopWait = 10 * time.Millisecond

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// MaxRedirects is how many redirects a URL may follow before it ends as
// redirect_loop (the number net/http's Client allows).
const MaxRedirects = 10

// redirect follows resp when it is a redirect with a Location: the URL goes
// back to the queue with its next hop, sent through the Transport like any
// request (the hop's host's budget, robots.txt, the destination check).
// A hop to a URL already visited, or more than MaxRedirects, ends the URL
// as redirect_loop, never retried: the loop would only repeat (issue 18,
// item 2). It reports whether resp was handled; it was not when resp is no
// redirect to follow. One it cannot follow (a Location that does not parse,
// or whose scheme is not http or https) is not handled either, but marks it
// refused: the URL ends http_error, the target named.
func (j *Job) redirect(it *item, resp *http.Response, ip netip.Addr) bool {
	// Each answer decides anew: an earlier attempt's refusal (its body
	// broke off, and the URL was retried) is not this one's.
	it.notFollowed, it.refused = "", ""
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
	default:
		return false
	}
	loc, err := resp.Location()
	switch {
	case errors.Is(err, http.ErrNoLocation):
		return false // no Location to follow: the 3xx is the answer
	case err != nil:
		it.notFollowed = cutTo(resp.Header.Get("Location"), maxTarget)
		it.refused = fmt.Sprintf("redirect not followed: %s to %q, which does not parse", resp.Status, cutTo(it.notFollowed, maxNamed))
		return false
	case loc.Scheme != "http" && loc.Scheme != "https":
		// ftp:, file:, javascript:, data:: the page is not there, and
		// the URL is not ok (issue 29, item 10).
		it.notFollowed = cutTo(loc.String(), maxTarget)
		it.refused = fmt.Sprintf("redirect not followed: %s to %q (only http and https are followed)", resp.Status, cutTo(it.notFollowed, maxNamed))
		return false
	}
	if j.opts.Follow != nil {
		// A crawl takes the target as a link of its own (discover), so
		// that a page reached by a redirect and by a link is one URL,
		// fetched once: the 3xx is this URL's answer.
		return false
	}
	if j.opts.SameHost && !sameHostName(loc, it.url) {
		it.notFollowed = loc.String() // the 3xx is the answer
		return false
	}
	j.keepHop(it, resp, ip)
	next := loc.String()
	chain := append([]string{it.url}, it.hops...)
	for _, u := range chain {
		if u == next {
			j.finishErr(it, RedirectLoop, resp.StatusCode, "redirect loop: "+strings.Join(append(chain, next), " -> "))
			return true
		}
	}
	if len(it.hops) >= MaxRedirects {
		j.finishErr(it, RedirectLoop, resp.StatusCode, fmt.Sprintf("more than %d redirects: %s", MaxRedirects, strings.Join(append(chain, next), " -> ")))
		return true
	}
	// Following a redirect is part of the attempt, not a new one: the
	// count of attempts (and so of retries left) stays.
	it.hop = true
	it.asGet = it.asGet || j.redirectsAsGet(resp.StatusCode)
	it.hops = append(it.hops, next)
	it.cur = next
	it.reason = "redirect"
	now := time.Now()
	j.deferred(it, now)
	j.sched.retry(it, now)
	return true
}

// maxTarget is the most of a refused redirect's target a result keeps in
// redirect_not_followed (a data: URL may be megabytes long), maxNamed the
// most its error quotes, so that the error, itself kept to 1 KiB, always
// ends with what it says about the target.
const (
	maxTarget = 2048
	maxNamed  = 200
)

// cutTo returns s cut to max bytes (at a character's start), marked by
// "…" when cut.
func cutTo(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// maxHopBody is the most of a redirect's body read: kept in the WARC files
// (WARC-Truncated past it), or read to reuse the connection.
const maxHopBody = 64 << 10

// keepHop reads and closes the body of resp, a redirect about to be
// followed, and with WARC on keeps the hop for the WARC files: a response
// record with the hop's own URL, status, headers and server address (ip),
// and its request record, as wget and Heritrix archive each hop (issue 29,
// item 11). They reach the files with the URL's result, in the same commit,
// so a job killed mid-chain fetches the chain again and never archives a
// hop twice.
func (j *Job) keepHop(it *item, resp *http.Response, ip netip.Addr) {
	defer resp.Body.Close()
	if j.warc == nil {
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxHopBody))
		return
	}
	body, _ := readUpTo(resp.Body, resp.ContentLength, maxHopBody)
	truncated := false
	if len(body) == maxHopBody {
		var one [1]byte
		n, _ := io.ReadFull(resp.Body, one[:])
		truncated = n > 0
	}
	k := keep(resp, body, truncated, sha256.Sum256(body), ip)
	k.target, k.at = resp.Request.URL.String(), time.Now()
	budget := j.hopBudget
	if budget == 0 {
		budget = hopBudget
	}
	// URLs mid-chain wait in the queue, as many as it holds: their hops
	// share a bound, past which a hop is not archived rather than a
	// worker held (a hostile server's 64 KiB redirects must not fill
	// memory).
	if n := k.size(); j.hopBytes.Add(n) > budget {
		j.hopBytes.Add(-n)
		if j.hopsDropped.Add(1) == 1 && j.opts.Logger != nil {
			j.opts.Logger.Warn("crawl: redirect hops not archived: the ones waiting for their URL to finish passed the bound",
				"bound", budget, "url", redact(k.target))
		}
		return
	}
	it.hopsKept = append(it.hopsKept, k)
}

// hopBudget bounds the bytes of redirect hops kept by URLs not finished yet.
const hopBudget = 64 << 20

// sameHostName reports whether loc names the host of the listed URL
// listed, whatever the scheme and port.
func sameHostName(loc *url.URL, listed string) bool {
	u, err := url.Parse(listed)
	return err == nil && strings.EqualFold(strings.TrimSuffix(loc.Hostname(), "."), strings.TrimSuffix(u.Hostname(), "."))
}
