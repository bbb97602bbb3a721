package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"
)

// startProfiles writes profiles of this run for performance work, when asked by environment:
// $SEALANE_CPUPROFILE (a CPU profile), $SEALANE_MEMPROFILE (a heap profile of what is live when
// the heap in use reaches a new peak, sampled every 100 ms; each sample that finds a new peak
// collects garbage first, which slows the run). It returns what stops them.
func startProfiles() func() {
	var stops []func()
	if path := os.Getenv("SEALANE_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			if err := pprof.StartCPUProfile(f); err == nil {
				stops = append(stops, func() { pprof.StopCPUProfile(); _ = f.Close() })
			}
		}
	}
	if path := os.Getenv("SEALANE_MEMPROFILE"); path != "" {
		done := make(chan struct{})
		finished := make(chan struct{})
		go func() {
			defer close(finished)
			var peak uint64
			var ms runtime.MemStats
			write := func() {
				runtime.GC() // the profile shows what is live at the new peak
				if f, err := os.Create(path); err == nil {
					_ = pprof.Lookup("heap").WriteTo(f, 0)
					_ = f.Close()
				}
			}
			t := time.NewTicker(100 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-done:
					runtime.ReadMemStats(&ms)
					fmt.Fprintf(os.Stderr, "memstats: peak heap in use %d MiB; now heap sys %d, stack sys %d, other sys %d MiB, sys %d MiB\n",
						peak>>20, ms.HeapSys>>20, ms.StackSys>>20, (ms.Sys-ms.HeapSys-ms.StackSys)>>20, ms.Sys>>20)
					return
				case <-t.C:
					runtime.ReadMemStats(&ms)
					if ms.HeapInuse > peak {
						peak = ms.HeapInuse
						write()
					}
				}
			}
		}()
		stops = append(stops, func() { close(done); <-finished })
	}
	return func() {
		for _, stop := range stops {
			stop()
		}
	}
}
