package cascade_test

import (
	"bytes"
	"context"
	"encoding/json"
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

// A simulation split into chunks, as background work spread over processes does it: the
// plan cuts the runs into chunks, any process runs any chunk (in any order, again after a
// crash) and stores its bytes, and the chunks' results merged in chunk order are Analyze's
// result, to the byte.
func ExamplePlan() {
	seed, sims := int64(7), 5000
	in := cascade.Input{
		Seed:        &seed,
		Simulations: &sims,
		Scenarios:   []cascade.ScenarioSpec{{Name: "two banks fail", Type: cascade.TypeRandomNode, Count: new(2)}},
		Run:         cascade.Options{ChunkRuns: 1000},
	}
	thin := 0.5
	for i := range 20 {
		id := fmt.Sprintf("bank_%02d", i)
		in.Network.Nodes = append(in.Network.Nodes, cascade.Node{ID: id, Capital: &thin})
		in.Network.Edges = append(in.Network.Edges, cascade.Edge{Source: id, Target: fmt.Sprintf("bank_%02d", (i+1)%20)})
	}
	plan, err := cascade.NewPlan(context.Background(), in)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d runs in %d chunks\n", plan.Runs(), plan.Chunks())

	// Run the chunks last first, as independent jobs would, keeping only their bytes.
	stored := make([][]byte, plan.Chunks())
	var done []int
	for c := plan.Chunks() - 1; c >= 0; c-- {
		res, err := plan.RunChunk(context.Background(), c)
		if err != nil {
			fmt.Println(err)
			return
		}
		if stored[c], err = res.MarshalBinary(); err != nil {
			fmt.Println(err)
			return
		}
		done = append(done, c)
		if c == 3 {
			fmt.Printf("progress after %d chunks: %.2f\n", len(done), plan.Progress(done))
		}
	}

	// Merge in chunk order, reading one stored chunk at a time.
	merger := plan.NewMerger()
	for _, b := range stored {
		res, err := plan.DecodeChunk(b)
		if err == nil {
			err = merger.Add(res)
		}
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	merged, err := merger.Result()
	if err != nil {
		fmt.Println(err)
		return
	}
	direct, err := cascade.Analyze(context.Background(), in)
	if err != nil {
		fmt.Println(err)
		return
	}
	a, _ := json.Marshal(merged)
	b, _ := json.Marshal(direct)
	fmt.Println("same bytes as Analyze:", bytes.Equal(a, b))
	fmt.Printf("cascade probability: %.2f\n", merged.Scenarios[0].CascadeProbability)
	// Output:
	// 5020 runs in 7 chunks
	// progress after 4 chunks: 0.60
	// same bytes as Analyze: true
	// cascade probability: 1.00
}
