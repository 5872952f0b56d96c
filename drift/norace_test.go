//go:build !race

package drift

// largeEvents is the size range of the large evaluation agents (see race_test.go).
var largeEvents = [2]int{5_000, 20_000}

// raceDetector reports whether the tests run under the race detector, which slows the
// analysis 10 to 100 times.
const raceDetector = false
