package crawl

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/bucket"
)

// On a full disk the committer stopped but the workers fetched every
// remaining URL and threw the answers away (issue 17, defect 4). The first
// fatal commit error now stops the fetchers: Run returns it at once.
func TestFatalCommitErrorStopsFetching(t *testing.T) {
	const urls, failAt = 400, 20
	var j *Job
	var sent atomic.Int64
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n := sent.Add(1); {
		case n == failAt:
			// The database goes away under the committer, as a full
			// disk would make every commit fail.
			once.Do(func() { j.st.db.Close() })
		case n > failAt:
			// Later answers wait for the job to give up on them, so
			// that what a stopping job still sends does not hang on
			// how fast the loopback answers.
			select {
			case <-r.Context().Done():
			case <-time.After(2 * time.Second):
			}
		}
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	var list strings.Builder
	for i := range urls {
		fmt.Fprintf(&list, "%s/%d\n", srv.URL, i)
	}
	tr := &polite.Transport{Base: srv.Client().Transport, Limits: polite.Limits{Rate: bucket.Inf, Concurrency: 2}}
	var err error
	j, err = Open(t.TempDir(), Options{Transport: tr, Workers: 2, Bodies: BodiesNone})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if _, err := j.Load(strings.NewReader(list.String())); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = j.Run(ctx, nil)
	if err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Run = %v, want the commit error", err)
	}
	// The requests in flight when the commit failed (one per worker) may
	// go, and one more round if the committer was slow; not the rest of
	// the list.
	if n := sent.Load(); n > failAt+2*2 {
		t.Errorf("%d of %d URLs fetched after the commit failed at the %dth", n, urls, failAt)
	}
}
