//go:build race

package guard

// raceEnabled: the race detector slows every access about tenfold; the
// longest floods run shorter under it.
const raceEnabled = true
