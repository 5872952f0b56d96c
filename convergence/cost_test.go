package convergence

import (
	"context"
	"errors"
	"testing"

	"riskapi/engine"
	"riskapi/internal/enginetest"
)

// costMarket is one market of the cost model's checks.
type costMarket struct {
	name string
	in   func() Input
}

// generated is a market of the generator (seed 3).
func generated(scenario string, gp GenParams) func() Input {
	return func() Input {
		in, _ := Generate(scenario, 3, gp)
		return in
	}
}

// without drops members of every observation of a market: its costs, its quantities, its
// segments.
func without(market func() Input, cost, quantity, segment bool) func() Input {
	return func() Input {
		in := market()
		for i := range in.Observations {
			o := &in.Observations[i]
			if cost {
				o.Cost = nil
			}
			if quantity {
				o.Quantity = nil
			}
			if segment {
				o.Segment = ""
			}
		}
		return in
	}
}

// withBidsOf adds the bids of another market to a market.
func withBidsOf(market, tenders func() Input) func() Input {
	return func() Input {
		in := market()
		in.Bids = tenders().Bids
		return in
	}
}

// calibrationMarkets are the markets the constants of estimate.go were fitted on: every
// scenario of the generator, and the input shapes (prices only, costs without quantities,
// segments without quantities, many firms, many periods with integer and date periods,
// many segment rows, many pairs), each sized to take 40 to 300 ms.
var calibrationMarkets = []costMarket{
	{"collusion_found 2×20000", generated(ScenarioCollusionFound, GenParams{Periods: 20000})},
	{"competitive 50×2000", generated(ScenarioCompetitive, GenParams{Firms: 50, Periods: 2000})},
	{"parallel_cost_shock 50×2000", generated(ScenarioParallelCostShock, GenParams{Firms: 50, Periods: 2000})},
	{"demand_shock 50×2000", generated(ScenarioDemandShock, GenParams{Firms: 50, Periods: 2000})},
	{"cartel 100×1000 with messages", generated(ScenarioCartel, GenParams{Firms: 100, Periods: 1000, Messages: 1, PeriodForm: FormDate})},
	{"bid_rigging 20000 tenders", generated(ScenarioBidRigging, GenParams{Tenders: 20000, Firms: 30})},
	{"competitive_tenders 20000 tenders", generated(ScenarioCompetitiveTenders, GenParams{Tenders: 20000, Firms: 30})},
	{"market_division 20×500", generated(ScenarioMarketDivision, GenParams{Firms: 20, Periods: 500})},
	{"regional_monopolies 40×1000", generated(ScenarioRegionalMonopolies, GenParams{Firms: 40, Periods: 1000})},
	{"home_markets 20×500", generated(ScenarioHomeMarkets, GenParams{Firms: 20, Periods: 500})},
	{"prices only 50×2000", without(generated(ScenarioCompetitive, GenParams{Firms: 50, Periods: 2000}), true, true, true)},
	{"costs, no quantities 50×2000", without(generated(ScenarioCompetitive, GenParams{Firms: 50, Periods: 2000}), false, true, true)},
	{"segments, no quantities 20×500", without(generated(ScenarioMarketDivision, GenParams{Firms: 20, Periods: 500}), false, true, false)},
	{"many firms 5000×40", generated(ScenarioCompetitive, GenParams{Firms: 5000, Periods: 40})},
	{"many periods 4×50000 integers", generated(ScenarioCompetitive, GenParams{Firms: 4, Periods: 50000, PeriodForm: FormInteger})},
	{"many periods 4×50000 date-times", generated(ScenarioCompetitive, GenParams{Firms: 4, Periods: 50000, PeriodForm: FormDateTime})},
	{"one segment 50000 firms × 10", func() Input { return segmentMarket(50000, 10, 1) }},
	{"many pairs 200×2000", generated(ScenarioCompetitive, GenParams{Firms: 200, Periods: 2000})},
}

// heldOutMarkets are markets of other shapes and sizes than the calibration's, which the
// fit never saw: docs/methods/convergence.md reports them apart.
var heldOutMarkets = []costMarket{
	{"cartel 30×3000 with messages", generated(ScenarioCartel, GenParams{Firms: 30, Periods: 3000, Messages: 1})},
	{"competitive 1000×100", generated(ScenarioCompetitive, GenParams{Firms: 1000, Periods: 100})},
	{"bid_rigging 25000 tenders, 200 firms", generated(ScenarioBidRigging, GenParams{Tenders: 25000, Firms: 200})},
	{"200 segments 20000 firms × 20", func() Input { return segmentMarket(20000, 20, 200) }},
	{"market_division 10×2000", generated(ScenarioMarketDivision, GenParams{Firms: 10, Periods: 2000})},
	{"prices only 2×60000 dates", without(generated(ScenarioCompetitive, GenParams{Firms: 2, Periods: 60000, PeriodForm: FormDate}), true, true, true)},
	{"cartel 50×1000 and 5000 tenders", withBidsOf(generated(ScenarioCartel, GenParams{Firms: 50, Periods: 1000, Messages: -1}), generated(ScenarioBidRigging, GenParams{Tenders: 5000, Firms: 30}))},
	{"parallel_cost_shock 400×400", generated(ScenarioParallelCostShock, GenParams{Firms: 400, Periods: 400})},
	{"home_markets without costs 30×300", without(generated(ScenarioHomeMarkets, GenParams{Firms: 30, Periods: 300}), true, false, false)},
}

// unvalidated is in without what Validate kept, so that running it validates again.
func unvalidated(in Input) Input {
	in.checked = engine.Compiled[inputKey, input]{}
	return in
}

// estimateHolds checks the estimate of every market against the measured CPU time and peak
// heap of validating and analysing it.
func estimateHolds(t *testing.T, markets []costMarket) {
	if raceEnabled {
		t.Skip("CPU and memory estimates are not measurable under the race detector")
	}
	for _, m := range markets {
		t.Run(m.name, func(t *testing.T) {
			in := m.in()
			est, err := Estimate(in)
			if err != nil {
				t.Fatal(err)
			}
			v, _ := in.validated()
			t.Logf("%s: drivers %+v", m.name, drivers(v))
			run := func() {
				x := unvalidated(in)
				if err := x.Validate(); err != nil {
					t.Error(err)
					return
				}
				if _, err := Analyze(context.Background(), x); err != nil {
					t.Error(err)
				}
			}
			// Memory first: measured right after a CPU measurement, the peak reads about
			// half of what it reads otherwise.
			enginetest.MemoryEstimateHolds(t, m.name, est, run)
			enginetest.EstimateHolds(t, m.name, est, run)
		})
	}
}

// The cost model holds on the markets it was calibrated on (platform contract §11).
func TestCostEstimateHolds(t *testing.T) { estimateHolds(t, calibrationMarkets) }

// The cost model holds on markets of shapes and sizes it was not calibrated on.
func TestCostEstimateHoldsOnHeldOutMarkets(t *testing.T) { estimateHolds(t, heldOutMarkets) }

// Estimate checks its input as Analyze does, and names the member that drives the cost.
func TestCostEstimateValidatesAndNamesTheDriver(t *testing.T) {
	in, _ := Generate(ScenarioCompetitive, 1, GenParams{})
	in.Observations[3].Price = nil
	var ie *engine.InputError
	if _, err := Estimate(in); !errors.As(err, &ie) || ie.Field != "observations[3].price" {
		t.Fatalf("Estimate of a market with a missing price: %v, want the error at observations[3].price", err)
	}
	for _, c := range []struct {
		market func() Input
		field  string
	}{
		{generated(ScenarioCompetitive, GenParams{Firms: 5, Periods: 300}), "observations"},
		{generated(ScenarioBidRigging, GenParams{Tenders: 500}), "bids"},
		{func() Input {
			in, _ := Generate(ScenarioCartel, 1, GenParams{Firms: 4, Periods: 20, Messages: -1})
			for k := range 5000 {
				in.Communications = append(in.Communications, Communication{From: "firm_01", To: "firm_02", Timestamp: in.Observations[k%len(in.Observations)].Period})
			}
			return in
		}, "communications"},
	} {
		est, err := Estimate(c.market())
		if err != nil {
			t.Fatal(err)
		}
		if est.Field != c.field || est.CPU <= 0 || est.Memory <= 0 {
			t.Errorf("estimate %+v, want a positive cost driven by %s", est, c.field)
		}
	}
}

// On an input that Validate checked, Estimate reuses what Validate built: it allocates
// nothing, where validating 100,000 observations allocates about 90 times (its indexes).
func TestCostEstimateReusesValidation(t *testing.T) {
	in, _ := Generate(ScenarioCompetitive, 1, GenParams{Firms: 50, Periods: 2000})
	if err := in.Validate(); err != nil {
		t.Fatal(err)
	}
	validating := testing.AllocsPerRun(1, func() { _, _ = Estimate(unvalidated(in)) })
	reusing := testing.AllocsPerRun(5, func() { _, _ = Estimate(in) })
	if reusing != 0 || validating < 50 {
		t.Errorf("Estimate allocated %v times after Validate and %v times without it; want 0 and at least 50", reusing, validating)
	}
}
