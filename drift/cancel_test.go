package drift

import (
	"context"
	"testing"

	"riskapi/internal/enginetest"
)

// A 100,000-event analysis stops within 100 ms of its context's cancel.
func TestAnalyzeStopsSoonAfterCancel(t *testing.T) {
	in, _ := Generate(ScenarioShadow, 1, GenParams{Events: MaxEvents})
	enginetest.StopsSoonAfterCancel(t, func(ctx context.Context) error {
		_, err := Analyze(ctx, in)
		return err
	})
}
