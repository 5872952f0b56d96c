package cascade

import (
	"math"
	"testing"
)

// TestSummaryDefinitions checks the contract's empirical definitions on known run outcomes:
// quantiles are the ⌈q·N⌉-th smallest, expected shortfall the mean of the largest ⌈(1 − q)·N⌉,
// the histogram has 10 bins over [0, 1] with the last one closed.
func TestSummaryDefinitions(t *testing.T) {
	t.Parallel()
	const N = 100
	frac := make([]float64, N)
	loss := make([]float64, N)
	rounds := make([]int, N)
	for i := 0; i < N; i++ {
		// Runs in scrambled order: loss i+1 at position (37·i) mod 100.
		k := (37 * i) % N
		loss[k] = float64(i + 1)
		frac[k] = float64(i) / 99 // 0 … 1
		rounds[k] = i % 7
	}
	sr := summarise("s", TypeRandomNode, frac, loss, rounds, 0.5)
	if sr.ValueAtRisk.L95 != 95 || sr.ValueAtRisk.L99 != 99 {
		t.Errorf("VaR %+v, want 95 and 99", sr.ValueAtRisk)
	}
	if sr.ExpectedShortfall.L95 != 98 || sr.ExpectedShortfall.L99 != 100 {
		t.Errorf("ES %+v, want 98 (mean of 96…100) and 100", sr.ExpectedShortfall)
	}
	if sr.ExpectedLoss != 50.5 || sr.ExpectedFailedFraction != 0.5 {
		t.Errorf("means %v %v, want 50.5 and 0.5", sr.ExpectedLoss, sr.ExpectedFailedFraction)
	}
	if q := sr.FailedFractionQuantiles; q.P50 != 49.0/99 || q.P90 != 89.0/99 || q.P99 != 98.0/99 {
		t.Errorf("quantiles %+v", q)
	}
	// frac ≥ 0.5 for i ≥ 50 (49.5/99 = 0.5): 50 runs.
	if sr.CascadeProbability != 0.5 {
		t.Errorf("cascade probability %v, want 0.5", sr.CascadeProbability)
	}
	want := []int{10, 10, 10, 10, 10, 10, 10, 10, 10, 10}
	for b, c := range sr.Histogram.Counts {
		if c != want[b] {
			t.Errorf("histogram %v, want %v", sr.Histogram.Counts, want)
			break
		}
	}
	if len(sr.Histogram.Edges) != 11 || sr.Histogram.Edges[10] != 1 || sr.Histogram.Edges[3] != 0.3 {
		t.Errorf("edges %v", sr.Histogram.Edges)
	}
	if sr.MaxRounds != 6 || math.Abs(sr.MeanRounds-float64(295)/100) > 1e-12 {
		t.Errorf("rounds mean %v max %d", sr.MeanRounds, sr.MaxRounds)
	}
	// One run: every quantile and tail mean is that run.
	one := summarise("s", TypeNodeFailure, []float64{1}, []float64{7}, []int{2}, 0.05)
	if one.ValueAtRisk.L99 != 7 || one.ExpectedShortfall.L95 != 7 || one.Histogram.Counts[9] != 1 || one.FailedFractionQuantiles.P50 != 1 {
		t.Errorf("one run: %+v", one)
	}
	// The mean of equal values is exact (compensated summation).
	eq := make([]float64, 1000)
	for i := range eq {
		eq[i] = 1.0 / 3
	}
	if mean(eq) != 1.0/3 {
		t.Errorf("mean of 1,000 × 1/3 = %.17g", mean(eq))
	}
}

// TestScore checks the weighted geometric mean, its floors and renormalisation, the band and
// the verdict on a network worked by hand: a → b (weight 2), b → a (weight 2), c isolated;
// values 1, 1, 2; providers p (a, b) and q (c); recovery hours 10 on a and 30 on b.
func TestScore(t *testing.T) {
	t.Parallel()
	in := Input{Network: Network{
		Nodes: []Node{{ID: "a", Provider: "p", RecoveryHours: ptr(10.0), Capital: ptr(5.0)}, {ID: "b", Provider: "p", RecoveryHours: ptr(30.0), Capital: ptr(5.0)}, {ID: "c", Provider: "q", Value: ptr(2.0)}},
		Edges: []Edge{{Source: "a", Target: "b", Weight: ptr(2.0)}, {Source: "b", Target: "a", Weight: ptr(2.0)}},
	}, Scenarios: []ScenarioSpec{{Type: TypeNodeFailure, Nodes: []string{"b"}}, {Type: TypeNodeFailure, Nodes: []string{"a"}}}}
	res := simulateT(t, in)
	d := res.Dimensions
	// Two components: λ₂ = 0, connectivity 0 (floored at 0.01 in the score).
	if d.Connectivity.Components != 2 || d.Connectivity.AlgebraicConnectivity != 0 || d.Connectivity.Score != 0 {
		t.Errorf("connectivity %+v", d.Connectivity)
	}
	// Each scenario fails one node of value 1 out of 4: 0.25 ≥ 0.05, probability 1; equal
	// losses, so the first is the worst.
	if d.CascadeProbability.WorstScenario != "node_failure" || d.CascadeProbability.Probability != 1 || d.CascadeProbability.Score != 0 || !res.SystemicRiskDetected {
		t.Errorf("cascade %+v", d.CascadeProbability)
	}
	// Provider shares 2/4 and 2/4: HHI 0.5; p before q by name.
	if d.Concentration.HHI != 0.5 || d.Concentration.TopProvider != "p" || d.Concentration.TopShare != 0.5 || d.Concentration.Score != 0.5 {
		t.Errorf("concentration %+v", d.Concentration)
	}
	// The worst scenario fails b only: 30 h, score 1/(1 + 30/24).
	if d.Recovery.ExpectedRecoveryHours != 30 || math.Abs(d.Recovery.Score-1/(1+30.0/24)) > 1e-15 {
		t.Errorf("recovery %+v", d.Recovery)
	}
	want := 100 * math.Exp((0.15*math.Log(0.01)+0.30*math.Log(0.01)+0.20*math.Log(0.5)+0.15*math.Log(1/(1+30.0/24)))/0.80)
	if math.Abs(res.Score-want) > 0.05 || res.RiskBand != "critical" {
		t.Errorf("score %v %s, want %.1f critical", res.Score, res.RiskBand, want)
	}
	// Without providers and hours the weights renormalise over connectivity and cascade.
	for i := range in.Network.Nodes {
		in.Network.Nodes[i].Provider, in.Network.Nodes[i].RecoveryHours = "", nil
	}
	in.Network.Edges = append(in.Network.Edges, Edge{Source: "b", Target: "c", Weight: ptr(1.0)})
	in.Scenarios = []ScenarioSpec{{Type: TypeShock, LossFraction: ptr(0.1)}}
	res = simulateT(t, in)
	if res.Dimensions.Concentration != nil || res.Dimensions.Recovery != nil || res.SystemicRiskDetected {
		t.Errorf("dimensions %+v, detected %v", res.Dimensions, res.SystemicRiskDetected)
	}
	// Symmetrised weights: a–b 2, b–c 0.5. L = [[2,−2,0],[−2,2.5,−0.5],[0,−0.5,0.5]];
	// λ₂ = (5 − √13)/2; mean weighted degree = 5/3.
	l2 := (5 - math.Sqrt(13)) / 2
	conn := l2 / (5.0 / 3)
	if math.Abs(res.Dimensions.Connectivity.AlgebraicConnectivity-l2) > 1e-12 || math.Abs(res.Dimensions.Connectivity.Score-conn) > 1e-12 {
		t.Errorf("connectivity %+v, want λ₂ %v score %v", res.Dimensions.Connectivity, l2, conn)
	}
	want = math.Round(1000*math.Exp((0.15*math.Log(conn)+0.30*math.Log(1))/0.45)) / 10
	if res.Score != want || res.RiskBand != "moderate" {
		t.Errorf("score %v %s, want %v moderate", res.Score, res.RiskBand, want)
	}
}
