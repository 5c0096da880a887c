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
// POLITE_MEMPROFILE names a file for the heap profile at the command's end,
// whose alloc_objects and alloc_space say what each call site allocated
// over the whole run (issue 34: allocations per URL).
func init() {
	var stops []func()
	if name := os.Getenv("POLITE_CPUPROFILE"); name != "" {
		if f, err := os.Create(name); err != nil {
			fmt.Fprintln(os.Stderr, "POLITE_CPUPROFILE:", err)
		} else if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "POLITE_CPUPROFILE:", err)
			f.Close()
		} else {
			stops = append(stops, func() {
				pprof.StopCPUProfile()
				f.Close()
			})
		}
	}
	if name := os.Getenv("POLITE_MEMPROFILE"); name != "" {
		stops = append(stops, func() {
			f, err := os.Create(name)
			if err == nil {
				err = pprof.Lookup("allocs").WriteTo(f, 0)
				if e := f.Close(); err == nil {
					err = e
				}
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "POLITE_MEMPROFILE:", err)
			}
		})
	}
	if len(stops) > 0 {
		profileStop = func() {
			for _, stop := range stops {
				stop()
			}
		}
	}
}
