package rollout

import "github.com/sealane/sealane/pkg/specfile"

// SpecError is every problem of a rollout spec; File is its path, or "flags" for FromFlags.
type SpecError = specfile.Error

// Problem is one problem of a spec: its line, the field, and what to do.
type Problem = specfile.Problem
