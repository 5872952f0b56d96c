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

// A market of 250,000 firms stops within 100 ms of its context's cancel too: the per-firm
// and per-row loops look at the context by amount of work done, not once per firm or per
// cell, so no single step runs long (validation, done before, is not part of the work).
func TestAnalyzeOfManyFirmsStopsSoonAfterCancel(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("builds a market of 500,000 observations to time its cancel")
	}
	in := shortLivedFirmsMarket(250_000)
	if err := in.Validate(); err != nil {
		t.Fatal(err)
	}
	enginetest.StopsSoonAfterCancel(t, func(ctx context.Context) error {
		_, err := Analyze(ctx, in)
		return err
	})
}

// The ring search over 25,000 tenders of 200 firms stops within 100 ms of its context's
// cancel: the subset screens look at the context by tenders visited.
func TestAnalyzeOfManyTendersStopsSoonAfterCancel(t *testing.T) {
	in, _ := Generate(ScenarioBidRigging, 1, GenParams{Tenders: 25000, Firms: 200})
	if err := in.Validate(); err != nil {
		t.Fatal(err)
	}
	enginetest.StopsSoonAfterCancel(t, func(ctx context.Context) error {
		_, err := Analyze(ctx, in)
		return err
	})
}
