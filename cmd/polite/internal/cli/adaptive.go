package cli

import (
	"github.com/polite-go/polite"
	"github.com/polite-go/polite/adaptive"
)

// adaptive sets the Transport's adaptive controller for --adaptive: each
// host's rate starts at --rate (its Limits.Rate) and tunes itself, up to
// --max-rate (0: the controller's default ceiling).
func (o *fetchOptions) adaptive(tr *polite.Transport) {
	if o.Adaptive {
		tr.Adaptive = &adaptive.Config{Max: o.MaxRate}
	}
}
