//go:build !adaptivetrace

package adaptive

const tracing = false

func (c *Controller) trace(int64, string, ...any) {}
