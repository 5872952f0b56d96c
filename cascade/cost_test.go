package cascade

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"riskapi/engine"
	"riskapi/internal/enginetest"
)

// costInput is a Gai & Kapadia network of n banks (mean degree z, the given capital,
// external assets ext) whose nodes run on 10 providers and fail alone with probability
// 0.002, with one scenario of type typ and sims simulations.
func costInput(model string, n int, z, capital, ext float64, typ string, sims int) Input {
	r := rand.New(rand.NewPCG(uint64(n), uint64(z*1000)))
	net := gaiKapadia(r, n, z, capital, "bank")
	for i := range net.Nodes {
		net.Nodes[i].ExternalAssets = ptr(ext)
		net.Nodes[i].Provider = fmt.Sprintf("p-%d", i%10)
		net.Nodes[i].FailureProbability = ptr(0.002)
	}
	sc := ScenarioSpec{Type: typ}
	switch typ {
	case TypeNodeFailure:
		sc.Nodes = []string{net.Nodes[0].ID, net.Nodes[n/2].ID, net.Nodes[n-1].ID}
	case TypeRandomNode, TypeTargetedAttack:
		sc.Count = ptr(2)
	case TypeProviderOutage:
		sc.Provider = "p-3"
	case TypeShock:
		sc.LossFraction = ptr(0.5)
	}
	return Input{Network: net, Model: model, Scenarios: []ScenarioSpec{sc}, Simulations: ptr(sims), Seed: ptr(int64(7))}
}

// costCase is a request whose estimate is checked against Analyze's measured CPU and heap;
// its input is made when it is checked, so that the heap holds one case at a time.
type costCase struct {
	name string
	in   func() Input
}

// costNetworks are the networks of the calibrated cases, per model: a small one (all nodes
// swept, λ₂ dense) and a large one (above SweepAllMax: the top SweepTop nodes swept, λ₂ by
// LOBPCG), with the simulations that make each case take 30–150 ms of CPU. Capital 0.02
// (benchInput's: most failures cascade through the network) on the small networks, 0.041
// (Gai & Kapadia's: cascades are rare at these degrees) on the large ones; Eisenberg–Noe
// with external assets 0.17 (the models benchmark's).
var costNetworks = []struct {
	model      string
	size       string
	n          int
	z, capital float64
	ext        float64
	sims       int
}{
	{ModelThreshold, "small", 400, 8, 0.02, 0.8, 2000},
	{ModelThreshold, "large", 8000, 6, 0.041, 0.8, 500},
	{ModelIndependentCascade, "small", 200, 3, 0.02, 0.8, 1000},
	{ModelIndependentCascade, "large", 2500, 1, 0.02, 0.8, 1000},
	{ModelDebtRank, "small", 400, 8, 0.02, 0.8, 300},
	{ModelDebtRank, "large", 2200, 3, 0.02, 0.8, 100},
	{ModelEisenbergNoe, "small", 400, 8, 0.02, 0.17, 2000},
	{ModelEisenbergNoe, "large", 8000, 6, 0.041, 0.17, 300},
}

// calibratedCostCases are every model × every scenario type × a small and a large network.
func calibratedCostCases() []costCase {
	var cases []costCase
	for _, c := range costNetworks {
		for _, typ := range scenarioTypes {
			if typ == TypeShock && c.model == ModelIndependentCascade {
				continue // not available under independent_cascade
			}
			cases = append(cases, costCase{
				name: fmt.Sprintf("%s/%s/%s", c.model, c.size, typ),
				in:   func() Input { return costInput(c.model, c.n, c.z, c.capital, c.ext, typ, c.sims) },
			})
		}
	}
	return cases
}

// checkCost checks the estimate of each case against the CPU and the heap of Analyze on a
// freshly validated copy (so the network build is measured, as in a background job).
func checkCost(t *testing.T, cases []costCase) {
	t.Helper()
	for _, c := range cases {
		in := c.in()
		est, err := Estimate(in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		t.Logf("%s: %s", c.name, termsOf(in))
		run := func() func() {
			v := in
			if err := v.Validate(); err != nil {
				t.Fatal(err)
			}
			return func() {
				if _, err := Analyze(context.Background(), v); err != nil {
					t.Fatal(err)
				}
			}
		}
		enginetest.EstimateHolds(t, c.name+" ("+est.Field+")", est, run())
		enginetest.MemoryEstimateHolds(t, c.name, est, run())
	}
}

// termsOf writes the estimate's terms, for the log.
func termsOf(in Input) string {
	s, err := in.spec()
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, term := range s.costTerms(in.Run.workers()) {
		fmt.Fprintf(&b, "%s %.1fms; ", term.name, term.ns/1e6)
	}
	return b.String()
}

// TestCostEstimateHolds: for every model × scenario type × small and large network, the
// estimate is within 3× of the CPU Analyze takes, and its memory covers the heap's peak.
func TestCostEstimateHolds(t *testing.T) {
	checkCost(t, calibratedCostCases())
}

// TestCostSweep: the blast-radius sweep dominates (one deterministic scenario): every node
// up to SweepAllMax, the top SweepTop above it, and independent cascade's ICBlastRuns runs
// per node.
func TestCostSweep(t *testing.T) {
	var cases []costCase
	for _, c := range []struct {
		model string
		n     int
		z     float64
	}{
		{ModelThreshold, SweepAllMax, 6},
		{ModelThreshold, SweepAllMax + 1, 6},
		{ModelIndependentCascade, 500, 2},
		{ModelIndependentCascade, SweepAllMax + 500, 1},
	} {
		cases = append(cases, costCase{
			name: fmt.Sprintf("sweep/%s/%d nodes", c.model, c.n),
			in:   func() Input { return costInput(c.model, c.n, c.z, 0.02, 0.8, TypeNodeFailure, 1) },
		})
	}
	checkCost(t, cases)
}

// TestCostHeldOut: shapes the constants were not measured on.
func TestCostHeldOut(t *testing.T) {
	var cases []costCase
	for _, g := range []struct {
		scenario string
		gp       GenParams
	}{
		{ScenarioFragileNetwork, GenParams{Nodes: 1000, Simulations: 2000}},
		{ScenarioRobustNetwork, GenParams{Nodes: 2000, Simulations: 10_000}},
		{ScenarioProviderConcentration, GenParams{Nodes: 5000, Simulations: 10_000}},
	} {
		cases = append(cases, costCase{"generate/" + g.scenario, func() Input {
			in, _ := Generate(g.scenario, 11, g.gp)
			return in
		}})
	}
	cases = append(cases,
		costCase{"independent_cascade, probability 0.1", func() Input {
			in := costInput(ModelIndependentCascade, 600, 10, 0.02, 0.8, TypeRandomNode, 1000)
			for i := range in.Network.Edges {
				in.Network.Edges[i].Probability = ptr(0.1)
			}
			return in
		}},
		costCase{"debtrank, capital 0.3 (no defaults, long decay)", func() Input {
			return costInput(ModelDebtRank, 200, 5, 0.3, 0.8, TypeRandomNode, 50)
		}},
		costCase{"eisenberg_noe, external assets 0.05", func() Input {
			return costInput(ModelEisenbergNoe, 200, 5, 0.02, 0.05, TypeRandomNode, 50)
		}},
		costCase{"threshold, random_failure probability 0.05", func() Input {
			return withScenario(costInput(ModelThreshold, 1500, 6, 0.041, 0.8, TypeRandomFailure, 1000), ScenarioSpec{Type: TypeRandomFailure, Probability: ptr(0.05)})
		}},
		costCase{"threshold, targeted attack by eigenvector", func() Input {
			return withScenario(costInput(ModelThreshold, 8000, 6, 0.041, 0.8, TypeTargetedAttack, 1), ScenarioSpec{Type: TypeTargetedAttack, By: ByEigenvector, Count: ptr(3)})
		}},
		costCase{"threshold, 12 scenarios", func() Input {
			return manyScenarios(costInput(ModelThreshold, 1000, 5, 0.041, 0.8, TypeRandomNode, 300))
		}},
		costCase{"threshold, preferential attachment, 2 links a node", func() Input {
			return graphInput(prefAttachPairs(5000, 2, 1))
		}},
		costCase{"threshold, tree", func() Input {
			return graphInput(prefAttachPairs(3000, 1, 1))
		}},
	)
	checkCost(t, cases)
}

func withScenario(in Input, sc ScenarioSpec) Input {
	in.Scenarios = []ScenarioSpec{sc}
	return in
}

func manyScenarios(in Input) Input {
	in.Scenarios = nil
	for k := 0; k < 12; k++ {
		in.Scenarios = append(in.Scenarios, ScenarioSpec{Type: TypeRandomNode, Count: ptr(1 + k)})
	}
	return in
}

// graphInput is the threshold model on the undirected graph of pairs (both directions,
// weight 1, capital 1.5: a node fails when two of its neighbours have), 1,000 runs of one
// random failure.
func graphInput(pairs [][2]int) Input {
	n := 0
	for _, p := range pairs {
		n = max(n, p[0]+1, p[1]+1)
	}
	in := Input{Simulations: ptr(1000), Scenarios: []ScenarioSpec{{Type: TypeRandomNode}}}
	for i := 0; i < n; i++ {
		in.Network.Nodes = append(in.Network.Nodes, Node{ID: fmt.Sprintf("n%d", i), Capital: ptr(1.5)})
	}
	for _, p := range pairs {
		a, b := in.Network.Nodes[p[0]].ID, in.Network.Nodes[p[1]].ID
		in.Network.Edges = append(in.Network.Edges, Edge{Source: a, Target: b}, Edge{Source: b, Target: a})
	}
	return in
}

// TestCostReproduction: independent cascade on 2,000 nodes and 200,000 edges with the
// default simulations (10,000 runs of the default scenarios, then 100 runs a node for the
// blast radius of every node) is estimated well above the synchronous budget, so the API
// runs it in the background.
func TestCostReproduction(t *testing.T) {
	in := reproduction()
	est, err := Estimate(in)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("estimate %v CPU, %d MB, field %s", est.CPU, est.Memory>>20, est.Field)
	if est.CPU <= engine.DefaultSyncBudget {
		t.Errorf("estimate %v, want above the synchronous budget %v", est.CPU, engine.DefaultSyncBudget)
	}
	if e := est.Within(0); e == nil || e.Field != "model" {
		t.Errorf("Within: %v, want WORK_LIMIT_EXCEEDED on model (the sweep's 100 runs a node)", e)
	}
}

// reproduction is independent cascade on 2,000 nodes and 200,000 edges (probability 1),
// default scenarios and simulations.
func reproduction() Input {
	r := rand.New(rand.NewPCG(2000, 200_000))
	net := gaiKapadia(r, 2000, 100, 0.041, "bank")
	return Input{Network: net, Model: ModelIndependentCascade, Seed: ptr(int64(1))}
}

// runWork is the edges followed, the nodes drawn, failed or touched, and the nodes scanned
// by every run of scenario k, counted as Estimate's pilot counts them, with one runner.
func runWork(sim *simulation, k int) (visits, nodes, scanned float64) {
	draw := newScenarioDraw(sim.s, k)
	run := newRunner(sim.m)
	for r := 0; r < sim.s.scen[k].runs; r++ {
		init := draw.start(run, r)
		o := run.run(init, draw.shock)
		visits += float64(o.visits)
		nodes += float64(len(init) + len(run.failed) + len(run.touched))
		scanned += float64(draw.scan(sim.g.n))
	}
	return visits, nodes, scanned
}

// BenchmarkCostConstants measures the constants of Estimate (cost.go) on one core: each
// sub-benchmark reports the process CPU time of its loop per iteration (CPU time, not
// wall time, so that other processes on the machine count less), as the metric the
// constant is named after.
func BenchmarkCostConstants(b *testing.B) {
	perUnit := func(b *testing.B, units float64, metric string, work func()) {
		before := enginetest.CPUTime()
		for b.Loop() {
			work()
		}
		b.ReportMetric(float64((enginetest.CPUTime()-before).Nanoseconds())/float64(b.N)/units, metric)
	}
	// The runs of the first scenario of in, on one worker: their CPU, less their fixed
	// costs, and their edges and nodes.
	work := func(b *testing.B, in Input) (ns, visits, nodes float64) {
		sim := prepareScenario(b, in, 1)
		visits, nodes, _ = runWork(sim, 0)
		runs := float64(sim.s.scen[0].runs)
		cpu := enginetest.MeasureCPU(b, func() { sim.run(b) })
		ns = float64(cpu.Nanoseconds()) - runs*(nsPerRun+2*nsSortRun*log2(runs))
		return ns, visits, nodes
	}
	// nsVisit… and nsNode…: fitted on two networks of 5,000 nodes, 10 and 2 edges a node
	// (capital 0.02: most failures cascade), the same runs. Eisenberg–Noe's pushes cost
	// more the longer they go round the queue: nsVisitEN is measured given nsNodeEN, with
	// external assets 0.17 (few defaults) and 0.05 (most nodes default).
	for _, m := range modelNames[:3] {
		b.Run("run/"+m, func(b *testing.B) {
			var a, c float64
			for b.Loop() {
				ns1, v1, n1 := work(b, costInput(m, 5000, 10, 0.02, 0.8, TypeRandomNode, 200))
				ns2, v2, n2 := work(b, costInput(m, 5000, 2, 0.02, 0.8, TypeRandomNode, 200))
				// ns = a·visits + c·nodes on both.
				det := v1*n2 - v2*n1
				a, c = (ns1*n2-ns2*n1)/det, (v1*ns2-v2*ns1)/det
			}
			b.ReportMetric(a, "nsVisit")
			b.ReportMetric(c, "nsNode")
		})
	}
	for _, ext := range []float64{0.17, 0.05} {
		b.Run(fmt.Sprintf("run/eisenberg_noe external assets %g", ext), func(b *testing.B) {
			in := costInput(ModelEisenbergNoe, 5000, 10, 0.02, ext, TypeRandomNode, 20)
			var a float64
			for b.Loop() {
				ns, visits, nodes := work(b, in)
				a = (ns - nsNodeEN*nodes) / visits
			}
			b.ReportMetric(a, "nsVisitEN")
		})
	}
	b.Run("run/independent_cascade p=0.5", func(b *testing.B) {
		in := costInput(ModelIndependentCascade, 5000, 10, 0.02, 0.8, TypeRandomNode, 200)
		for i := range in.Network.Edges {
			in.Network.Edges[i].Probability = ptr(0.5)
		}
		var draw float64
		for b.Loop() {
			ns, visits, nodes := work(b, in)
			draw = (ns - nsVisitIC*visits - nsNodeIC*nodes) / visits
		}
		b.ReportMetric(draw, "nsDraw")
	})
	// cacheNodes, cacheSlope: the same runs on larger networks (threshold, 10 edges a node,
	// 2,000,000 edges followed in all), measured against the costs above.
	for _, n := range []int{5000, 20_000, 50_000, 100_000} {
		b.Run(fmt.Sprintf("run/cache/%d", n), func(b *testing.B) {
			in := costInput(ModelThreshold, n, 9.9, 0.02, 0.8, TypeRandomNode, 20_000_000/n/10)
			var f float64
			for b.Loop() {
				ns, visits, nodes := work(b, in)
				f = ns / (nsVisitThreshold*visits + nsNodeThreshold*nodes)
			}
			b.ReportMetric(f, "times")
		})
	}
	// nsPerRun: runs where nothing spreads (capital 0.3), the runs alone; nsScanNode: the
	// same with random failures (probability 0.002 a node: 10 a run among 5,000 scanned).
	for _, typ := range []string{TypeRandomNode, TypeRandomFailure} {
		b.Run("run/contained "+typ, func(b *testing.B) {
			const runs = 20_000
			sim := prepareScenario(b, costInput(ModelThreshold, 5000, 10, 0.3, 0.8, typ, runs), 1)
			visits, nodes, scanned := runWork(sim, 0)
			draw := newScenarioDraw(sim.s, 0)
			run := newRunner(sim.m)
			before := enginetest.CPUTime()
			for b.Loop() {
				for r := 0; r < runs; r++ {
					run.run(draw.start(run, r), nil)
				}
			}
			ns := float64((enginetest.CPUTime() - before).Nanoseconds()) / float64(b.N)
			rest := ns - nsVisitThreshold*visits - nsNodeThreshold*nodes
			if scanned == 0 {
				b.ReportMetric(rest/runs, "nsPerRun")
				return
			}
			b.ReportMetric((rest-nsPerRun*runs)/scanned, "nsScanNode")
		})
	}
	for _, c := range []struct {
		n int
		z float64
	}{{1000, 10}, {100_000, 9.9}, {100_000, 1}} {
		in := benchInput(c.n, c.z, 1)
		s, err := compile(&in)
		if err != nil {
			b.Fatal(err)
		}
		g := buildNetwork(s)
		n, raw, sym := float64(c.n), float64(s.rawEdges), float64(len(g.symTo))
		name := fmt.Sprintf("%d nodes z=%g", c.n, c.z)
		b.Run("build/"+name, func(b *testing.B) {
			perUnit(b, raw+n/2, "ns/(edge+node/2)", func() {
				g := buildNetwork(s)
				newModel(s, g)
				g.components()
			})
		})
		b.Run("rank/"+name, func(b *testing.B) {
			perUnit(b, n*log2(n), "ns/(node·log₂nodes)", func() { topNodes(s.ids, g.exposure, g.n) })
		})
		b.Run("power/"+name, func(b *testing.B) {
			x, y := g.powerStart()
			perUnit(b, n+nsPowerSym/nsPowerNode*sym, "nsPowerNode", func() { g.powerStep(x, y) })
		})
	}
	b.Run("sortRuns/100000", func(b *testing.B) {
		frac := make([]float64, 100_000)
		for i := range frac {
			frac[i] = float64(i*7919%100_000) / 100_000
		}
		rounds := make([]int, len(frac))
		N := float64(len(frac))
		perUnit(b, 2*N*log2(N), "ns/(run·log₂runs)", func() { summarise("s", TypeRandomNode, frac, frac, rounds, 0.05) })
	})
	b.Run("lobpcg/20000 nodes z=10", func(b *testing.B) {
		g := randomGraphT(20_000, 10, 1)
		rep, _ := algebraicConnectivity(context.Background(), g, 1, 1)
		perIter, _ := lobpcgWork(g.n, len(g.symTo))
		perUnit(b, perIter*float64(rep.iterations), "ns/flop", func() { algebraicConnectivity(context.Background(), g, 1, 1) })
	})
	b.Run("dense/400 nodes", func(b *testing.B) {
		g := randomGraphT(400, 5, 1)
		perUnit(b, 400*400*400, "ns/n³", func() { algebraicConnectivity(context.Background(), g, 1, 1) })
	})
}

// TestCostExactReuse: scenarios whose runs are grouped by their initial failures (exact
// reuse; reuse.go), where the runs' cost is that of the distinct cascades.
func TestCostExactReuse(t *testing.T) {
	checkCost(t, []costCase{
		{"threshold, random_node, 1,000 nodes, 10,000 runs", func() Input {
			return benchInput(1000, 10, 10_000)
		}},
		{"threshold, random_failure probability 0.001, 10,000 runs", func() Input {
			return withScenario(costInput(ModelThreshold, 1000, 8, 0.02, 0.8, TypeRandomFailure, 10_000), ScenarioSpec{Type: TypeRandomFailure, Probability: ptr(0.001)})
		}},
		{"debtrank, random_node, 400 nodes, 3,000 runs", func() Input {
			return withScenario(costInput(ModelDebtRank, 400, 8, 0.02, 0.8, TypeRandomNode, 3000), ScenarioSpec{Type: TypeRandomNode})
		}},
		{"eisenberg_noe, random_node count 2, 60 nodes, 10,000 runs", func() Input {
			return withScenario(costInput(ModelEisenbergNoe, 60, 4, 0.02, 0.17, TypeRandomNode, 10_000), ScenarioSpec{Type: TypeRandomNode, Count: ptr(2)})
		}},
	})
}
