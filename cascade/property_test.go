package cascade

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"riskapi/engine"
)

// randomInput draws a small network with awkward values (zero and huge capital, weights and
// values, zero-value nodes, duplicate and self edges) and a random mix of scenarios.
func randomInput(r *rand.Rand, model string) Input {
	n := 1 + r.IntN(25)
	pick := func(vals ...float64) *float64 {
		if r.IntN(4) == 0 {
			return nil
		}
		return ptr(vals[r.IntN(len(vals))])
	}
	in := Input{Model: model, Simulations: ptr(1 + r.IntN(300)), Seed: ptr(r.Int64()), RecoveryRate: pick(0, 0.3, 1),
		SystemicThreshold: pick(1e-9, 0.05, 1)}
	for i := 0; i < n; i++ {
		nd := Node{ID: fmt.Sprintf("n%d", i), Capital: pick(0, 1e-12, 0.5, 3, 1e15), ExternalAssets: pick(0, 1, 1e15),
			Value: pick(0, 1, 7, 1e15), FailureProbability: pick(0, 0.2, 1), RecoveryHours: pick(0, 5, 1e15)}
		if r.IntN(3) == 0 {
			nd.Provider = fmt.Sprintf("p%d", r.IntN(3))
		}
		in.Network.Nodes = append(in.Network.Nodes, nd)
	}
	in.Network.Nodes[0].Value = ptr(1.0)
	for k := r.IntN(4 * n); k > 0; k-- {
		in.Network.Edges = append(in.Network.Edges, Edge{Source: fmt.Sprintf("n%d", r.IntN(n)), Target: fmt.Sprintf("n%d", r.IntN(n)),
			Weight: pick(0, 1e-12, 0.5, 2, 1e15), Probability: pick(0, 0.5, 1)})
	}
	if r.IntN(4) == 0 {
		return in // default scenarios
	}
	for k := 1 + r.IntN(4); k > 0; k-- {
		sc := ScenarioSpec{Type: scenarioTypes[r.IntN(len(scenarioTypes))]}
		switch sc.Type {
		case TypeNodeFailure:
			sc.Nodes = []string{"n0", fmt.Sprintf("n%d", r.IntN(n)), "n0"}
		case TypeRandomNode:
			sc.Count = ptr(1 + r.IntN(n))
		case TypeRandomFailure:
			sc.Probability = pick(0, 0.1, 1)
		case TypeTargetedAttack:
			sc.Count = ptr(1 + r.IntN(n))
			sc.By = []string{"", ByDegree, ByExposure, ByEigenvector}[r.IntN(4)]
		case TypeProviderOutage:
			sc.Type = TypeNodeFailure
			sc.Nodes = []string{"n0"}
			for _, nd := range in.Network.Nodes {
				if nd.Provider != "" {
					sc = ScenarioSpec{Type: TypeProviderOutage, Provider: nd.Provider}
				}
			}
		case TypeShock:
			if model == ModelIndependentCascade {
				sc = ScenarioSpec{Type: TypeRandomNode}
				break
			}
			sc.LossFraction = ptr([]float64{1e-9, 0.5, 1}[r.IntN(3)])
			if r.IntN(2) == 0 {
				sc.Nodes = []string{fmt.Sprintf("n%d", r.IntN(n))}
			}
		}
		in.Scenarios = append(in.Scenarios, sc)
	}
	return in
}

// checkResult asserts what every result must satisfy: JSON-encodable (no NaN or Inf),
// fractions and probabilities in [0, 1], counts that add up, ranks in order.
func checkResult(t *testing.T, in Input, res Result) {
	t.Helper()
	if _, err := json.Marshal(res); err != nil {
		t.Fatalf("result not encodable: %v\ninput %+v", err, in)
	}
	unit := func(name string, v float64) {
		if !(v >= 0 && v <= 1) {
			t.Errorf("%s = %v outside [0, 1]", name, v)
		}
	}
	for _, s := range res.Scenarios {
		unit("cascade_probability", s.CascadeProbability)
		unit("expected_failed_fraction", s.ExpectedFailedFraction)
		unit("p99", s.FailedFractionQuantiles.P99)
		sum := 0
		for _, c := range s.Histogram.Counts {
			sum += c
		}
		if sum != s.Runs || s.ValueAtRisk.L95 > s.ValueAtRisk.L99 || s.ExpectedShortfall.L99 < s.ValueAtRisk.L99 || s.ExpectedLoss < 0 {
			t.Errorf("scenario %+v", s)
		}
	}
	for k, nd := range res.Nodes {
		unit("failure_probability", nd.FailureProbability)
		if nd.BlastRadius != nil {
			unit("blast_radius", *nd.BlastRadius)
		}
		if nd.Rank != k+1 {
			t.Errorf("rank %d at %d", nd.Rank, k)
		}
	}
	if !(res.Score >= 0 && res.Score <= 100) {
		t.Errorf("score %v", res.Score)
	}
}

func TestRandomInputs(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(31, 41))
	for trial := 0; trial < 400; trial++ {
		model := modelNames[trial%4]
		in := randomInput(r, model)
		res, err := runWith(context.Background(), in, Options{Workers: 1 + trial%3})
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		checkResult(t, in, res)
	}
}

// FuzzSimulate: any JSON body either fails validation with an *engine.InputError or simulates to
// an encodable result; it never panics.
func FuzzSimulate(f *testing.F) {
	f.Add([]byte(specExample))
	f.Add([]byte(`{"network":{"nodes":[{"id":"a","capital":0},{"id":"b"}],"edges":[{"source":"a","target":"b","weight":1e15}]},"model":"debtrank","simulations":3}`))
	f.Add([]byte(`{"network":{"nodes":[{"id":"a","external_assets":1},{"id":"b"}],"edges":[{"source":"a","target":"b"},{"source":"b","target":"a"}]},"model":"eisenberg_noe","scenarios":[{"type":"shock","loss_fraction":1}]}`))
	f.Add([]byte(`{"network":{"nodes":[{"id":"a"}]},"model":"independent_cascade","scenarios":[{"type":"random_failure","probability":1}],"simulations":2}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var in Input
		if json.Unmarshal(body, &in) != nil {
			return
		}
		if in.Simulations != nil && *in.Simulations > 50 {
			in.Simulations = ptr(50)
		}
		if len(in.Network.Nodes) > 200 || len(in.Network.Edges) > 2000 {
			return
		}
		res, err := Analyze(context.Background(), in)
		var ie *engine.InputError
		if err != nil {
			if !errors.As(err, &ie) {
				t.Fatalf("error %v is not an *engine.InputError", err)
			}
			return
		}
		checkResult(t, in, res)
	})
}
