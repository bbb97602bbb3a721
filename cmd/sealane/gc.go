package main

import (
	"os"
	"runtime/debug"
)

// The garbage collector's settings for a CLI run that hosts the embedded pipeline, a process
// that lives for one deploy: collect less often (cliGCPercent), but keep the heap under
// cliMemoryLimit, a soft limit near the heap a 1,000-object deploy needs anyway, so that peak
// memory does not grow with it (bench/README.md, "Garbage collection", has the numbers).
const (
	cliGCPercent   = 400
	cliMemoryLimit = 85 << 20
)

// tuneGC applies the CLI's garbage-collector settings, unless GOGC or GOMEMLIMIT in the
// environment ask for others.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(cliGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(cliMemoryLimit)
	}
}
