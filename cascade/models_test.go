package cascade

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func simulateT(t *testing.T, in Input) Result {
	t.Helper()
	res, err := Analyze(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func nodeByID(res Result, id string) NodeResult {
	for _, n := range res.Nodes {
		if n.ID == id {
			return n
		}
	}
	panic("no node " + id)
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// The three-node example of the DebtRank test: A (capital 10), B (5), C (20); B is exposed
// to A for 4, C to B for 10 and to A for 5, A to C for 3.
func debtRankExample(model string) Input {
	return Input{
		Network: Network{
			Nodes: []Node{{ID: "A", Capital: ptr(10.0)}, {ID: "B", Capital: ptr(5.0)}, {ID: "C", Capital: ptr(20.0)}},
			Edges: []Edge{{Source: "A", Target: "B", Weight: ptr(4.0)}, {Source: "B", Target: "C", Weight: ptr(10.0)},
				{Source: "A", Target: "C", Weight: ptr(5.0)}, {Source: "C", Target: "A", Weight: ptr(3.0)}},
		},
		Model:     model,
		Scenarios: []ScenarioSpec{{Type: TypeNodeFailure, Nodes: []string{"A"}}},
	}
}

// TestDebtRankHandExample checks linear DebtRank against the update rule worked by hand:
// A fails (h_A = 1). Round 1: h_B = 4/5 = 0.8, h_C = 5/20 = 0.25. Round 2: h_C += 10/20·0.8
// = 0.65 (A is already at 1, so C's increment does not propagate back). Round 3: nothing
// rises. Loss = 1 + 0.8 + 0.65 = 2.45 (values 1); only A has failed; A's DebtRank is
// (2.45 − 1)/3.
func TestDebtRankHandExample(t *testing.T) {
	t.Parallel()
	res := simulateT(t, debtRankExample(ModelDebtRank))
	sr := res.Scenarios[0]
	if !near(sr.ExpectedLoss, 2.45, 1e-12) || sr.MaxRounds != 2 || !near(sr.ExpectedFailedFraction, 1.0/3, 1e-15) {
		t.Errorf("loss %v rounds %d failed %v, want 2.45, 2, 1/3", sr.ExpectedLoss, sr.MaxRounds, sr.ExpectedFailedFraction)
	}
	a := nodeByID(res, "A")
	if a.DebtRank == nil || !near(*a.DebtRank, 1.45/3, 1e-12) {
		t.Errorf("DebtRank of A = %v, want %v", a.DebtRank, 1.45/3)
	}
	if a.Payment != nil || a.Shortfall != nil || sr.TotalShortfall != nil {
		t.Error("payment, shortfall and total_shortfall must be null outside Eisenberg–Noe")
	}
	// With recovery rate 0.5 every Λ halves: h_B = 0.4, h_C = 0.125 + 0.25·0.4 = 0.225.
	in := debtRankExample(ModelDebtRank)
	in.RecoveryRate = ptr(0.5)
	if got := simulateT(t, in).Scenarios[0].ExpectedLoss; !near(got, 1.625, 1e-12) {
		t.Errorf("loss with recovery 0.5 = %v, want 1.625", got)
	}
	// Under the threshold model the same shock fails nobody else: B loses 4 < 5.
	if got := simulateT(t, debtRankExample(ModelThreshold)).Scenarios[0]; got.ExpectedLoss != 1 || got.MaxRounds != 0 {
		t.Errorf("threshold: loss %v rounds %d, want 1 and 0", got.ExpectedLoss, got.MaxRounds)
	}
}

// TestDebtRankShockMatchesSeries: without saturation, summing the increments of the update
// rule gives h = Σₜ Λᵗ h₀ = (I − Λ)⁻¹ h₀; a shock on a random network with large capital
// must reproduce it (to the 1e-12 stopping rule).
func TestDebtRankShockMatchesSeries(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 7))
	checked := 0
	for trial := 0; trial < 30; trial++ {
		n := 3 + r.IntN(15)
		in := Input{Model: ModelDebtRank, RecoveryRate: ptr(0.1)}
		capital := make([]float64, n)
		for i := 0; i < n; i++ {
			capital[i] = 20 + 20*r.Float64()
			in.Network.Nodes = append(in.Network.Nodes, Node{ID: fmt.Sprintf("n%d", i), Capital: ptr(capital[i]), Value: ptr(0.5 + r.Float64())})
		}
		lam := mat.NewDense(n, n, nil)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if i != j && r.Float64() < 0.3 {
					w := 5 * r.Float64()
					in.Network.Edges = append(in.Network.Edges, Edge{Source: fmt.Sprintf("n%d", j), Target: fmt.Sprintf("n%d", i), Weight: ptr(w)})
					lam.Set(i, j, lam.At(i, j)+0.9*w/capital[i])
				}
			}
		}
		lf := 0.1 + 0.4*r.Float64()
		in.Scenarios = []ScenarioSpec{{Type: TypeShock, LossFraction: ptr(lf)}}
		// (I − Λ) h = h₀ with h₀ = lf·1.
		a := mat.NewDense(n, n, nil)
		a.Sub(eye(n), lam)
		h0 := mat.NewVecDense(n, nil)
		for i := 0; i < n; i++ {
			h0.SetVec(i, lf)
		}
		var h mat.VecDense
		if err := h.SolveVec(a, h0); err != nil {
			t.Fatal(err)
		}
		saturated := false
		want, total := 0.0, 0.0
		for i := 0; i < n; i++ {
			v := *in.Network.Nodes[i].Value
			if h.AtVec(i) >= 1 || h.AtVec(i) < 0 {
				saturated = true
			}
			want += v * h.AtVec(i)
			total += v
		}
		if saturated {
			continue // the min(1, ·) cap binds: the series does not apply
		}
		got := simulateT(t, in).Scenarios[0].ExpectedLoss
		if !near(got, want, 1e-9*total) {
			t.Errorf("trial %d: loss %.15g, want %.15g", trial, got, want)
		}
		checked++
	}
	if checked < 20 {
		t.Errorf("only %d of 30 networks stayed below saturation", checked)
	}
}

func eye(n int) *mat.Dense {
	d := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		d.Set(i, i, 1)
	}
	return d
}

// TestThresholdRule: failure needs losses strictly above capital; recovery_rate scales the
// losses; parallel edges add up; self-loops are ignored.
func TestThresholdRule(t *testing.T) {
	t.Parallel()
	mk := func(edges []Edge, rr float64) Input {
		return Input{
			Network: Network{
				Nodes: []Node{{ID: "a"}, {ID: "b", Capital: ptr(1.0)}, {ID: "c", Capital: ptr(2.0)}, {ID: "d", Capital: ptr(0.0)}},
				Edges: edges,
			},
			RecoveryRate: ptr(rr),
			Scenarios:    []ScenarioSpec{{Type: TypeNodeFailure, Nodes: []string{"a"}}},
		}
	}
	cases := []struct {
		name   string
		edges  []Edge
		rr     float64
		failed float64 // failed nodes out of 4
		rounds int
	}{
		{"b fails, c's loss equals its capital", []Edge{{Source: "a", Target: "b", Weight: ptr(1.5)}, {Source: "b", Target: "c", Weight: ptr(2.0)}}, 0, 2, 1},
		{"parallel edges add", []Edge{{Source: "a", Target: "b", Weight: ptr(1.5)}, {Source: "b", Target: "c", Weight: ptr(1.0)}, {Source: "b", Target: "c", Weight: ptr(1.5)}}, 0, 3, 2},
		{"recovery halves the loss", []Edge{{Source: "a", Target: "b", Weight: ptr(1.5)}}, 0.5, 1, 0},
		{"self-loops ignored", []Edge{{Source: "a", Target: "a", Weight: ptr(9.0)}, {Source: "b", Target: "b", Weight: ptr(9.0)}}, 0, 1, 0},
		{"zero capital fails on any loss", []Edge{{Source: "a", Target: "d", Weight: ptr(1e-9)}}, 0, 2, 1},
		{"zero weight transmits nothing", []Edge{{Source: "a", Target: "d", Weight: ptr(0.0)}}, 0, 1, 0},
	}
	for _, c := range cases {
		sr := simulateT(t, mk(c.edges, c.rr)).Scenarios[0]
		if sr.ExpectedFailedFraction != c.failed/4 || sr.MaxRounds != c.rounds {
			t.Errorf("%s: failed fraction %v rounds %d, want %v and %d", c.name, sr.ExpectedFailedFraction, sr.MaxRounds, c.failed/4, c.rounds)
		}
	}
}

// TestShockSemantics: a shock below the whole capital fails nobody under threshold (losses
// must exceed capital), a full shock fails at once; under DebtRank h starts at the fraction;
// under Eisenberg–Noe it removes external assets.
func TestShockSemantics(t *testing.T) {
	t.Parallel()
	in := debtRankExample(ModelThreshold)
	in.Scenarios = []ScenarioSpec{
		{Type: TypeShock, LossFraction: ptr(0.9)},
		{Type: TypeShock, Nodes: []string{"A"}, LossFraction: ptr(1.0)},
	}
	res := simulateT(t, in)
	if f := res.Scenarios[0].ExpectedFailedFraction; f != 0 {
		t.Errorf("threshold shock 0.9: failed %v, want 0", f)
	}
	if f := res.Scenarios[1].ExpectedFailedFraction; !near(f, 1.0/3, 1e-15) {
		t.Errorf("threshold full shock on A: failed %v, want 1/3", f)
	}
	in.Model = ModelDebtRank
	in.Scenarios = []ScenarioSpec{{Type: TypeShock, Nodes: []string{"B"}, LossFraction: ptr(0.5)}}
	// h_B = 0.5; round 1: h_C = 0.5·10/20 = 0.25; round 2: h_A = 0.25·3/10 = 0.075;
	// round 3: h_B += 0.075·4/5 = 0.06, h_C += 0.075·5/20; … a geometric tail.
	sr := simulateT(t, in).Scenarios[0]
	if sr.ExpectedLoss < 0.5+0.25+0.075+0.06 || sr.ExpectedLoss > 1 || sr.ExpectedFailedFraction != 0 {
		t.Errorf("debtrank shock: loss %v failed %v", sr.ExpectedLoss, sr.ExpectedFailedFraction)
	}
	// Eisenberg–Noe: X owes Y 10 and holds external assets 10; losing 30 % of them leaves a
	// shortfall of 3.
	en := Input{Model: ModelEisenbergNoe,
		Network:   Network{Nodes: []Node{{ID: "X", ExternalAssets: ptr(10.0)}, {ID: "Y"}}, Edges: []Edge{{Source: "X", Target: "Y", Weight: ptr(10.0)}}},
		Scenarios: []ScenarioSpec{{Type: TypeShock, LossFraction: ptr(0.3)}}}
	res = simulateT(t, en)
	x := nodeByID(res, "X")
	if *x.Payment != 7 || *x.Shortfall != 3 || *res.Scenarios[0].TotalShortfall != 3 || res.Scenarios[0].ExpectedFailedFraction != 0.5 {
		t.Errorf("EN shock: payment %v shortfall %v total %v failed %v, want 7, 3, 3, 0.5", *x.Payment, *x.Shortfall, *res.Scenarios[0].TotalShortfall, res.Scenarios[0].ExpectedFailedFraction)
	}
}

// enReference is an independent Eisenberg–Noe solver: Picard iteration of
// p ← min(p̄, max(0, e + Πᵀp)) from p = p̄ on a dense matrix, which decreases monotonically
// to the greatest clearing vector.
func enReference(e []float64, owe [][]float64, failed []bool) []float64 {
	n := len(e)
	pbar := make([]float64, n)
	maxP := 0.0
	for i := range owe {
		for _, w := range owe[i] {
			pbar[i] += w
		}
		maxP = math.Max(maxP, pbar[i])
	}
	p := make([]float64, n)
	copy(p, pbar)
	for i := range p {
		if failed[i] {
			p[i] = 0
		}
	}
	q := make([]float64, n)
	for it := 0; it < 1_000_000; it++ {
		diff := 0.0
		for i := 0; i < n; i++ {
			if failed[i] {
				q[i] = 0
				continue
			}
			a := e[i]
			for j := 0; j < n; j++ {
				if owe[j][i] > 0 {
					a += owe[j][i] / pbar[j] * p[j]
				}
			}
			q[i] = math.Min(pbar[i], math.Max(0, a))
			diff = math.Max(diff, math.Abs(q[i]-p[i]))
		}
		p, q = q, p
		if diff <= 1e-15*maxP {
			break
		}
	}
	return p
}

// TestEisenbergNoeMatchesIndependentSolver compares the clearing vector on random networks
// (parallel edges, self-loops, nodes without external assets, failed nodes, shocks) with
// enReference, within 1e-9 of the largest obligation.
func TestEisenbergNoeMatchesIndependentSolver(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(2001, 1))
	checked, withDefaults := 0, 0
	worst := 0.0 // largest |p − reference| / max p̄
	for trial := 0; trial < 200; trial++ {
		n := 3 + r.IntN(28)
		ids := make([]string, n)
		e := make([]float64, n)
		owe := make([][]float64, n)
		in := Input{Model: ModelEisenbergNoe}
		for i := range ids {
			ids[i] = fmt.Sprintf("b%02d", i)
			owe[i] = make([]float64, n)
			if r.Float64() < 0.8 {
				e[i] = 3 * r.Float64()
			}
			in.Network.Nodes = append(in.Network.Nodes, Node{ID: ids[i], ExternalAssets: ptr(e[i])})
		}
		for k := 0; k < 3*n; k++ {
			a, b := r.IntN(n), r.IntN(n)
			w := 10 * r.Float64()
			in.Network.Edges = append(in.Network.Edges, Edge{Source: ids[a], Target: ids[b], Weight: ptr(w)})
			if a != b {
				owe[a][b] += w
			}
		}
		failed := make([]bool, n)
		var fail []string
		for k := 0; k < 1+r.IntN(2); k++ {
			i := r.IntN(n)
			failed[i] = true
			fail = append(fail, ids[i])
		}
		in.Scenarios = []ScenarioSpec{{Type: TypeNodeFailure, Nodes: fail}}
		shock := trial%4 == 3
		if shock { // a shock to external assets instead
			lf := 0.2 + 0.8*r.Float64()
			in.Scenarios = []ScenarioSpec{{Type: TypeShock, LossFraction: ptr(lf)}}
			for i := range failed {
				failed[i] = false
				e[i] *= 1 - lf
			}
		}
		want := enReference(e, owe, failed)
		res := simulateT(t, in)
		maxP, totalShort, defaults := 0.0, 0.0, 0
		for i, row := range owe {
			pbar := 0.0
			for _, w := range row {
				pbar += w
			}
			maxP = math.Max(maxP, pbar)
			totalShort += pbar - want[i]
			if failed[i] || pbar-want[i] > 1e-9*pbar {
				defaults++
			}
		}
		for i, id := range ids {
			nd := nodeByID(res, id)
			worst = math.Max(worst, math.Abs(*nd.Payment-want[i])/maxP)
			if math.Abs(*nd.Payment-want[i]) > 1e-9*maxP {
				t.Errorf("trial %d node %s: payment %.15g, reference %.15g", trial, id, *nd.Payment, want[i])
			}
		}
		sr := res.Scenarios[0]
		if math.Abs(*sr.TotalShortfall-totalShort) > 1e-9*maxP*float64(n) {
			t.Errorf("trial %d: total shortfall %.15g, reference %.15g", trial, *sr.TotalShortfall, totalShort)
		}
		if got := int(math.Round(sr.ExpectedFailedFraction * float64(n))); got != defaults {
			t.Errorf("trial %d: %d defaulted, reference %d", trial, got, defaults)
		}
		checked++
		if defaults > len(fail) {
			withDefaults++
		}
	}
	if withDefaults < 50 {
		t.Errorf("only %d of %d networks had contagious defaults: the test is too easy", withDefaults, checked)
	}
	t.Logf("%d networks (%d with contagious defaults): largest payment difference %.2g × max p̄", checked, withDefaults, worst)
}

// TestIndependentCascade: probability 1 reaches everything downstream, 0 nothing; a hub
// with 10 leaves at p = 0.3 fails (1 + 3)/11 of the nodes on average; parallel edges
// combine as 1 − Π(1 − p).
func TestIndependentCascade(t *testing.T) {
	t.Parallel()
	star := func(p float64, parallel bool) Input {
		in := Input{Model: ModelIndependentCascade, Simulations: ptr(20000), Seed: ptr(int64(5)),
			Scenarios: []ScenarioSpec{{Type: TypeNodeFailure, Nodes: []string{"hub"}}}}
		in.Network.Nodes = append(in.Network.Nodes, Node{ID: "hub"})
		for i := 0; i < 10; i++ {
			id := fmt.Sprintf("leaf%d", i)
			in.Network.Nodes = append(in.Network.Nodes, Node{ID: id})
			in.Network.Edges = append(in.Network.Edges, Edge{Source: "hub", Target: id, Probability: ptr(p)})
			if parallel {
				in.Network.Edges = append(in.Network.Edges, Edge{Source: "hub", Target: id, Probability: ptr(p)})
			}
		}
		return in
	}
	sd := math.Sqrt(10*0.3*0.7) / 11 / math.Sqrt(20000)
	if got := simulateT(t, star(0.3, false)).Scenarios[0]; got.Runs != 20000 || !near(got.ExpectedFailedFraction, 4.0/11, 4*sd) {
		t.Errorf("p=0.3: runs %d, failed %v, want 20000 and %v ± %v", got.Runs, got.ExpectedFailedFraction, 4.0/11, 4*sd)
	}
	// Two parallel edges at 0.5 act as one at 0.75.
	sd = math.Sqrt(10*0.75*0.25) / 11 / math.Sqrt(20000)
	if got := simulateT(t, star(0.5, true)).Scenarios[0].ExpectedFailedFraction; !near(got, 8.5/11, 4*sd) {
		t.Errorf("parallel 0.5+0.5: failed %v, want %v ± %v", got, 8.5/11, 4*sd)
	}
	if got := simulateT(t, star(1, false)).Scenarios[0]; got.ExpectedFailedFraction != 1 || got.MaxRounds != 1 {
		t.Errorf("p=1: failed %v rounds %d, want 1 and 1", got.ExpectedFailedFraction, got.MaxRounds)
	}
	if got := simulateT(t, star(0, false)).Scenarios[0].ExpectedFailedFraction; !near(got, 1.0/11, 1e-15) {
		t.Errorf("p=0: failed %v, want 1/11", got)
	}
	// Blast radius: 100 seeded runs per node; a leaf reaches nothing.
	res := simulateT(t, star(0.3, false))
	if b := *nodeByID(res, "leaf3").BlastRadius; !near(b, 1.0/11, 1e-15) {
		t.Errorf("leaf blast radius %v, want 1/11", b)
	}
	if b := *res.Nodes[0].BlastRadius; res.Nodes[0].ID != "hub" || !near(b, 4.0/11, 0.05) {
		t.Errorf("top node %s blast radius %v, want hub ≈ 4/11", res.Nodes[0].ID, b)
	}
}

// TestThresholdMatchesNaive runs the engine and the straightforward implementation of the
// benchmark (maps, one allocation per run) on random networks with dyadic weights (so every
// sum is exact): the per-run outcomes, hence every statistic, must be identical.
func TestThresholdMatchesNaive(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(99, 1))
	for trial := 0; trial < 20; trial++ {
		n := 20 + r.IntN(200)
		in := Input{Simulations: ptr(2000), Seed: ptr(int64(trial)), Scenarios: []ScenarioSpec{{Type: TypeRandomNode}}}
		for i := 0; i < n; i++ {
			in.Network.Nodes = append(in.Network.Nodes, Node{ID: fmt.Sprintf("n%d", i),
				Capital: ptr(float64(r.IntN(64))/64 + 1.0/128), Value: ptr(float64(1+r.IntN(4)) / 2)})
		}
		for k := 0; k < 3*n; k++ {
			in.Network.Edges = append(in.Network.Edges, Edge{Source: fmt.Sprintf("n%d", r.IntN(n)), Target: fmt.Sprintf("n%d", r.IntN(n)),
				Weight: ptr(float64(1+r.IntN(32)) / 64)})
		}
		got := scenarioOnly(t, in, 3)
		fr, loss := naiveThreshold(newNaiveBanks(in), 2000, int64(trial))
		want := summarise(got.Name, got.Type, fr, loss, make([]int, len(fr)), DefaultSystemicThreshold)
		got.MeanRounds, got.MaxRounds = 0, 0
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("trial %d: engine %+v\nnaive %+v", trial, got, want)
		}
	}
}

// TestEisenbergNoeRounds: in a chain X0 → X1 → … → X5 where each owes the next 10 and holds
// external assets 1, X0's failure leaves X1 with assets 1 (it defaults in the first
// fictitious-default iteration), X2 with 1 + 1 (second), …: X1…X4 default one per round,
// X5 owes nothing and cannot default.
func TestEisenbergNoeRounds(t *testing.T) {
	t.Parallel()
	in := Input{Model: ModelEisenbergNoe, Scenarios: []ScenarioSpec{{Type: TypeNodeFailure, Nodes: []string{"X0"}}}}
	for i := 0; i < 6; i++ {
		in.Network.Nodes = append(in.Network.Nodes, Node{ID: fmt.Sprintf("X%d", i), ExternalAssets: ptr(1.0)})
		if i < 5 {
			in.Network.Edges = append(in.Network.Edges, Edge{Source: fmt.Sprintf("X%d", i), Target: fmt.Sprintf("X%d", i+1), Weight: ptr(10.0)})
		}
	}
	res := simulateT(t, in)
	sr := res.Scenarios[0]
	if sr.MaxRounds != 4 || !near(sr.ExpectedFailedFraction, 5.0/6, 1e-15) {
		t.Errorf("rounds %d failed %v, want 4 and 5/6", sr.MaxRounds, sr.ExpectedFailedFraction)
	}
	// Payments 0, 1, 2, 3, 4; shortfalls 10, 9, 8, 7, 6; X5 owes nothing.
	for i := 0; i < 5; i++ {
		nd := nodeByID(res, fmt.Sprintf("X%d", i))
		if *nd.Payment != float64(i) || *nd.Shortfall != float64(10-i) {
			t.Errorf("X%d: payment %v shortfall %v", i, *nd.Payment, *nd.Shortfall)
		}
	}
	if *sr.TotalShortfall != 40 {
		t.Errorf("total shortfall %v, want 40", *sr.TotalShortfall)
	}
}
