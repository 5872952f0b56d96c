package cascade

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Scenario names accepted by Generate: the cascade scenarios of POST /v1/test/generate.
const (
	ScenarioFragileNetwork        = "fragile_network"
	ScenarioRobustNetwork         = "robust_network"
	ScenarioProviderConcentration = "provider_concentration"
)

// TestModeScenarios lists the cascade scenarios of POST /v1/test/generate.
func TestModeScenarios() []string {
	return []string{ScenarioFragileNetwork, ScenarioRobustNetwork, ScenarioProviderConcentration}
}

// Scenarios lists every scenario Generate accepts (the test-mode ones; there are no
// evaluation-only scenarios: the held-out evaluation varies GenParams instead).
func Scenarios() []string { return TestModeScenarios() }

// IsScenario reports whether Generate accepts the scenario.
func IsScenario(s string) bool { return slices.Contains(Scenarios(), s) }

// GenParams tunes Generate. Zero fields take the defaults given; a field drawn at random is
// drawn from the seed's stream, so the output stays a function of the seed.
type GenParams struct {
	// Nodes; 0 draws uniformly from [100, 400].
	Nodes int
	// MeanDegree z of the directed Erdős–Rényi exposure graph; 0 draws from [2.5, 4]
	// (fragile_network, inside the Gai–Kapadia contagion window) or [2, 8] (the others).
	MeanDegree float64
	// Simulations of the generated request; 0 means 1,000.
	Simulations int
	// TopShare is the value share of the dominant provider (provider_concentration);
	// 0 draws from [0.4, 0.7].
	TopShare float64
}

// Truth is what the generator planted and the verdict Analyze should reach on the
// generated request (in terms of the response fields).
type Truth struct {
	Scenario string `json:"scenario"`
	// SystemicRiskDetected is the expected systemic_risk_detected.
	SystemicRiskDetected bool `json:"systemic_risk_detected"`
	// Driver of the verdict: "contagion" (a single failure spreads), "provider_outage"
	// (one provider's outage fails a large share of the value) or "none".
	Driver string `json:"driver"`
	Nodes  int    `json:"nodes"`
	Edges  int    `json:"edges"`
	// MeanDegree is the realised mean degree (edges / nodes).
	MeanDegree float64 `json:"mean_degree"`
	// VulnerableShare is the share of nodes that fail when a single one of their debtors
	// defaults (Gai & Kapadia's vulnerable banks); 0 in a well-capitalised network.
	VulnerableShare float64 `json:"vulnerable_share"`
	// TopProvider, TopShare and HHI are the expected dimensions.concentration fields
	// (nil without providers).
	TopProvider *string  `json:"top_provider"`
	TopShare    *float64 `json:"top_share"`
	HHI         *float64 `json:"hhi"`
}

// Generate produces one network and request for the scenario, deterministically from seed
// (math/rand/v2 PCG):
//   - fragile_network: Gai & Kapadia's (2010) banking network inside the contagion window:
//     interbank assets 0.2 split evenly over each bank's debtors, capital 0.041, so banks with
//     at most 4 debtors fail after one debtor's default; scenarios one random failure and a
//     targeted attack; systemic.
//   - robust_network: the same graph with every node's capital above its total exposure, so
//     nothing can fail by contagion; scenarios rare random failures, one random failure and
//     a targeted attack; not systemic.
//   - provider_concentration: the robust network whose nodes mostly run on one model provider
//     (TopShare of the value); scenarios that provider's outage and one random failure;
//     systemic through the outage.
//
// An unknown scenario yields an Input without nodes (Analyze rejects it); validate with
// IsScenario first.
func Generate(scenario string, seed int64, gp GenParams) (Input, Truth) {
	tr := Truth{Scenario: scenario, Driver: "none"}
	if !IsScenario(scenario) {
		return Input{}, tr
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0xca5cade))
	n := gp.Nodes
	if n <= 0 {
		n = 100 + r.IntN(301)
	}
	z := gp.MeanDegree
	if z <= 0 {
		if scenario == ScenarioFragileNetwork {
			z = 2.5 + 1.5*r.Float64()
		} else {
			z = 2 + 6*r.Float64()
		}
	}
	sims := gp.Simulations
	if sims <= 0 {
		sims = 1000
	}
	prefix := "bank"
	if scenario == ScenarioProviderConcentration {
		prefix = "agent"
	}
	net := gaiKapadia(r, n, z, 0.041, prefix)
	for i := range net.Edges { // 6 decimals keep the request compact
		net.Edges[i].Weight = ptr(math.Round(*net.Edges[i].Weight*1e6) / 1e6)
	}
	in := Input{Network: net, Model: ModelThreshold, Simulations: &sims, Seed: &seed}
	tr.Nodes, tr.Edges = n, len(net.Edges)
	tr.MeanDegree = float64(len(net.Edges)) / float64(n)
	inDeg := make([]int, n)
	idx := make(map[string]int, n)
	for i, nd := range net.Nodes {
		idx[nd.ID] = i
	}
	for _, e := range net.Edges {
		inDeg[idx[e.Target]]++
	}
	nodes := in.Network.Nodes
	for i := range nodes {
		nodes[i].Value = ptr(round4(0.5 + r.Float64()))
		nodes[i].RecoveryHours = ptr(float64(1 + r.IntN(48)))
	}
	switch scenario {
	case ScenarioFragileNetwork:
		vul := 0
		for _, k := range inDeg {
			if k >= 1 && k <= 4 {
				vul++
			}
		}
		tr.VulnerableShare = float64(vul) / float64(n)
		tr.SystemicRiskDetected, tr.Driver = true, "contagion"
		// Twelve providers of similar size: no concentration.
		for i := range nodes {
			nodes[i].Provider = fmt.Sprintf("provider-%02d", 1+r.IntN(12))
		}
		in.Scenarios = []ScenarioSpec{
			{Name: "one random failure", Type: TypeRandomNode, Count: ptr(1)},
			{Name: "attack on the largest debtor", Type: TypeTargetedAttack, Count: ptr(1), By: ByExposure},
		}
	case ScenarioRobustNetwork, ScenarioProviderConcentration:
		// Capital above the total exposure: losses can never exceed it.
		for i := range nodes {
			nodes[i].Capital = ptr(round4(0.2*1.25 + 0.05*r.Float64()))
		}
		if scenario == ScenarioRobustNetwork {
			for i := range nodes {
				nodes[i].FailureProbability = ptr(round4(0.001 + 0.004*r.Float64()))
				nodes[i].Provider = fmt.Sprintf("provider-%02d", 1+r.IntN(20))
			}
			in.Scenarios = []ScenarioSpec{
				{Name: "rare independent failures", Type: TypeRandomFailure},
				{Name: "one random failure", Type: TypeRandomNode, Count: ptr(1)},
				{Name: "attack on the largest debtor", Type: TypeTargetedAttack, Count: ptr(1), By: ByExposure},
			}
			break
		}
		share := gp.TopShare
		if share <= 0 {
			share = 0.4 + 0.3*r.Float64()
		}
		others := 3 + r.IntN(4)
		for i := range nodes {
			if r.Float64() < share {
				nodes[i].Provider = "model-vendor-1"
			} else {
				nodes[i].Provider = fmt.Sprintf("model-vendor-%d", 2+r.IntN(others))
			}
		}
		tr.SystemicRiskDetected, tr.Driver = true, "provider_outage"
		in.Scenarios = []ScenarioSpec{
			{Name: "outage of model-vendor-1", Type: TypeProviderOutage, Provider: "model-vendor-1"},
			{Name: "one random failure", Type: TypeRandomNode, Count: ptr(1)},
		}
	}
	// Realised concentration, computed as the response does.
	if s, err := compile(&in); err == nil && len(s.providers) > 0 {
		top, share, hhi := s.providerShares()
		name := s.providers[top]
		tr.TopProvider, tr.TopShare, tr.HHI = &name, &share, &hhi
	}
	return in, tr
}

// gaiKapadia builds Gai & Kapadia's (2010) network: n banks, a directed Erdős–Rényi graph in
// which each ordered pair is linked with probability z/(n−1); an edge debtor → creditor
// carries 0.2/k of the creditor's assets, k being the creditor's number of debtors (its
// interbank assets, 0.2 of its balance sheet, split evenly); external assets 0.8; the given
// capital. Pairs are visited with geometric skips, so the cost is O(n + edges).
func gaiKapadia(r *rand.Rand, n int, z, capital float64, prefix string) Network {
	nodes := make([]Node, n)
	for i := range nodes {
		nodes[i] = Node{ID: fmt.Sprintf("%s_%04d", prefix, i), Capital: ptr(capital), ExternalAssets: ptr(0.8)}
	}
	p := math.Min(1, z/float64(n-1))
	type pair struct{ s, t int }
	var pairs []pair
	inDeg := make([]int, n)
	total := int64(n) * int64(n-1)
	if p > 0 {
		lq := math.Log1p(-p)
		for k := int64(-1); ; {
			gap := int64(0)
			if p < 1 {
				g := math.Floor(math.Log(1-r.Float64()) / lq)
				if g >= float64(total-1-k) {
					break
				}
				gap = int64(g)
			}
			k += gap + 1
			if k >= total {
				break
			}
			s := int(k / int64(n-1))
			t := int(k % int64(n-1))
			if t >= s {
				t++ // skip the diagonal
			}
			pairs = append(pairs, pair{s, t})
			inDeg[t]++
		}
	}
	edges := make([]Edge, len(pairs))
	for k, pr := range pairs {
		edges[k] = Edge{Source: nodes[pr.s].ID, Target: nodes[pr.t].ID, Weight: ptr(0.2 / float64(inDeg[pr.t]))}
	}
	return Network{Nodes: nodes, Edges: edges}
}

func ptr[T any](v T) *T { return &v }

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
