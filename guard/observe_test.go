package guard

import "github.com/polite-go/polite"

func (f observerFunc) Observe(e polite.Event) {
	if e.Kind == polite.EventRefuse {
		f(e.Detail)
	}
}
