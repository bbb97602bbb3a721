//go:build race

package webhook

// raceDetector says the tests run with -race, whose checkptr instrumentation aborts in
// github.com/spaolacci/murmur3 v1.1.0 (unsafe pointer arithmetic), which pkg/slug hashes with.
const raceDetector = true
