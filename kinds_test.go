package polite

import (
	"testing"

	"github.com/polite-go/polite/adaptive"
)

// Issue 16: a host answering 404 to everything stayed at its starting rate:
// a client error is the host answering at its pace, served.
func TestRaterHearsClientErrorAsServed(t *testing.T) {
	for _, tc := range []struct {
		out  Outcome
		want adaptive.Kind
	}{
		{OK, adaptive.OK}, {ClientError, adaptive.OK}, {Throttled, adaptive.Throttle},
		{Overloaded, adaptive.Overload}, {ServerError, adaptive.Failure}, {Blocked, adaptive.Neutral},
	} {
		if got := kinds[tc.out]; got != tc.want {
			t.Errorf("kinds[%v] = %v, want %v", tc.out, got, tc.want)
		}
	}
}
