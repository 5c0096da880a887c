package polite

import (
	"net/http"
	"sync/atomic"
	"testing"
)

// countingStore counts the admissions asked of the Store it wraps.
type countingStore struct {
	Store
	admits atomic.Int32
}

func (s *countingStore) Admit(h *Host, q Query) Admission {
	s.admits.Add(1)
	return s.Store.Admit(h, q)
}

// A Store kept elsewhere is built on the Transport's Registry: asking for
// the Registry first must not fix the Store before the caller sets it.
func TestStoreSetAfterRegistry(t *testing.T) {
	tr := &Transport{Base: nopBase{}, IgnoreRobots: true}
	s := &countingStore{Store: NewLocalStore(tr.Registry(), LocalOptions{})}
	tr.Store = s
	req, _ := http.NewRequest("GET", "http://a.test/", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := s.admits.Load(); n != 1 {
		t.Errorf("the Store set after Registry() was asked %d admissions, want 1", n)
	}
}
