package audit

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/polite-go/polite"
)

// TestScanRecord: every line Log writes is read without encoding/json,
// as json.Unmarshal reads it.
func TestScanRecord(t *testing.T) {
	var buf bytes.Buffer
	l := New(&buf, Options{FlushInterval: -1})
	evs := append(events(), polite.Event{Kind: polite.EventRate, Time: t0, Host: "d.test", Rate: 0}) // "rate":null
	for _, e := range evs {
		l.Observe(e)
	}
	l.Close()
	scanned := 0
	for line := range bytes.Lines(buf.Bytes()) {
		var got, want Record
		if err := json.Unmarshal(line, &want); err != nil {
			t.Fatal(err)
		}
		if !scanRecord(line, &got) {
			continue // escapes, non-ASCII: json.Unmarshal's
		}
		scanned++
		if !reflect.DeepEqual(got, want) {
			t.Errorf("scanRecord(%s) = %+v, want %+v", line, got, want)
		}
	}
	// Three hold escapes or non-ASCII: the RateLimit fields' quotes, the
	// robots detail, the cut error's "…".
	if scanned != len(evs)-3 {
		t.Errorf("%d of %d lines scanned, want %d", scanned, len(evs), len(evs)-3)
	}
}

// FuzzScanRecord: whatever scanRecord reads, json.Unmarshal reads the same.
func FuzzScanRecord(f *testing.F) {
	f.Add([]byte(`{"t":1764190800000,"k":"attempt","h":"a.test","id":7,"a":1,"s":429,"o":"throttled","lat":12.345}`))
	f.Add([]byte(`{"t":1,"k":"rate","h":"a.test","rate":null,"prev":2.5,"cap":3,"cap_err":0.5,"meas":true,"ph":"settled"}`))
	f.Add([]byte(`{"t":1,"k":"pause","h":"a","r":"retry-after","d":30000,"ra":"30","req":30000,"cl":true,"rl":"x","det":"y","err":"z"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var got Record
		if !scanRecord(line, &got) {
			return
		}
		var want Record
		if err := json.Unmarshal(line, &want); err != nil {
			t.Fatalf("scanRecord(%q) read %+v; json.Unmarshal: %v", line, got, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("scanRecord(%q) = %+v, json.Unmarshal %+v", line, got, want)
		}
	})
}
