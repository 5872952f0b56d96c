package meridian

import (
	"testing"

	"riskapi/internal/enginetest"
)

// Quality checks of generated sources, every scenario, keep their bytes
// (testdata/results.golden).
func TestResultsKeepTheirBytes(t *testing.T) {
	t.Parallel()
	enginetest.ScenariosKeepTheirBytes(t, "results.golden", TestModeScenarios(), 4, func(scenario string, seed int64) (any, error) {
		req, _ := Generate(scenario, seed, GenParams{})
		return analyzeAt(req, testNow)
	})
}
