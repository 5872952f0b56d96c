//go:build !race

package meridian

const raceEnabled = false
