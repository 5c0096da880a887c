package cli

import "github.com/polite-go/polite"

// adaptive sets the Transport's adaptive controller for --adaptive and
// --max-rate. The Transport has no Adaptive field yet: the flags are parsed
// and documented, and wired the moment it lands.
func (o *fetchOptions) adaptive(tr *polite.Transport) {}
