//go:build !race

package convergence

// evalScale multiplies a row's market count. Without the race detector every row runs in
// full; under it (evalscale_race_test.go) the slow rows run a sample.
func evalScale(scenario string) float64 { return 1 }

// raceEnabled reports whether the race detector is on: timing assertions skip under it.
const raceEnabled = false
