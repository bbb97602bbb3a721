// Package version tells which sealane build is running.
package version

import "runtime/debug"

// Version is set at build time with -ldflags "-X github.com/sealane/sealane/pkg/version.Version=v1.2.3";
// otherwise it is the module version Go recorded, or "dev" for a build from a work tree.
var Version = ""

// String returns the sealane version, as `sealane version` shows it and werf.io/version carries it.
func String() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// Commit is the git commit the binary was built from, set at build time with
// -ldflags "-X github.com/sealane/sealane/pkg/version.Commit=<sha>" (the Makefile and the image
// do); empty when unknown.
var Commit = ""
