//go:build !race

package enginetest

const raceFactor = 1
