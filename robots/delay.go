package robots

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// DefaultMaxDelay is the cap DelayPolicy puts on a delay when Max is zero. A
// robots.txt asking for more than a minute between requests is more likely
// a typo (milliseconds for seconds) than a wish, and obeying it would stall
// a crawl for hours.
const DefaultMaxDelay = 60 * time.Second

// CrawlDelay returns the group's Crawl-delay and whether it has a valid one.
// Values that are not a plain non-negative decimal number of seconds were
// dropped by Parse; a merged group keeps the largest. The value is not
// capped: DelayPolicy does that.
func (g *Group) CrawlDelay() (time.Duration, bool) {
	if g == nil || !g.hasCrawlDelay {
		return 0, false
	}
	return g.crawlDelay, true
}

// RequestRate returns the group's Request-rate, n requests per period, and
// whether it has a valid one. A merged group keeps the slowest.
func (g *Group) RequestRate() (n int, per time.Duration, ok bool) {
	if g == nil || !g.hasRate {
		return 0, 0, false
	}
	return g.rateN, g.ratePer, true
}

// DelayPolicy turns a group's Crawl-delay and Request-rate into the least
// time to leave between two requests to the host. The zero value caps
// delays at DefaultMaxDelay and asks for no delay when robots.txt gives
// none.
type DelayPolicy struct {
	// Max caps the delay. If zero or negative, DefaultMaxDelay is used.
	Max time.Duration
	// Default is the delay used when the group has neither a valid
	// Crawl-delay nor a valid Request-rate (or there is no group). It is
	// capped by Max too. If zero or negative, there is no delay.
	Default time.Duration
}

// Delay returns the delay g asks for: the larger of its Crawl-delay and the
// interval of its Request-rate (period / n), or p.Default when it has
// neither, capped at p.Max. A nil g gets p.Default.
func (p DelayPolicy) Delay(g *Group) time.Duration {
	limit := p.Max
	if limit <= 0 {
		limit = DefaultMaxDelay
	}
	d, ok := g.CrawlDelay()
	if n, per, rok := g.RequestRate(); rok {
		if rd := per / time.Duration(n); !ok || rd > d {
			d = rd
		}
		ok = true
	}
	if !ok {
		d = max(p.Default, 0)
	}
	return min(d, limit)
}

// isDecimal reports whether s is digits with an optional fraction: "2",
// "0.5", ".5", "2." — no sign, exponent, hex, "Inf" or "NaN", which
// strconv.ParseFloat would take.
func isDecimal(s string) bool {
	digits, dot := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case '0' <= c && c <= '9':
			digits++
		case c == '.' && !dot:
			dot = true
		default:
			return false
		}
	}
	return digits > 0
}

// seconds converts a non-negative number of seconds to a Duration,
// saturating instead of overflowing.
func seconds(f float64) time.Duration {
	ns := f * float64(time.Second)
	if ns >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(math.Round(ns))
}

// parseCrawlDelay parses a Crawl-delay value: a decimal number of seconds,
// fractions allowed. Anything else (negative, "10s", "NaN", "1e3") is
// ignored rather than guessed at.
func parseCrawlDelay(v string) (time.Duration, bool) {
	if !isDecimal(v) {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil && !math.IsInf(f, 1) { // a huge value saturates below
		return 0, false
	}
	return seconds(f), true
}

// parseRequestRate parses a Request-rate value, "n/period": n requests (a
// positive integer) per period, a positive decimal number with an optional
// unit s, m or h (seconds if none): "1/5", "1/5s", "3/10m". Anything after
// the first whitespace, such as the visit-time window some files append
// ("1/10s 0600-0845"), is ignored.
func parseRequestRate(v string) (n int, per time.Duration, ok bool) {
	if i := strings.IndexAny(v, " \t\v\f"); i >= 0 {
		v = v[:i]
	}
	ns, ps, found := strings.Cut(v, "/")
	if !found || ns == "" || strings.Trim(ns, "0123456789") != "" {
		return 0, 0, false
	}
	n, err := strconv.Atoi(ns)
	if err != nil || n <= 0 {
		return 0, 0, false
	}
	unit := time.Second
	if k := len(ps); k > 0 {
		switch ps[k-1] {
		case 's', 'S':
			ps = ps[:k-1]
		case 'm', 'M':
			unit, ps = time.Minute, ps[:k-1]
		case 'h', 'H':
			unit, ps = time.Hour, ps[:k-1]
		}
	}
	if !isDecimal(ps) {
		return 0, 0, false
	}
	f, err := strconv.ParseFloat(ps, 64)
	if err != nil && !math.IsInf(f, 1) {
		return 0, 0, false
	}
	per = seconds(f * unit.Seconds())
	if per <= 0 {
		return 0, 0, false
	}
	return n, per, true
}
