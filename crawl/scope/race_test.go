//go:build race

package scope

// The race detector's instrumentation allocates: allocation tests skip.
const raceEnabled = true
