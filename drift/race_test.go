//go:build race

package drift

// largeEvents is the size range of the large evaluation agents. The race detector slows
// the analysis about tenfold, so under it the large run uses smaller (still ≥ 5,000-event)
// agents; its targets are the same.
var largeEvents = [2]int{5_000, 8_000}
