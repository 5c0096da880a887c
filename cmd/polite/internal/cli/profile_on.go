//go:build cpuprofile

package cli

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// Built with -tags cpuprofile, polite writes a CPU profile of each command
// to the file POLITE_CPUPROFILE names: for finding where a job's CPU goes
// (issue 17: URLs per second on these 2 cores), never in a release build.
func init() {
	name := os.Getenv("POLITE_CPUPROFILE")
	if name == "" {
		return
	}
	f, err := os.Create(name)
	if err != nil {
		fmt.Fprintln(os.Stderr, "POLITE_CPUPROFILE:", err)
		return
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "POLITE_CPUPROFILE:", err)
		return
	}
	profileStop = func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
