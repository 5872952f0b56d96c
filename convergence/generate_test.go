package convergence

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"testing"
)

func TestTestModeScenariosAreTheSpecs(t *testing.T) {
	t.Parallel()
	want := []string{"collusion_found", "competitive", "parallel_cost_shock", "bid_rigging"}
	if got := TestModeScenarios(); !slices.Equal(got, want) {
		t.Errorf("test-mode scenarios %v, want %v", got, want)
	}
	for _, s := range Scenarios() {
		if !IsScenario(s) {
			t.Errorf("%s not accepted", s)
		}
	}
	if IsScenario("collusion") || IsScenario("") {
		t.Error("unknown scenario accepted")
	}
	if in, tr := Generate("nope", 1, GenParams{}); len(in.Observations)+len(in.Bids) != 0 || tr.CollusionDetected {
		t.Error("unknown scenario generated data")
	}
}

func TestGenerateIsDeterministicAndValid(t *testing.T) {
	t.Parallel()
	verdict := map[string]bool{ScenarioCollusionFound: true, ScenarioBidRigging: true, ScenarioCartel: true, ScenarioMarketDivision: true}
	for _, sc := range Scenarios() {
		a, ta := Generate(sc, 7, GenParams{Periods: 150, Tenders: 30})
		b, tb := Generate(sc, 7, GenParams{Periods: 150, Tenders: 30})
		c, _ := Generate(sc, 8, GenParams{Periods: 150, Tenders: 30})
		if !reflect.DeepEqual(a, b) || !reflect.DeepEqual(ta, tb) {
			t.Errorf("%s: same seed, different output", sc)
		}
		if reflect.DeepEqual(a, c) {
			t.Errorf("%s: different seeds, same output", sc)
		}
		if _, err := Analyze(context.Background(), a); err != nil {
			t.Errorf("%s: generated input rejected: %v", sc, err)
		}
		raw, _ := json.Marshal(ta)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		if m["collusion_detected"] != verdict[sc] || m["scenario"] != sc {
			t.Errorf("%s: truth %s", sc, raw)
		}
		if verdict[sc] && len(ta.Members) < 2 {
			t.Errorf("%s: %d members", sc, len(ta.Members))
		}
		// Test-mode items are posted as is: keep them small.
		if body, _ := json.Marshal(a); len(body) > 2<<20 {
			t.Errorf("%s: request of %d bytes", sc, len(body))
		}
	}
}

func TestCalvanoBenchmarks(t *testing.T) {
	t.Parallel()
	// Calvano et al. (2020), baseline: p_N ≈ 1.473, p_M ≈ 1.925, π_N ≈ 0.223, π_M ≈ 0.337.
	pN, pM, piN, piM := symmetricBenchmarks(2, 1, 0)
	for _, c := range []struct{ got, want float64 }{{pN, 1.4729}, {pM, 1.9250}, {piN, 0.2229}, {piM, 0.3375}} {
		if math.Abs(c.got-c.want) > 5e-4 {
			t.Errorf("benchmark %v, want %v", c.got, c.want)
		}
	}
	// The Nash FOC p − c = μ/(1 − q) holds.
	m := newLogitMarket(3, 0)
	c := []float64{1, 1.1, 0.9}
	p := m.nashPrices(c)
	q := make([]float64, 3)
	m.shares(p, q)
	for i := range p {
		if math.Abs(p[i]-c[i]-m.mu/(1-q[i])) > 1e-9 {
			t.Errorf("firm %d: FOC violated", i)
		}
	}
}

func TestQLearningLearnsSupraCompetitivePrices(t *testing.T) {
	t.Parallel()
	// Five sessions with the default parameters: all converge, and the mean profit gain is
	// in the range Calvano et al. report (about 0.7–0.9).
	sum := 0.0
	for seed := int64(1); seed <= 5; seed++ {
		_, tr := Generate(ScenarioCollusionFound, seed, GenParams{Periods: 200, Explore: -1})
		if !tr.QConverged || tr.QIterations < DefaultQParams.Window {
			t.Errorf("seed %d: converged %v after %d periods", seed, tr.QConverged, tr.QIterations)
		}
		sum += *tr.ProfitGain
	}
	if mean := sum / 5; mean < 0.6 || mean > 1 {
		t.Errorf("mean profit gain %v", mean)
	}
	// The prices are learned, not drawn: myopic agents (δ ≈ 0) learn prices much closer to
	// the competitive level (Calvano et al.: the gain rises with δ).
	farsighted := sum / 5
	sum = 0
	for seed := int64(1); seed <= 3; seed++ {
		_, tr := Generate(ScenarioCollusionFound, seed, GenParams{Periods: 200, Explore: -1, Q: QParams{Delta: 1e-9}})
		sum += *tr.ProfitGain
	}
	if myopic := sum / 3; myopic > 0.35 || farsighted-myopic < 0.3 {
		t.Errorf("myopic agents' mean profit gain %v, far-sighted %v", myopic, farsighted)
	}
}
