//go:build !race

package webhook

// raceDetector says the tests run with -race (see routes_race_test.go).
const raceDetector = false
