package convergence

import (
	"context"
	"fmt"
	"testing"

	"riskapi/internal/enginetest"
)

// Analyses of generated markets, every scenario, keep their bytes (testdata/analyses.golden).
func TestAnalysesKeepTheirBytes(t *testing.T) {
	t.Parallel()
	var cases []enginetest.Case
	for _, scenario := range Scenarios() {
		for seed := int64(1); seed <= 2; seed++ {
			in, _ := Generate(scenario, seed, GenParams{})
			a, err := Analyze(context.Background(), in)
			cases = append(cases, enginetest.Case{Name: fmt.Sprintf("%s/%d", scenario, seed), Result: a, Err: err})
		}
	}
	enginetest.SameBytesAsBefore(t, "analyses.golden", cases)
}
