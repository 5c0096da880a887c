//go:build adaptivetrace

package adaptive

import "fmt"

// Built with -tags adaptivetrace, a Controller prints its decisions to
// Trace, for tuning; otherwise the calls compile away.
const tracing = true

// Trace receives one line per decision when built with -tags adaptivetrace.
var Trace func(string)

func (c *Controller) trace(t int64, format string, args ...any) {
	if Trace == nil {
		return
	}
	Trace(fmt.Sprintf("%7.3f %-8s rate=%6.2f want=%6.2f cap=%6.2f±%.2f low=%v ",
		float64(t)/1e9, c.state(), c.rate, c.want, c.capEst, c.capErr, c.capLow) + fmt.Sprintf(format, args...))
}

// state names the phase for traces, reacting included.
func (c *Controller) state() string {
	if c.reacting && c.phase == settled {
		return "reacting"
	}
	return c.phase.String()
}
