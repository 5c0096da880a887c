package redisstore

import (
	"testing"
	"time"

	"github.com/polite-go/polite"
)

// A malformed reply (a proxy's, a newer script's, a corrupted one) refuses
// nothing it should not and invents nothing: no panic, no grant.
func TestMalformedReplies(t *testing.T) {
	s := &Store{}
	q := polite.Query{Now: time.Unix(1e9, 0), MaxWait: time.Second}
	for _, res := range []any{
		nil, "", int64(7), []any{}, []any{nil}, []any{"x", "y"}, []any{int64(0)}, []any{[]any{}},
		[]any{int64(9), int64(-5), "why"}, []any{"0", "12", 3.5}, []any{int64(2), "-1e400", nil},
	} {
		r, _ := res.([]any) // what send reads of a reply that is not an array: nothing
		a, ok := s.admission("h.test", q, r, 1, 100*time.Millisecond)
		if ok {
			t.Errorf("reply %#v read as an admission: %+v", res, a)
		}
		if a.Granted {
			t.Errorf("reply %#v granted: %+v", res, a)
		}
		if a.Wait < 0 || a.Poll < 0 {
			t.Errorf("reply %#v: negative wait %+v", res, a)
		}
	}
	if a, ok := s.admission("h.test", q, []any{int64(4), int64(-5), "", int64(0)}, 1, 100*time.Millisecond); !ok || a.Wait < 0 || a.Poll < 0 {
		t.Errorf("a refusal with a negative wait = %+v, %v; want read, waits clamped at 0", a, ok)
	}
	if f := float([]any{"NaN"}, 0); f != 0 {
		t.Errorf("float(NaN) = %v, want 0", f)
	}
	if r := rateOf(-1); r <= 1e300 {
		t.Errorf("rateOf(-1) = %v, want unlimited", r)
	}
}
