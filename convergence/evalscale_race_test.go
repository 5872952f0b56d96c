//go:build race

package convergence

// evalScale multiplies a row's market count. The race detector slows the generator and the
// engine about tenfold, so the rows of price markets run 30 % of their markets and the
// Q-learning rows 25 %; tender rows are cheap and run in full. The targets are still checked
// on the sample.
func evalScale(scenario string) float64 {
	switch scenario {
	case ScenarioBidRigging, ScenarioCompetitiveTenders:
		return 1
	case ScenarioCollusionFound:
		return 0.25
	}
	return 0.3
}

// raceEnabled reports whether the race detector is on: timing assertions skip under it.
const raceEnabled = true
