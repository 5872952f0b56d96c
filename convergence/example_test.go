package convergence_test

import (
	"context"
	"fmt"

	"riskapi/convergence"
)

// A generated market of eight firms, seven of which form a cartel part of the way through
// the series: Analyze finds the cartel and names its members.
func ExampleAnalyze() {
	in, truth := convergence.Generate(convergence.ScenarioCartel, 7, convergence.GenParams{Firms: 8, Periods: 200})
	a, err := convergence.Analyze(context.Background(), in)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("planted:", truth.Members)
	fmt.Println("found:  ", a.CollusionDetected, a.SuspectedGroups[0].Firms, a.RiskBand)
	// Output:
	// planted: [firm_01 firm_02 firm_04 firm_05 firm_06 firm_07 firm_08]
	// found:   true [firm_01 firm_02 firm_04 firm_05 firm_06 firm_07 firm_08] critical
}

// Observations are a panel of prices, one per firm and period; a period is an integer or
// an RFC 3339 date. Two stations whose prices barely vary are not a cartel on this
// evidence, but the low variance lowers the score (high risk band): a reason to monitor.
func ExampleAnalyze_smallMarket() {
	in := convergence.Input{MarketID: "fuel_station_pair"}
	for t := range 30 {
		for _, firm := range []string{"north", "south"} {
			price := 1.50 + 0.01*float64((t*7+len(firm))%5)
			in.Observations = append(in.Observations, convergence.Observation{
				Firm: firm, Period: convergence.IntPeriod(int64(t)), Price: &price,
			})
		}
	}
	a, err := convergence.Analyze(context.Background(), in)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(a.CollusionDetected, a.FirmsAnalyzed, a.ObservationsAnalyzed, a.RiskBand, a.RecommendedAction)
	// Output:
	// false 2 60 high monitor
}
