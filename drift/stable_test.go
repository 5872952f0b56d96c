package drift

import (
	"context"
	"testing"

	"riskapi/internal/enginetest"
)

// Analyses of generated agents, every scenario, keep their bytes (testdata/analyses.golden).
func TestAnalysesKeepTheirBytes(t *testing.T) {
	t.Parallel()
	enginetest.ScenariosKeepTheirBytes(t, "analyses.golden", Scenarios(), 3, func(scenario string, seed int64) (any, error) {
		in, _ := Generate(scenario, seed, GenParams{})
		return Analyze(context.Background(), in)
	})
}
