// Package version tells which sealane build is running.
package version

import "runtime/debug"

// Version is set at build time with -ldflags "-X github.com/sealane/sealane/pkg/version.Version=v1.2.3";
// otherwise it is the module version Go recorded, or "dev" for a build from a work tree.
var Version = ""

// String returns the sealane version, as shown by `sealane version` and in werf.io/version.
func String() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
