package meridian

import (
	"fmt"
	"testing"

	"riskapi/internal/enginetest"
)

// Quality checks of generated sources, every scenario, keep their bytes
// (testdata/results.golden).
func TestResultsKeepTheirBytes(t *testing.T) {
	t.Parallel()
	var cases []enginetest.Case
	for _, scenario := range TestModeScenarios() {
		for seed := int64(1); seed <= 4; seed++ {
			req, _ := Generate(scenario, seed, GenParams{})
			res, err := analyzeAt(req, testNow)
			cases = append(cases, enginetest.Case{Name: fmt.Sprintf("%s/%d", scenario, seed), Result: res, Err: err})
		}
	}
	enginetest.SameBytesAsBefore(t, "results.golden", cases)
}
