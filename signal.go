package polite

import (
	"time"

	"github.com/polite-go/polite/adaptive"
)

// SignalOf returns what a rate controller hears of an attempt: its kind
// (see kinds; a served robots.txt is Neutral, see Report.Aside), its latency (none after a network error or a cancel), the
// wait the server advertised (never polite's own backoff) and whether its
// admission was Spare. The local store feeds it to a host's Rater; a
// fleet's store to the host's shared controller, so both hear alike.
func SignalOf(r Report, advertised time.Duration) adaptive.Signal {
	sig := adaptive.Signal{Kind: adaptive.Neutral, Wait: advertised, Spare: r.Spare}
	if int(r.Outcome) >= 0 && int(r.Outcome) < len(kinds) {
		sig.Kind = kinds[r.Outcome]
	}
	if r.Aside && sig.Kind == adaptive.OK {
		sig.Kind = adaptive.Neutral // robots.txt: see Report.Aside
	}
	if r.Outcome != NetworkError && r.Outcome != Canceled {
		sig.Latency = r.Latency
	}
	return sig
}
