package apply

import (
	"fmt"
	"strings"
)

// Method is how Apply writes an object that exists already (--apply-method).
type Method string

// The apply methods.
const (
	// ServerSideApply: server-side apply as Options.FieldManager with force (the default).
	// Fields the chart drops are removed when sealane was their only manager.
	ServerSideApply Method = "ssa"
	// ThreeWayMerge: a client-side three-way merge patch (see ThreeWayPatch) from the previous
	// release's object (Options.Previous), the chart's and the live one.
	ThreeWayMerge Method = "3wm"
)

// ParseMethod reads a --apply-method value: "ssa" (also "server-side") or "3wm" (also
// "three-way-merge"); "" is the default, ServerSideApply.
func ParseMethod(s string) (Method, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "ssa", "server-side", "server-side-apply":
		return ServerSideApply, nil
	case "3wm", "three-way-merge":
		return ThreeWayMerge, nil
	}
	return "", fmt.Errorf("unknown apply method %q (want %q or %q)", s, ServerSideApply, ThreeWayMerge)
}
