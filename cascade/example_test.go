package cascade_test

import (
	"context"
	"fmt"

	"riskapi/cascade"
)

// A hub lends to four banks whose capital is thin: its failure takes them all down, while
// a leaf's failure stays local. The threshold model finds the hub the most systemic node.
func ExampleAnalyze() {
	thin, seed := 0.5, int64(1)
	in := cascade.Input{
		Model: cascade.ModelThreshold,
		Seed:  &seed,
		Scenarios: []cascade.ScenarioSpec{
			{Name: "hub fails", Type: cascade.TypeNodeFailure, Nodes: []string{"hub"}},
			{Name: "leaf fails", Type: cascade.TypeNodeFailure, Nodes: []string{"bank_1"}},
		},
	}
	for _, id := range []string{"bank_1", "bank_2", "bank_3", "bank_4"} {
		in.Network.Nodes = append(in.Network.Nodes, cascade.Node{ID: id, Capital: &thin})
		in.Network.Edges = append(in.Network.Edges, cascade.Edge{Source: "hub", Target: id})
	}
	in.Network.Nodes = append(in.Network.Nodes, cascade.Node{ID: "hub"})
	res, err := cascade.Analyze(context.Background(), in)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, sc := range res.Scenarios {
		fmt.Printf("%s: %.0f%% of the network fails\n", sc.Name, 100*sc.ExpectedFailedFraction)
	}
	for _, node := range res.Nodes {
		if node.Rank == 1 {
			fmt.Println("most systemic:", node.ID)
		}
	}
	// Output:
	// hub fails: 100% of the network fails
	// leaf fails: 20% of the network fails
	// most systemic: hub
}
