package cascade

import (
	"context"
	"testing"

	"riskapi/internal/enginetest"
)

// A simulation of 10,000 nodes and 100,000 edges (300 runs, then the blast-radius sweep) stops within 100 ms of its context's cancel.
func TestAnalyzeStopsSoonAfterCancel(t *testing.T) {
	in := benchInput(10_000, 10, 300)
	enginetest.StopsSoonAfterCancel(t, func(ctx context.Context) error {
		_, err := Analyze(ctx, in)
		return err
	})
}
