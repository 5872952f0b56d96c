package convergence

import (
	"context"
	"testing"

	"riskapi/internal/enginetest"
)

// A market of 100 firms × 1,000 periods stops within 100 ms of its context's cancel.
func TestAnalyzeStopsSoonAfterCancel(t *testing.T) {
	in, _ := Generate(ScenarioCartel, 1, GenParams{Firms: 100, Periods: 1000, Messages: 1, PeriodForm: FormDate})
	enginetest.StopsSoonAfterCancel(t, func(ctx context.Context) error {
		_, err := Analyze(ctx, in)
		return err
	})
}
