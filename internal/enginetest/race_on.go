//go:build race

package enginetest

const raceEnabled = true
