package cascade

import (
	"context"
	"testing"

	"riskapi/internal/enginetest"
)

// A simulation of 20,000 nodes and 200,000 edges (500 runs, then the blast-radius sweep) stops within 100 ms of its context's cancel.
func TestAnalyzeStopsSoonAfterCancel(t *testing.T) {
	in := benchInput(20_000, 10, 500)
	enginetest.StopsSoonAfterCancel(t, func(ctx context.Context) error {
		_, err := Analyze(ctx, in)
		return err
	})
}
