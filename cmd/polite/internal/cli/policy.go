package cli

import "github.com/polite-go/polite"

// policy sets the Transport fields behind --robots and --adaptive.
func (o *fetchOptions) policy(tr *polite.Transport) {
	// A Transport reads robots.txt unless told not to.
	tr.IgnoreRobots = !o.Robots
	o.adaptive(tr)
}
