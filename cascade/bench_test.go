package cascade

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
)

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }

// benchInput is Gai & Kapadia's network of n banks with mean degree z (≈ z·n edges), with
// capital 0.02: banks with up to 9 debtors fail after one default, so almost every random
// failure cascades through most of the network and each run follows most of the edges (the
// expensive case for the threshold model).
func benchInput(n int, z float64, runs int) Input {
	r := rand.New(rand.NewPCG(uint64(n), 42))
	net := gaiKapadia(r, n, z, 0.02, "bank")
	return Input{Network: net, Scenarios: []ScenarioSpec{{Type: TypeRandomNode}}, Simulations: ptr(runs), Seed: ptr(int64(1))}
}

// BenchmarkThreshold1kNodes10kEdges10kRuns is the contract's speed target: the whole
// simulation (10,000 runs, the blast-radius sweep of all 1,000 nodes, λ₂, scores) on all
// cores (GOMAXPROCS).
func BenchmarkThreshold1kNodes10kEdges10kRuns(b *testing.B) {
	in := benchInput(1000, 10, 10_000)
	b.ReportAllocs()
	var res Result
	for b.Loop() {
		var err error
		if res, err = Analyze(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(res.Scenarios[0].CascadeProbability, "cascade_prob")
	b.ReportMetric(float64(len(in.Network.Edges)), "edges")
}

// BenchmarkChunked1kNodes10kEdges10kRuns is the contract target's simulation made as a
// chunked one in one process: the plan, every chunk run in turn (all cores each), encoded,
// decoded and merged — against BenchmarkThreshold1kNodes10kEdges10kRuns, the overhead of
// the chunks (each chunk's runners and tallies, the barrier at its end, the bytes).
func BenchmarkChunked1kNodes10kEdges10kRuns(b *testing.B) {
	for _, size := range []int{0, 1000} {
		b.Run(fmt.Sprintf("chunk_runs=%d", size), func(b *testing.B) {
			in := benchInput(1000, 10, 10_000)
			in.Run.ChunkRuns = size
			b.ReportAllocs()
			var res Result
			var stored, chunks int
			for b.Loop() {
				p, err := NewPlan(context.Background(), in)
				if err != nil {
					b.Fatal(err)
				}
				encoded := make([][]byte, p.Chunks())
				stored, chunks = 0, p.Chunks()
				for c := range encoded {
					r, err := p.RunChunk(context.Background(), c)
					if err != nil {
						b.Fatal(err)
					}
					if encoded[c], err = r.MarshalBinary(); err != nil {
						b.Fatal(err)
					}
					stored += len(encoded[c])
				}
				m := p.NewMerger()
				for _, e := range encoded {
					r, err := p.DecodeChunk(e)
					if err == nil {
						err = m.Add(r)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				if res, err = m.Result(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(res.Scenarios[0].CascadeProbability, "cascade_prob")
			b.ReportMetric(float64(chunks), "chunks")
			b.ReportMetric(float64(stored), "stored_bytes")
		})
	}
}

// BenchmarkThresholdMonteCarlo1kNodes10kEdges10kRuns times the 10,000 runs alone (no sweep,
// no λ₂) with one worker and with all cores: the engine side of the comparison below.
func BenchmarkThresholdMonteCarlo1kNodes10kEdges10kRuns(b *testing.B) {
	in := benchInput(1000, 10, 10_000)
	for _, w := range []int{1, 0} {
		name := fmt.Sprintf("workers=%d", w)
		if w == 0 {
			name = "workers=all"
		}
		b.Run(name, func(b *testing.B) {
			if w == 0 {
				w = 64
			}
			b.ReportAllocs()
			sim := prepareScenario(b, in, min(w, runtimeProcs()))
			for b.Loop() {
				sim.run(b)
			}
		})
	}
}

// BenchmarkThresholdNaive1kNodes10kEdges10kRuns runs the same 10,000 runs with the
// straightforward implementation (nodes in a map of structs, maps of losses and failures
// allocated per run, one goroutine).
func BenchmarkThresholdNaive1kNodes10kEdges10kRuns(b *testing.B) {
	if testing.Short() {
		b.Skip("-short (CI): the naive loop takes 8–16 s; TestThresholdMatchesNaive runs its code")
	}
	in := benchInput(1000, 10, 10_000)
	banks := newNaiveBanks(in)
	b.ReportAllocs()
	for b.Loop() {
		naiveThreshold(banks, 10_000, 1)
	}
}

// BenchmarkThresholdScaling times the Monte Carlo on all cores for runs × edges (n = edges/10):
// the cost per run·edge should stay flat.
func BenchmarkThresholdScaling(b *testing.B) {
	for _, edges := range []int{10_000, 100_000, 1_000_000} {
		for _, runs := range []int{1_000, 10_000} {
			if edges == 1_000_000 && runs == 10_000 {
				continue // ≈ 10¹⁰ edge visits; the trend is clear without it
			}
			if (edges == 1_000_000 || edges == 100_000 && runs == 10_000) && testing.Short() {
				continue // -short (CI): 10⁹ edge visits, 6–11 s each; the smaller sizes run the same code
			}
			b.Run(fmt.Sprintf("edges=%d/runs=%d", edges, runs), func(b *testing.B) {
				in := benchInput(edges/10, 9.9, runs)
				sim := prepareScenario(b, in, runtimeProcs())
				for b.Loop() {
					sim.run(b)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(runs)/float64(len(in.Network.Edges)), "ns/run·edge")
			})
		}
	}
}

// BenchmarkSimulate100kNodes1MEdges is a network at the contract's limits: 100,000 nodes,
// ≈ 990,000 edges, 1,000 runs of one random failure, the 1,000-node blast-radius sweep and λ₂
// by LOBPCG, all cores. capital=0.041 is Gai & Kapadia's setting (z = 9.9 is outside the
// contagion window: cascades stay small); capital=0.02 makes almost every failure cascade
// through the whole network, so each of the 2,000 runs follows ≈ 1,000,000 edges.
func BenchmarkSimulate100kNodes1MEdges(b *testing.B) {
	for _, capital := range []float64{0.041, 0.02} {
		b.Run(fmt.Sprintf("capital=%g", capital), func(b *testing.B) {
			if capital == 0.02 && testing.Short() {
				b.Skip("-short (CI): 2,000 runs through a million edges each take 16–28 s; capital=0.041 runs the same code")
			}
			in := benchInput(100_000, 9.9, 1000)
			for i := range in.Network.Nodes {
				in.Network.Nodes[i].Capital = ptr(capital)
			}
			b.ReportAllocs()
			var res Result
			for b.Loop() {
				var err error
				if res, err = Analyze(context.Background(), in); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(res.Scenarios[0].CascadeProbability, "cascade_prob")
			b.ReportMetric(res.Dimensions.Connectivity.AlgebraicConnectivity, "lambda2")
		})
	}
}

// BenchmarkModels100kNodes1MEdges times 100 runs of one random failure under each model at
// the contract's limits (capital 0.02: most failures cascade; the network is built outside
// the timer; no sweep, no λ₂).
func BenchmarkModels100kNodes1MEdges(b *testing.B) {
	base := benchInput(100_000, 9.9, 100)
	for i := range base.Network.Nodes {
		base.Network.Nodes[i].ExternalAssets = ptr(0.17) // Eisenberg–Noe: 0.2 owed on average
	}
	for _, m := range modelNames {
		b.Run(m, func(b *testing.B) {
			in := base
			in.Model = m
			sim := prepareScenario(b, in, runtimeProcs())
			var sr ScenarioResult
			for b.Loop() {
				sr = sim.run(b)
			}
			b.ReportMetric(sr.CascadeProbability, "cascade_prob")
			b.ReportMetric(sr.MeanRounds, "rounds")
		})
	}
}

// BenchmarkBuild100kNodes1MEdges times validation and the network build (the CSR arrays,
// merging parallel edges, the symmetrised graph) at the contract's limits.
func BenchmarkBuild100kNodes1MEdges(b *testing.B) {
	in := benchInput(100_000, 9.9, 1)
	b.ReportAllocs()
	for b.Loop() {
		s, err := compile(&in)
		if err != nil {
			b.Fatal(err)
		}
		buildNetwork(s)
	}
}

// The straightforward implementation: what one writes first.
type naiveBank struct {
	id        string
	capital   float64
	value     float64
	creditors []naiveExposure
}

type naiveExposure struct {
	creditor string
	amount   float64
}

type naiveBanks struct {
	byID  map[string]*naiveBank
	order []string
}

func newNaiveBanks(in Input) naiveBanks {
	nb := naiveBanks{byID: map[string]*naiveBank{}}
	for _, n := range in.Network.Nodes {
		b := &naiveBank{id: n.ID, capital: 1, value: 1}
		if n.Capital != nil {
			b.capital = *n.Capital
		}
		if n.Value != nil {
			b.value = *n.Value
		}
		nb.byID[n.ID] = b
		nb.order = append(nb.order, n.ID)
	}
	for _, e := range in.Network.Edges {
		w := 1.0
		if e.Weight != nil {
			w = *e.Weight
		}
		if e.Source != e.Target {
			src := nb.byID[e.Source]
			src.creditors = append(src.creditors, naiveExposure{creditor: e.Target, amount: w})
		}
	}
	return nb
}

// naiveThreshold makes runs random single failures (drawn as the engine draws them, so the
// outcomes can be compared) and returns each run's failed value fraction and loss.
func naiveThreshold(nb naiveBanks, runs int, seed int64) ([]float64, []float64) {
	total := 0.0
	for _, id := range nb.order {
		total += nb.byID[id].value
	}
	var fracs, losses []float64
	for r := 0; r < runs; r++ {
		a := splitmix(uint64(seed) ^ splitmix(1))
		rng := rand.New(rand.NewPCG(a, splitmix(a^splitmix(uint64(r)+0x632be59bd9b4e019))))
		first := nb.order[rng.IntN(len(nb.order))]
		failed := map[string]bool{first: true}
		loss := map[string]float64{}
		frontier := []string{first}
		for len(frontier) > 0 {
			var next []string
			for _, id := range frontier {
				for _, ex := range nb.byID[id].creditors {
					if failed[ex.creditor] {
						continue
					}
					loss[ex.creditor] += ex.amount
					if loss[ex.creditor] > nb.byID[ex.creditor].capital {
						failed[ex.creditor] = true
						next = append(next, ex.creditor)
					}
				}
			}
			frontier = next
		}
		v := 0.0
		for id := range failed {
			v += nb.byID[id].value
		}
		fracs = append(fracs, v/total)
		losses = append(losses, v)
	}
	return fracs, losses
}

// prefAttach is a preferential-attachment graph (Barabási–Albert style: each new node links
// to m earlier nodes, half uniformly, half proportionally to degree); m = 1 gives a tree.
func prefAttach(n, m int, seed uint64) *network { return undirected(n, prefAttachPairs(n, m, seed)) }

// prefAttachPairs are the links of prefAttach.
func prefAttachPairs(n, m int, seed uint64) [][2]int {
	r := rand.New(rand.NewPCG(seed, 2))
	var p [][2]int
	var ends []int
	for i := 1; i < n; i++ {
		for k := 0; k < m && k < i; k++ {
			var j int
			if len(ends) == 0 || r.IntN(2) == 0 {
				j = r.IntN(i)
			} else {
				j = ends[r.IntN(len(ends))]
			}
			p = append(p, [2]int{i, j})
			ends = append(ends, i, j)
		}
	}
	return p
}

// BenchmarkAlgebraicConnectivity100k times λ₂ (LOBPCG, all cores for the products) on
// 100,000-node graphs: sparse and dense random graphs, a preferential-attachment graph and
// a preferential-attachment tree (λ₂ ≈ 2·10⁻⁵: the iteration budget binds).
func BenchmarkAlgebraicConnectivity100k(b *testing.B) {
	for _, c := range []struct {
		name string
		g    func() *network
	}{
		{"random_z3", func() *network { return randomGraphT(100_000, 3, 1) }},
		{"random_z20", func() *network { return randomGraphT(100_000, 20, 1) }},
		{"prefattach_m2", func() *network { return prefAttach(100_000, 2, 1) }},
		{"prefattach_tree", func() *network { return prefAttach(100_000, 1, 1) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			g := c.g()
			comps := g.components()
			var rep fiedlerReport
			for b.Loop() {
				var err error
				if rep, err = algebraicConnectivity(context.Background(), g, comps, runtimeProcs()); err != nil {
					b.Fatal(err)
				}
			}
			conv := 0.0
			if rep.converged {
				conv = 1
			}
			b.ReportMetric(rep.value, "lambda2")
			b.ReportMetric(float64(rep.iterations), "iterations")
			b.ReportMetric(conv, "converged")
		})
	}
}

// BenchmarkExactReuse is the contract's speed target (BenchmarkThreshold1kNodes10kEdges10kRuns)
// with exact reuse (each distinct cascade made once; reuse.go) and with every run made on
// its own, in the same run: the ratio is the reuse's gain, and the result is the same.
func BenchmarkExactReuse(b *testing.B) {
	in := benchInput(1000, 10, 10_000)
	for _, every := range []bool{false, true} {
		name := "reuse"
		if every {
			name = "every_run"
		}
		b.Run(name, func(b *testing.B) {
			in := in
			in.Run.everyRun = every
			for b.Loop() {
				if _, err := Analyze(context.Background(), in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
