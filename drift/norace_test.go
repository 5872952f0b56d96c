//go:build !race

package drift

// largeEvents is the size range of the large evaluation agents (see race_test.go).
var largeEvents = [2]int{5_000, 20_000}
