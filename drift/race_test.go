//go:build race

package drift

// largeEvents is the size range of the large evaluation agents. The race detector slows
// the analysis about tenfold, so under it the large run uses smaller (still ≥ 5,000-event)
// agents; its targets are the same.
var largeEvents = [2]int{5_000, 8_000}

// raceDetector reports whether the tests run under the race detector, which slows the
// analysis 10 to 100 times.
const raceDetector = true
