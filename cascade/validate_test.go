package cascade

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/go-json-experiment/json"

	"riskapi/engine"
)

// The request example of the contract, decoded as the HTTP layer decodes it (unknown members
// rejected).
const specExample = `{"network": {
   "nodes": [{"id": "bank_a", "capital": 4.0, "external_assets": 80.0, "value": 100.0,
              "failure_probability": 0.01, "provider": "model-vendor-1", "recovery_hours": 6},
             {"id": "bank_b"}],
   "edges": [{"source": "bank_b", "target": "bank_a", "weight": 20.0, "probability": 1.0}]},
 "model": "threshold",
 "scenarios": [{"name": "one random failure", "type": "random_node", "count": 1}],
 "simulations": 10000, "seed": 42, "recovery_rate": 0.0, "systemic_threshold": 0.05,
 "async": false}`

func TestDecodeSpecExample(t *testing.T) {
	t.Parallel()
	var in Input
	if err := json.Unmarshal([]byte(specExample), &in, json.RejectUnknownMembers(true)); err != nil {
		t.Fatal(err)
	}
	if err := in.Validate(); err != nil {
		t.Fatal(err)
	}
	a := in.Network.Nodes[0]
	if *a.Capital != 4 || *a.ExternalAssets != 80 || *a.Value != 100 || *a.FailureProbability != 0.01 || a.Provider != "model-vendor-1" || *a.RecoveryHours != 6 {
		t.Errorf("node decoded as %+v", a)
	}
	if e := in.Network.Edges[0]; *e.Weight != 20 || *e.Probability != 1 || *in.Seed != 42 || *in.Simulations != 10000 || *in.Scenarios[0].Count != 1 {
		t.Errorf("decoded %+v", in)
	}
	res, err := Analyze(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	// bank_b alone failing costs bank_a 20 > 4: both fail (value 101 of 101).
	if res.Seed != 42 || res.Simulations != 10000 || res.Scenarios[0].Runs != 10000 || res.Scenarios[0].CascadeProbability != 1 {
		t.Errorf("result %+v", res.Scenarios[0])
	}
	// Defaults: bank_b has capital, value 1 and is in no provider.
	if b := nodeByID(res, "bank_b"); *b.BlastRadius != 1 || res.Dimensions.Concentration.TopShare != 1 {
		t.Errorf("bank_b %+v, concentration %+v", b, res.Dimensions.Concentration)
	}
}

func TestValidationErrors(t *testing.T) {
	t.Parallel()
	base := func() Input {
		return Input{Network: Network{
			Nodes: []Node{{ID: "a"}, {ID: "b", Provider: "p"}, {ID: "c"}},
			Edges: []Edge{{Source: "a", Target: "b"}, {Source: "b", Target: "c"}},
		}}
	}
	cases := []struct {
		name     string
		edit     func(*Input)
		code     string
		field    string
		received string
	}{
		{"no nodes", func(in *Input) { in.Network.Nodes = nil }, CodeInvalidNetwork, "network.nodes", "missing"},
		{"no network", func(in *Input) { in.Network = Network{} }, CodeInvalidNetwork, "network", "missing"},
		{"empty id", func(in *Input) { in.Network.Nodes[1].ID = "" }, CodeInvalidNetwork, "network.nodes[1].id", "missing"},
		{"duplicate id", func(in *Input) { in.Network.Nodes[2].ID = "a" }, CodeInvalidNetwork, "network.nodes[2].id", "string"},
		{"negative capital", func(in *Input) { in.Network.Nodes[0].Capital = ptr(-1.0) }, CodeInvalidNetwork, "network.nodes[0].capital", "number"},
		{"NaN value", func(in *Input) { in.Network.Nodes[2].Value = ptr(math.NaN()) }, CodeInvalidNetwork, "network.nodes[2].value", "number"},
		{"huge external assets", func(in *Input) { in.Network.Nodes[0].ExternalAssets = ptr(1e300) }, CodeInvalidNetwork, "network.nodes[0].external_assets", "number"},
		{"failure probability above 1", func(in *Input) { in.Network.Nodes[1].FailureProbability = ptr(1.5) }, CodeInvalidNetwork, "network.nodes[1].failure_probability", "number"},
		{"negative recovery hours", func(in *Input) { in.Network.Nodes[1].RecoveryHours = ptr(-2.0) }, CodeInvalidNetwork, "network.nodes[1].recovery_hours", "number"},
		{"zero total value", func(in *Input) {
			for i := range in.Network.Nodes {
				in.Network.Nodes[i].Value = ptr(0.0)
			}
		}, CodeInvalidNetwork, "network.nodes", "array"},
		{"unknown source", func(in *Input) { in.Network.Edges[1].Source = "zz" }, CodeInvalidNetwork, "network.edges[1].source", "string"},
		{"missing target", func(in *Input) { in.Network.Edges[0].Target = "" }, CodeInvalidNetwork, "network.edges[0].target", "missing"},
		{"negative weight", func(in *Input) { in.Network.Edges[1].Weight = ptr(-3.0) }, CodeInvalidNetwork, "network.edges[1].weight", "number"},
		{"probability below 0", func(in *Input) { in.Network.Edges[0].Probability = ptr(-0.1) }, CodeInvalidNetwork, "network.edges[0].probability", "number"},
		{"unknown model", func(in *Input) { in.Model = "sir" }, CodeInvalidModel, "model", "string"},
		{"empty scenarios", func(in *Input) { in.Scenarios = []ScenarioSpec{} }, CodeInvalidScenarios, "scenarios", "array"},
		{"unknown type", func(in *Input) { in.Scenarios = []ScenarioSpec{{Type: "meteor"}} }, CodeInvalidScenarios, "scenarios[0].type", "string"},
		{"missing type", func(in *Input) { in.Scenarios = []ScenarioSpec{{Name: "x"}} }, CodeInvalidScenarios, "scenarios[0].type", "missing"},
		{"random_node count above node count", func(in *Input) {
			in.Scenarios = []ScenarioSpec{{Type: TypeRandomNode}, {Type: TypeRandomNode, Count: ptr(4)}}
		}, CodeInvalidScenarios, "scenarios[1].count", "number"},
		{"targeted count 0", func(in *Input) { in.Scenarios = []ScenarioSpec{{Type: TypeTargetedAttack, Count: ptr(0)}} }, CodeInvalidScenarios, "scenarios[0].count", "number"},
		{"unknown centrality", func(in *Input) { in.Scenarios = []ScenarioSpec{{Type: TypeTargetedAttack, By: "pagerank"}} }, CodeInvalidScenarios, "scenarios[0].by", "string"},
		{"node_failure without nodes", func(in *Input) { in.Scenarios = []ScenarioSpec{{Type: TypeNodeFailure}} }, CodeInvalidScenarios, "scenarios[0].nodes", "missing"},
		{"node_failure unknown node", func(in *Input) {
			in.Scenarios = []ScenarioSpec{{Type: TypeNodeFailure, Nodes: []string{"a", "q"}}}
		}, CodeInvalidScenarios, "scenarios[0].nodes[1]", "string"},
		{"loss_fraction 0", func(in *Input) { in.Scenarios = []ScenarioSpec{{Type: TypeShock, LossFraction: ptr(0.0)}} }, CodeInvalidScenarios, "scenarios[0].loss_fraction", "number"},
		{"loss_fraction above 1", func(in *Input) { in.Scenarios = []ScenarioSpec{{Type: TypeShock, LossFraction: ptr(1.2)}} }, CodeInvalidScenarios, "scenarios[0].loss_fraction", "number"},
		{"shock without loss_fraction", func(in *Input) { in.Scenarios = []ScenarioSpec{{Type: TypeShock}} }, CodeInvalidScenarios, "scenarios[0].loss_fraction", "missing"},
		{"shock under independent cascade", func(in *Input) {
			in.Model = ModelIndependentCascade
			in.Scenarios = []ScenarioSpec{{Type: TypeShock, LossFraction: ptr(0.5)}}
		}, CodeInvalidScenarios, "scenarios[0].type", "string"},
		{"unknown provider", func(in *Input) { in.Scenarios = []ScenarioSpec{{Type: TypeProviderOutage, Provider: "q"}} }, CodeInvalidScenarios, "scenarios[0].provider", "string"},
		{"random_failure probability", func(in *Input) {
			in.Scenarios = []ScenarioSpec{{Type: TypeRandomFailure, Probability: ptr(2.0)}}
		}, CodeInvalidScenarios, "scenarios[0].probability", "number"},
		{"parameter of another type", func(in *Input) {
			in.Scenarios = []ScenarioSpec{{Type: TypeRandomNode, Nodes: []string{"a"}}}
		}, CodeInvalidScenarios, "scenarios[0].nodes", "array"},
		{"simulations 0", func(in *Input) { in.Simulations = ptr(0) }, CodeInvalidSimulations, "simulations", "number"},
		{"simulations above limit", func(in *Input) { in.Simulations = ptr(100_001) }, CodeInvalidSimulations, "simulations", "number"},
		{"recovery rate", func(in *Input) { in.RecoveryRate = ptr(1.01) }, CodeInvalidRecoveryRate, "recovery_rate", "number"},
		{"systemic threshold 0", func(in *Input) { in.SystemicThreshold = ptr(0.0) }, CodeInvalidSystemicThreshold, "systemic_threshold", "number"},
		{"first failure in document order", func(in *Input) {
			in.Network.Edges[1].Weight = ptr(-1.0)
			in.Model = "nope"
			in.Simulations = ptr(0)
		}, CodeInvalidNetwork, "network.edges[1].weight", "number"},
	}
	for _, c := range cases {
		in := base()
		c.edit(&in)
		_, err := Analyze(context.Background(), in)
		var ie *engine.InputError
		if !errors.As(err, &ie) {
			t.Errorf("%s: err = %v, want *engine.InputError", c.name, err)
			continue
		}
		if ie.Code != c.code || ie.Field != c.field || ie.Received != c.received || ie.Expected == "" || ie.Message == "" {
			t.Errorf("%s: got %s %s expected=%q received=%q (%s), want %s %s received=%q", c.name, ie.Code, ie.Field, ie.Expected, ie.Received, ie.Message, c.code, c.field, c.received)
		}
		if v := in.Validate(); v == nil || v.Error() != err.Error() {
			t.Errorf("%s: Validate = %v, Analyze = %v", c.name, v, err)
		}
		if _, werr := Work(in); werr == nil {
			t.Errorf("%s: Work accepted the input", c.name)
		}
	}
}

func TestLimits(t *testing.T) {
	t.Parallel()
	nodes := make([]Node, MaxNodes+1)
	for i := range nodes {
		nodes[i].ID = fmt.Sprint(i)
	}
	err := (&Input{Network: Network{Nodes: nodes}}).Validate()
	if ie := (*engine.InputError)(nil); !errors.As(err, &ie) || ie.Field != "network.nodes" || ie.Code != CodeInvalidNetwork {
		t.Errorf("100,001 nodes: %v", err)
	}
	in := Input{Network: Network{Nodes: nodes[:2], Edges: make([]Edge, MaxEdges+1)}}
	err = in.Validate()
	if ie := (*engine.InputError)(nil); !errors.As(err, &ie) || ie.Field != "network.edges" {
		t.Errorf("1,000,001 edges: %v", err)
	}
}

// TestDefaultsAndWork: omitted scenarios become the contract's defaults, and Work counts
// runs × (nodes + edges) plus the sweep.
func TestDefaultsAndWork(t *testing.T) {
	t.Parallel()
	in := Input{Network: Network{
		Nodes: []Node{{ID: "a", Provider: "p2", Value: ptr(3.0)}, {ID: "b", Provider: "p1", Value: ptr(2.0)}, {ID: "c", Provider: "p1", Value: ptr(1.0)}, {ID: "d"}},
		Edges: []Edge{{Source: "a", Target: "b"}, {Source: "b", Target: "c"}, {Source: "c", Target: "c"}},
	}, Simulations: ptr(500)}
	w, err := Work(in)
	if err != nil {
		t.Fatal(err)
	}
	// No failure probabilities: targeted_attack (1 run) and provider_outage (1 run), plus
	// 4 swept nodes, each × (4 nodes + 3 edges).
	if w != (1+1+4)*7 {
		t.Errorf("work %d, want %d", w, 6*7)
	}
	res := simulateT(t, in)
	if len(res.Scenarios) != 2 || res.Scenarios[0].Type != TypeTargetedAttack || res.Scenarios[1].Type != TypeProviderOutage {
		t.Fatalf("default scenarios %+v", res.Scenarios)
	}
	// p1 and p2 tie on value 3; p1 comes first by name. Its outage fails b and c: 3 of 7.
	if res.Dimensions.Concentration.TopProvider != "p1" || !near(res.Scenarios[1].ExpectedFailedFraction, 3.0/7, 1e-15) {
		t.Errorf("concentration %+v, outage %+v", res.Dimensions.Concentration, res.Scenarios[1])
	}
	if !near(res.Dimensions.Concentration.HHI, 0.5, 1e-15) || !near(res.Dimensions.Concentration.TopShare, 0.5, 1e-15) {
		t.Errorf("concentration %+v", res.Dimensions.Concentration)
	}
	in.Network.Nodes[3].FailureProbability = ptr(0.5)
	w, _ = Work(in)
	if w != (500+1+1+4)*7 {
		t.Errorf("work with random_failure %d, want %d", w, 506*7)
	}
	// Under independent_cascade transmission is random, so every scenario makes all 500 runs,
	// and the sweep makes ICBlastRuns runs per node: the work counts them all.
	ic := in
	ic.Model = ModelIndependentCascade
	if w, _ := Work(ic); w != (3*500+4*ICBlastRuns)*7 {
		t.Errorf("independent_cascade work %d, want %d", w, (3*500+4*ICBlastRuns)*7)
	}
	res = simulateT(t, in)
	if res.Scenarios[0].Type != TypeRandomFailure || res.Scenarios[0].Runs != 500 {
		t.Errorf("scenarios %+v", res.Scenarios)
	}
	if fp := nodeByID(res, "d").FailureProbability; !near(fp, 0.5, 0.1) || nodeByID(res, "a").FailureProbability != 0 {
		t.Errorf("failure_probability of d = %v (want ≈ 0.5), of a = %v", fp, nodeByID(res, "a").FailureProbability)
	}
}

// An Input changed after Validate is compiled again: Analyze never runs what Validate saw.
func TestChangesAfterValidateAreSeen(t *testing.T) {
	t.Parallel()
	in := mixedInput(ModelThreshold)
	if err := in.Validate(); err != nil {
		t.Fatal(err)
	}
	in.Seed = ptr(*in.Seed + 1)
	if res, err := Analyze(context.Background(), in); err != nil || res.Seed != *in.Seed {
		t.Fatalf("seed set after Validate: result seed %d, %v; want %d", res.Seed, err, *in.Seed)
	}
	in.Model = "bogus"
	var ie *engine.InputError
	if _, err := Analyze(context.Background(), in); !errors.As(err, &ie) || ie.Field != "model" {
		t.Fatalf("model set after Validate: %v, want an INVALID_MODEL error", err)
	}
}
