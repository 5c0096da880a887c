package testbed

// ServiceRate returns the request rate c's servers sustain when all are
// busy, in requests per second: Servers/Latency, divided by 1 + Slowdown ×
// (Servers-1) under Slowdown, or 1/(Latency × Slowdown) with unlimited
// servers; 0 means unlimited. The host's capacity at any moment is the
// least of it and the bucket's rate in force (Second.Capacity).
func (c HostConfig) ServiceRate() float64 { return c.serviceRate() }
