package rollout

import (
	"strconv"
	"strings"
)

// SpecError is every problem of a rollout spec.
type SpecError struct {
	// File names the spec: its path, or "flags" for FromFlags.
	File     string
	Problems []Problem
}

// Problem is one problem of a spec: its line, the field, and what to do.
type Problem struct {
	// Line is the line of the file (from 1); 0 when not known (flags, an empty file).
	Line int
	// Field is the path of the field, "waves[1].maxParallel"; empty for the whole spec.
	Field   string
	Message string
}

// String is the problem as Error prints it, without the file.
func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		b.WriteString(strconv.Itoa(p.Line))
		b.WriteString(": ")
	}
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Error prints one problem a line: "rollout.yaml:14: waves[1].maxParallel: ...".
func (e *SpecError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		sep := ":"
		if p.Line == 0 {
			sep = ": "
		}
		lines[i] = e.File + sep + p.String()
	}
	return strings.Join(lines, "\n")
}
