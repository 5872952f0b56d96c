package cascade

import (
	"context"
	"sync/atomic"
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

// Each model stops within 100 ms of the cancel wherever its work lies (the sizes make
// that part most of the work: 1–3 s of CPU each): the independent-cascade sweep's 100
// runs a node, Eisenberg–Noe and DebtRank sweeps of long runs, λ₂ by LOBPCG on a tree,
// and the eigenvector centrality of a targeted attack.
func TestModelsStopSoonAfterCancel(t *testing.T) {
	for _, c := range []struct {
		name string
		in   Input
	}{
		{"independent_cascade sweep, 3,000 nodes", costInput(ModelIndependentCascade, 3000, 1.5, 0.02, 0.8, TypeNodeFailure, 1)},
		{"eisenberg_noe sweep, 1,200 nodes, most default", costInput(ModelEisenbergNoe, 1200, 5, 0.02, 0.05, TypeNodeFailure, 1)},
		{"debtrank sweep, 1,500 nodes, slow decay", costInput(ModelDebtRank, 1500, 5, 0.3, 0.8, TypeNodeFailure, 1)},
		{"threshold, λ₂ of a tree of 8,000 nodes", graphInput(prefAttachPairs(8000, 1, 1))},
		{"threshold, eigenvector centrality, 50,000 nodes", withScenario(costInput(ModelThreshold, 50_000, 2, 0.3, 0.8, TypeTargetedAttack, 1),
			ScenarioSpec{Type: TypeTargetedAttack, By: ByEigenvector})},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Logf("%s", termsOf(c.in))
			enginetest.StopsSoonAfterCancel(t, func(ctx context.Context) error {
				_, err := Analyze(ctx, c.in)
				return err
			})
		})
	}
}

// A single run can take long where the network is large: a DebtRank run whose
// increments barely decay (capital equal to the interbank assets: Λ's columns sum to 1)
// and an Eisenberg–Noe run where nothing is paid from outside (external assets 0) follow
// their whole run budget of 100·(nodes + edges) + 2²² edges, ≈ 70 million (0.4–1 s) at
// 60,000 nodes and 600,000 edges. They look for the cancel every 2²⁰ edges, so a run
// stops within 100 ms too (DebtRank looked every 64 rounds, ≈ 38 million edges here, and
// Eisenberg–Noe went on to its next phase, and pushed again).
func TestLongRunStopsSoonAfterCancel(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a network at the contract's limits; run without -short")
	}
	for _, c := range []struct {
		model        string
		capital, ext float64
	}{{ModelDebtRank, 0.2, 0.8}, {ModelEisenbergNoe, 0.02, 0}} {
		t.Run(c.model, func(t *testing.T) {
			in := costInput(c.model, 60_000, 9.9, c.capital, c.ext, TypeNodeFailure, 1)
			s, err := in.spec()
			if err != nil {
				t.Fatal(err)
			}
			m := newModel(s, s.uncancelledNetwork())
			var stop atomic.Bool
			m.stop = &stop
			run := newRunner(m)
			enginetest.StopsSoonAfterCancel(t, func(ctx context.Context) error {
				stop.Store(false)
				defer context.AfterFunc(ctx, func() { stop.Store(true) })()
				run.run(s.scen[0].fixed, nil)
				return ctx.Err()
			})
		})
	}
}

// The network build at the contract's limits (100,000 nodes, 990,000 edges: ≈ 140 ms of
// CPU) looks for the cancel every 4,096 rows of its sorts, so a client that has gone stops
// the build too.
func TestNetworkBuildStopsSoonAfterCancel(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a network at the contract's limits; run without -short")
	}
	in := benchInput(100_000, 9.9, 1)
	s, err := in.spec()
	if err != nil {
		t.Fatal(err)
	}
	enginetest.StopsSoonAfterCancel(t, func(ctx context.Context) error {
		_, err := newNetwork(ctx, s)
		return err
	})
}
