//go:build !unix

package localnats

// checkDataDir has nothing to check where file ownership is not Unix's.
func checkDataDir(string, bool) error { return nil }
