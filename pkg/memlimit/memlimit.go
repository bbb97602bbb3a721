// Package memlimit sets a service's soft memory limit (the Go runtime's GOMEMLIMIT): given, or
// taken from the container's memory limit, so that the heap of a process whose garbage comes
// and goes stays under the limit its pod was given instead of growing to twice what is live.
package memlimit

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Env names the environment variable with the default of --memory-limit.
const Env = "SEALANE_MEMORY_LIMIT"

// ContainerShare is the part of the container's memory limit a process keeps its heap under
// when no limit is given: the rest is for stacks, the runtime and what the heap does not count.
const ContainerShare = 0.9

// cgroupFiles hold the container's memory limit: cgroup v2, then v1.
var cgroupFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// Choice is the soft limit chosen and where it came from.
type Choice struct {
	// Bytes is the limit; 0 is none.
	Bytes int64
	// From says where it came from: "flag", "GOMEMLIMIT", "container" or "none".
	From string
}

// Choose picks the limit: given (a quantity such as 300Mi; "0" or "off" for none), else the
// one $GOMEMLIMIT set already, else ContainerShare of the container's limit read from
// cgroups (readFile, nil for os.ReadFile), else none.
func Choose(given string, readFile func(string) ([]byte, error)) (Choice, error) {
	given = strings.TrimSpace(given)
	switch {
	case given == "0" || strings.EqualFold(given, "off"):
		return Choice{From: "flag"}, nil
	case given != "":
		q, err := resource.ParseQuantity(given)
		if err != nil || q.Sign() <= 0 {
			return Choice{}, fmt.Errorf("--memory-limit %q: give a size such as 300Mi or 1Gi, or off", given)
		}
		return Choice{Bytes: q.Value(), From: "flag"}, nil
	case os.Getenv("GOMEMLIMIT") != "":
		return Choice{Bytes: debug.SetMemoryLimit(-1), From: "GOMEMLIMIT"}, nil
	}
	if readFile == nil {
		readFile = os.ReadFile
	}
	for _, f := range cgroupFiles {
		raw, err := readFile(f)
		if err != nil {
			continue
		}
		if n, ok := parseCgroupLimit(string(raw)); ok {
			return Choice{Bytes: int64(float64(n) * ContainerShare), From: "container"}, nil
		}
	}
	return Choice{From: "none"}, nil
}

// parseCgroupLimit reads a cgroup memory limit file: a number of bytes, or "max" (v2) or a
// value near the largest int64 (v1) for no limit.
func parseCgroupLimit(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if s == "" || s == "max" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n >= math.MaxInt64/2 {
		return 0, false
	}
	return n, true
}

// Apply sets c as the runtime's soft memory limit (none: no limit).
func Apply(c Choice) {
	if c.Bytes > 0 {
		debug.SetMemoryLimit(c.Bytes)
	} else if c.From == "flag" {
		debug.SetMemoryLimit(math.MaxInt64)
	}
}
