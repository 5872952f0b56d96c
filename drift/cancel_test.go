package drift

import (
	"context"
	"testing"

	"riskapi/internal/enginetest"
)

// An analysis of MaxEvents events stops within 100 ms of its context's cancel, whichever
// stage the cancel finds it in: the generated agent (every stage a few milliseconds),
// many parties (the per-party tests), many detected parties (their descriptions), and
// 2,000,000 beneficiaries (validation, the workload count and preparation).
func TestAnalyzeStopsSoonAfterCancel(t *testing.T) {
	generated, _ := Generate(ScenarioShadow, 1, GenParams{Events: MaxEvents})
	for _, c := range []struct {
		name string
		in   Input
	}{
		{"generated", generated},
		{"10,000 parties", withBeneficiaries(generated, 1, 10_000, 0, 1)},
		{"150 detected parties", withDetectedParties(MaxEvents, 150, 80)},
		{"20 beneficiaries an event", withBeneficiaries(generated, 20, 20, 0, 1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			enginetest.StopsSoonAfterCancel(t, func(ctx context.Context) error {
				_, err := Analyze(ctx, c.in)
				return err
			})
		})
	}
}
