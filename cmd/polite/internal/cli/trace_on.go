//go:build adaptivetrace

package cli

import (
	"fmt"
	"os"
	"sync"

	"github.com/polite-go/polite/adaptive"
)

// Built with -tags adaptivetrace, polite writes its adaptive controllers'
// decisions to the file POLITE_TRACE names, one line each: for tuning the
// controller on real servers (issue 16), never in a release build.
func init() {
	name := os.Getenv("POLITE_TRACE")
	if name == "" {
		return
	}
	f, err := os.Create(name)
	if err != nil {
		fmt.Fprintln(os.Stderr, "POLITE_TRACE:", err)
		return
	}
	var mu sync.Mutex
	adaptive.Trace = func(s string) {
		mu.Lock()
		fmt.Fprintln(f, s)
		mu.Unlock()
	}
}
