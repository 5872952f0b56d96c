package cascade

import (
	"context"
	"testing"
	"time"
)

// TestLargeNetwork simulates a network at the contract's limits (100,000 nodes, about
// 1,000,000 edges; 20,000 nodes under the race detector): the sweep covers exactly the 1,000 nodes with the largest out-exposure
// (the others have a null blast radius and come last, by id), λ₂ converges, and the work
// is what the contract's formula says.
func TestLargeNetwork(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates a network at the contract's limits, 14 s; run without -short")
	}
	t.Parallel()
	in := benchInput(largeNodes, 9.9, largeRuns)
	for i := range in.Network.Nodes {
		in.Network.Nodes[i].Capital = ptr(0.041) // outside the contagion window at z ≥ 7
	}
	w, err := Work(in)
	if err != nil {
		t.Fatal(err)
	}
	size := int64(largeNodes + len(in.Network.Edges))
	if w != int64(largeRuns+SweepTop)*size {
		t.Errorf("work %d, want %d", w, int64(largeRuns+SweepTop)*size)
	}
	start := time.Now()
	res, err := Analyze(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d nodes, %d edges, %d runs + 1,000 swept: %v; λ₂ = %.6g", largeNodes, len(in.Network.Edges), largeRuns, time.Since(start), res.Dimensions.Connectivity.AlgebraicConnectivity)
	if len(res.Nodes) != largeNodes {
		t.Fatalf("%d nodes", len(res.Nodes))
	}
	s, _ := compile(&in)
	g := buildNetwork(s)
	top := topNodes(s.ids, g.exposure, SweepTop)
	want := map[string]bool{}
	for _, i := range top {
		want[s.ids[i]] = true
	}
	for k, n := range res.Nodes {
		if (k < SweepTop) != (n.BlastRadius != nil) || (n.BlastRadius != nil) != want[n.ID] || n.Rank != k+1 {
			t.Fatalf("node %d %s: blast radius %v, swept %v", k, n.ID, n.BlastRadius, want[n.ID])
		}
		if k > SweepTop && n.ID < res.Nodes[k-1].ID {
			t.Fatalf("unswept nodes not in id order at %d", k)
		}
	}
	c := res.Dimensions.Connectivity
	// Symmetrised weights 0.2/k ≈ 0.02 on ≈ 20 neighbours: λ₂ is a sizeable share of the
	// mean weighted degree 0.2 in a random graph this dense.
	if c.Components != 1 || !(c.Score > 0.1 && c.Score < 1) {
		t.Errorf("connectivity %+v", c)
	}
}
