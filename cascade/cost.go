package cascade

import (
	"context"
	"math"
	"math/bits"
	"slices"

	"riskapi/engine"
)

// CPU constants of Estimate: nanoseconds of process CPU time per iteration of the dominant
// loops, measured on one core of the development machine (Intel Xeon, 2 cores, Go 1.26,
// shared with other builds) by `go test -run '^$' -bench CostConstants -benchtime 3x
// ./cascade/` (cost_test.go), which reports CPU time rather than wall time; the ranges are of
// three runs. docs/methods/cascade.md §12 gives the formula they enter.
const (
	// nsVisit… and nsNode…: a run's work, per out-edge followed (or Eisenberg–Noe payment
	// pushed along an edge) and per node drawn, failed or touched, by model, fitted on
	// networks of 5,000 nodes with 10 and 2 edges a node where most failures cascade:
	// threshold 2.6–2.9 and 20.7–23.9, independent cascade 1.2–1.6 and 25.2–28.2, DebtRank
	// 5.4–5.9 and 11.2–12.9. Eisenberg–Noe's pushes cost 1.9–4.5 with external assets 0.17
	// (few defaults) and 10.3–10.8 with 0.05 (most nodes default and the payments go round
	// the queue many times), given nsNodeEN: one constant within 3× of both.
	nsVisitThreshold = 2.5
	nsNodeThreshold  = 22.0
	nsVisitIC        = 1.4
	nsNodeIC         = 25.0
	nsVisitDebtRank  = 5.2
	nsNodeDebtRank   = 12.0
	nsVisitEN        = 5.5
	nsNodeEN         = 12.0
	// nsDraw: the extra cost of an edge followed by independent cascade when its
	// probability is below 1 (a random draw). Measured 2.7–3.5.
	nsDraw = 3.5
	// cacheNodes, cacheSlope: above cacheNodes nodes, a runner's per-node state (≈ 40
	// bytes a node) outgrows the processor's second-level cache and every edge followed
	// waits for memory: a run's work costs 1 + (nodes − cacheNodes)/cacheSlope times the
	// costs above (1.25, 1.75, 2.58 at 20,000, 50,000, 100,000 nodes). Measured 1.07–1.09,
	// 1.23–1.29, 1.80–1.87 and 2.56–2.80 at 5,000, 20,000, 50,000 and 100,000 nodes.
	cacheNodes = 5000.0
	cacheSlope = 60000.0
	// nsScanNode: a node a run goes through without failing it (a random_failure draw, a
	// shock's loss). Measured 3.5–3.6.
	nsScanNode = 3.5
	// nsPerRun: a run's fixed cost besides its work (seeding its generator, recording its
	// outcome). Measured −15 to 7 on runs where nothing spreads, once the work of each (2
	// nodes, 10 edges) is taken out: it is lost in the noise of the work; 30 is kept for the
	// outcome's bookkeeping, which those runs leave out.
	nsPerRun = 30.0
	// icRepeatSpeedup, icRepeatUnits: independent cascade's sweep makes a node's
	// ICBlastRuns runs one after another; where every edge's probability is 1 they are the
	// same run, and while it is short the processor predicts it. Measured 2.5–2.9 times
	// faster than the costs above for runs of 90–1,060 units (edges and nodes), 1.2 at
	// 42,000 and 1.0 at 200,000; such runs cost 1/(1 + (icRepeatSpeedup − 1)·(1 − share of
	// probabilities below 1)/(1 + units/icRepeatUnits)) of a run elsewhere.
	icRepeatSpeedup = 2.7
	icRepeatUnits   = 3000.0
	// nsScenarioNode: per scenario and node (the total value; the first scenario's per-node
	// tallies, per worker).
	nsScenarioNode = 1.5
	// nsGroupRun: a run of a grouped scenario besides its cascade (exact reuse, reuse.go):
	// its draw, the copy of its initial failures, the map lookup, its outcome recorded.
	nsGroupRun = 120.0
	// nsSortRun: per run·log₂(runs) of summarise's two sorts of a scenario's outcomes.
	// Measured 4.4–4.8 with every outcome distinct, 1.7 with few distinct.
	nsSortRun = 3.5
	// nsRankNode: per node·log₂(nodes) of a ranking by score and id (the sweep's, a
	// targeted attack's, the nodes' final one). Measured 9.2–14.3.
	nsRankNode = 13.0
	// nsBuildEdge, nsBuildNode: the network build (the CSR arrays, parallel edges merged,
	// the symmetrised graph), the model's coefficients and the components, per edge of the
	// request and per node. Measured 123–143 per (edge + node/2) at 100,000 nodes and 1 or
	// 10 edges a node, 169–219 at 1,000 nodes (under 2 ms in all).
	nsBuildEdge = 135.0
	nsBuildNode = 65.0
	// nsPowerNode, nsPowerSym: a power-iteration step of the eigenvector centrality, per
	// node and per entry of the symmetrised graph. Measured 16–26 per node given 1.2 per
	// entry (1,000 and 100,000 nodes, 1 and 10 edges a node).
	nsPowerNode = 20.0
	nsPowerSym  = 1.2
	// powerSlowdown: the power iteration's changes decay 2.1–4.1 times more slowly after
	// its first steps than during them (1,000 to 20,000 nodes, 1 to 10 edges a node), so
	// the steps extrapolated from the first powerProbe are multiplied by it.
	powerSlowdown = 3.0
	// nsLOBPCGFlop: a floating-point operation of LOBPCG as lobpcgWork counts them.
	// Measured 0.80–0.85.
	nsLOBPCGFlop = 0.9
	// nsDenseCube: per n³ of the dense eigendecomposition of λ₂ (n ≤ denseFiedlerMax).
	// Measured 0.48–0.52.
	nsDenseCube = 0.5
	// fiedlerTypicalIterations: LOBPCG iterations assumed for λ₂ above denseFiedlerMax
	// nodes (at most what fiedlerBudget allows). Measured 39–412 on random, Gai & Kapadia
	// and preferential-attachment graphs of 2,000 to 100,000 nodes with at least half an
	// independent cycle a node.
	//
	// treeCycles, treeIterations: closer to a tree, λ₂ is tiny and LOBPCG slow: measured
	// 800 (2,000 nodes) and 3,900–7,500 (20,000 nodes) iterations on trees, 683 and 1,065
	// with 0.05 cycles a node, 440 and 352 with 0.2, 212 and 233 with 0.5 (a star, a tree
	// whose λ₂ is 1, takes 2: the estimate is high there).
	fiedlerTypicalIterations = 120
	treeCycles               = 0.5
	treeIterations           = 25.0
)

// Pilot sizes of Estimate: the sweep and the first pilotStreams scenarios are sampled with
// their own runs, with the seeds Analyze gives them, spread evenly over each: pilotRuns
// runs, and more (up to pilotMaxRuns and a twentieth of the stream) while the standard
// error of their mean exceeds pilotPrecision of it. The runs' estimated CPU is held within
// pilotBudget over all streams, shared evenly (what one leaves goes to the next), and a
// sampled run is cut at what is left of its stream's share (at least pilotMinCap): the
// pilot takes about 0.2 s of CPU at most (Estimate on a built network measured 23 ms on
// 200,000 edges, 0.23–0.40 s with 100 scenarios on 1,000,000 edges, the most where
// Eisenberg–Noe pushes cost twice nsVisitEN).
const (
	pilotStreams   = 8
	pilotRuns      = 32
	pilotMaxRuns   = 256
	pilotPrecision = 0.1
	pilotBudget    = 200e6 // ns
	pilotMinCap    = 1e6   // ns
)

// Estimate is the cost of Analyze(ctx, in) from the request alone, before any of its work
// starts (platform contract §11): the CPU time summed over the cores it runs on (Analyze
// spreads the runs over in.Run's workers, GOMAXPROCS by default), the peak bytes it holds
// at once beyond the request and its compiled form, and the input that drives the cost.
//
// The CPU is the sum of the dominant loops, each at its measured cost per iteration: the
// network build; each scenario's runs × (a run's fixed cost + the CPU of a mean run's work),
// its statistics and sorts; the blast-radius sweep's swept nodes × runs per node
// (ICBlastRuns under independent_cascade) × the same; the rankings; the eigenvector
// centrality of a targeted attack; and λ₂ (dense, or LOBPCG). How far a run spreads
// depends on the network (one failure may fail nothing or everything; a DebtRank or
// Eisenberg–Noe run may go round the edges hundreds of times), so a mean run's work (edges
// followed, nodes drawn, failed or touched) is measured by a pilot of the streams' own
// runs (see the pilot sizes); the power iteration's length is extrapolated from its first
// steps. docs/methods/cascade.md §12 gives the model and its measured accuracy.
//
// Estimate validates the input first (unless Validate already did) and returns the same
// errors as Analyze. It builds the network and keeps it with the compiled input, so that
// Analyze on the same validated input does not build it again.
func Estimate(in Input) (engine.Cost, error) {
	s, err := in.spec()
	if err != nil {
		return engine.Cost{}, err
	}
	return s.estimate(in.Run.workers()), nil
}

// costTerm is one dominant loop's estimated nanoseconds and the input that drives it.
type costTerm struct {
	name  string
	ns    float64
	field string
}

func (s *spec) estimate(workers int) engine.Cost {
	// The field is the one whose terms add up to the most.
	total, byField := 0.0, map[string]float64{}
	top := ""
	for _, t := range s.costTerms(workers) {
		total += t.ns
		byField[t.field] += t.ns
		if top == "" || byField[t.field] > byField[top] {
			top = t.field
		}
	}
	return engine.Cost{CPU: engine.PerUnit(total, 1), Memory: s.memory(s.uncancelledNetwork(), workers), Field: top}
}

// costTerms are the dominant loops of Analyze with their estimated CPU.
func (s *spec) costTerms(workers int) []costTerm {
	g := s.uncancelledNetwork()
	n, sym := float64(g.n), float64(len(g.symTo))
	const netField = "network.edges"
	terms := []costTerm{{"build", nsBuildEdge*float64(s.rawEdges) + nsBuildNode*n, netField}}
	p := newPilot(s, g)

	// Targeted attacks: their rankings, and the eigenvector centrality once.
	eigen := false
	for _, sc := range p.s.scen {
		if sc.typ != TypeTargetedAttack {
			continue
		}
		ns := nsRankNode * n * log2(n)
		if sc.by == ByEigenvector && !eigen {
			eigen = true
			ns += (nsPowerNode*n + nsPowerSym*sym) * float64(g.powerIterations())
		}
		terms = append(terms, costTerm{"ranking by " + sc.by, ns, netField})
	}

	// Scenarios: the first pilotStreams are sampled; the others take the mean of those of
	// their type, or of all of them.
	sampled := map[string][]float64{}
	for k, sc := range p.s.scen {
		runs := int64(sc.runs)
		var mean float64
		if k < pilotStreams {
			draw := newScenarioDraw(p.s, k)
			mean, _ = p.mean(runs, func(r int64) ([]int32, *shockSpec, int) {
				return draw.start(p.run, int(r)), draw.shock, draw.scan(g.n)
			})
			sampled[sc.typ] = append(sampled[sc.typ], mean)
			sampled[""] = append(sampled[""], mean)
		} else if like := sampled[sc.typ]; len(like) > 0 {
			mean = meanOf(like)
		} else {
			mean = meanOf(sampled[""])
		}
		N := float64(runs)
		ns := N*(nsPerRun+mean) + nsScenarioNode*n + 2*nsSortRun*N*log2(N)
		if d, reuse := p.s.distinctRuns(k); reuse {
			// Exact reuse (reuse.go): every run is drawn and grouped, each distinct
			// cascade made once.
			scan := nsScanNode * float64(newScenarioDraw(p.s, k).scan(g.n))
			ns += N*(nsGroupRun+scan) + d*(nsPerRun+mean-scan) - N*(nsPerRun+mean)
		}
		if k == 0 {
			ns += nsScenarioNode * n * float64(workers)
		}
		field := "scenarios"
		if sc.stochastic {
			field = "simulations"
		}
		terms = append(terms, costTerm{"scenario " + sc.name, ns, field})
	}

	// The blast-radius sweep.
	sweep := p.sweep
	reps := s.sweepRuns()
	runs := int64(len(sweep)) * reps
	mean, units := p.mean(runs, func(j int64) ([]int32, *shockSpec, int) {
		k := j / reps
		s.seedSweep(p.run, sweep[k], int(j%reps))
		return sweep[k : k+1], nil, 0
	})
	sweepField := netField
	if reps > 1 {
		sweepField = "model"
		mean /= 1 + (icRepeatSpeedup-1)*(1-p.cost.drawShare)/(1+units/icRepeatUnits)
	}
	terms = append(terms, costTerm{"sweep", float64(runs) * (nsPerRun + mean), sweepField},
		costTerm{"λ₂", fiedlerNs(g, p.components), netField},
		costTerm{"rankings", 2*nsRankNode*n*log2(n) + nsScenarioNode*n*float64(workers), netField})
	return terms
}

// uncancelledNetwork is the spec's network, built now if need be (Estimate has no context:
// the build is bounded, ≈ 140 ms at the contract's limits, and Analyze reuses it).
func (s *spec) uncancelledNetwork() *network {
	g, _ := s.network(context.Background())
	return g
}

// runCost is the cost of a run's work: per edge followed and per node drawn, failed or
// touched (see the constants).
type runCost struct {
	visit, node float64
	drawShare   float64 // independent cascade: the share of edges with a probability below 1
}

func (s *spec) runCost(g *network) runCost {
	var c runCost
	switch s.model {
	case mIndependentCascade:
		draws := 0
		for _, p := range g.outP {
			if p > 0 && p < 1 {
				draws++
			}
		}
		c.drawShare = float64(draws) / math.Max(1, float64(len(g.outP)))
		c.visit, c.node = nsVisitIC+nsDraw*c.drawShare, nsNodeIC
	case mDebtRank:
		c.visit, c.node = nsVisitDebtRank, nsNodeDebtRank
	case mEisenbergNoe:
		c.visit, c.node = nsVisitEN, nsNodeEN
	default:
		c.visit, c.node = nsVisitThreshold, nsNodeThreshold
	}
	cache := 1 + math.Max(0, float64(g.n)-cacheNodes)/cacheSlope
	c.visit *= cache
	c.node *= cache
	return c
}

// scan is the nodes a run of the scenario goes through besides those it fails: the nodes
// with a positive failure probability (random_failure without an override), the shocked
// nodes (shock).
func (d *scenarioDraw) scan(n int) int {
	switch {
	case d.sc.typ == TypeRandomFailure:
		return len(d.rfNodes)
	case d.shock != nil && d.shock.all:
		return n
	case d.shock != nil:
		return len(d.shock.nodes)
	}
	return 0
}

// fiedlerNs is the cost of λ₂ (see algebraicConnectivity): nothing on a disconnected or
// weightless graph, a dense eigendecomposition up to denseFiedlerMax nodes, else LOBPCG's
// iterations (fiedlerIterations) at lobpcgWork's operations each.
func fiedlerNs(g *network, components int) float64 {
	n := float64(g.n)
	switch {
	case g.n < 2 || components > 1 || !(g.totalW > 0):
		return 0
	case g.n <= denseFiedlerMax:
		return nsDenseCube * n * n * n
	}
	perIter, maxIter := lobpcgWork(g.n, len(g.symTo))
	return nsLOBPCGFlop * perIter * math.Min(float64(maxIter), fiedlerIterations(g))
}

// fiedlerIterations is the LOBPCG iterations expected on the connected graph g:
// fiedlerTypicalIterations, and up to treeIterations·√n more the closer the graph is to a
// tree (fewer than treeCycles independent cycles a node: long thin parts make λ₂ tiny and
// its convergence slow).
func fiedlerIterations(g *network) float64 {
	n := float64(g.n)
	cycles := (float64(len(g.symTo))/2 - n + 1) / n
	it := float64(fiedlerTypicalIterations)
	if cycles < treeCycles {
		f := 1 - cycles/treeCycles
		it += treeIterations * math.Sqrt(n) * f * f
	}
	return it
}

// powerProbe is how many power-iteration steps powerIterations makes to measure the
// iteration's rate of convergence.
const powerProbe = 12

// powerIterations estimates the steps of the eigenvector centrality: it makes powerProbe
// steps and extrapolates the geometric decay of their second half's changes to powerTol,
// powerSlowdown times more slowly.
func (g *network) powerIterations() int {
	x, y := g.powerStart()
	var diffs []float64
	for it := 0; it < powerProbe; it++ {
		d := g.powerStep(x, y)
		x, y = y, x
		if d < powerTol {
			return it + 1
		}
		diffs = append(diffs, d)
	}
	a, b := diffs[powerProbe/2-1], diffs[powerProbe-1]
	if !(b < a) {
		return maxPowerIterations
	}
	rate := math.Pow(b/a, 1/float64(powerProbe-powerProbe/2))
	more := math.Log(powerTol/b) / math.Log(rate)
	return int(math.Min(maxPowerIterations, powerProbe+math.Ceil(powerSlowdown*more)))
}

// pilot samples streams of runs with the model's own runner (see Estimate).
type pilot struct {
	s          *spec // with the targeted attacks resolved
	g          *network
	m          model // the simulation's model, whose maxPushes caps the run at hand
	cost       runCost
	full       int64 // the model's own budget of a run
	run        *runner
	trace      runTrace
	sweep      []int32
	components int
	left       float64 // ns left in the budget
	// longestNs, longestUnits: the longest whole run sampled so far, and its edges and
	// nodes.
	longestNs, longestUnits float64
	streams                 int // streams not yet sampled
}

func newPilot(s *spec, g *network) *pilot {
	own := *s
	own.scen = slices.Clone(s.scen)
	p := &pilot{s: &own, g: g, m: *newModel(&own, g), cost: s.runCost(g), left: pilotBudget, streams: min(len(s.scen), pilotStreams) + 1}
	p.full = p.m.maxPushes
	p.run = newRunner(&p.m)
	if own.model == mDebtRank {
		p.run.trace = &p.trace
	}
	// The targeted attacks' first nodes; the eigenvector centrality is ranked as the degree
	// (its hubs), which costs no power iteration.
	own.resolveAttacks(func(by string) ([]float64, error) {
		if by == ByEigenvector {
			by = ByDegree
		}
		return g.centrality(context.Background(), by)
	})
	p.sweep = topNodes(own.ids, g.exposure, own.swept())
	p.components = g.components()
	return p
}

// mean returns the estimated mean CPU (ns) and units (edges and nodes) of the work of a
// run of a stream of runs runs (see the pilot sizes), within the stream's share of the
// budget left. start(r) points the runner at run r and returns its initial failures, its
// shock and the nodes it scans.
func (p *pilot) mean(runs int64, start func(r int64) ([]int32, *shockSpec, int)) (ns, units float64) {
	share := p.left / float64(p.streams)
	p.streams--
	if runs == 0 {
		return 0, 0
	}
	samples := min(runs, max(pilotRuns, min(pilotMaxRuns, runs/20)))
	sum, sumSq, made, sumUnits, used := 0.0, 0.0, 0.0, 0.0, 0.0
	for made < float64(samples) && (made == 0 || used < share) {
		if made >= pilotRuns {
			mean := sum / made
			if sd := math.Sqrt(math.Max(0, sumSq/made-mean*mean)); sd/math.Sqrt(made) <= pilotPrecision*mean {
				break
			}
		}
		// Every run of a short stream; else runs spread evenly over the stream whatever
		// the number made (the sweep's come in decreasing exposure).
		r := int64(made)
		if samples < runs {
			r = int64(vanDerCorput(uint32(made)) * float64(runs))
		}
		p.m.maxPushes = min(p.full, int64(max(share-used, pilotMinCap)/p.cost.visit))
		init, sh, scan := start(r)
		o := p.run.run(init, sh)
		nodes := int64(len(init) + len(p.run.failed) + len(p.run.touched))
		used += p.cost.visit*float64(o.visits) + p.cost.node*float64(nodes) + nsScanNode*float64(scan)
		visits, touched := float64(o.visits), float64(nodes)
		cut := o.visits >= p.m.maxPushes && p.m.maxPushes < p.full
		if cut && made > 0 {
			// Cut short by what the samples before it left of the share: it only says that
			// it is longer than the cap; the samples made stand for the stream.
			break
		}
		ns := p.cost.visit*visits + p.cost.node*touched + nsScanNode*float64(scan)
		switch {
		case cut && p.longestNs >= ns:
			// As long as the longest whole run sampled so far (another stream's).
			ns, visits, touched = p.longestNs, p.longestUnits, 0
		case cut:
			visits, touched = p.longest(o.visits, touched)
			ns = p.cost.visit*visits + p.cost.node*touched + nsScanNode*float64(scan)
		case ns > p.longestNs:
			p.longestNs, p.longestUnits = ns, visits+touched
		}
		sum += ns
		sumSq += ns * ns
		sumUnits += visits + touched
		made++
	}
	p.left = math.Max(0, p.left-used)
	return sum / made, sumUnits / made
}

// vanDerCorput is the k-th point of the base-2 van der Corput sequence in [0, 1): any
// prefix of it is spread evenly.
func vanDerCorput(k uint32) float64 { return float64(bits.Reverse32(k)) / (1 << 32) }

// longest is the edges and nodes a run cut short by the pilot's cap after visits edges and
// nodes nodes would have gone through: every edge and node for threshold and independent
// cascade (a node fails once), the whole run budget for Eisenberg–Noe, and for DebtRank
// the rounds its increments need to fall below debtRankStep at the rate they decayed in
// the second half of the rounds made.
func (p *pilot) longest(visits int64, nodes float64) (float64, float64) {
	n := float64(p.g.n)
	switch p.s.model {
	case mThreshold, mIndependentCascade:
		return float64(len(p.g.outTo)), math.Max(nodes, 2*n)
	case mEisenbergNoe:
		return float64(p.full), math.Max(nodes, 2*n)
	}
	incs := p.trace.incs
	r := len(incs)
	if r < 8 {
		return float64(p.full), math.Max(nodes, 2*n)
	}
	a, b := incs[r/2-1], incs[r-1]
	if !(b < a && b > 0) {
		return float64(p.full), math.Max(nodes, 2*n)
	}
	rate := math.Pow(b/a, 1/float64(r-r/2))
	more := math.Min(math.Log(debtRankStep/b)/math.Log(rate), float64(maxDebtRankRounds-r))
	return math.Min(float64(p.full), float64(visits)+math.Max(0, more)*float64(p.trace.lastRound)), nodes
}

func meanOf(x []float64) float64 {
	sum := 0.0
	for _, v := range x {
		sum += v
	}
	return sum / float64(len(x))
}

func log2(x float64) float64 {
	if x < 2 {
		return 1
	}
	return math.Log2(x)
}

// Memory.

// Sizes in bytes of the arrays Analyze allocates.
const (
	// cellBytes, runnerNodeBytes: a runner's per-node state (cell; front, next, failed and
	// touched lists).
	cellBytes       = 24
	runnerNodeBytes = cellBytes + 4*4
	// debtRankNodeBytes, enNodeBytes: the extra per-node state of a DebtRank runner (delta,
	// acc, inCand) and an Eisenberg–Noe runner (pay, inD, dirtyMark, inQ, queue).
	debtRankNodeBytes = 8 + 8 + 1
	enNodeBytes       = 8 + 4 + 4 + 1 + 4
	// nodeResultBytes: a NodeResult and the numbers its pointers point to.
	nodeResultBytes = 64 + 4*8
	// runBytes: a scenario's per-run outcomes (failed fraction, loss, rounds, recovery;
	// Eisenberg–Noe's shortfall: at most 36 bytes, see "Chunked runs" in the method
	// document) and summarise's sorted copies, rounded up.
	runBytes = 8*4 + 8 + 2*8
	// lobpcgVectors: the n-vectors LOBPCG holds with one block vector (X, AX, the basis S
	// and its image, the next X, P and their images, P and AP, the degrees, the image of
	// the result).
	lobpcgVectors = 16
	// gcSlack: the garbage a heap kept at GOGC 10 holds beyond its live objects (the
	// build's measured peak is 1.26 times its live bytes), and rounding of allocation sizes.
	gcSlack = 1.3
)

// memory is the peak of the bytes Analyze holds at once (see Estimate): the network
// build's, or later the network's and the model's with the runners (one per worker), the
// runs' outcomes, the sweep, λ₂'s vectors and the nodes' results, whichever is larger.
func (s *spec) memory(g *network, workers int) int64 {
	n, raw, m := float64(g.n), float64(s.rawEdges), float64(len(g.outTo))
	// CSR arrays (capacity of the request's edges, twice that for the symmetrised graph)
	// and per-node sums; the model's coefficients.
	network := raw*(4+8+8) + 2*raw*(4+8) + n*(4+4+8+8)
	model := 8 * m
	// Building the symmetrised graph, beside the directed one: the pairs (row, column, half
	// weight) and the rows being sorted (triplets) for 2·edges entries; then the triplets
	// and the symmetrised arrays. Measured 94–126 MB (the second with the garbage of the
	// directed graph's build) at 990,292 edges, for 100 MB here.
	build := raw*(4+8+8) + 2*raw*24 + math.Max(2*raw*(4+4+8), 2*raw*(4+8)) + 40*n
	perRunner := runnerNodeBytes*n + 2*4*n // with random_node's permutation
	switch s.model {
	case mDebtRank:
		perRunner += debtRankNodeBytes * n
	case mEisenbergNoe:
		perRunner += enNodeBytes*n + 8*n
	}
	runs, grouping := 0.0, 0.0
	for k, sc := range s.scen {
		runs += float64(sc.runs)
		if d, reuse := s.distinctRuns(k); reuse {
			// Exact reuse holds each run's key (a slice header, its copy of at most
			// maxReuseInit failures, its group) and each distinct cascade's outcome,
			// sequence and map entry, one scenario at a time.
			grouping = math.Max(grouping, float64(sc.runs)*(24+4*maxReuseInit+4)+d*(64+4*maxReuseInit+64))
		}
	}
	swept := float64(s.swept())
	later := float64(workers+1)*perRunner + runs*runBytes + grouping + float64(workers)*n*(4+8) + n*2*8 + // tallies per worker, merged
		swept*float64(s.sweepRuns())*8 + 4*n*8 + // sweep, rankings, centralities
		lobpcgVectors*8*n + nodeResultBytes*n
	if g.n <= denseFiedlerMax {
		later += 3 * 8 * n * n // L and the eigendecomposition's work space
	}
	return int64(gcSlack * math.Max(build, network+model+later))
}
