package cascade

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// Exact reuse must not change a byte of the result: for every deterministic model and
// every grouped scenario shape, Analyze with reuse equals Analyze making every run, with
// one worker and with several, and the chunked path (plan, chunks, merge) equals both.
func TestExactReuseKeepsTheBytes(t *testing.T) {
	t.Parallel()
	shapes := []struct {
		name string
		sc   ScenarioSpec
		fail float64 // every node's failure_probability
	}{
		{"random_node", ScenarioSpec{Type: TypeRandomNode}, 0},
		{"random_node count 2", ScenarioSpec{Type: TypeRandomNode, Count: ptr(2)}, 0},
		{"random_failure 0.004", ScenarioSpec{Type: TypeRandomFailure, Probability: ptr(0.004)}, 0},
		{"random_failure per node", ScenarioSpec{Type: TypeRandomFailure}, 0.003},
	}
	for _, model := range []string{ModelThreshold, ModelDebtRank, ModelEisenbergNoe} {
		for _, sh := range shapes {
			t.Run(model+"/"+sh.name, func(t *testing.T) {
				t.Parallel()
				r := rand.New(rand.NewPCG(11, uint64(len(sh.name))))
				net := gaiKapadia(r, 40, 4, 0.05, "bank")
				for i := range net.Nodes {
					net.Nodes[i].ExternalAssets = ptr(0.2)
					net.Nodes[i].FailureProbability = ptr(sh.fail)
				}
				in := Input{Network: net, Model: model, Scenarios: []ScenarioSpec{sh.sc, {Type: TypeRandomNode}},
					Simulations: ptr(3000), Seed: ptr(int64(5))}
				s, err := in.spec()
				if err != nil {
					t.Fatal(err)
				}
				d, reuse := s.distinctRuns(0)
				if !reuse {
					t.Fatalf("the scenario is not grouped (expected distinct runs %.0f of 3,000)", d)
				}
				in.Run = Options{Workers: 1, everyRun: true}
				want := analyzeBytes(t, in)
				for _, w := range []int{1, 3} {
					in.Run = Options{Workers: w}
					if got := analyzeBytes(t, in); !bytes.Equal(got, want) {
						t.Fatalf("workers %d: the result with exact reuse differs from making every run", w)
					}
				}
				in.Run = Options{Workers: 2, ChunkRuns: 700}
				p, err := NewPlan(context.Background(), in)
				if err != nil {
					t.Fatal(err)
				}
				chunks := runChunksShuffled(t, in, p, rand.New(rand.NewPCG(1, 2)))
				if got := mergeEncoded(t, p, chunks); !bytes.Equal(got, want) {
					t.Fatal("the chunked result with exact reuse differs from making every run")
				}
			})
		}
	}
}

// The expected number of distinct draws matches what grouping finds, within sampling noise
// where it is exact (random_node) and from above where it is a bound (random_failure).
func TestDistinctRunsPredictsTheGroups(t *testing.T) {
	t.Parallel()
	cases := []struct {
		sc    ScenarioSpec
		n     int
		runs  int
		exact bool
	}{
		{ScenarioSpec{Type: TypeRandomNode}, 1000, 10_000, true},
		{ScenarioSpec{Type: TypeRandomNode}, 5000, 2_000, true},
		{ScenarioSpec{Type: TypeRandomNode, Count: ptr(2)}, 60, 10_000, true},
		{ScenarioSpec{Type: TypeRandomFailure, Probability: ptr(0.0005)}, 1000, 10_000, false},
		{ScenarioSpec{Type: TypeRandomFailure, Probability: ptr(0.002)}, 200, 5_000, false},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s n=%d runs=%d", c.sc.Type, c.n, c.runs), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(3, uint64(c.n)))
			in := Input{Network: gaiKapadia(r, c.n, 2, 0.05, "bank"), Scenarios: []ScenarioSpec{c.sc},
				Simulations: ptr(c.runs), Seed: ptr(int64(9))}
			s, err := in.spec()
			if err != nil {
				t.Fatal(err)
			}
			want, _ := s.distinctRuns(0)
			draw := newScenarioDraw(s, 0)
			run := newRunner(newModel(s, s.uncancelledNetwork()))
			keys := make([][]int32, c.runs)
			for j := range keys {
				keys[j] = append([]int32(nil), draw.start(run, j)...)
			}
			got := float64(len(groupRuns(keys).mult))
			t.Logf("expected %.0f distinct draws, found %.0f", want, got)
			if c.exact && math.Abs(got-want) > 4*math.Sqrt(want)+2 {
				t.Errorf("found %.0f distinct draws, expected %.0f", got, want)
			}
			if !c.exact && (got > want+4*math.Sqrt(want)+2 || got < want/3) {
				t.Errorf("found %.0f distinct draws, bound %.0f", got, want)
			}
		})
	}
}
