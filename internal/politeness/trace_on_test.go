//go:build adaptivetrace

package politeness

import "github.com/polite-go/polite/adaptive"

// traceTo sends the controllers' decisions to f until the returned function
// is called.
func traceTo(f func(string)) func() {
	adaptive.Trace = f
	return func() { adaptive.Trace = nil }
}
