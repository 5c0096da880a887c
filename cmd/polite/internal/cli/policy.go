package cli

import "github.com/polite-go/polite"

// policy sets the Transport fields behind --robots and --adaptive.
func (o *fetchOptions) policy(tr *polite.Transport) {
	// polite reads robots.txt for a Transport with a UserAgent, which a
	// fetch always has.
	tr.IgnoreRobots = !o.Robots
	o.adaptive(tr)
}
