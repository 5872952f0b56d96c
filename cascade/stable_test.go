package cascade

import (
	"context"
	"fmt"
	"testing"

	"riskapi/internal/enginetest"
)

// Simulations of generated networks, every scenario and model, keep their bytes
// (testdata/simulations.golden).
func TestSimulationsKeepTheirBytes(t *testing.T) {
	t.Parallel()
	var cases []enginetest.Case
	for _, scenario := range Scenarios() {
		for _, model := range modelNames {
			in, _ := Generate(scenario, 1, GenParams{Nodes: 150, Simulations: 200})
			in.Model = model
			res, err := Analyze(context.Background(), in)
			cases = append(cases, enginetest.Case{Name: fmt.Sprintf("%s/%s", scenario, model), Result: res, Err: err})
		}
	}
	enginetest.SameBytesAsBefore(t, "simulations.golden", cases)
}
